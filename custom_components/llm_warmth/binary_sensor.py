"""Binary sensors: is the server reachable, is a model resident."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, override

from homeassistant.components.binary_sensor import (
    BinarySensorEntity,
    BinarySensorEntityDescription,
)
from homeassistant.components.binary_sensor.const import BinarySensorDeviceClass
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .data import LlmWarmthConfigEntry
from .entity import (
    GpuEntity,
    ModelEntity,
    ServerEntity,
    async_add_gpu_entities,
    async_add_model_entities,
)

PARALLEL_UPDATES = 0

CONNECTIVITY = BinarySensorEntityDescription(
    key="connectivity",
    device_class=BinarySensorDeviceClass.CONNECTIVITY,
    entity_category=EntityCategory.DIAGNOSTIC,
)
RESIDENT = BinarySensorEntityDescription(key="resident", translation_key="resident")
HEADROOM_LOW = BinarySensorEntityDescription(
    key="gpu_headroom_low",
    translation_key="gpu_headroom_low",
    device_class=BinarySensorDeviceClass.PROBLEM,
)


async def async_setup_entry(
    hass: HomeAssistant,
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Set up the connectivity sensor and, as models appear, their resident sensors."""
    coordinator = entry.runtime_data.coordinator
    async_add_entities([ServerConnectivity(coordinator, CONNECTIVITY)])
    async_add_model_entities(
        entry, async_add_entities, lambda model: [ModelResident(coordinator, RESIDENT, model)]
    )
    async_add_gpu_entities(
        entry, async_add_entities, lambda gpu, uuid: [GpuHeadroomLow(gpu, HEADROOM_LOW, uuid)]
    )


class ServerConnectivity(ServerEntity, BinarySensorEntity):
    """On while the server answers polls; never unavailable itself."""

    @property
    def available(self) -> bool:
        """Return True: this sensor reports the outage instead of going unavailable."""
        return True

    @property
    def is_on(self) -> bool:
        """Return True when the last poll succeeded."""
        return self.coordinator.last_update_success


class ModelResident(ModelEntity, BinarySensorEntity):
    """On while the model is in the server's memory (loading included)."""

    @property
    @override
    def is_on(self) -> bool:
        """Return True while the model is resident (loading or loaded)."""
        return self.model in self.coordinator.data.held

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, Any]:
        """Return whether the model is still loading, and the server's word for its state."""
        model = self.coordinator.data.resident.get(self.model)
        return {
            "loading": self.model in self.coordinator.data.loading,
            "state": model.state.value if model else None,
        }


class GpuHeadroomLow(GpuEntity, BinarySensorEntity):
    """On while the GPU has less free memory than the household reserve."""

    @property
    def is_on(self) -> bool | None:
        """Return True when the headroom is negative."""
        return self.reading.memory.headroom_low

    @property
    def extra_state_attributes(self) -> Mapping[str, Any]:
        """Return the reserve this sensor compares with."""
        return {"reserve_bytes": self.coordinator.reserve_bytes}
