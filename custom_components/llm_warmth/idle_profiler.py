"""Runs the idle profiles of one server (``core.idle_profile``): schedules, probes, stores.

A probe is due that long after the model's last use; a use seen in between (the model
loaded by someone, or its Ollama expiry moved on: any request resets it) restarts the
wait. No probe runs while the household guard says the house needs the GPU: it waits
five minutes and looks again. Profiles are its own section of the store
("idle_profiles"), so one survives a restart.
"""

from __future__ import annotations

from datetime import datetime
from typing import override

from homeassistant.core import CALLBACK_TYPE, HassJob, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.event import async_track_point_in_utc_time

from .agents import agent_context
from .const import LOGGER
from .coordinator import LlmWarmthCoordinator
from .core.backends.errors import LlmServerError
from .core.idle_profile import IdleProfile
from .core.idle_schedule import (
    RETRY,
    IdleWatch,
    fire_at,
    probe_due,
    probe_result,
    profiles_as_stored,
)
from .data import LlmWarmthConfigEntry
from .feature import Feature
from .household import HouseholdWatch
from .own_requests import OwnRequests
from .probe_prompts import DEFAULT_PROMPT, probe_options
from .storage import EntryStore, stored_records


class IdleProfiler(Feature):
    """Keeps each model's idle profile moving on its own timer."""

    entry: LlmWarmthConfigEntry

    def __init__(
        self,
        entry: LlmWarmthConfigEntry,
        store: EntryStore,
        coordinator: LlmWarmthCoordinator,
        household: HouseholdWatch,
        *,
        own_requests: OwnRequests,
    ) -> None:
        """Run the stored profiles; probe as ``own_requests`` unless the house needs the GPU."""
        super().__init__(coordinator.hass, entry, store, "idle_profiles")
        self._coordinator = coordinator
        self._own = own_requests
        self._household = household
        # Profiles under way or done, by model.
        self.profiles: dict[str, IdleProfile] = stored_records(
            self.stored, IdleProfile.from_dict, "idle profile"
        )
        self._timers: dict[str, CALLBACK_TYPE] = {}
        # Once stopped (the entry unloads), nothing is scheduled again: a probe that was
        # running is cancelled with the entry's background tasks.
        self._stopped = False
        # What the last poll showed of each profiled model.
        self._seen = IdleWatch()

    @override
    def as_stored(self) -> dict[str, object]:
        """Return the profiles, by model."""
        return profiles_as_stored(self.profiles)

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Schedule the stored profiles, watch for uses; return what stops it all."""
        for model in self.profiles:
            self._schedule(model)
        unsub = self._coordinator.async_add_poll_listener(self._async_polled)

        @callback
        def stop() -> None:
            self._stopped = True
            unsub()
            for cancel in self._timers.values():
                cancel()
            self._timers.clear()

        return stop

    @callback
    def start(self, model: str) -> IdleProfile:
        """Start (or start again) the profile of ``model``: its 0-minute probe is due now."""
        profile = IdleProfile(model=model, last_use=self._coordinator.utcnow())
        self.profiles[model] = profile
        self.async_changed()
        self._schedule(model)
        return profile

    @callback
    def stop(self, model: str) -> IdleProfile | None:
        """Stop and forget the profile of ``model``; return it."""
        if (cancel := self._timers.pop(model, None)) is not None:
            cancel()
        profile = self.profiles.pop(model, None)
        self.async_changed()
        return profile

    @callback
    def _schedule(self, model: str, at: datetime | None = None) -> None:
        """Set the timer of ``model``'s profile: ``at``, else when its next probe is due."""
        if (cancel := self._timers.pop(model, None)) is not None:
            cancel()
        if self._stopped:
            return
        when = fire_at(self.profiles.get(model), at, self._coordinator.utcnow())
        if when is None:
            return
        job = HassJob(self._due, f"llm_warmth idle profile {model}", cancel_on_shutdown=True)
        self._timers[model] = async_track_point_in_utc_time(self.hass, job, when)

    @callback
    def _async_polled(self) -> None:
        """Note the uses the poll shows: a model loaded anew, or its expiry moved on."""
        coordinator = self._coordinator
        if not coordinator.last_update_success or coordinator.data is None:
            return
        used = self._seen.polled(
            self.profiles, coordinator.data.held, coordinator.data.probing, coordinator.utcnow()
        )
        for model, profile in used.items():
            self.profiles[model] = profile
            self._schedule(model)

    @callback
    def _due(self, _now: datetime) -> None:
        """Run the due probes as a task of the entry's (the timer fired)."""
        if self._stopped:
            return
        self.entry.async_create_background_task(
            self.hass, self._async_due(), f"{self._coordinator.name} idle profile probes"
        )

    async def _async_due(self) -> None:
        """Run the probes that are due."""
        coordinator = self._coordinator
        now = coordinator.utcnow()
        for model, profile in list(self.profiles.items()):
            if not probe_due(profile, now, probing=model in coordinator.data.probing):
                continue
            self._timers.pop(model, None)
            if self._household.need() is not None:
                self._schedule(model, now + RETRY)  # the household needs the GPU now
                continue
            # Asked as its agent asks (its num_ctx): a probe that reloads the model would
            # measure a load the agent would not have had.
            options = probe_options(agent_context(self.entry, model)[0])
            try:
                probe = await self._own.async_probe(model, DEFAULT_PROMPT, options=options)
            except (LlmServerError, HomeAssistantError) as err:
                LOGGER.warning("%s: idle profile of %s: %s", coordinator.name, model, err)
                self._schedule(model, now + RETRY)
                continue
            self.profiles[model] = profile.measured(
                probe_result(profile, probe, coordinator.utcnow())
            )
            self._seen.forget(model)  # its own probe is no use: a new baseline
            self.async_changed()
            self._schedule(model)
