"""GPU sensors: one GPU's memory, headroom, load and clocks (descriptions and entity)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import override

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.const import (
    PERCENTAGE,
    EntityCategory,
    UnitOfFrequency,
    UnitOfInformation,
    UnitOfPower,
    UnitOfTemperature,
)

from .entity import GpuEntity
from .gpu_coordinator import GpuReading

# What a sensor of this integration returns.
type SensorValue = datetime | float | int | str | None


@dataclass(frozen=True, kw_only=True)
class MemorySize(SensorEntityDescription):
    """A memory size: measured in bytes, shown in GiB (put first among a description's bases)."""

    device_class: SensorDeviceClass | None = SensorDeviceClass.DATA_SIZE
    state_class: SensorStateClass | None = SensorStateClass.MEASUREMENT
    native_unit_of_measurement: str | None = UnitOfInformation.BYTES
    suggested_unit_of_measurement: str | None = UnitOfInformation.GIBIBYTES
    suggested_display_precision: int | None = 2


@dataclass(frozen=True, kw_only=True)
class GpuSensorDescription(SensorEntityDescription):
    """A sensor of one GPU's device."""

    value_fn: Callable[[GpuReading], SensorValue]
    attrs_fn: Callable[[GpuReading], Mapping[str, object]] | None = None


@dataclass(frozen=True, kw_only=True)
class GpuMemorySensorDescription(MemorySize, GpuSensorDescription):
    """A memory size of one GPU."""


def _other_processes(reading: GpuReading) -> Mapping[str, object]:
    processes = reading.memory.other_processes
    return {
        "processes": None
        if processes is None
        else [
            {
                "pid": p.pid,
                "name": p.name,
                "mib": round(p.used_bytes / 1024**2) if p.used_bytes is not None else None,
            }
            for p in processes
        ]
    }


PERFORMANCE_STATES = [f"p{n}" for n in range(16)]

# Enabled by default: what a household watches, the memory (changes with each load). The
# rest changes on every poll (utilisation, temperature, power, clocks): on the order of
# 10^5 recorder rows a day per GPU, so it is there to enable where someone wants it.
GPU_SENSORS: tuple[GpuSensorDescription, ...] = (
    GpuMemorySensorDescription(
        key="gpu_memory_total",
        translation_key="gpu_memory_total",
        value_fn=lambda r: r.status.memory_total,
        entity_category=EntityCategory.DIAGNOSTIC,
    ),
    GpuMemorySensorDescription(
        key="gpu_memory_used",
        translation_key="gpu_memory_used",
        value_fn=lambda r: r.status.memory_used,
    ),
    GpuMemorySensorDescription(
        key="gpu_memory_free",
        translation_key="gpu_memory_free",
        value_fn=lambda r: r.status.memory_free,
    ),
    GpuMemorySensorDescription(
        key="gpu_headroom", translation_key="gpu_headroom", value_fn=lambda r: r.memory.headroom
    ),
    GpuMemorySensorDescription(
        key="gpu_memory_llm", translation_key="gpu_memory_llm", value_fn=lambda r: r.memory.llm_used
    ),
    GpuMemorySensorDescription(
        key="gpu_memory_other",
        translation_key="gpu_memory_other",
        value_fn=lambda r: r.memory.other_used,
        attrs_fn=_other_processes,
    ),
    GpuSensorDescription(
        key="gpu_utilization",
        translation_key="gpu_utilization",
        native_unit_of_measurement=PERCENTAGE,
        state_class=SensorStateClass.MEASUREMENT,
        entity_registry_enabled_default=False,
        value_fn=lambda r: r.status.utilization_gpu,
    ),
    GpuSensorDescription(
        key="gpu_memory_utilization",
        translation_key="gpu_memory_utilization",
        native_unit_of_measurement=PERCENTAGE,
        state_class=SensorStateClass.MEASUREMENT,
        entity_registry_enabled_default=False,
        value_fn=lambda r: r.status.utilization_memory,
    ),
    GpuSensorDescription(
        key="gpu_temperature",
        device_class=SensorDeviceClass.TEMPERATURE,
        native_unit_of_measurement=UnitOfTemperature.CELSIUS,
        state_class=SensorStateClass.MEASUREMENT,
        entity_registry_enabled_default=False,
        value_fn=lambda r: r.status.temperature,
    ),
    GpuSensorDescription(
        key="gpu_power",
        device_class=SensorDeviceClass.POWER,
        native_unit_of_measurement=UnitOfPower.WATT,
        state_class=SensorStateClass.MEASUREMENT,
        suggested_display_precision=1,
        entity_registry_enabled_default=False,
        value_fn=lambda r: r.status.power_draw,
    ),
    GpuSensorDescription(
        key="gpu_power_limit",
        translation_key="gpu_power_limit",
        device_class=SensorDeviceClass.POWER,
        native_unit_of_measurement=UnitOfPower.WATT,
        entity_category=EntityCategory.DIAGNOSTIC,
        entity_registry_enabled_default=False,
        value_fn=lambda r: r.status.power_limit,
    ),
    GpuSensorDescription(
        key="gpu_performance_state",
        translation_key="gpu_performance_state",
        device_class=SensorDeviceClass.ENUM,
        options=PERFORMANCE_STATES,
        entity_registry_enabled_default=False,
        value_fn=lambda r: (
            f"p{r.status.performance_state}" if r.status.performance_state is not None else None
        ),
    ),
    GpuSensorDescription(
        key="gpu_sm_clock",
        translation_key="gpu_sm_clock",
        device_class=SensorDeviceClass.FREQUENCY,
        native_unit_of_measurement=UnitOfFrequency.MEGAHERTZ,
        state_class=SensorStateClass.MEASUREMENT,
        entity_registry_enabled_default=False,
        value_fn=lambda r: r.status.sm_clock,
    ),
    GpuSensorDescription(
        key="gpu_graphics_clock",
        translation_key="gpu_graphics_clock",
        device_class=SensorDeviceClass.FREQUENCY,
        native_unit_of_measurement=UnitOfFrequency.MEGAHERTZ,
        state_class=SensorStateClass.MEASUREMENT,
        entity_registry_enabled_default=False,
        value_fn=lambda r: r.status.graphics_clock,
    ),
)


class GpuSensor(GpuEntity, SensorEntity):
    """A sensor of one GPU's device."""

    entity_description: GpuSensorDescription
    # The process list changes all the time: shown, not recorded.
    _unrecorded_attributes = frozenset({"processes"})

    @property
    @override
    def native_value(self) -> SensorValue:
        """Return the sensor's value from the latest GPU reading."""
        return self.entity_description.value_fn(self.reading)

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object] | None:
        """Return the description's attributes, if it has any."""
        attrs_fn = self.entity_description.attrs_fn
        return attrs_fn(self.reading) if attrs_fn and self.available else None
