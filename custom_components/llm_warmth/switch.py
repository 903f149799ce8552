"""Switches: "Keep warm" per model, the pin that keeps it resident (on) or none (off)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, override

from homeassistant.components.switch import SwitchEntity, SwitchEntityDescription
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util import dt as dt_util

from .agents import agent_context
from .core.backends.base import GENERATION_TIMEOUT
from .core.pins import Pin
from .core.server_url import redact_url
from .data import LlmWarmthConfigEntry
from .entity import Followed, ModelEntity, async_add_model_entities
from .errors import translated_errors
from .usage_entities import async_add_usage_switches
from .voice_entities import WARM_ON_WAKE, WarmOnWakeSwitch, async_add_voice_entities

# Turning it on loads the model: one at a time per server is plenty.
PARALLEL_UPDATES = 1

KEEP_WARM = SwitchEntityDescription(key="keep_warm", translation_key="keep_warm")


async def async_setup_entry(
    hass: HomeAssistant,
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add a keep-warm switch for each model, a warm-on-wake switch for each pipeline."""
    coordinator = entry.runtime_data.coordinator
    async_add_model_entities(
        entry, async_add_entities, lambda model: [KeepWarmSwitch(coordinator, KEEP_WARM, model)]
    )
    async_add_voice_entities(
        entry,
        async_add_entities,
        lambda pipeline: [WarmOnWakeSwitch(coordinator, WARM_ON_WAKE, pipeline)],
    )
    async_add_usage_switches(entry, async_add_entities)


class KeepWarmSwitch(ModelEntity, SwitchEntity):
    """On while the model is pinned: the same pin as ``llm_warmth.pin`` / ``unpin``.

    Turned on here, the pin has no end and priority 0, and loads the model with its
    agent's context.
    """

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the pins."""
        return (self.coordinator.config_entry.runtime_data.pins,)

    @callback
    @override
    def _handle_coordinator_update(self) -> None:
        """Write the state; in the context of the action that pins or unpins, if one does."""
        if (context := self.coordinator.config_entry.runtime_data.pins.context) is not None:
            self.async_set_context(context)
        super()._handle_coordinator_update()

    @property
    def _pin(self) -> Pin | None:
        return self.coordinator.config_entry.runtime_data.pins.get(self.model)

    @property
    @override
    def is_on(self) -> bool:
        """Return True while the model is pinned (also while the guard released it)."""
        return self._pin is not None

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return until when, with which priority, and whether the guard released it."""
        pin = self._pin
        return {
            "until": pin.until.isoformat() if pin and pin.until else None,
            "priority": pin.priority if pin else None,
            "released": pin.released if pin else None,
        }

    @override
    async def async_turn_on(self, **kwargs: Any) -> None:
        """Pin the model until turned off; load it now."""
        entry = self.coordinator.config_entry
        num_ctx, _agent = agent_context(entry, self.model)
        pin = Pin(model=self.model, num_ctx=num_ctx, since=dt_util.utcnow())
        entry.runtime_data.household.check(self.model, force=False)
        with translated_errors(self.hass, entry, self._placeholders()):
            await entry.runtime_data.controller.pin(pin, timeout=GENERATION_TIMEOUT)

    @override
    async def async_turn_off(self, **kwargs: Any) -> None:
        """Unpin the model and hand it back to the server's own rule."""
        entry = self.coordinator.config_entry
        with translated_errors(self.hass, entry, self._placeholders()):
            await entry.runtime_data.controller.unpin(
                self.model, evict=False, timeout=GENERATION_TIMEOUT
            )

    def _placeholders(self) -> dict[str, str]:
        return {
            "model": self.model,
            "url": redact_url(self.coordinator.config_entry.runtime_data.client.base_url),
        }
