"""One coordinator per LLM server: reads it, hands the readings to the monitor, fires events.

The decisions (what changed, what a probe caused) are the pure ``core.monitor``'s; this
module does the I/O, maps errors to Home Assistant's and schedules the polls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
import time
from typing import Any, Literal, override

from homeassistant.const import CONF_SCAN_INTERVAL
from homeassistant.core import CALLBACK_TYPE, HassJob, HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed
from homeassistant.helpers.event import async_call_later
from homeassistant.helpers.update_coordinator import DataUpdateCoordinator
from homeassistant.util import dt as dt_util

from .const import (
    DECISION_SLACK,
    DEFAULT_SCAN_INTERVAL,
    DOMAIN,
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
    FAST_POLL_LIMIT,
    HEARD_LOAD_SECONDS,
    LOGGER,
    SETTLING_SCAN_INTERVAL,
)
from .core.backends.base import GENERATION_TIMEOUT, LlmBackend, PushesResidency
from .core.backends.errors import (
    LlmServerAuthenticationError,
    LlmServerError,
    LlmServerUnreachableError,
)
from .core.backends.types import ResidentModel
from .core.load_figures import LoadFigures
from .core.monitor import (
    ColdStartObserved,
    LoadObserved,
    MonitorChange,
    ProbeResult,
    ServerMonitor,
    ServerRestarted,
    ServerSnapshot,
)
from .core.own_requests import OwnRequestLog
from .core.peers import PeerView
from .core.server_url import redact_url
from .core.ttft import ModelTiming, Stage
from .data import LlmWarmthConfigEntry
from .devices import event_subject
from .errors import update_failed
from .event_stream import ResidencyEventStream
from .storage import EntryStore, stored_records

# Told what each poll, push or probe changed.
type ChangeListener = Callable[[list[MonitorChange]], None]


class LlmWarmthCoordinator(DataUpdateCoordinator[ServerSnapshot]):
    """Polls one LLM server and fires the residency events; it holds no feature's state.

    What it measured (each model's timings) is its own section of the store ("models").
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
        timings = store.section(
            "models", lambda: {name: t.as_dict() for name, t in self.monitor.timings.items()}
        )
        self.monitor = ServerMonitor(
            client.capabilities,
            timings=stored_records(timings, ModelTiming.from_dict, "measurements"),
        )
        # While a model loads the server is polled every SETTLING_SCAN_INTERVAL by this
        # one-shot timer, armed after each poll; the coordinator's own interval stays the
        # normal one (Home Assistant rounds it to whole seconds, so a sub-second interval
        # would fire back to back).
        self._fast_poll_job = HassJob(
            self._async_fast_poll, f"{DOMAIN} {entry.title} fast poll", cancel_on_shutdown=True
        )
        self._unsub_fast_poll: CALLBACK_TYPE | None = None
        # With the event stream up (no fast polls), a model that left unexplained is
        # decided by reading the last pushed residency again once its window has passed.
        self._decide_job = HassJob(
            self._decide_pushed, f"{DOMAIN} {entry.title} unload", cancel_on_shutdown=True
        )
        self._unsub_decide: CALLBACK_TYPE | None = None
        self._settling_since: float | None = None
        self._shut_down = False
        # The server's event stream, where it has one, replaces fast polling while it is up.
        self._events: ResidencyEventStream | None = None
        # How many snapshots it pushed, and the last one.
        self._pushed: tuple[int, tuple[ResidentModel, ...]] = (0, ())
        # Called after every poll, changed or not (listeners hear of changes only).
        self._poll_listeners: list[CALLBACK_TYPE] = []
        # Told each change the monitor found (loads, unloads, restarts, cold starts).
        self._change_listeners: list[ChangeListener] = []
        # When our own requests ran: what the server shows of them is not a household's use.
        self.own_requests = OwnRequestLog()

    async def async_shutdown(self) -> None:
        """Stop polling (the entry unloads; the store is written after every feature stops)."""
        self._shut_down = True
        self._cancel_fast_poll()
        self._cancel_decision()
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
        return self._unsub_fast_poll is not None

    @callback
    def _cancel_fast_poll(self) -> None:
        if self._unsub_fast_poll is not None:
            self._unsub_fast_poll()
            self._unsub_fast_poll = None

    @property
    def events_connected(self) -> bool:
        """Return True while the server's event stream reports residency."""
        return self._events is not None and self._events.connected

    @callback
    def async_start_events(self) -> None:
        """Follow the server's residency events, where it pushes them, until unload.

        Polls go on at the regular interval all the same (they read the version and the
        installed models, and they tell when the server is gone); while the stream is
        down, fast polls take over.
        """
        if isinstance(self.client, PushesResidency) and self.client.capabilities.pushes_events:
            self._events = ResidencyEventStream(
                self.name,
                self.client,
                # Looked up at each push (a test replaces it to make one push fail).
                observe=lambda resident: self._observe_pushed(resident),  # noqa: PLW0108
                down=self._arm_fast_poll,
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
        self._handle(changes)
        self._cancel_fast_poll()
        self._cancel_decision()
        if (due := self.monitor.undecided_until) is not None and not self._shut_down:
            delay = max(due - time.monotonic(), 0.0) + DECISION_SLACK
            self._unsub_decide = async_call_later(self.hass, delay, self._decide_job)
        self.async_set_updated_data(snapshot)

    @callback
    def _decide_pushed(self, _now: datetime) -> None:
        """Decide what left unexplained, from the last pushed residency (nothing is sent)."""
        self._unsub_decide = None
        if self.events_connected and self.data is not None and self.last_update_success:
            self._observe_resident(self._pushed[1])

    @callback
    def _cancel_decision(self) -> None:
        if self._unsub_decide is not None:
            self._unsub_decide()
            self._unsub_decide = None

    @callback
    def _arm_fast_poll(self) -> None:
        """Poll again SETTLING_SCAN_INTERVAL after this poll, while something settles.

        Not for ever: a model busy with a very long first request (or a server that never
        stops reporting a load) falls back to the regular interval after FAST_POLL_LIMIT.
        """
        self._cancel_fast_poll()
        if not self.monitor.settling:
            self._settling_since = None
            return
        now = time.monotonic()
        if self._settling_since is None:
            self._settling_since = now
        if now - self._settling_since <= FAST_POLL_LIMIT.total_seconds():
            self._poll_soon()

    @callback
    def _poll_soon(self) -> None:
        """Poll again SETTLING_SCAN_INTERVAL from now, unless no fast poll is wanted.

        Not while the entry shuts down, while the event stream reports residency, or when
        the user disabled polling.
        """
        self._cancel_fast_poll()
        if self._shut_down or self.events_connected or self.config_entry.pref_disable_polling:
            return
        self._unsub_fast_poll = async_call_later(
            self.hass, SETTLING_SCAN_INTERVAL, self._fast_poll_job
        )

    async def _async_fast_poll(self, _now: datetime) -> None:
        self._unsub_fast_poll = None
        await self.async_refresh()

    async def _async_update_data(self) -> ServerSnapshot:
        # Whatever started this poll, the next fast one is counted from its end.
        self._cancel_fast_poll()
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
        self._handle(changes)
        self._arm_fast_poll()
        return self._with_peers(snapshot)

    def _with_peers(self, snapshot: ServerSnapshot) -> ServerSnapshot:
        """Carry the peers' views over to a new snapshot (until PeerWatch reads again)."""
        if self.data is None or not self.data.peers or snapshot.peers:
            return snapshot
        return replace(snapshot, peers=self.data.peers)

    @override
    @callback
    def async_set_updated_data(self, data: ServerSnapshot) -> None:
        super().async_set_updated_data(self._with_peers(data))

    @callback
    def async_set_peers(self, views: Mapping[str, PeerView]) -> None:
        """Show the peers' models as the entries that run them read them (PeerWatch)."""
        if self.data is None or self.data.peers == views:
            return
        self.data = replace(self.data, peers=views)
        self.async_update_listeners()

    @callback
    def _handle(self, changes: list[MonitorChange]) -> None:
        """Fire the events of what changed; store the figures of a load; tell the listeners."""
        for change in changes:
            match change:
                case ServerRestarted():
                    self.fire(
                        EVENT_SERVER_RESTARTED,
                        reason="version_changed" if change.version_changed else "reconnected",
                        version=change.version,
                        previous_version=change.previous_version,
                    )
                case LoadObserved():
                    self._store.async_delay_save()
                    self.fire(
                        EVENT_MODEL_LOADED,
                        model=change.model,
                        cold_start=change.waited,
                        # Who waited, as the cold start's event says it (its logbook line).
                        **(_waited_for(change.probe) if change.waited else {}),
                        **change.figures.as_event_data(),
                    )
                    if change.waited:  # a preload or a pin: nobody waited for it
                        self._fire_cold_start(change.model, change.figures, change.probe)
                case ColdStartObserved():
                    self._fire_cold_start(change.model, LoadFigures(), change.probe)
                case _:
                    self.fire(
                        EVENT_MODEL_UNLOADED,
                        model=change.model,
                        reason=change.reason.value,
                        replaced_by=list(change.replaced_by),
                    )
        if changes:
            for listener in list(self._change_listeners):
                listener(changes)

    def _fire_cold_start(self, model: str, figures: LoadFigures, probe: ProbeResult | None) -> None:
        self.fire(EVENT_COLD_START, model=model, **_waited_for(probe), **figures.as_event_data())

    @callback
    def resident_vram(self) -> int | None:
        """Return the GPU memory the resident models hold, where the server tells it."""
        if not self.last_update_success or not self.client.capabilities.reports_memory:
            return None
        sizes = [m.size_vram for m in self.data.resident.values()]
        return sum(s for s in sizes if s is not None) if None not in sizes else None

    def resolve_model(self, model: str) -> str:
        """Return the server's name for ``model`` ("llama3.2" -> "llama3.2:latest")."""
        return self.monitor.resolve_model(model)

    @callback
    def async_note_agent_turn(self, model: str) -> None:
        """Note that an agent of this server began a turn with ``model`` just now.

        Where the server lists a model only once loaded (Ollama 0.30 and newer), a model
        not resident then is loading for that turn: shown as loading (with when it should
        be ready, by its last exact load) until polling lists it, for at most twice its
        last load or two minutes.
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
            self._arm_fast_poll()

    async def async_probe(
        self,
        model: str,
        prompt: str,
        *,
        api: Literal["chat", "generate"] = "chat",
        options: Mapping[str, Any] | None = None,
        timeout: float = GENERATION_TIMEOUT,
        system: str | None = None,
        think: bool | None = None,
    ) -> ProbeResult:
        """Run one measured request, record it, and return its breakdown and verdict.

        Raise the client's errors; nothing is recorded when the request fails.
        """
        # Residency right before the request decides whether it has to load the model.
        await self.async_refresh()
        model = self.resolve_model(model)
        before = self.data.held.get(model) if self.last_update_success else None
        was_resident = before is not None
        self.monitor.probe_started(model, monotonic=time.monotonic())
        self.own_requests.started(model, self.utcnow())
        self._publish_timings()
        if not was_resident and self.last_update_success:
            # Progress of a long cold probe: poll soon, so the model shows "loading" while
            # it loads (fast polls follow while it does), not only when the reply is there.
            self._poll_soon()
        try:
            try:
                reply = await self.client.timed_generation(
                    api, model, prompt, options=options, timeout=timeout, system=system, think=think
                )
            finally:
                self.own_requests.ended(model, self.utcnow())
            # What the request did to residency, read while it still counts as ours: a
            # runner it loaded (or replaced) shows up now, not at the next poll.
            await self.async_refresh()
        except BaseException:  # failed or cancelled: no load of ours to announce
            self._handle(self.monitor.probe_failed(model))
            self._publish_timings()
            raise
        probe, changes = self.monitor.probe_finished(
            model,
            reply,
            was_resident=was_resident,
            now=self.utcnow(),
            monotonic=time.monotonic(),
            # The polls right after the request may still see its load; later ones not.
            announce_window=2 * self.normal_interval.total_seconds() + 5,
        )
        self._handle(changes)
        self._store.async_delay_save()
        self._publish_timings()
        return replace(probe, resident_before=before)

    async def async_own_load(
        self, model: str, load: Callable[[], Awaitable[None]], *, was_resident: bool
    ) -> float:
        """Run ``load`` (a preload's or a pin's request) as ours; return its seconds.

        The load it causes gets its exact figure and is no cold start (nobody waited for
        it); polls while it runs do not report it as another client's. Raise what ``load``
        raises; nothing is recorded then.
        """
        self.monitor.probe_started(model, monotonic=time.monotonic())
        self.own_requests.started(model, self.utcnow())
        self._publish_timings()
        started = time.monotonic()
        try:
            try:
                await load()
            finally:
                self.own_requests.ended(model, self.utcnow())
            seconds = time.monotonic() - started
            # What the request did to residency, read while it still counts as ours.
            await self.async_refresh()
        except BaseException:  # failed or cancelled: no load of ours to announce
            self._handle(self.monitor.probe_failed(model))
            self._publish_timings()
            raise
        self._handle(
            self.monitor.own_load_finished(
                model,
                seconds=seconds,
                was_resident=was_resident,
                monotonic=time.monotonic(),
                announce_window=2 * self.normal_interval.total_seconds() + 5,
            )
        )
        self._store.async_delay_save()
        self._publish_timings()
        return seconds

    @callback
    def _publish_timings(self) -> None:
        """Show the timings measured and the probes running since the last poll."""
        if self.last_update_success:  # a failed poll keeps the entities unavailable
            self.async_set_updated_data(self.monitor.with_timings(self.data))

    def fire(self, event_type: str, /, **data: Any) -> None:
        """Fire an event, naming the entity and device it is about (for the logbook)."""
        entry = self.config_entry
        subject = event_subject(self.hass, entry.entry_id, data.get("model"))
        self.hass.bus.async_fire(
            event_type,
            {"server": entry.title, "config_entry_id": entry.entry_id, **subject, **data},
        )


def _waited_for(probe: ProbeResult | None) -> dict[str, Any]:
    """Return who waited for a load: a probe of ours (its first token, its costliest stage)."""
    sample = probe.sample.as_response() if probe else None
    return {
        "source": "probe" if probe else "passive",
        "ttft_ms": sample["ttft_ms"] if sample else None,
        "queue_and_load_ms": sample["queue_and_load_ms"] if sample else None,
        "dominant_stage": (probe.verdict.dominant_stage if probe else Stage.LOAD).value,
    }
