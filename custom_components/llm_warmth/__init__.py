"""LLM Warmth: see and control how warm the models of a local LLM server are."""

from __future__ import annotations

from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryChange,
    ConfigEntryState,
)
from homeassistant.const import CONF_API_KEY, CONF_URL, CONF_VERIFY_SSL, Platform
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers import (
    config_validation as cv,
    device_registry as dr,
    entity_registry as er,
    issue_registry as ir,
)
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.typing import ConfigType

from .agents import AgentDirectory
from .card import async_register_card
from .const import (
    CONF_HOST,
    CONF_RESERVE_GIB,
    CONF_SERVER_KIND,
    DEFAULT_RESERVE_GIB,
    DOMAIN,
    GIB,
    LOGGER,
    SUBENTRY_WARM_ASSISTANT,
)
from .controller import ResidencyController
from .coordinator import LlmWarmthCoordinator
from .core.backends.base import LlmBackend, ServerKind
from .core.backends.detection import create_client
from .core.server_url import host_of
from .data import LlmWarmthConfigEntry, LlmWarmthData
from .devices import (
    async_adopt_voice_devices,
    async_register_server,
    async_sync_devices,
    gpu_device_identifier,
    is_gpu_device,
    is_voice_device,
    model_device_identifier,
    server_device_identifier,
    voice_device_identifier,
)
from .diagnoses import Diagnoses
from .gpu_coordinator import GpuCoordinator, gpu_issue_id, gpu_source_from_options
from .household import HouseholdWatch
from .household_entry import HOUSEHOLD_PLATFORMS, async_ensure_household, is_household
from .household_guard import HouseholdGuard, releases_issue_id
from .idle_profiler import IdleProfiler
from .own_requests import OwnRequests
from .peer_watch import PeerWatch
from .pins import Pins
from .repairs import RepairIssues
from .sentences import async_load_sentences
from .services import async_offer_models, async_setup_services
from .storage import EntryStore, stored_monitor
from .ttft_targets import TtftTargets
from .usage import UsageWatch
from .voice import VoiceWatch, voice_subject

PLATFORMS = [Platform.BINARY_SENSOR, Platform.NUMBER, Platform.SENSOR, Platform.SWITCH]
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Set up the integration (its actions live for as long as Home Assistant runs)."""
    await async_setup_services(hass)
    # The words of the actions' summaries, the verdicts and the idle profiles.
    await async_load_sentences(hass)
    # The dashboard card, for every dashboard (the frontend loads it on each page).
    await async_register_card(hass)
    return True


async def async_setup_entry(hass: HomeAssistant, entry: LlmWarmthConfigEntry) -> bool:
    """Connect to one server, take the first snapshot and set up the platforms.

    The household entry (``household_entry.py``) sets up its lines instead.
    """
    if is_household(entry):
        await hass.config_entries.async_forward_entry_setups(entry, HOUSEHOLD_PLATFORMS)
        return True
    kind = ServerKind(entry.data[CONF_SERVER_KIND])
    client = create_client(
        kind,
        async_get_clientsession(hass, verify_ssl=entry.data.get(CONF_VERIFY_SSL, True)),
        entry.data[CONF_URL],
        api_key=entry.data.get(CONF_API_KEY) or None,
    )
    _migrate_observed_load_entities(hass, entry)
    store = EntryStore(hass, entry.entry_id)
    await store.async_load()
    # Registered first, so it runs last: every section is written once its feature stopped.
    entry.async_on_unload(store.async_close)
    # The server's monitor: polled by the coordinator, told of our requests by theirs.
    monitor = stored_monitor(client, store)
    coordinator = LlmWarmthCoordinator(hass, entry, client, store, monitor)
    own_requests = OwnRequests(coordinator, monitor, store)
    await coordinator.async_config_entry_first_refresh()
    server_device_id = async_register_server(hass, entry, kind, coordinator.data.version)
    async_adopt_voice_devices(hass, entry, server_device_id)
    gpu = await _async_gpu(hass, entry, coordinator)
    data = entry.runtime_data = _runtime_data(
        hass,
        entry,
        kind=kind,
        client=client,
        store=store,
        coordinator=coordinator,
        own_requests=own_requests,
        gpu=gpu,
        server_device_id=server_device_id,
    )
    entry.async_on_unload(data.agents.async_start())
    _follow_devices_and_models(hass, entry, coordinator)
    await hass.config_entries.async_forward_entry_setups(entry, data.platforms)
    coordinator.async_start_events()
    _start_features(hass, entry, data)
    entry.async_on_unload(_follow_new_assistants(hass, entry))
    # A house of two servers gets its household entry (one device showing them all).
    async_ensure_household(hass)
    return True


async def _async_gpu(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry, coordinator: LlmWarmthCoordinator
) -> GpuCoordinator | None:
    """Return the GPU's coordinator when the options name a source, after its first poll."""
    if (source := gpu_source_from_options(hass, entry.options)) is None:
        return None
    reserve = entry.options.get(CONF_RESERVE_GIB, DEFAULT_RESERVE_GIB)
    gpu = GpuCoordinator(
        hass,
        entry,
        source,
        update_interval=coordinator.normal_interval,
        llm_vram=coordinator.resident_vram,
        reserve_bytes=round(reserve * GIB),
    )
    # A GPU source that does not work leaves the rest working: no first_refresh here.
    await gpu.async_refresh()
    return gpu


