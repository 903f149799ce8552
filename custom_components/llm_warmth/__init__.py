"""LLM Warmth: see and control how warm the models of a local LLM server are."""

from __future__ import annotations

from homeassistant.const import CONF_API_KEY, CONF_URL, CONF_VERIFY_SSL, Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import (
    config_validation as cv,
    device_registry as dr,
    entity_registry as er,
    issue_registry as ir,
)
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.typing import ConfigType

from .core.backends.ollama import OllamaClient
from .const import CONF_RESERVE_GIB, DEFAULT_RESERVE_GIB, DOMAIN, GIB
from .coordinator import (
    LlmWarmthConfigEntry,
    LlmWarmthCoordinator,
    LlmWarmthData,
    async_remove_stored_data,
)
from .entity import (
    gpu_device_identifier,
    is_gpu_device,
    model_device_identifier,
    server_device_identifier,
)
from .gpu_coordinator import GpuCoordinator, gpu_issue_id, gpu_source_from_options
from .services import async_setup_services

PLATFORMS = [Platform.BINARY_SENSOR, Platform.SENSOR]
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Set up the integration (its actions live for as long as Home Assistant runs)."""
    async_setup_services(hass)
    return True


async def async_setup_entry(hass: HomeAssistant, entry: LlmWarmthConfigEntry) -> bool:
    """Connect to one server, take the first snapshot and set up the platforms."""
    client = OllamaClient(
        async_get_clientsession(hass, verify_ssl=entry.data.get(CONF_VERIFY_SSL, True)),
        entry.data[CONF_URL],
        api_key=entry.data.get(CONF_API_KEY) or None,
    )
    _migrate_observed_load_entities(hass, entry)
    coordinator = LlmWarmthCoordinator(hass, entry, client)
    await coordinator.async_config_entry_first_refresh()
    device_registry = dr.async_get(hass)
    server_device = device_registry.async_get_or_create(
        config_entry_id=entry.entry_id,
        identifiers={server_device_identifier(entry.entry_id)},
        name=entry.title,
        manufacturer="Ollama",
        model="Ollama server",
        sw_version=coordinator.data.version,
        entry_type=dr.DeviceEntryType.SERVICE,
    )
    entry.runtime_data = LlmWarmthData(
        client=client, coordinator=coordinator, server_device_id=server_device.id
    )
    if (source := gpu_source_from_options(hass, entry.options)) is not None:
        reserve = entry.options.get(CONF_RESERVE_GIB, DEFAULT_RESERVE_GIB)
        gpu = GpuCoordinator(hass, entry, source, coordinator, round(reserve * GIB))
        # A GPU source that does not work leaves the rest working: no first_refresh here.
        await gpu.async_refresh()
        entry.runtime_data.gpu = gpu

    @callback
    def sync_devices() -> None:
        """Keep the server's version current and drop the devices of deleted models."""
        snapshot = coordinator.data
        device = device_registry.async_get(server_device.id)
        if isinstance(device, dr.DeviceEntry) and device.sw_version != snapshot.version:
            device_registry.async_update_device(device.id, sw_version=snapshot.version)
        wanted = {model_device_identifier(entry.entry_id, m) for m in snapshot.models}
        wanted.add(server_device_identifier(entry.entry_id))
        # GPU devices stay while a GPU source is configured, even while it is down.
        keep_gpus = entry.runtime_data.gpu is not None
        for device in dr.async_entries_for_config_entry(device_registry, entry.entry_id):
            if keep_gpus and is_gpu_device(entry.entry_id, device.identifiers):
                continue
            if not device.identifiers & wanted:
                device_registry.async_remove_device(device.id)

    sync_devices()
    entry.async_on_unload(coordinator.async_add_listener(sync_devices))
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    return True


# Before 0.2, "Last observed load duration" (key last_load_duration) showed what polling saw
# of a load: the request that loaded the model. That is the cold request sensor now; the
# server's own load figure is a new sensor.
_OLD_LOAD_KEY = "_last_load_duration"
_COLD_REQUEST_KEY = "_last_cold_request_duration"


@callback
def _migrate_observed_load_entities(hass: HomeAssistant, entry: LlmWarmthConfigEntry) -> None:
    """Give the old load sensors, their entity ids and history, to the cold request."""
    registry = er.async_get(hass)
    for entity in er.async_entries_for_config_entry(registry, entry.entry_id):
        if not entity.unique_id.endswith(_OLD_LOAD_KEY):
            continue
        new_unique_id = entity.unique_id.removesuffix(_OLD_LOAD_KEY) + _COLD_REQUEST_KEY
        if registry.async_get_entity_id(entity.domain, DOMAIN, new_unique_id):
            registry.async_remove(entity.entity_id)
        else:
            registry.async_update_entity(entity.entity_id, new_unique_id=new_unique_id)


async def async_unload_entry(hass: HomeAssistant, entry: LlmWarmthConfigEntry) -> bool:
    """Unload the platforms (listeners are released through ``async_on_unload``).

    The GPU repair issue goes with it: a reload with a working (or no) source must not
    leave it behind, and a failing source raises it again on its first reading.
    """
    ir.async_delete_issue(hass, DOMAIN, gpu_issue_id(entry.entry_id))
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)


async def async_remove_entry(hass: HomeAssistant, entry: LlmWarmthConfigEntry) -> None:
    """Delete what the entry stored when it is removed."""
    ir.async_delete_issue(hass, DOMAIN, gpu_issue_id(entry.entry_id))
    await async_remove_stored_data(hass, entry.entry_id)


async def async_remove_config_entry_device(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry, device: dr.DeviceEntry
) -> bool:
    """Allow removing a model's device once the server no longer has the model."""
    if server_device_identifier(entry.entry_id) in device.identifiers:
        return False
    if is_gpu_device(entry.entry_id, device.identifiers):
        gpu = entry.runtime_data.gpu
        present = gpu.data.gpus if gpu is not None and gpu.data is not None else {}
        return not any(
            gpu_device_identifier(entry.entry_id, u) in device.identifiers for u in present
        )
    models = entry.runtime_data.coordinator.data.models
    return not any(
        model_device_identifier(entry.entry_id, model) in device.identifiers for model in models
    )
