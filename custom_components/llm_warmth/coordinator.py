"""One coordinator per LLM server: reads it, hands the readings to the monitor, fires events.

The decisions are the pure ``core.monitor``'s; our own requests are ``own_requests``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
import time
from typing import override

from homeassistant.const import CONF_SCAN_INTERVAL
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed
from homeassistant.helpers.update_coordinator import DataUpdateCoordinator
from homeassistant.util import dt as dt_util

from .const import (
    DECISION_SLACK,
    DEFAULT_SCAN_INTERVAL,
    DOMAIN,
    HEARD_LOAD_SECONDS,
    LOGGER,
)
from .core.backends.base import LlmBackend, PushesResidency
from .core.backends.errors import (
    LlmServerAuthenticationError,
    LlmServerError,
    LlmServerUnreachableError,
)
from .core.backends.types import ResidentModel
from .core.monitor import LoadObserved, MonitorChange, ServerMonitor, ServerSnapshot
from .core.monitor_events import events_of
from .core.peers import PeerView
from .core.server_url import redact_url
from .data import LlmWarmthConfigEntry
from .devices import fire_event
from .errors import update_failed
from .event_stream import ResidencyEventStream
from .fast_poll import FastPoll, OneShot
from .storage import EntryStore

# Told what each poll, push or probe changed.
type ChangeListener = Callable[[list[MonitorChange]], None]


class LlmWarmthCoordinator(DataUpdateCoordinator[ServerSnapshot]):
    """Polls one LLM server and fires the residency events; it holds no feature's state.

    Its monitor (``monitored``) is shared with our own requests, which tell it when they
    run; what it measured (each model's timings) is the store's section "models".
    """

    config_entry: LlmWarmthConfigEntry
    # The wall clock compared with the server's expiries (tests align it with the server's).
    utcnow: Callable[[], datetime] = staticmethod(dt_util.utcnow)

    def __init__(
        self,
        hass: HomeAssistant,
        entry: LlmWarmthConfigEntry,
        client: LlmBackend,
        store: EntryStore,
        monitor: ServerMonitor,
    ) -> None:
        """Create the coordinator; the poll interval comes from the entry's options."""
        self.normal_interval = timedelta(
            seconds=entry.options.get(CONF_SCAN_INTERVAL, DEFAULT_SCAN_INTERVAL)
        )
        super().__init__(
            hass,
            LOGGER,
            config_entry=entry,
            name=f"{DOMAIN} {entry.title}",
            update_interval=self.normal_interval,
            always_update=False,
        )
        self.client = client
        self._store = store
        self.monitor = monitor
        # The polls right after a request of ours may still see its load; later ones not.
        self.announce_window = 2 * self.normal_interval.total_seconds() + 5
        self._fast_poll = FastPoll(
            hass,
            self.name,
            self.async_refresh,
            unwanted=lambda: self._shut_down or self.events_connected or entry.pref_disable_polling,
        )
        # With the event stream up (no fast polls), a model that left unexplained is
        # decided by reading the last pushed residency again once its window has passed.
        self._decision = OneShot(hass, f"{self.name} unload", self._decide_pushed)
        self._shut_down = False
        # The server's event stream, where it has one, replaces fast polling while it is up.
        self._events: ResidencyEventStream | None = None
        # How many snapshots it pushed, and the last one.
        self._pushed: tuple[int, tuple[ResidentModel, ...]] = (0, ())
        # Called after every poll, changed or not (listeners hear of changes only).
        self._poll_listeners: list[CALLBACK_TYPE] = []
        # Told each change the monitor found (loads, unloads, restarts, cold starts).
        self._change_listeners: list[ChangeListener] = []

    async def async_shutdown(self) -> None:
        """Stop polling (the entry unloads; the store is written after every feature stops)."""
        self._shut_down = True
        self._fast_poll.cancel()
        self._decision.cancel()
        await super().async_shutdown()

    @callback
    def async_add_poll_listener(self, listener: CALLBACK_TYPE) -> CALLBACK_TYPE:
        """Call ``listener`` after every poll, even one that changed nothing; return unsub."""
        self._poll_listeners.append(listener)
        return lambda: self._poll_listeners.remove(listener)

    @callback
    def async_add_change_listener(self, listener: ChangeListener) -> CALLBACK_TYPE:
        """Tell ``listener`` the changes the monitor finds; return unsub."""
        self._change_listeners.append(listener)
        return lambda: self._change_listeners.remove(listener)

    @override
    @callback
    def _async_refresh_finished(self) -> None:
        for listener in list(self._poll_listeners):
            listener()

    @property
    def fast_polling(self) -> bool:
        """Return True while a fast poll is armed (a model is loading)."""
        return self._fast_poll.armed

    @property
    def events_connected(self) -> bool:
        """Return True while the server's event stream reports residency."""
        return self._events is not None and self._events.connected

    @callback
    def async_start_events(self) -> None:
        """Follow the server's residency events, where it pushes them, until unload.

        Regular polls go on (the version, the installed models, an outage); fast ones not.
        """
        if isinstance(self.client, PushesResidency) and self.client.capabilities.pushes_events:
            self._events = ResidencyEventStream(
                self.name,
                self.client,
                # Looked up at each push (a test replaces it to make one push fail).
                observe=lambda resident: self._observe_pushed(resident),  # noqa: PLW0108
                down=self._after_poll,
                stopped=lambda: self._shut_down,
            )
            self.config_entry.async_create_background_task(
                self.hass, self._events.async_follow(), f"{self.name} events"
            )

    @callback
    def _observe_pushed(self, resident: tuple[ResidentModel, ...]) -> None:
        if self.data is None or not self.last_update_success:
            return  # the polls say the server is down: they bring it back
        self._pushed = (self._pushed[0] + 1, resident)
        self._observe_resident(resident)

    @callback
    def _observe_resident(self, resident: tuple[ResidentModel, ...]) -> None:
        snapshot, changes = self.monitor.observe(
            version=None,
            resident=resident,
            installed=None,
            now=self.utcnow(),
            monotonic=time.monotonic(),
            pushed=True,
        )
        self.announce(changes)
        self._fast_poll.cancel()
        self._decision.cancel()
        if (due := self.monitor.undecided_until) is not None and not self._shut_down:
            self._decision.arm(max(due - time.monotonic(), 0.0) + DECISION_SLACK)
        self.async_set_updated_data(snapshot)

    @callback
    def _decide_pushed(self) -> None:
        """Decide what left unexplained, from the last pushed residency (nothing is sent)."""
        if self.events_connected and self.data is not None and self.last_update_success:
            self._observe_resident(self._pushed[1])

    @callback
    def _after_poll(self) -> None:
        self._fast_poll.after_poll(settling=self.monitor.settling)

    @callback
    def poll_soon(self) -> None:
        """Poll again SETTLING_SCAN_INTERVAL from now (a request of ours may load a model)."""
        self._fast_poll.soon()

    async def _async_update_data(self) -> ServerSnapshot:
        # Whatever started this poll, the next fast one is counted from its end.
        self._fast_poll.cancel()
        monitor = self.monitor
        pushes = self._pushed[0]
        try:
            version = None
            if monitor.version_due(time.monotonic()):
                version = await self.client.version()
                if self.client.capabilities != monitor.capabilities:
                    monitor.use_capabilities(self.client.capabilities)
            resident = await self.client.running_models()
            installed = None
            if monitor.installed_due(resident, time.monotonic()):
                installed = await self.client.installed_models()
        except LlmServerAuthenticationError as err:
            monitor.poll_failed(unreachable=False)
            raise ConfigEntryAuthFailed(
                translation_domain=DOMAIN, translation_key="invalid_auth"
            ) from err
        except LlmServerError as err:
            # No fast polling of a server that is down, even if it went down mid-load.
            monitor.poll_failed(unreachable=isinstance(err, LlmServerUnreachableError))
            raise update_failed(err, redact_url(self.client.base_url)) from err
        if self._pushed[0] != pushes:
            # The server's events told something newer while this poll ran: keep to them.
            resident = self._pushed[1]
        snapshot, changes = monitor.observe(
            version=version,
            resident=resident,
            installed=installed,
            now=self.utcnow(),
            monotonic=time.monotonic(),
        )
        self.announce(changes)
        self._after_poll()
        return snapshot

    @callback
    def async_set_peers(self, views: Mapping[str, PeerView]) -> None:
        """Show the peers' models as the entries that run them read them (PeerWatch)."""
        if self.monitor.set_peers(views) and self.data is not None:
            self.data = replace(self.data, peers=views)
            self.async_update_listeners()

    @callback
    def announce(self, changes: list[MonitorChange]) -> None:
        """Fire the events of what changed; store the figures of a load; tell the listeners."""
        for kind, data in events_of(changes):
            fire_event(self.hass, self.config_entry, f"{DOMAIN}_{kind}", **data)
        if any(isinstance(change, LoadObserved) for change in changes):
            self._store.async_delay_save()
        if changes:
            for listener in list(self._change_listeners):
                listener(changes)

    @callback
    def resident_vram(self) -> int | None:
        """Return the GPU memory the resident models hold, where the server tells it."""
        reports = self.last_update_success and self.client.capabilities.reports_memory
        return self.data.resident_vram if reports else None

    @property
    def last_sizes(self) -> Mapping[str, int]:
        """Return each model's size in memory when last resident (bytes)."""
        return self.monitor.last_sizes

    def resolve_model(self, model: str) -> str:
        """Return the server's name for ``model`` ("llama3.2" -> "llama3.2:latest")."""
        return self.monitor.resolve_model(model)

    @callback
    def async_note_agent_turn(self, model: str) -> None:
        """Note that an agent of this server began a turn with ``model`` just now.

        Where the server lists a model only once loaded (Ollama 0.30 and newer), one not
        resident is loading for that turn until listed, for at most twice its last load
        or two minutes.
        """
        if self.data is None or not self.last_update_success:
            return
        timing = self.data.timings.get(model)
        last = timing.load_seconds if timing and timing.load_seconds else 0.0
        monotonic = time.monotonic()
        snapshot = self.monitor.load_heard(
            model,
            now=self.utcnow(),
            monotonic=monotonic,
            until=monotonic + max(2 * last, HEARD_LOAD_SECONDS),
        )
        if snapshot is not None:
            self.async_set_updated_data(snapshot)
            self._after_poll()

    @callback
    def publish_timings(self) -> None:
        """Show the timings measured and the probes running since the last poll."""
        if self.last_update_success:  # a failed poll keeps the entities unavailable
            self.async_set_updated_data(self.monitor.with_timings(self.data))
