"""One base entity for the server, its models and its GPUs, and how they are added."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, override

from homeassistant.const import Platform
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.device_registry import ChildDeviceInfo, DeviceInfo
from homeassistant.helpers.entity import Entity, EntityDescription
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.update_coordinator import CoordinatorEntity, DataUpdateCoordinator

from .const import DOMAIN
from .coordinator import LlmWarmthCoordinator
from .core.backends.base import Capabilities
from .core.entity_subjects import ModelsSeen, gpu_device_name, models_of_unique_ids
from .core.monitor import ServerSnapshot
from .data import LlmWarmthConfigEntry
from .devices import (
    entity_unique_id,
    gpu_device_identifier,
    model_device_info,
    server_device_identifier,
)
from .gpu_coordinator import GpuCoordinator, GpuReading, GpuSnapshot


class LlmWarmthEntity[CoordinatorT: DataUpdateCoordinator[Any]](CoordinatorEntity[CoordinatorT]):
    """An entity of one device of an entry: the server, a model (``subject``) or a GPU.

    The unique id is ``<entry id>[_<subject>]_<key>``; the entity is available while its
    coordinator's last update worked and ``present`` says its subject is still there.
    """

    _attr_has_entity_name = True

    def __init__(
        self,
        coordinator: CoordinatorT,
        description: EntityDescription,
        device_info: DeviceInfo | ChildDeviceInfo,
        entry_id: str,
        subject: str | None = None,
    ) -> None:
        """Attach the entity to its device."""
        super().__init__(coordinator)
        self.entity_description = description
        self.subject = subject
        self._attr_unique_id = entity_unique_id(entry_id, subject, description.key)
        self._attr_device_info = device_info

    def present(self) -> bool:
        """Return True while the entity's subject exists (always, for the server)."""
        return True

    def followed(self) -> Iterable[Followed]:
        """Return what else the entity shows (features, agents): it is written when they change."""
        return ()

    @override
    async def async_added_to_hass(self) -> None:
        """Follow the coordinator and what else the entity shows."""
        await super().async_added_to_hass()
        for followed in self.followed():
            self.async_on_remove(followed.async_add_listener(self._handle_coordinator_update))

    @property
    @override
    def available(self) -> bool:
        """Return True while the coordinator works and the subject is there."""
        return super().available and self.present()


class ServerEntity(LlmWarmthEntity[LlmWarmthCoordinator]):
    """An entity of the server's device."""

    def __init__(self, coordinator: LlmWarmthCoordinator, description: EntityDescription) -> None:
        """Attach the entity to the server's device."""
        entry_id = coordinator.config_entry.entry_id
        super().__init__(
            coordinator,
            description,
            DeviceInfo(identifiers={server_device_identifier(entry_id)}),
            entry_id,
        )

    @property
    def snapshot(self) -> ServerSnapshot:
        """Return the latest snapshot of the server."""
        return self.coordinator.data


class ModelEntity(ServerEntity):
    """An entity of one model's device (a child device of the server)."""

    def __init__(
        self, coordinator: LlmWarmthCoordinator, description: EntityDescription, model: str
    ) -> None:
        """Attach the entity to the model's device."""
        LlmWarmthEntity.__init__(
            self,
            coordinator,
            description,
            model_device_info(coordinator.config_entry, model),
            coordinator.config_entry.entry_id,
            model,
        )
        self.model = model

    @override
    def present(self) -> bool:
        """Return True while the server still has the model."""
        return self.model in self.coordinator.data.models


