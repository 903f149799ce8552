"""Binary sensors: is the server reachable, is a model resident."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import override

from homeassistant.components.binary_sensor import (
    BinarySensorEntity,
    BinarySensorEntityDescription,
)
from homeassistant.components.binary_sensor.const import BinarySensorDeviceClass
from homeassistant.const import EntityCategory, Platform
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .data import LlmWarmthConfigEntry
from .entity import (
    Followed,
    GpuEntity,
    ModelEntity,
    ServerEntity,
    async_add_gpu_entities,
    async_add_model_entities,
    models_with_registered,
)
from .usage_entities import async_add_usage_binary_sensors

PARALLEL_UPDATES = 0

CONNECTIVITY = BinarySensorEntityDescription(
    key="connectivity",
    device_class=BinarySensorDeviceClass.CONNECTIVITY,
    entity_category=EntityCategory.DIAGNOSTIC,
)
RESIDENT = BinarySensorEntityDescription(key="resident", translation_key="resident")
WITHIN_TTFT_TARGET = BinarySensorEntityDescription(
    key="within_ttft_target", translation_key="within_ttft_target"
)
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
    # Once the model was probed (or an earlier start registered it): no "unknown" before.
    probed = models_with_registered(hass, entry, {WITHIN_TTFT_TARGET.key}, Platform.BINARY_SENSOR)
    async_add_model_entities(
        entry,
        async_add_entities,
        lambda model: [WithinTtftTarget(coordinator, WITHIN_TTFT_TARGET, model)],
        when=lambda snapshot, model: (
            model in probed
            or ((t := snapshot.timings.get(model)) is not None and t.last is not None)
        ),
    )
    async_add_gpu_entities(
        entry, async_add_entities, lambda gpu, uuid: [GpuHeadroomLow(gpu, HEADROOM_LOW, uuid)]
    )
    async_add_usage_binary_sensors(entry, async_add_entities)


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
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return whether the model is still loading, and the server's word for its state."""
        model = self.coordinator.data.resident.get(self.model)
        return {
            "loading": self.model in self.coordinator.data.loading,
            "state": model.state.value if model else None,
        }


class WithinTtftTarget(ModelEntity, BinarySensorEntity):
    """On when the last probe and the idle profile met the model's TTFT target.

    The idle profile counts where one was measured. The attributes say whether the last
    cold probe was within it (the first reply after idle is the one people wait for), and
    after how long idle the profile broke it.
    """

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the model's TTFT target and idle profile."""
        data = self.coordinator.config_entry.runtime_data
        return (data.ttft_targets, data.profiler)

    def _target_ms(self) -> float:
        return 1000 * self.coordinator.config_entry.runtime_data.ttft_targets.seconds(self.model)

    @property
    @override
    def is_on(self) -> bool | None:
        """Return True when the last probe's TTFT was within the target."""
        timing = self.coordinator.data.timings.get(self.model)
        if timing is None or timing.last is None:
            return None
        return timing.last.ttft_ms <= self._target_ms() and self._profile_breaks() is None

    def _profile_breaks(self) -> int | None:
        """Return after how many idle minutes the idle profile broke the target, if it did."""
        profile = self.coordinator.config_entry.runtime_data.profiler.profiles.get(self.model)
        results = profile.results if profile else ()
        return next((r.minutes for r in results if r.ttft_ms > self._target_ms()), None)

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return the target, the last TTFT and the last cold one, in seconds."""
        timing = self.coordinator.data.timings.get(self.model)
        cold = timing.last_cold_ttft_ms if timing else None
        return {
            "target": self._target_ms() / 1000,
            "last_ttft": round(timing.last.ttft_ms / 1000, 3) if timing and timing.last else None,
            "last_cold_ttft": None if cold is None else round(cold / 1000, 3),
            "last_cold_within_target": None if cold is None else cold <= self._target_ms(),
            "idle_profile_breaks_after_minutes": self._profile_breaks(),
        }


class GpuHeadroomLow(GpuEntity, BinarySensorEntity):
    """On while the GPU has less free memory than the household reserve."""

    @property
    def is_on(self) -> bool | None:
        """Return True when the headroom is negative."""
        return self.reading.memory.headroom_low

    @property
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return the reserve this sensor compares with."""
        return {"reserve_bytes": self.coordinator.reserve_bytes}
