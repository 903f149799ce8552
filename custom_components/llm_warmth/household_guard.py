"""The household guard in Home Assistant: applies ``core.guard``'s decisions to the pins.

After each poll, each GPU reading and each change of a protected entity it asks
``core.guard`` what to do: it releases a pin (through the controller's one eviction
path, keeping the pin to apply it again) or re-applies the released ones, fires their
events, raises the repair issue when pins are released again and again, and counts
the contended minutes. Its record is its own section of the store ("guard").
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final, override

from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryChange,
)
from homeassistant.core import CALLBACK_TYPE, Event, EventStateChangedData, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.event import async_track_state_change_event

from .const import (
    CONF_GUARD_CLEAR_MINUTES,
    DEFAULT_GUARD_CLEAR_MINUTES,
    DOMAIN,
    EVENT_PIN_REAPPLIED,
    EVENT_PIN_RELEASED,
    LOGGER,
)
from .controller import ResidencyController
from .coordinator import LlmWarmthCoordinator
from .core.backends.errors import LlmServerError
from .core.guard import (
    GpuNeed,
    Guard,
    GuardRecord,
    Household,
    Reapply,
    Release,
    release_data,
    releases_repair,
    stored_record,
)
from .data import LlmWarmthConfigEntry
from .devices import fire_event
from .feature import Feature
from .household import HouseholdWatch
from .pins import Pins
from .storage import EntryStore

# How long a release waits for the server to let the model go.
RELEASE_TIMEOUT: Final = 60.0


def releases_issue_id(entry_id: str) -> str:
    """Return the id of the repair issue about pins released again and again."""
    return f"pins_released_often_{entry_id}"


def _record(stored: object) -> GuardRecord:
    """Return the guard's stored record; log and set aside a damaged one."""
    record, damaged = stored_record(stored)
    if damaged is not None:
        LOGGER.warning("Ignoring the household guard's stored record: %s", damaged)
    return record


class HouseholdGuard(Feature):
    """One server's guard: between its pins and the household's other GPU users."""

    entry: LlmWarmthConfigEntry

    def __init__(
        self,
        entry: LlmWarmthConfigEntry,
        store: EntryStore,
        *,
        coordinator: LlmWarmthCoordinator,
        household: HouseholdWatch,
        pins: Pins,
        controller: ResidencyController,
    ) -> None:
        """Read the clear time from the entry's options and the record from the store."""
        super().__init__(coordinator.hass, entry, store, "guard")
        self._coordinator = coordinator
        self._household = household
        self._pins = pins
        self._controller = controller
        minutes = entry.options.get(CONF_GUARD_CLEAR_MINUTES, DEFAULT_GUARD_CLEAR_MINUTES)
        self.guard = Guard(timedelta(minutes=minutes), _record(self.stored))
        self._releasing: set[str] = set()
        # What stops following the protected entities.
        self._tracked: CALLBACK_TYPE | None = None
        self._shown_minutes = round(self.guard.contended_minutes, 1)

    @override
    def as_stored(self) -> dict[str, object]:
        """Return the guard's record."""
        return self.guard.record.as_dict()

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Decide after each poll and whenever a protected entity changes; return unsub."""
        unsubs = [self._coordinator.async_add_poll_listener(self._async_decide)]
        if (gpu := self._household.gpu) is not None:
            unsubs.append(gpu.async_add_listener(self._async_decide))
        # The host's services may be set on another entry of the host: followed anew
        # whenever an entry changes.
        unsubs.append(
            async_dispatcher_connect(self.hass, SIGNAL_CONFIG_ENTRY_CHANGED, self._retrack)
        )
        self._track()

        @callback
        def stop() -> None:
            for unsub in unsubs:
                unsub()
            self._untrack()

        return stop

    @callback
    def _track(self) -> None:
        """Follow the host's protected entities (as they are now)."""
        self._untrack()
        if protected := self._household.protected:
            self._tracked = async_track_state_change_event(
                self.hass, protected, self._async_changed
            )

    @callback
    def _untrack(self) -> None:
        if self._tracked is not None:
            self._tracked()
            self._tracked = None

    @callback
    def _retrack(self, _change: ConfigEntryChange, entry: ConfigEntry) -> None:
        if entry.domain == DOMAIN and self._household.read_protected():
            self._track()
            self._async_decide()

    @callback
    def _async_changed(self, _event: Event[EventStateChangedData]) -> None:
        self._async_decide()

    @callback
    def _async_decide(self) -> None:
        coordinator = self._coordinator
        if not coordinator.last_update_success or coordinator.data is None:
            return
        now = coordinator.utcnow()
        household = self._household.household()
        decisions = self.guard.decide(self._pins.pins, set(coordinator.data.held), household, now)
        reapplied = [d.model for d in decisions if isinstance(d, Reapply)]
        released = [
            d for d in decisions if isinstance(d, Release) and d.model not in self._releasing
        ]
        self._pins.reapply(reapplied)
        for model in reapplied:
            fire_event(
                coordinator.hass,
                coordinator.config_entry,
                EVENT_PIN_REAPPLIED,
                model=model,
                host=self._household.host,
            )
        for release in released:
            self._pins.release([release.model], release.need.value, now)
            self._releasing.add(release.model)
            self.entry.async_create_background_task(
                self.hass,
                self._async_release(release.model, release.need, household),
                f"llm_warmth release {release.model}",
            )
        minutes = round(self.guard.contended_minutes, 1)
        if decisions:
            self.async_changed(save_now=True)
        elif minutes != self._shown_minutes:
            self.async_changed()
        self._shown_minutes = minutes
        self._update_repair(now)

    async def _async_release(self, model: str, need: GpuNeed, household: Household) -> None:
        coordinator = self._coordinator
        data = release_data(need, household)
        LOGGER.info(
            "%s: released the pin of %s: %s",
            coordinator.name,
            model,
            data["entity"] or "headroom low",
        )
        fire_event(
            coordinator.hass,
            coordinator.config_entry,
            EVENT_PIN_RELEASED,
            model=model,
            host=self._household.host,
            **data,
        )
        try:
            # The one eviction path; the released pin stays, to be applied again.
            await self._controller.evict([model], timeout=RELEASE_TIMEOUT, keep_pins=True)
        except LlmServerError as err:
            LOGGER.warning("%s: could not unload %s: %s", coordinator.name, model, err)
        finally:
            self._releasing.discard(model)

    def _update_repair(self, now: datetime) -> None:
        """Raise the repair about pins released again and again, or clear it."""
        issue_id = releases_issue_id(self.entry.entry_id)
        placeholders = releases_repair(
            self.guard.releases_within_a_day(now), self.guard.contended_minutes, self.entry.title
        )
        if placeholders is None:
            ir.async_delete_issue(self.hass, DOMAIN, issue_id)
            return
        ir.async_create_issue(
            self.hass,
            DOMAIN,
            issue_id,
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key="pins_released_often",
            translation_placeholders=placeholders,
        )
