"""What the household needs of the GPU now, and whether a load would starve it.

Read from the GPU coordinator (headroom after the reserve, the other processes on the
GPUs) and the protected entities. The household guard decides on it; the controller,
the idle profiler and the diagnosis ask it before they load anything.
"""

from __future__ import annotations

from typing import Final

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import CONF_URL, STATE_ON
from homeassistant.core import HomeAssistant, State, callback
from homeassistant.exceptions import HomeAssistantError

from .const import CONF_HOST, CONF_PROTECTED_ENTITIES, DOMAIN, GIB
from .coordinator import LlmWarmthCoordinator
from .core.guard import GpuNeed, Household, Refusal, admit, admit_hold
from .core.server_url import host_of
from .data import LlmWarmthConfigEntry
from .gpu_coordinator import GpuCoordinator

# States of a protected entity that mean "the GPU is needed now" (besides a number > 0).
_NEEDS_GPU_STATES: Final = frozenset({STATE_ON, "playing", "recording", "streaming"})


def _needs_gpu(state: State | None) -> bool:
    """Return True when a protected entity says the GPU is needed now."""
    if state is None:
        return False
    if state.state in _NEEDS_GPU_STATES:
        return True
    try:
        return float(state.state) > 0
    except ValueError:
        return False


def entry_host(entry: ConfigEntry) -> str:
    """Return the host whose GPU an entry's server uses: as set, else its URL's host."""
    host = entry.options.get(CONF_HOST)
    if isinstance(host, str) and host.strip():
        return host.strip().lower()
    return host_of(str(entry.data.get(CONF_URL, "")))


def _gib(value: int | None) -> str:
    return "?" if value is None else f"{value / GIB:.1f}"


class HouseholdWatch:
    """Reads what one entry's household needs of the GPU."""

    def __init__(
        self,
        hass: HomeAssistant,
        entry: LlmWarmthConfigEntry,
        coordinator: LlmWarmthCoordinator,
        gpu: GpuCoordinator | None,
    ) -> None:
        """Follow the entry's host and read its protected entities."""
        self._hass = hass
        self._coordinator = coordinator
        self.gpu = gpu
        self.host = entry_host(entry)
        self.protected: list[str] = []
        self.read_protected()

    @callback
    def read_protected(self) -> bool:
        """Read the household services of this server's host; return True when they changed.

        Those set on every LLM Warmth entry (in use) whose server runs on the same host: a
        service on one host never holds back the models of another. Read at the start and
        whenever an entry changes (the guard asks), not on every poll.
        """
        found: list[str] = []
        for entry in self._hass.config_entries.async_entries(
            DOMAIN, include_ignore=False, include_disabled=False
        ):
            if entry_host(entry) != self.host:
                continue
            found += [e for e in entry.options.get(CONF_PROTECTED_ENTITIES, []) if e not in found]
        changed = found != self.protected
        self.protected = found
        return changed

    def household(self) -> Household:
        """Return what the household needs now."""
        protected = tuple(e for e in self.protected if _needs_gpu(self._hass.states.get(e)))
        gpu = self.gpu
        readings = (
            list(gpu.data.gpus.values())
            if gpu is not None and gpu.last_update_success and gpu.data is not None
            else []
        )
        headrooms = [r.memory.headroom for r in readings if r.memory.headroom is not None]
        others = sorted(
            {p.name or str(p.pid) for r in readings for p in r.memory.other_processes or ()}
        )
        return Household(
            lowest_headroom=min(headrooms) if headrooms else None,
            best_headroom=max(headrooms) if headrooms else None,
            reserve=gpu.reserve_bytes if gpu is not None else 0,
            protected_on=protected,
            other_processes=tuple(others),
        )

    def need(self) -> GpuNeed | None:
        """Return why the household needs the GPU now (pins and probes wait meanwhile)."""
        return self.household().need

    def model_size(self, model: str) -> int | None:
        """Return the memory ``model`` held when last resident, else its file's size.

        The file size is an estimate that leaves out the context's cache.
        """
        coordinator = self._coordinator
        if (size := coordinator.last_sizes.get(model)) is not None:
            return size
        installed = coordinator.data.installed.get(model)
        return installed.size if installed is not None else None

    def check(self, model: str, *, force: bool) -> None:
        """Raise a translated error when loading ``model`` would starve the household."""
        if force:
            return
        household = self.household()
        refusal = admit(
            model,
            self.model_size(model),
            household,
            resident=model in self._coordinator.data.held,
        )
        if refusal is not None:
            raise _refused(refusal, household)

    def check_hold(self, model: str) -> None:
        """Raise a translated error when keeping ``model`` longer would starve the household."""
        household = self.household()
        refusal = admit_hold(model, household)
        if refusal is not None:
            raise _refused(refusal, household)


def _refused(refusal: Refusal, household: Household) -> HomeAssistantError:
    if refusal.need is GpuNeed.PROTECTED_ENTITY:
        return HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="guard_protected",
            translation_placeholders={"model": refusal.model, "entity": refusal.entity or ""},
        )
    return HomeAssistantError(
        translation_domain=DOMAIN,
        translation_key="guard_headroom",
        translation_placeholders={
            "model": refusal.model,
            "size": _gib(refusal.size),
            "headroom": _gib(refusal.headroom),
            "free": _gib(
                None if refusal.headroom is None else refusal.headroom + household.reserve
            ),
            "reserve": _gib(household.reserve),
        },
    )
