"""The household guard's sensor: the minutes the house needed the GPU while a pin held it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import override

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.const import EntityCategory, UnitOfTime

from .entity import Followed, ServerEntity

GPU_CONTENTION = SensorEntityDescription(
    key="gpu_contention",
    translation_key="gpu_contention",
    device_class=SensorDeviceClass.DURATION,
    state_class=SensorStateClass.TOTAL_INCREASING,
    native_unit_of_measurement=UnitOfTime.MINUTES,
    suggested_display_precision=1,
    entity_category=EntityCategory.DIAGNOSTIC,
)


class GpuContention(ServerEntity, SensorEntity):
    """Minutes during which the household needed the GPU while a pin held a model in it.

    Counted by the household guard, poll to poll, kept across restarts: the time its
    releases were (or would have been) needed.
    """

    @property
    @override
    def available(self) -> bool:
        """Return True: the count is the integration's own, the server need not answer."""
        return True

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the guard."""
        return (self.coordinator.config_entry.runtime_data.guard,)

    @property
    @override
    def native_value(self) -> float:
        """Return the contended minutes so far."""
        guard = self.coordinator.config_entry.runtime_data.guard
        return round(guard.guard.record.contended_seconds / 60, 2)

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return the releases of the last day."""
        guard = self.coordinator.config_entry.runtime_data.guard
        now = self.coordinator.utcnow()
        return {"releases_last_day": guard.guard.releases_within_a_day(now)}
