"""One coordinator per LLM server: one snapshot per poll, and the events between snapshots."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
import math
import time
from typing import TYPE_CHECKING, Any, Literal

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import CONF_SCAN_INTERVAL
from homeassistant.core import CALLBACK_TYPE, HassJob, HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed
from homeassistant.helpers.event import async_call_later
from homeassistant.helpers.storage import Store
from homeassistant.helpers.update_coordinator import DataUpdateCoordinator, UpdateFailed
from homeassistant.util import dt as dt_util

from .backends.errors import (
    LlmServerAuthenticationError,
    LlmServerConnectionError,
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerTimeoutError,
)
from .backends.ollama import GENERATION_TIMEOUT, OllamaClient
from .backends.types import InstalledModel, ResidentModel
from .const import (
    DEFAULT_SCAN_INTERVAL,
    DOMAIN,
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
    INSTALLED_REFRESH_INTERVAL,
    LOGGER,
    SETTLING_SCAN_INTERVAL,
    STORAGE_VERSION,
    STORE_DELAY,
)
from .residency import ModelLoaded, Phase, ResidencyTracker
from .server_url import redact_url
from .ttft import Classification, ModelTiming, Stage, StageBreakdown, Verdict, breakdown, judge

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
        self._store = _store(hass, entry.entry_id)
        self._timings: dict[str, ModelTiming] = {}
        # Models our own probe loaded, until when (monotonic): the polls that see that load
        # report no second cold start. Past the deadline a load is someone else's.
        self._probe_loads: dict[str, float] = {}
        self._installed: dict[str, InstalledModel] = {}
        self._installed_fetched: float | None = None
        self._version: str | None = None
        self._unreachable = False
        # While a model loads the server is polled every SETTLING_SCAN_INTERVAL by this
        # one-shot timer, armed after each poll; the coordinator's own interval stays the
        # normal one (Home Assistant rounds it to whole seconds, so a sub-second interval
        # would fire back to back).
        self._fast_poll_job = HassJob(
            self._async_fast_poll, f"{DOMAIN} {entry.title} fast poll", cancel_on_shutdown=True
        )
        self._unsub_fast_poll: CALLBACK_TYPE | None = None

    async def _async_setup(self) -> None:
        """Read what earlier runs measured; a damaged record is dropped, not fatal."""
        stored = await self._store.async_load() or {}
        models = stored.get("models")
        for name, values in (models if isinstance(models, dict) else {}).items():
            try:
                self._timings[name] = ModelTiming.from_dict(values)
            except ValueError as err:
                LOGGER.warning("Ignoring the stored measurements of %s: %s", name, err)

    async def async_shutdown(self) -> None:
        """Stop polling and write what was measured (the entry unloads)."""
        self._cancel_fast_poll()
        await super().async_shutdown()
        if self._timings:
            await self._store.async_save(self._data_to_store())

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
        """Poll again SETTLING_SCAN_INTERVAL after this poll, while something settles."""
        self._cancel_fast_poll()
        if self._tracker.settling and not self.config_entry.pref_disable_polling:
            self._unsub_fast_poll = async_call_later(
                self.hass, SETTLING_SCAN_INTERVAL, self._fast_poll_job
            )

    async def _async_fast_poll(self, _now: datetime) -> None:
        self._unsub_fast_poll = None
        await self.async_refresh()

    async def _async_update_data(self) -> ServerSnapshot:
        # Whatever started this poll, the next fast one is counted from its end.
        self._cancel_fast_poll()
        settling = self._tracker.settling
        try:
            # A settling poll only follows loads; the version is checked on regular polls.
            version = self._version if settling and self._version else await self.client.version()
            resident = await self.client.running_models()
            if self._installed_due(resident):
                self._installed = {m.name: m for m in await self.client.installed_models()}
                self._installed_fetched = time.monotonic()
        except LlmServerAuthenticationError as err:
            raise ConfigEntryAuthFailed(
                translation_domain=DOMAIN, translation_key="invalid_auth"
            ) from err
        except LlmServerError as err:
            # No fast polling of a server that is down, even if it went down mid-load.
            self._unreachable = self._unreachable or isinstance(err, LlmServerConnectionError)
            raise _update_failed(err, redact_url(self.client.base_url)) from err

        restarted = self._note_restart(version)
        now, monotonic = self.utcnow(), time.monotonic()
        changes = self._tracker.observe(
            resident, now=now, monotonic=monotonic, server_restarted=restarted
        )
        by_name = {m.name: m for m in resident}
        for model, deadline in list(self._probe_loads.items()):
            # A finished probe's model that left memory: whoever loads it next is not us.
            if deadline != math.inf and model not in by_name:
                del self._probe_loads[model]
        for change in changes:
            if isinstance(change, ModelLoaded):
                self._note_load(change)
            else:
                self._fire(EVENT_MODEL_UNLOADED, model=change.model, reason=change.reason.value)
        self._arm_fast_poll()
        return ServerSnapshot(
            version=version,
            resident=by_name,
            installed=dict(self._installed),
            loading=frozenset(
                m.name for m in resident if self._tracker.phase(m.name) is Phase.LOADING
            ),
            timings=dict(self._timings),
            polled_at=now,
        )

    def _note_load(self, change: ModelLoaded) -> None:
        """Record a load seen by polling and fire its events."""
        model = change.model
        if change.load_seconds is not None:
            timing = self._timings.get(model, ModelTiming())
            self._timings[model] = replace(timing, load_seconds=change.load_seconds)
            self._store.async_delay_save(self._data_to_store, STORE_DELAY)
        self._fire(EVENT_MODEL_LOADED, model=model, load_seconds=change.load_seconds)
        probe_deadline = self._probe_loads.pop(model, None)
        if probe_deadline is not None and time.monotonic() <= probe_deadline:
            return
        self._fire(
            EVENT_COLD_START,
            model=model,
            source="passive",
            ttft_ms=None,
            dominant_stage=Stage.LOAD.value,
            load_seconds=change.load_seconds,
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
        model = self.resolve_model(model)
        was_resident = model in self.data.resident
        if not was_resident:
            # Polls during the probe may see its load end: that load is the probe's.
            self._probe_loads[model] = math.inf
        try:
            reply = await self.client.timed_generation(
                api, model, prompt, options=options, timeout=timeout
            )
        except LlmServerError:
            self._probe_loads.pop(model, None)
            raise
        if not was_resident:
            # The polls right after the probe may still see its load; later ones may not.
            window = 2 * self.normal_interval.total_seconds() + 5
            self._probe_loads[model] = time.monotonic() + window
        sample = breakdown(reply)
        timing = self._timings.get(model, ModelTiming())
        verdict = judge(sample, was_resident=was_resident, baseline=timing.baseline)
        self._timings[model] = timing.with_probe(sample, verdict, self.utcnow())
        self._store.async_delay_save(self._data_to_store, STORE_DELAY)
        if verdict.classification is Classification.COLD:
            self._fire(
                EVENT_COLD_START,
                model=model,
                source="probe",
                ttft_ms=sample.ttft_ms,
                dominant_stage=verdict.dominant_stage.value,
                load_seconds=round(sample.queue_and_load_ms / 1000, 3),
            )
        self.async_set_updated_data(replace(self.data, timings=dict(self._timings)))
        # The probe may have loaded the model: show its residency now, not at the next poll.
        await self.async_request_refresh()
        return sample, verdict

    def _installed_due(self, resident: tuple[ResidentModel, ...]) -> bool:
        if self._installed_fetched is None or any(m.name not in self._installed for m in resident):
            return True
        age = time.monotonic() - self._installed_fetched
        return age >= INSTALLED_REFRESH_INTERVAL.total_seconds()

    def _note_restart(self, version: str) -> bool:
        """Fire the restart event when the server came back or changed version."""
        previous, self._version = self._version, version
        came_back, self._unreachable = self._unreachable, False
        changed = previous is not None and previous != version
        if not (came_back or changed):
            return False
        self._fire(
            EVENT_SERVER_RESTARTED,
            reason="version_changed" if changed else "reconnected",
            version=version,
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

    def _data_to_store(self) -> dict[str, Any]:
        return {"models": {name: timing.as_dict() for name, timing in self._timings.items()}}


def _store(hass: HomeAssistant, entry_id: str) -> Store[dict[str, Any]]:
    return Store(hass, STORAGE_VERSION, f"{DOMAIN}.{entry_id}")


async def async_remove_stored_data(hass: HomeAssistant, entry_id: str) -> None:
    """Delete what an entry measured and stored (the entry is being removed)."""
    await _store(hass, entry_id).async_remove()


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
