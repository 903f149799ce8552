"""Base entities: one device per server, one device per model on it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from homeassistant.core import callback
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity import Entity, EntityDescription
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.update_coordinator import CoordinatorEntity

from .const import DOMAIN
from .coordinator import LlmWarmthConfigEntry, LlmWarmthCoordinator

if TYPE_CHECKING:
    from .gpu_coordinator import GpuCoordinator, GpuReading, GpuSnapshot


def server_device_identifier(entry_id: str) -> tuple[str, str]:
    """Return the device registry identifier of a server."""
    return (DOMAIN, entry_id)


def model_device_identifier(entry_id: str, model: str) -> tuple[str, str]:
    """Return the device registry identifier of a model on a server."""
    return (DOMAIN, f"{entry_id}_{model}")


def gpu_device_identifier(entry_id: str, uuid: str) -> tuple[str, str]:
    """Return the device registry identifier of a GPU seen by a server's entry."""
    return (DOMAIN, f"{entry_id}_gpu_{uuid}")


def is_gpu_device(entry_id: str, identifiers: Iterable[tuple[str, str]]) -> bool:
    """Return True for the identifiers of one of the entry's GPU devices."""
    prefix = f"{entry_id}_gpu_"
    return any(domain == DOMAIN and ident.startswith(prefix) for domain, ident in identifiers)


class LlmServerEntity(CoordinatorEntity[LlmWarmthCoordinator]):
    """An entity of the server's device."""

    _attr_has_entity_name = True

    def __init__(self, coordinator: LlmWarmthCoordinator, description: EntityDescription) -> None:
        """Attach the entity to the server's device."""
        super().__init__(coordinator)
        self.entity_description = description
        entry_id = coordinator.config_entry.entry_id
        self._attr_unique_id = f"{entry_id}_{description.key}"
        self._attr_device_info = DeviceInfo(identifiers={server_device_identifier(entry_id)})


class LlmModelEntity(CoordinatorEntity[LlmWarmthCoordinator]):
    """An entity of one model's device (``via_device`` the server)."""

    _attr_has_entity_name = True

    def __init__(
        self, coordinator: LlmWarmthCoordinator, description: EntityDescription, model: str
    ) -> None:
        """Attach the entity to the model's device."""
        super().__init__(coordinator)
        self.entity_description = description
        self.model = model
        entry_id = coordinator.config_entry.entry_id
        self._attr_unique_id = f"{entry_id}_{model}_{description.key}"
        installed = coordinator.data.installed.get(model)
        resident = coordinator.data.resident.get(model)
        details = installed or resident
        self._attr_device_info = DeviceInfo(
            identifiers={model_device_identifier(entry_id, model)},
            name=model,
            manufacturer="Ollama",
            model=" ".join(part for part in (details.family, details.parameter_size) if part)
            if details
            else None,
            model_id=details.quantization_level if details else None,
            entry_type=DeviceEntryType.SERVICE,
            via_device_id=coordinator.config_entry.runtime_data.server_device_id,
        )

    @property
    def available(self) -> bool:
        """Return True while the server answers and still has the model."""
        return super().available and self.model in self.coordinator.data.models


@callback
def async_add_model_entities(
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
    entities_for_model: Callable[[str], Iterable[Entity]],
) -> None:
    """Add a model's entities when the model first shows up, now and after each poll.

    A model that disappears is forgotten here (its device is removed in ``__init__``), so
    that it gets fresh entities if it is installed again.
    """
    coordinator = entry.runtime_data.coordinator
    known: set[str] = set()

    @callback
    def add_new_models() -> None:
        models = coordinator.data.models
        new = models - known
        known.intersection_update(models)
        known.update(new)
        if new:
            async_add_entities(
                entity for model in sorted(new) for entity in entities_for_model(model)
            )

    add_new_models()
    entry.async_on_unload(coordinator.async_add_listener(add_new_models))


class LlmGpuEntity(CoordinatorEntity["GpuCoordinator"]):
    """An entity of one GPU's device (``via_device`` the server)."""

    _attr_has_entity_name = True

    def __init__(
        self, coordinator: GpuCoordinator, description: EntityDescription, uuid: str
    ) -> None:
        """Attach the entity to the GPU's device."""
        super().__init__(coordinator)
        self.entity_description = description
        self.uuid = uuid
        entry = coordinator.config_entry
        self._attr_unique_id = f"{entry.entry_id}_gpu_{uuid}_{description.key}"
        status = coordinator.data.gpus[uuid].status
        self._attr_device_info = DeviceInfo(
            identifiers={gpu_device_identifier(entry.entry_id, uuid)},
            name=f"GPU {status.index} {status.name or ''}".strip(),
            manufacturer="NVIDIA",
            model=status.name,
            serial_number=uuid,
            via_device_id=entry.runtime_data.server_device_id,
        )

    @property
    def reading(self) -> GpuReading:
        """Return this GPU's latest reading (only while available)."""
        return self.coordinator.data.gpus[self.uuid]

    @property
    def available(self) -> bool:
        """Return True while the source answers and this GPU could be read."""
        snapshot: GpuSnapshot | None = self.coordinator.data
        if not super().available or snapshot is None:
            return False
        reading = snapshot.gpus.get(self.uuid)
        return reading is not None and reading.status.error is None


@callback
def async_add_gpu_entities(
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
    entities_for_gpu: Callable[[GpuCoordinator, str], Iterable[Entity]],
) -> None:
    """Add a GPU's entities when the GPU source first reports it, now and after each poll."""
    coordinator = entry.runtime_data.gpu
    if coordinator is None:
        return
    gpu_coordinator = coordinator
    known: set[str] = set()

    @callback
    def add_new_gpus() -> None:
        # No data until the source answers once (a failing source leaves it None).
        snapshot: GpuSnapshot | None = gpu_coordinator.data
        if snapshot is None:
            return
        # A GPU that failed before it was ever identified gets no device.
        readable = {uuid for uuid, r in snapshot.gpus.items() if r.status.error is None}
        new = readable - known
        known.update(new)
        if new:
            async_add_entities(
                entity for uuid in sorted(new) for entity in entities_for_gpu(gpu_coordinator, uuid)
            )

    add_new_gpus()
    entry.async_on_unload(gpu_coordinator.async_add_listener(add_new_gpus))