def _runtime_data(
    hass: HomeAssistant,
    entry: LlmWarmthConfigEntry,
    *,
    kind: ServerKind,
    client: LlmBackend,
    store: EntryStore,
    coordinator: LlmWarmthCoordinator,
    own_requests: OwnRequests,
    gpu: GpuCoordinator | None,
    server_device_id: str,
) -> LlmWarmthData:
    """Build every feature, each from the parts it reads; each starts later, tied to the entry."""
    household = HouseholdWatch(hass, entry, coordinator, gpu)
    pins = Pins(hass, entry, store, client.capabilities)
    controller = ResidencyController(coordinator, own_requests, pins, household)
    agents = AgentDirectory(hass, entry.unique_id, kind)
    return LlmWarmthData(
        client=client,
        store=store,
        coordinator=coordinator,
        own_requests=own_requests,
        gpu=gpu,
        server_device_id=server_device_id,
        agents=agents,
        household=household,
        pins=pins,
        controller=controller,
        guard=HouseholdGuard(
            entry,
            store,
            coordinator=coordinator,
            household=household,
            pins=pins,
            controller=controller,
        ),
        diagnoses=Diagnoses(entry, store, coordinator),
        ttft_targets=TtftTargets(entry, store, coordinator),
        profiler=IdleProfiler(entry, store, coordinator, household, own_requests=own_requests),
        voice=VoiceWatch(
            entry,
            store,
            coordinator,
            controller=controller,
            household=household,
            agents=agents,
            own_requests=own_requests,
        ),
        usage=UsageWatch(
            entry,
            store,
            coordinator,
            agents=agents,
            controller=controller,
            household=household,
            own_requests=own_requests,
        ),
        peers=PeerWatch(hass, entry, coordinator),
        platforms=_platforms(entry),
    )


def _follow_devices_and_models(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry, coordinator: LlmWarmthCoordinator
) -> None:
    """Keep the model devices in step with the server, and the probe action's model list."""

    @callback
    def sync_devices() -> None:
        async_sync_devices(hass, entry)

    @callback
    def offer_models() -> None:
        async_offer_models(hass)

    sync_devices()
    entry.async_on_unload(coordinator.async_add_listener(sync_devices))
    # The probe action offers the installed models: again when they or the entries change.
    entry.async_on_unload(coordinator.async_add_listener(offer_models))
    entry.async_on_unload(entry.async_on_state_change(offer_models))


def _start_features(hass: HomeAssistant, entry: LlmWarmthConfigEntry, data: LlmWarmthData) -> None:
    """Start each feature's listeners and timers, each stopped when the entry unloads."""
    for start in (
        data.diagnoses.async_start,
        data.ttft_targets.async_start,
        data.guard.async_start,
        RepairIssues(hass, entry, data.coordinator, data.controller).async_start,
        # The pins are asserted right away (a restart loses no pin), unless the household
        # needs the GPU: the controller asks it each time, whoever hears of a poll first.
        data.controller.async_start,
        data.profiler.async_start,
        data.voice.async_start,
        data.usage.async_start,
        data.peers.async_start,
    ):
        entry.async_on_unload(start())


