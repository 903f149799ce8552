"""Numbers: each model's TTFT target, which its "Within TTFT target" sensor compares with."""

from __future__ import annotations

from collections.abc import Iterable
from typing import override

from homeassistant.components.number import NumberEntity, NumberEntityDescription, NumberMode
from homeassistant.const import EntityCategory, UnitOfTime
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .data import LlmWarmthConfigEntry
from .entity import Followed, ModelEntity, async_add_model_entities
from .ttft_targets import TTFT_TARGET_MAX, TTFT_TARGET_MIN

PARALLEL_UPDATES = 0

TTFT_TARGET = NumberEntityDescription(
    key="ttft_target",
    translation_key="ttft_target",
    entity_category=EntityCategory.CONFIG,
    native_min_value=TTFT_TARGET_MIN,
    native_max_value=TTFT_TARGET_MAX,
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

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the targets."""
        return (self.coordinator.config_entry.runtime_data.ttft_targets,)

    @property
    @override
    def native_value(self) -> float:
        """Return the target (the default until one is set)."""
        return self.coordinator.config_entry.runtime_data.ttft_targets.seconds(self.model)

    @override
    async def async_set_native_value(self, value: float) -> None:
        """Keep the new target (the sensors that compare with it follow)."""
        self.coordinator.config_entry.runtime_data.ttft_targets.set(self.model, value)
