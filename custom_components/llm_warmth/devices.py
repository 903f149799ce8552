"""Devices of an entry: the server, its models and its GPUs; identifiers and pruning."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from homeassistant.const import Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import device_registry as dr, entity_registry as er

from .const import DOMAIN
from .core.backends.base import ServerKind
from .core.model_readings import display_name
from .data import LlmWarmthConfigEntry

MANUFACTURERS: Final = {
    ServerKind.OLLAMA: "Ollama",
    ServerKind.LLAMA_SERVER: "llama.cpp",
    ServerKind.LLAMA_SWAP: "llama-swap",
}
PIPELINE_MODEL: Final = "Assist pipeline"
SERVER_MODELS: Final = {
    ServerKind.OLLAMA: "Ollama server",
    ServerKind.LLAMA_SERVER: "llama-server (router mode)",
    ServerKind.LLAMA_SWAP: "llama-swap proxy",
}


def entity_unique_id(entry_id: str, subject: str | None, key: str) -> str:
    """Return an entity's unique id: its entry, its subject (model, ``gpu_<uuid>``), its key.

    The server's own entities have no subject.
    """
    return "_".join(part for part in (entry_id, subject, key) if part)


def assistant_device_identifier(subentry_id: str) -> tuple[str, str]:
    """Return the identifier of a warm assistant's device (one per subentry)."""
    return (DOMAIN, f"assistant_{subentry_id}")


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


def model_device_info(entry: LlmWarmthConfigEntry, model: str) -> dr.ChildDeviceInfo:
    """Return the device of one model: a child device of its server.

    A model is a part of its server, not a machine of its own: as a child device its
    entity ids name the server too (``sensor.<server>_<model>_<key>``), so the same model
    on two servers never gets ``_2`` ids, and the integration page lists it under the server.
    """
    return dr.ChildDeviceInfo(
        identifiers={model_device_identifier(entry.entry_id, model)},
        name=display_name(model),
        parent_device_id=entry.runtime_data.server_device_id,
    )


@callback
def async_register_server(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry, kind: ServerKind, version: str
) -> str:
    """Create (or update) the server's device; return its id."""
    device = dr.async_get(hass).async_get_or_create(
        config_entry_id=entry.entry_id,
        identifiers={server_device_identifier(entry.entry_id)},
        name=entry.title,
        manufacturer=MANUFACTURERS[kind],
        model=SERVER_MODELS[kind],
        sw_version=version,
    )
    return device.id


def is_voice_device(entry_id: str, identifiers: set[tuple[str, str]]) -> bool:
    """Return True for the device of an Assist pipeline (see ``voice``)."""
    return any(
        domain == DOMAIN and name.startswith(f"{entry_id}_voice_") for domain, name in identifiers
    )


def voice_device_identifier(entry_id: str, subject: str) -> tuple[str, str]:
    """Return the identifier of an Assist pipeline's device (``subject``: ``voice_<id>``)."""
    return (DOMAIN, f"{entry_id}_{subject}")


def voice_device_info(entry: LlmWarmthConfigEntry, subject: str, name: str) -> dr.DeviceInfo:
    """Return the device of an Assist pipeline whose agent uses this server's models.

    A device of its own, connected via the server, and a service (no firmware): as a
    child device of the server, Home Assistant's device page described it by its parent
    ("Ollama server, Firmware 0.12.6"), which a pipeline is not.
    """
    return dr.DeviceInfo(
        identifiers={voice_device_identifier(entry.entry_id, subject)},
        name=name,
        model=PIPELINE_MODEL,
        entry_type=dr.DeviceEntryType.SERVICE,
        via_device_id=entry.runtime_data.server_device_id,
    )


