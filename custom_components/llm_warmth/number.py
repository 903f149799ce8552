"""Numbers: each model's TTFT target, which its "Within TTFT target" sensor compares with."""

from __future__ import annotations

from typing import override

from homeassistant.components.number import NumberEntity, NumberEntityDescription, NumberMode
from homeassistant.const import EntityCategory, UnitOfTime
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .const import DEFAULT_TTFT_TARGET
from .data import LlmWarmthConfigEntry
from .entity import ModelEntity, async_add_model_entities

PARALLEL_UPDATES = 0

TTFT_TARGET = NumberEntityDescription(
    key="ttft_target",
    translation_key="ttft_target",
    entity_category=EntityCategory.CONFIG,
    native_min_value=0.1,
    native_max_value=600,
    native_step=0.1,
    native_unit_of_measurement=UnitOfTime.SECONDS,
    mode=NumberMode.BOX,
)


async def async_setup_entry(
    hass: HomeAssistant,
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add a TTFT target for each model the server has."""
    coordinator = entry.runtime_data.coordinator
    async_add_model_entities(
        entry, async_add_entities, lambda model: [TtftTarget(coordinator, TTFT_TARGET, model)]
    )


class TtftTarget(ModelEntity, NumberEntity):
    """How fast the model's first token should come (seconds); stored with the entry."""

    @property
    @override
    def native_value(self) -> float:
        """Return the target (the default until one is set)."""
        return self.coordinator.ttft_targets.get(self.model, DEFAULT_TTFT_TARGET)

    @override
    async def async_set_native_value(self, value: float) -> None:
        """Keep the new target and let the sensors compare with it."""
        self.coordinator.ttft_targets[self.model] = value
        self.coordinator.async_save_soon()
        self.coordinator.async_update_listeners()
