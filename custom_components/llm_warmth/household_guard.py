"""The household guard in Home Assistant: reads the house, applies ``core.guard``'s decisions.

It builds the household's state from the GPU coordinator (headroom after the reserve,
the other processes on the GPUs) and the protected entities, refuses loads that would
starve the house, releases and re-applies pins, fires their events, raises the repair
issue when pins are released again and again, and counts the contended minutes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from homeassistant.const import STATE_ON
from homeassistant.core import (
    CALLBACK_TYPE,
    Event,
    EventStateChangedData,
    HomeAssistant,
    State,
    callback,
)
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.event import async_track_state_change_event

from .const import (
    CONF_GUARD_CLEAR_MINUTES,
    CONF_PROTECTED_ENTITIES,
    DEFAULT_GUARD_CLEAR_MINUTES,
    DOMAIN,
    EVENT_PIN_REAPPLIED,
    EVENT_PIN_RELEASED,
    GIB,
    LOGGER,
)
from .controller import ResidencyController
from .coordinator import LlmWarmthCoordinator
from .core.backends.errors import LlmServerError
from .core.guard import GpuNeed, Guard, Household, Reapply, Refusal, admit
from .data import LlmWarmthConfigEntry

# How long a release waits for the server to let the model go.
RELEASE_TIMEOUT: Final = 60.0
# Releases within a day from which a repair issue says the pins and the house collide.
RELEASES_BEFORE_REPAIR: Final = 3
# States of a protected entity that mean "the GPU is needed now" (besides a number > 0).
_NEEDS_GPU_STATES: Final = frozenset({STATE_ON, "playing", "recording", "streaming"})


def releases_issue_id(entry_id: str) -> str:
    """Return the id of the repair issue about pins released again and again."""
    return f"pins_released_often_{entry_id}"


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


def _gib(value: int | None) -> str:
    return "?" if value is None else f"{value / GIB:.1f}"


class HouseholdGuard:
    """One server's guard: between its pins and the household's other GPU users."""

    def __init__(
        self,
        hass: HomeAssistant,
        entry: LlmWarmthConfigEntry,
        coordinator: LlmWarmthCoordinator,
        controller: ResidencyController,
    ) -> None:
        """Read the protected entities and the clear time from the entry's options."""
        self._hass = hass
        self._entry = entry
        self._coordinator = coordinator
        self._controller = controller
        self.protected: list[str] = list(entry.options.get(CONF_PROTECTED_ENTITIES, []))
        minutes = entry.options.get(CONF_GUARD_CLEAR_MINUTES, DEFAULT_GUARD_CLEAR_MINUTES)
        self.guard = Guard(timedelta(minutes=minutes), coordinator.guard_record)
        self._releasing: set[str] = set()
        self._shown_minutes = round(self.guard.contended_minutes, 1)

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Decide after each poll and whenever a protected entity changes; return unsub."""
        coordinator = self._coordinator
        unsubs = [coordinator.async_add_poll_listener(self._async_decide)]
        if (gpu := self._entry.runtime_data.gpu) is not None:
            unsubs.append(gpu.async_add_listener(self._async_decide))
        if self.protected:
            unsubs.append(
                async_track_state_change_event(self._hass, self.protected, self._async_changed)
            )
        self._controller.held_back = self.need

        @callback
        def stop() -> None:
            self._controller.held_back = None
            for unsub in unsubs:
                unsub()

        return stop

    @callback
    def _async_changed(self, _event: Event[EventStateChangedData]) -> None:
        self._async_decide()

    def household(self) -> Household:
        """Return what the household needs now."""
        protected = tuple(e for e in self.protected if _needs_gpu(self._hass.states.get(e)))
        gpu = self._entry.runtime_data.gpu
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
        """Return why the household needs the GPU now (pins wait meanwhile)."""
        return self.household().need

    def model_size(self, model: str) -> int | None:
        """Return the memory ``model`` held when last resident, else its file's size.

        The file size is an estimate that leaves out the context's cache.
        """
        if model in self._coordinator.last_sizes:
            return self._coordinator.last_sizes[model]
        installed = self._coordinator.data.installed.get(model)
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

    @callback
    def _async_decide(self) -> None:
        coordinator = self._coordinator
        if not coordinator.last_update_success or coordinator.data is None:
            return
        snapshot = coordinator.data
        now = coordinator.utcnow()
        household = self.household()
        decisions = self.guard.decide(coordinator.pins.pins, set(snapshot.held), household, now)
        for decision in decisions:
            if isinstance(decision, Reapply):
                coordinator.pins.reapply(decision.model)
                coordinator.fire(EVENT_PIN_REAPPLIED, model=decision.model)
            elif decision.model not in self._releasing:
                coordinator.pins.release(decision.model, decision.need.value, now)
                self._releasing.add(decision.model)
                self._entry.async_create_background_task(
                    self._hass,
                    self._async_release(decision.model, decision.need, household),
                    f"llm_warmth release {decision.model}",
                )
        if decisions:
            self._hass.async_create_task(coordinator.async_save_now())
            coordinator.async_update_listeners()
            self._controller.async_check_pins()
        elif round(self.guard.contended_minutes, 1) != self._shown_minutes:
            coordinator.async_save_soon()
            coordinator.async_update_listeners()
        self._shown_minutes = round(self.guard.contended_minutes, 1)
        self._update_repair(now)

    async def _async_release(self, model: str, need: GpuNeed, household: Household) -> None:
        coordinator = self._coordinator
        entity = household.protected_on[0] if household.protected_on else None
        LOGGER.info(
            "%s: released the pin of %s: %s", coordinator.name, model, entity or "headroom low"
        )
        coordinator.fire(
            EVENT_PIN_RELEASED,
            model=model,
            reason=need.value,
            entity=entity,
            headroom_gib=None
            if household.lowest_headroom is None
            else round(household.lowest_headroom / GIB, 2),
            reserve_gib=round(household.reserve / GIB, 2),
            processes=list(household.other_processes),
        )
        try:
            # The one eviction path; the released pin stays, to be applied again.
            await self._controller.evict([model], timeout=RELEASE_TIMEOUT, keep_pins=True)
        except LlmServerError as err:
            LOGGER.warning("%s: could not unload %s: %s", coordinator.name, model, err)
        finally:
            self._releasing.discard(model)

    def _update_repair(self, now: datetime) -> None:
        count = self.guard.releases_within_a_day(now)
        issue_id = releases_issue_id(self._entry.entry_id)
        if count < RELEASES_BEFORE_REPAIR:
            ir.async_delete_issue(self._hass, DOMAIN, issue_id)
            return
        ir.async_create_issue(
            self._hass,
            DOMAIN,
            issue_id,
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key="pins_released_often",
            translation_placeholders={
                "server": self._entry.title,
                "count": str(count),
                "minutes": f"{self.guard.contended_minutes:.0f}",
            },
        )


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
