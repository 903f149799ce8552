"""One coordinator per LLM server: one snapshot per poll, and the events between snapshots."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
import time
from typing import TYPE_CHECKING, Any, Literal

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import CONF_SCAN_INTERVAL
from homeassistant.core import CALLBACK_TYPE, HassJob, HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed
from homeassistant.helpers.event import async_call_later
from homeassistant.helpers.update_coordinator import DataUpdateCoordinator, UpdateFailed
from homeassistant.util import dt as dt_util

from .core.backends.errors import (
    LlmServerAuthenticationError,
    LlmServerConnectionError,
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerTimeoutError,
    LlmServerUnreachableError,
)
from .core.backends.ollama import GENERATION_TIMEOUT, OllamaClient
from .core.backends.types import InstalledModel, ResidentModel, TimedReply
from .const import (
    DEFAULT_SCAN_INTERVAL,
    DOMAIN,
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
    FAST_POLL_LIMIT,
    INSTALLED_REFRESH_INTERVAL,
    LOGGER,
    SETTLING_SCAN_INTERVAL,
    VERSION_REFRESH_INTERVAL,
)
from .core.residency import (
    LoadFigures,
    ModelLoaded,
    OwnRequestEnd,
    ResidencyChange,
    ResidencyTracker,
)
from .core.server_url import redact_url
from .storage import TimingStorage
from .core.ttft import Classification, ModelTiming, Stage, StageBreakdown, Verdict, breakdown, judge

if TYPE_CHECKING:
    from .gpu_coordinator import GpuCoordinator


@dataclass(frozen=True, kw_only=True)
class ServerSnapshot:
    """What one poll of a server saw (compared by value: unchanged polls notify nobody)."""

    version: str
    resident: dict[str, ResidentModel]
    installed: dict[str, InstalledModel]
    loading: frozenset[str]
    timings: dict[str, ModelTiming]
    polled_at: datetime = field(compare=False)

    @property
    def models(self) -> frozenset[str]:
        """Return every model the server has installed or resident."""
        return frozenset(self.installed) | frozenset(self.resident)


@dataclass
class LlmWarmthData:
    """Runtime data of one config entry."""

    client: OllamaClient
    coordinator: LlmWarmthCoordinator
    server_device_id: str
    gpu: GpuCoordinator | None = None


type LlmWarmthConfigEntry = ConfigEntry[LlmWarmthData]


class LlmWarmthCoordinator(DataUpdateCoordinator[ServerSnapshot]):
    """Polls one Ollama server and fires the residency events."""

    config_entry: LlmWarmthConfigEntry
    # The wall clock compared with the server's expiries (tests align it with the server's).
    utcnow: Callable[[], datetime] = staticmethod(dt_util.utcnow)

    def __init__(
        self, hass: HomeAssistant, entry: LlmWarmthConfigEntry, client: OllamaClient
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
        self._tracker = ResidencyTracker()
        self._storage = TimingStorage(hass, entry.entry_id)
        self._timings: dict[str, ModelTiming] = {}
        self._installed: dict[str, InstalledModel] = {}
        self._installed_fetched: float | None = None
        self._version: str | None = None
        self._version_fetched: float | None = None
        # The last poll failed: the next one reads the version before anything else.
        self._poll_failed = False
        self._unreachable = False
        # While a model loads the server is polled every SETTLING_SCAN_INTERVAL by this
        # one-shot timer, armed after each poll; the coordinator's own interval stays the
        # normal one (Home Assistant rounds it to whole seconds, so a sub-second interval
        # would fire back to back).
        self._fast_poll_job = HassJob(
            self._async_fast_poll, f"{DOMAIN} {entry.title} fast poll", cancel_on_shutdown=True
        )
        self._unsub_fast_poll: CALLBACK_TYPE | None = None
        self._settling_since: float | None = None
        self._shut_down = False

    async def _async_setup(self) -> None:
        """Read what earlier runs measured."""
        self._timings = await self._storage.async_load()

    async def async_shutdown(self) -> None:
        """Stop polling and write what was measured (the entry unloads)."""
        self._shut_down = True
        self._cancel_fast_poll()
        await super().async_shutdown()
        if self._timings:
            await self._storage.async_save(self._timings)

    @property
    def fast_polling(self) -> bool:
        """Return True while a fast poll is armed (a model is loading)."""
        return self._unsub_fast_poll is not None

    @callback
    def _cancel_fast_poll(self) -> None:
        if self._unsub_fast_poll is not None:
            self._unsub_fast_poll()
            self._unsub_fast_poll = None

    @callback
    def _arm_fast_poll(self) -> None:
        """Poll again SETTLING_SCAN_INTERVAL after this poll, while something settles.

        Not for ever: a model busy with a very long first request (or a server that never
        stops reporting a load) falls back to the regular interval after FAST_POLL_LIMIT.
        """
        self._cancel_fast_poll()
        if not self._tracker.settling:
            self._settling_since = None
            return
        now = time.monotonic()
        if self._settling_since is None:
            self._settling_since = now
        if (
            self._shut_down
            or self.config_entry.pref_disable_polling
            or now - self._settling_since > FAST_POLL_LIMIT.total_seconds()
        ):
            return
        self._unsub_fast_poll = async_call_later(
            self.hass, SETTLING_SCAN_INTERVAL, self._fast_poll_job
        )

    async def _async_fast_poll(self, _now: datetime) -> None:
        self._unsub_fast_poll = None
        await self.async_refresh()

    def _version_due(self) -> bool:
        """Return True when this poll should read the server's version too.

        Rarely on a healthy server; but first after a failed poll (so that a restart is
        reported with the version the server has now), and when a model left early with
        nothing in sight (an upgrade restarts the server and empties it).
        """
        if self._version_fetched is None or self._poll_failed:
            return True
        unexplained = self._tracker.unexplained_since
        if unexplained is not None and unexplained > self._version_fetched:
            return True
        age = time.monotonic() - self._version_fetched
        return age >= VERSION_REFRESH_INTERVAL.total_seconds()

    async def _async_update_data(self) -> ServerSnapshot:
        # Whatever started this poll, the next fast one is counted from its end.
        self._cancel_fast_poll()
        try:
            fetched_version = None
            if self._version_due():
                fetched_version = await self.client.version()
            resident = await self.client.running_models()
            if self._installed_due(resident):
                self._installed = {m.name: m for m in await self.client.installed_models()}
                self._installed_fetched = time.monotonic()
        except LlmServerAuthenticationError as err:
            self._poll_failed = True
            raise ConfigEntryAuthFailed(
                translation_domain=DOMAIN, translation_key="invalid_auth"
            ) from err
        except LlmServerError as err:
            # No fast polling of a server that is down, even if it went down mid-load.
            # A server that could not be connected to at all has restarted (or gone) when
            # it answers again; one slow or garbled reply is no restart.
            self._poll_failed = True
            self._unreachable = self._unreachable or isinstance(err, LlmServerUnreachableError)
            raise _update_failed(err, redact_url(self.client.base_url)) from err
        self._poll_failed = False
        restarted = self._note_restart(fetched_version)
        now, monotonic = self.utcnow(), time.monotonic()
        for change in self._tracker.observe(
            resident, now=now, monotonic=monotonic, server_restarted=restarted
        ):
            self._handle(change)
        self._arm_fast_poll()
        assert self._version is not None  # read on the first poll
        return ServerSnapshot(
            version=self._version,
            resident={m.name: m for m in resident},
            installed=dict(self._installed),
            loading=self._tracker.loading(),
            timings=dict(self._timings),
            polled_at=now,
        )

    def _handle(self, change: ResidencyChange) -> None:
        """Fire the event of one residency change (a load seen by polling is passive)."""
        if isinstance(change, ModelLoaded):
            self._announce_load(change.model, LoadFigures.from_polling(change), None)
        else:
            self._fire(
                EVENT_MODEL_UNLOADED,
                model=change.model,
                reason=change.reason.value,
                replaced_by=list(change.replaced_by),
            )

    def _announce_load(
        self, model: str, figures: LoadFigures, probe: tuple[StageBreakdown, Verdict] | None
    ) -> None:
        """Record one load's figures and fire its loaded and cold-start events."""
        self._timings[model] = self._timings.get(model, ModelTiming()).with_load(figures)
        self._storage.async_delay_save(lambda: self._timings)
        self._fire(EVENT_MODEL_LOADED, model=model, **figures.as_event_data())
        self._fire_cold_start(model, figures, probe)

    def _fire_cold_start(
        self, model: str, figures: LoadFigures, probe: tuple[StageBreakdown, Verdict] | None
    ) -> None:
        sample, verdict = probe if probe else (None, None)
        self._fire(
            EVENT_COLD_START,
            model=model,
            source="probe" if probe else "passive",
            ttft_ms=sample.ttft_ms if sample else None,
            queue_and_load_ms=sample.queue_and_load_ms if sample else None,
            dominant_stage=(verdict.dominant_stage if verdict else Stage.LOAD).value,
            **figures.as_event_data(),
        )

    def resolve_model(self, model: str) -> str:
        """Return the server's name for ``model`` ("llama3.2" -> "llama3.2:latest")."""
        known = self.data.models
        if model not in known and ":" not in model and f"{model}:latest" in known:
            return f"{model}:latest"
        return model

    async def async_probe(
        self,
        model: str,
        prompt: str,
        *,
        api: Literal["chat", "generate"] = "chat",
        options: Mapping[str, Any] | None = None,
        timeout: float = GENERATION_TIMEOUT,
    ) -> tuple[StageBreakdown, Verdict]:
        """Run one measured request, record it, and return its breakdown and verdict.

        Raise the client's errors; nothing is recorded when the request fails.
        """
        # Residency right before the request decides whether it has to load the model.
        await self.async_refresh()
        model = self.resolve_model(model)
        was_resident = self.last_update_success and model in self.data.resident
        self._tracker.request_started(model, monotonic=time.monotonic())
        try:
            reply = await self.client.timed_generation(
                api, model, prompt, options=options, timeout=timeout
            )
            # What the request did to residency, read while it still counts as ours: a
            # runner it loaded (or replaced) shows up now, not at the next poll.
            await self.async_refresh()
        except BaseException:  # failed or cancelled: no load of ours to announce
            self._release(self._tracker.request_finished(model))
            raise
        sample = breakdown(reply)
        timing = self._timings.get(model, ModelTiming())
        verdict = judge(sample, was_resident=was_resident, baseline=timing.baseline)
        self._timings[model] = timing.with_probe(sample, verdict, self.utcnow())
        self._record_probe_load(model, reply, (sample, verdict), was_resident=was_resident)
        self._storage.async_delay_save(lambda: self._timings)
        if self.last_update_success:  # a failed poll keeps the entities unavailable
            self.async_set_updated_data(replace(self.data, timings=dict(self._timings)))
        return sample, verdict

    def _record_probe_load(
        self,
        model: str,
        reply: TimedReply,
        probe: tuple[StageBreakdown, Verdict],
        *,
        was_resident: bool,
    ) -> None:
        """Announce the load a probe caused, or what else made it cold.

        The probe caused a load when the model was not resident before it, or when a new
        runner of the model showed up while it ran (a reload for its num_ctx): then the
        server's load_duration is the load's own figure. A probe that is cold for another
        reason (it waited behind another request, or for another client's load, or the
        server reloaded in place without a sign in /api/ps) gives a cold start of its own,
        without a load figure, unless polling reports that load.
        """
        end = self._tracker.request_finished(model)
        sample, verdict = probe
        caused = not end.covered and (not was_resident or end.new_runner)
        if caused:
            # The polls right after the request may still see its load; later ones may not.
            window = 2 * self.normal_interval.total_seconds() + 5
            self._tracker.announce_load(model, expect_until=time.monotonic() + window)
            figures = LoadFigures(
                load_seconds=round(sample.queue_and_load_ms / 1000, 3),
                load_source="server",
                cold_request_seconds=round((reply.final_ns - reply.sent_ns) / 1e9, 3),
                cold_request_source="client",
                reloaded=was_resident,
            )
            self._announce_load(model, figures, probe)
        elif end.held is not None:
            self._handle(end.held)
        elif verdict.classification is Classification.COLD and not end.covered:
            self._fire_cold_start(model, LoadFigures(), probe)

    def _release(self, end: OwnRequestEnd) -> None:
        """Announce what polling saw while a failed own request ran (not ours: it failed)."""
        if end.held is not None:
            self._handle(end.held)

    def _installed_due(self, resident: tuple[ResidentModel, ...]) -> bool:
        if self._installed_fetched is None or any(m.name not in self._installed for m in resident):
            return True
        age = time.monotonic() - self._installed_fetched
        return age >= INSTALLED_REFRESH_INTERVAL.total_seconds()

    def _note_restart(self, fetched_version: str | None) -> bool:
        """Fire the restart event when the server came back or changed version."""
        came_back, self._unreachable = self._unreachable, False
        if fetched_version is None:
            return False
        previous, self._version = self._version, fetched_version
        self._version_fetched = time.monotonic()
        changed = previous is not None and previous != fetched_version
        if not (came_back or changed):
            return False
        self._fire(
            EVENT_SERVER_RESTARTED,
            reason="version_changed" if changed else "reconnected",
            version=fetched_version,
            previous_version=previous,
        )
        return True

    def _fire(self, event_type: str, **data: Any) -> None:
        self.hass.bus.async_fire(
            event_type,
            {
                "server": self.config_entry.title,
                "config_entry_id": self.config_entry.entry_id,
                **data,
            },
        )


async def async_remove_stored_data(hass: HomeAssistant, entry_id: str) -> None:
    """Delete what an entry measured and stored (the entry is being removed)."""
    await TimingStorage(hass, entry_id).async_remove()


def _update_failed(err: LlmServerError, url: str) -> UpdateFailed:
    """Translate a client error into the coordinator's update failure."""
    if isinstance(err, LlmServerTimeoutError):
        key = "timeout"
    elif isinstance(err, LlmServerConnectionError):
        key = "cannot_connect"
    elif isinstance(err, LlmServerNotSupportedError):
        key = "not_ollama"
    else:
        key = "unexpected_response"
    return UpdateFailed(
        translation_domain=DOMAIN,
        translation_key=key,
        translation_placeholders={"url": url, "error": str(err)},
    )
