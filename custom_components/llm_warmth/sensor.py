"""Sensors: what a server holds in memory, and each model's residency."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import override

from homeassistant.components.sensor import SensorEntity
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .agents import agents_of_model
from .assistant import ASSISTANT_WARMTH, AssistantWarmth
from .core.model_readings import timing
from .core.monitor import ServerSnapshot
from .data import LlmWarmthConfigEntry
from .diagnosis_sensor import IDLE_PROFILE, LAST_DIAGNOSIS, IdleProfileSensor, LastDiagnosis
from .entity import (
    Followed,
    ModelEntity,
    ServerEntity,
    async_add_gpu_entities,
    async_add_model_entities,
    async_add_server_entities,
    models_with_registered,
    registered_server_sensor,
    supported,
)
from .gpu_sensor import GPU_SENSORS, GpuSensor, SensorValue
from .guard_sensor import GPU_CONTENTION, GpuContention
from .household_entities import async_setup_household_sensors
from .household_entry import is_household
from .sensor_descriptions import (
    MODEL_GPU_SENSORS,
    MODEL_SENSORS,
    PROBE_SENSORS,
    SERVER_GPU_SENSORS,
    SERVER_SENSORS,
    ModelSensorDescription,
    ServerSensorDescription,
)
from .usage_entities import async_add_usage_sensors
from .voice_entities import VOICE_SENSORS, VoiceSensor, async_add_voice_entities

PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Set up the server's sensors and, as models appear, theirs (the household's lines)."""
    if is_household(entry):
        await async_setup_household_sensors(hass, entry, async_add_entities)
        return
    coordinator = entry.runtime_data.coordinator
    capabilities = entry.runtime_data.client.capabilities
    model_sensors = supported(MODEL_SENSORS, capabilities)
    async_add_entities(
        [
            AssistantWarmth(coordinator, ASSISTANT_WARMTH),
            GpuContention(coordinator, GPU_CONTENTION),
            *(
                ServerSensor(coordinator, description)
                for description in supported(SERVER_SENSORS, capabilities)
            ),
        ]
    )
    async_add_model_entities(
        entry,
        async_add_entities,
        lambda model: (
            ModelSensor(coordinator, description, model) for description in model_sensors
        ),
    )
    async_add_voice_entities(
        entry,
        async_add_entities,
        lambda pipeline: (VoiceSensor(coordinator, d, pipeline) for d in VOICE_SENSORS),
    )
    async_add_usage_sensors(entry, async_add_entities)
    _add_findings_sensors(hass, entry, async_add_entities)
    _add_gpu_memory_sensors(hass, entry, async_add_entities)
    async_add_gpu_entities(
        entry,
        async_add_entities,
        lambda gpu, uuid: (GpuSensor(gpu, description, uuid) for description in GPU_SENSORS),
    )


def _add_findings_sensors(
    hass: HomeAssistant,
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add a model's probe, diagnosis and idle-profile sensors once it has such a figure."""
    coordinator = entry.runtime_data.coordinator
    probe_sensors = supported(PROBE_SENSORS, entry.runtime_data.client.capabilities)
    # Probe figures exist once a model was probed: no wall of "unknown" before that
    # (models whose probe sensors an earlier release registered keep them).
    registered = models_with_registered(hass, entry, {d.key for d in PROBE_SENSORS})
    async_add_model_entities(
        entry,
        async_add_entities,
        lambda model: (
            ModelSensor(coordinator, description, model) for description in probe_sensors
        ),
        when=lambda snapshot, model: (
            model in registered or timing(snapshot, model).last is not None
        ),
    )
    # A model's last diagnosis, once it has one (or an earlier start registered it).
    diagnosed = models_with_registered(hass, entry, {LAST_DIAGNOSIS.key})
    async_add_model_entities(
        entry,
        async_add_entities,
        lambda model: [LastDiagnosis(coordinator, LAST_DIAGNOSIS, model)],
        when=lambda _snapshot, model: model in diagnosed or model in entry.runtime_data.diagnoses,
        when_changes=[entry.runtime_data.diagnoses],
    )
    profiled = models_with_registered(hass, entry, {IDLE_PROFILE.key})
    async_add_model_entities(
        entry,
        async_add_entities,
        lambda model: [IdleProfileSensor(coordinator, IDLE_PROFILE, model)],
        when=lambda _snapshot, model: (
            model in profiled or model in entry.runtime_data.profiler.profiles
        ),
        when_changes=[entry.runtime_data.profiler],
    )


def _add_gpu_memory_sensors(
    hass: HomeAssistant,
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the server's and each model's GPU memory sensors once the server used a GPU."""
    coordinator = entry.runtime_data.coordinator
    capabilities = entry.runtime_data.client.capabilities
    # GPU memory once the server used a GPU (or an earlier start registered its sensors).
    gpu_seen = bool(
        models_with_registered(hass, entry, {d.key for d in MODEL_GPU_SENSORS})
        or registered_server_sensor(hass, entry, {d.key for d in SERVER_GPU_SENSORS})
    )

    def uses_gpu(snapshot: ServerSnapshot) -> bool:
        nonlocal gpu_seen
        gpu_seen = gpu_seen or any(m.size_vram for m in snapshot.resident.values())
        return gpu_seen

    async_add_server_entities(
        entry,
        async_add_entities,
        lambda: (
            ServerSensor(coordinator, description)
            for description in supported(SERVER_GPU_SENSORS, capabilities)
        ),
        when=uses_gpu,
    )
    model_gpu_sensors = supported(MODEL_GPU_SENSORS, capabilities)
    async_add_model_entities(
        entry,
        async_add_entities,
        lambda model: (
            ModelSensor(coordinator, description, model) for description in model_gpu_sensors
        ),
        when=lambda snapshot, _model: uses_gpu(snapshot),
    )


class ServerSensor(ServerEntity, SensorEntity):
    """A sensor of the server's device."""

    entity_description: ServerSensorDescription
    _unrecorded_attributes = frozenset({"names"})

    @property
    @override
    def native_value(self) -> SensorValue:
        """Return the sensor's value from the latest snapshot."""
        return self.entity_description.value_fn(self.coordinator.data)

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object] | None:
        """Return the description's attributes, if it has any."""
        attrs_fn = self.entity_description.attrs_fn
        return attrs_fn(self.coordinator.data) if attrs_fn else None


class ModelSensor(ModelEntity, SensorEntity):
    """A sensor of one model's device."""

    entity_description: ModelSensorDescription
    # Volatile: true only while a probe runs; a time only while the model loads.
    _unrecorded_attributes = frozenset({"probe_running", "ready_expected_at"})

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the agents where the sensor names them."""
        if self.entity_description.names_agents:
            return (self.coordinator.config_entry.runtime_data.agents,)
        return ()

    @property
    @override
    def native_value(self) -> SensorValue:
        """Return the sensor's value from the latest snapshot."""
        return self.entity_description.value_fn(self.coordinator.data, self.model)

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object] | None:
        """Return the description's attributes, if it has any."""
        description = self.entity_description
        attrs = (
            dict(description.attrs_fn(self.coordinator.data, self.model))
            if description.attrs_fn
            else {}
        )
        if description.names_agents:
            entry = self.coordinator.config_entry
            attrs["agents"] = [a.name for a in agents_of_model(entry, self.model)]
        # Unknown: why (a dashboard says it instead of a bare "Unknown").
        if (
            description.reason_fn is not None
            and self.native_value is None
            and (reason := description.reason_fn(self.coordinator.data, self.model))
        ):
            attrs["reason"] = reason.value
        return attrs or None