class GpuEntity(LlmWarmthEntity[GpuCoordinator]):
    """An entity of one GPU's device (``via_device`` the server)."""

    def __init__(
        self, coordinator: GpuCoordinator, description: EntityDescription, uuid: str
    ) -> None:
        """Attach the entity to the GPU's device."""
        entry = coordinator.config_entry
        status = coordinator.data.gpus[uuid].status
        super().__init__(
            coordinator,
            description,
            DeviceInfo(
                identifiers={gpu_device_identifier(entry.entry_id, uuid)},
                name=gpu_device_name(status.index, status.name),
                manufacturer="NVIDIA",
                model=status.name,
                serial_number=uuid,
                via_device_id=entry.runtime_data.server_device_id,
            ),
            entry.entry_id,
            f"gpu_{uuid}",
        )
        self.uuid = uuid

    @property
    def reading(self) -> GpuReading:
        """Return this GPU's latest reading (only while available)."""
        return self.coordinator.data.gpus[self.uuid]

    @override
    def present(self) -> bool:
        """Return True while this GPU could be read."""
        reading = self.coordinator.data.gpus.get(self.uuid)
        return reading is not None and reading.status.error is None


class Followed(Protocol):
    """A feature (or the agent directory) that tells its listeners when it changes."""

    def async_add_listener(self, listener: CALLBACK_TYPE) -> CALLBACK_TYPE:
        """Call ``listener`` on each change; return what stops it."""
        ...


class CapabilityGated(Protocol):
    """A description that says which servers give its data."""

    @property
    def has_fn(self) -> Callable[[Capabilities], bool]:
        """Return whether a server with these capabilities gives the data."""
        ...


def supported[D: CapabilityGated](descriptions: Iterable[D], capabilities: Capabilities) -> list[D]:
    """Return the descriptions whose data this kind of server gives."""
    return [d for d in descriptions if d.has_fn(capabilities)]


@callback
def async_add_model_entities(
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
    entities_for_model: Callable[[str], Iterable[Entity]],
    when: Callable[[ServerSnapshot, str], bool] = lambda _snapshot, _model: True,
    when_changes: Iterable[Followed] = (),
) -> None:
    """Add a model's entities when the model first shows up (and ``when`` holds for it).

    Checked now, after each poll and when one of ``when_changes`` changes. A model that
    disappears is forgotten here (its device is removed in ``devices``), so that it gets
    fresh entities if it comes back.
    """
    coordinator = entry.runtime_data.coordinator
    seen = ModelsSeen()

    @callback
    def add_new_models() -> None:
        snapshot = coordinator.data
        wanted = (m for m in snapshot.models if when(snapshot, m))
        if new := seen.new(wanted, snapshot.models):
            async_add_entities(entity for model in new for entity in entities_for_model(model))

    add_new_models()
    for source in (coordinator, *when_changes):
        entry.async_on_unload(source.async_add_listener(add_new_models))


@callback
def async_add_server_entities(
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
    entities: Callable[[], Iterable[Entity]],
    when: Callable[[ServerSnapshot], bool],
) -> None:
    """Add server entities once ``when`` holds for a snapshot (checked now and per poll)."""
    coordinator = entry.runtime_data.coordinator
    added = False

    @callback
    def add_once() -> None:
        nonlocal added
        if not added and when(coordinator.data):
            added = True
            async_add_entities(entities())

    add_once()
    if not added:
        entry.async_on_unload(coordinator.async_add_listener(add_once))


@callback
def async_add_gpu_entities(
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
    entities_for_gpu: Callable[[GpuCoordinator, str], Iterable[Entity]],
) -> None:
    """Add a GPU's entities when the GPU source first reports it, now and after each poll."""
    gpu = entry.runtime_data.gpu
    if gpu is None:
        return
    gpu_coordinator = gpu
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


@callback
def registered_server_sensor(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry, keys: set[str]
) -> bool:
    """Return True when one of these server sensors is in the entity registry."""
    registry = er.async_get(hass)
    return any(
        registry.async_get_entity_id(
            Platform.SENSOR, DOMAIN, entity_unique_id(entry.entry_id, None, key)
        )
        for key in keys
    )


@callback
def models_with_registered(
    hass: HomeAssistant,
    entry: LlmWarmthConfigEntry,
    keys: set[str],
    platform: Platform = Platform.SENSOR,
) -> set[str]:
    """Return the models that have one of these entities (of ``platform``) registered."""
    entities = er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
    unique_ids = (e.unique_id for e in entities if e.domain == platform)
    return models_of_unique_ids(unique_ids, entry.entry_id, keys)