@callback
def async_adopt_voice_devices(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry, server_device_id: str
) -> None:
    """Make the pipelines' child devices (builds before 0.3.0) devices of their own.

    The registry cannot turn a child device into a device, so each is removed and made
    again from the registry's memory of it: the same device id, area, labels, name given
    by the user and disabled state; its entities are set aside first (a removed device's
    entities go with it) and attached again, so every entity keeps its id and history.
    """
    devices = dr.async_get(hass)
    entities = er.async_get(hass)
    for child in dr.async_child_entries_for_config_entry(devices, entry.entry_id):
        if not is_voice_device(entry.entry_id, child.identifiers):
            continue
        own = er.async_entries_for_device(entities, child.id, include_disabled_entities=True)
        for entity in own:
            entities.async_update_entity(entity.entity_id, device_id=None)
        devices.async_remove_device(child.id)
        device = devices.async_get_or_create(
            config_entry_id=entry.entry_id,
            identifiers=set(child.identifiers),
            name=child.name,
            model=PIPELINE_MODEL,
            entry_type=dr.DeviceEntryType.SERVICE,
            via_device_id=server_device_id,
        )
        for entity in own:
            entities.async_update_entity(entity.entity_id, device_id=device.id)


@callback
def async_sync_devices(hass: HomeAssistant, entry: LlmWarmthConfigEntry) -> None:
    """Keep the server's version current and drop the devices of deleted models.

    GPU devices stay while a GPU source is configured, even while it is down; the
    devices of Assist pipelines stay (they are not the server's models).
    """
    registry = dr.async_get(hass)
    data = entry.runtime_data
    snapshot = data.coordinator.data
    device = registry.async_get(data.server_device_id)
    if isinstance(device, dr.DeviceEntry) and device.sw_version != snapshot.version:
        registry.async_update_device(device.id, sw_version=snapshot.version)
    wanted = {model_device_identifier(entry.entry_id, m) for m in snapshot.models}
    wanted.add(server_device_identifier(entry.entry_id))
    wanted |= {assistant_device_identifier(s) for s in entry.subentries}
    keep_gpus = data.gpu is not None
    devices: list[dr.AnyDeviceEntry] = [
        *dr.async_entries_for_config_entry(registry, entry.entry_id),
        *dr.async_child_entries_for_config_entry(registry, entry.entry_id),
    ]
    for device in devices:
        if keep_gpus and is_gpu_device(entry.entry_id, device.identifiers):
            continue
        if is_voice_device(entry.entry_id, device.identifiers):
            continue  # a pipeline's: the user removes it (its pipeline may come back)
        if not device.identifiers & wanted:
            registry.async_remove_device(device.id)


@callback
def fire_event(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry, event_type: str, /, **data: object
) -> None:
    """Fire an event of ``entry``'s server, naming the entity and device it is about."""
    model = data.get("model")
    subject = event_subject(hass, entry.entry_id, model if isinstance(model, str) else None)
    hass.bus.async_fire(
        event_type, {"server": entry.title, "config_entry_id": entry.entry_id, **subject, **data}
    )


@callback
def event_subject(hass: HomeAssistant, entry_id: str, model: str | None) -> dict[str, str]:
    """Return the entity and device an event is about, as event data.

    The logbook files an event under an entity or device only when its data names them:
    the model's warmth sensor and device; for a server event (a restart, an outage's
    end), the server's connectivity sensor and device (its own lines are the outage's).
    """
    platform, unique_id = (
        (Platform.SENSOR, entity_unique_id(entry_id, model, "warmth"))
        if model
        else (Platform.BINARY_SENSOR, entity_unique_id(entry_id, None, "connectivity"))
    )
    entity_id = er.async_get(hass).async_get_entity_id(platform, DOMAIN, unique_id)
    devices = dr.async_get(hass)
    device: dr.AnyDeviceEntry | None = (
        devices.async_get_child_device_by_identifier(
            model_device_identifier(entry_id, model), entry_id
        )
        if model
        else devices.async_get_device_by_identifier(server_device_identifier(entry_id), entry_id)
    )
    return {
        **({"entity_id": entity_id} if entity_id else {}),
        **({"device_id": device.id} if device else {}),
    }