def _has_assistants(entry: ConfigEntry) -> bool:
    return any(s.subentry_type == SUBENTRY_WARM_ASSISTANT for s in entry.subentries.values())


def _platforms(entry: LlmWarmthConfigEntry) -> list[Platform]:
    """Return the entry's platforms: a conversation agent only for its warm assistants."""
    return [*PLATFORMS, Platform.CONVERSATION] if _has_assistants(entry) else list(PLATFORMS)


def _follow_new_assistants(hass: HomeAssistant, entry: LlmWarmthConfigEntry) -> CALLBACK_TYPE:
    """Set up the conversation platform with the entry's first warm assistant, in place.

    (Through the config entry signal: an update listener would clash with the options
    flow's own reload.) The platform then adds, reconfigures and drops the assistants as
    their subentries change (``conversation.py``); nothing reloads the entry, whose
    entities stay available.
    """

    @callback
    def changed(_change: ConfigEntryChange, changed_entry: ConfigEntry) -> None:
        platforms = entry.runtime_data.platforms
        if (
            changed_entry.entry_id == entry.entry_id
            and entry.state is ConfigEntryState.LOADED
            and Platform.CONVERSATION not in platforms
            and _has_assistants(changed_entry)
        ):
            platforms.append(Platform.CONVERSATION)
            entry.async_create_task(
                hass,
                hass.config_entries.async_forward_entry_setups(entry, [Platform.CONVERSATION]),
                "llm_warmth: the first warm assistant",
            )

    return async_dispatcher_connect(hass, SIGNAL_CONFIG_ENTRY_CHANGED, changed)


async def async_migrate_entry(hass: HomeAssistant, entry: ConfigEntry) -> bool:
    """Bring an entry of an older version up to date.

    Version 1 entries are all Ollama servers: version 2 names the kind; 2.2 names the host
    whose GPU the server uses (the household guard's services are that host's), taken from
    the server's URL. Unique ids, entities and stored measurements stay as they are.
    """
    if entry.version > 2:  # a newer release wrote it: do not guess
        return False
    if entry.version == 1:
        hass.config_entries.async_update_entry(
            entry,
            data={**entry.data, CONF_SERVER_KIND: ServerKind.OLLAMA.value},
            version=2,
            minor_version=1,
        )
        LOGGER.debug("Migrated %s to version 2 (server kind: ollama)", entry.title)
    if entry.minor_version < 2:
        # The household guard's services belong to a host: the server's, from its URL.
        hass.config_entries.async_update_entry(
            entry,
            options={CONF_HOST: host_of(str(entry.data.get(CONF_URL, ""))), **entry.options},
            minor_version=2,
        )
        LOGGER.debug("Migrated %s to version 2.2 (host: %s)", entry.title, entry.options[CONF_HOST])
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
    if is_household(entry):
        return await hass.config_entries.async_unload_platforms(entry, HOUSEHOLD_PLATFORMS)
    ir.async_delete_issue(hass, DOMAIN, gpu_issue_id(entry.entry_id))
    return await hass.config_entries.async_unload_platforms(entry, entry.runtime_data.platforms)


async def async_remove_entry(hass: HomeAssistant, entry: LlmWarmthConfigEntry) -> None:
    """Delete what the entry stored when it is removed."""
    ir.async_delete_issue(hass, DOMAIN, gpu_issue_id(entry.entry_id))
    ir.async_delete_issue(hass, DOMAIN, releases_issue_id(entry.entry_id))
    await EntryStore(hass, entry.entry_id).async_remove()


async def async_remove_config_entry_device(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry, device: dr.AnyDeviceEntry
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
    if is_voice_device(entry.entry_id, device.identifiers):
        pipelines = entry.runtime_data.voice.pipelines
        return not any(
            voice_device_identifier(entry.entry_id, voice_subject(p)) in device.identifiers
            for p in pipelines
        )
    models = entry.runtime_data.coordinator.data.models
    return not any(
        model_device_identifier(entry.entry_id, model) in device.identifiers for model in models
    )
