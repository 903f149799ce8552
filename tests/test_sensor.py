"""Every entity of both platforms, and the values they take as models load and leave."""

from datetime import timedelta
import json
from unittest.mock import patch

from homeassistant.config_entries import SIGNAL_CONFIG_ENTRY_CHANGED, ConfigEntryChange
from homeassistant.const import STATE_OFF, STATE_ON, STATE_UNKNOWN, Platform
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.dispatcher import async_dispatcher_send
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, snapshot_platform
from syrupy.assertion import SnapshotAssertion

from .conftest import GIB, LLAMA, QWEN, add_ollama_agent, ollama_request, start_load
from .ollama_emulator import EmulatedModel, OllamaEmulator


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
@pytest.mark.parametrize(
    "platform", [Platform.SENSOR, Platform.BINARY_SENSOR, Platform.SWITCH, Platform.NUMBER]
)
async def test_entities(
    hass: HomeAssistant,
    emulator: OllamaEmulator,
    mock_config_entry: MockConfigEntry,
    entity_registry: er.EntityRegistry,
    snapshot: SnapshotAssertion,
    platform: Platform,
) -> None:
    """Snapshot every entity, with one model resident and kept forever."""
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": -1})
    mock_config_entry.add_to_hass(hass)
    with patch("custom_components.llm_warmth.PLATFORMS", [platform]):
        await hass.config_entries.async_setup(mock_config_entry.entry_id)
        await hass.async_block_till_done()
    await snapshot_platform(hass, entity_registry, snapshot, mock_config_entry.entry_id)


async def test_server_sensors(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    assert hass.states.get("sensor.ollama_test_resident_models").state == "0"
    assert hass.states.get("sensor.ollama_test_installed_models").attributes["names"] == [
        LLAMA,
        QWEN,
    ]
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    await ollama_request(emulator, "/api/generate", {"model": QWEN})
    await poll()
    # 3 + 6 GiB against an 8 GiB budget: the emulator evicted llama for qwen.
    resident = hass.states.get("sensor.ollama_test_resident_models")
    assert resident.state == "1"
    assert resident.attributes["names"] == [QWEN]
    vram = hass.states.get("sensor.ollama_test_resident_gpu_memory")
    assert float(vram.state) == pytest.approx(6.0)
    assert vram.attributes["unit_of_measurement"] == "GiB"
    assert hass.states.get("sensor.ollama_test_resident_memory_in_system_ram").state == "0.0"


async def test_gpu_memory_a_server_does_not_report_is_unknown_not_zero(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """One listed model without size_vram: the totals are unknown, not a smaller sum."""
    await ollama_request(emulator, "/api/generate", {"model": QWEN})
    await poll()  # the GPU memory sensors exist from here on
    assert float(hass.states.get("sensor.ollama_test_resident_gpu_memory").state) == 6.0
    listed = [
        {"name": QWEN, "size": 6 * GIB, "size_vram": 6 * GIB, "expires_at": "2026-11-29T08:05:00Z"},
        {"name": LLAMA, "size": 3 * GIB, "expires_at": "2026-11-29T08:05:00Z"},
    ]
    emulator.inject("/api/ps", status=200, body=json.dumps({"models": listed}), times=5)
    await poll()
    coordinator = init_integration.runtime_data.coordinator
    assert coordinator.data.resident[LLAMA].size_vram is None
    assert coordinator.resident_vram() is None
    assert hass.states.get("sensor.ollama_test_resident_gpu_memory").state == STATE_UNKNOWN
    assert hass.states.get("sensor.ollama_test_llama3_2_3b_gpu_memory").state == STATE_UNKNOWN
    assert hass.states.get("sensor.ollama_test_qwen3_8b_gpu_memory").state == "6.0"


async def test_model_sensors_through_a_load(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    coordinator = init_integration.runtime_data.coordinator
    assert hass.states.get("binary_sensor.ollama_test_llama3_2_3b_resident").state == STATE_OFF
    unloads_at = hass.states.get("sensor.ollama_test_llama3_2_3b_unloads_at")
    # Unknown, and why (issue 32: a bare "Unknown" told nothing).
    assert (unloads_at.state, unloads_at.attributes["reason"]) == (STATE_UNKNOWN, "not_loaded")
    cold = hass.states.get("sensor.ollama_test_llama3_2_3b_last_cold_request_duration")
    assert (cold.state, cold.attributes["reason"]) == (STATE_UNKNOWN, "not_timed_yet")
    # No GPU memory sensors before the server was seen holding weights on a GPU.
    assert hass.states.get("sensor.ollama_test_llama3_2_3b_gpu_memory") is None
    assert hass.states.get("sensor.ollama_test_resident_gpu_memory") is None

    load = await start_load(emulator, LLAMA, 0.4)
    await poll()
    resident = hass.states.get("binary_sensor.ollama_test_llama3_2_3b_resident")
    assert resident.state == STATE_ON
    assert resident.attributes["loading"] is True
    unloads_at = hass.states.get("sensor.ollama_test_llama3_2_3b_unloads_at")
    assert (unloads_at.state, unloads_at.attributes["reason"]) == (STATE_UNKNOWN, "loading")
    assert coordinator.fast_polling
    await load
    await poll()
    resident = hass.states.get("binary_sensor.ollama_test_llama3_2_3b_resident")
    assert resident.attributes["loading"] is False
    assert not coordinator.fast_polling
    expected = emulator.loaded[LLAMA].expires_at
    assert expected is not None
    unloads_at = hass.states.get("sensor.ollama_test_llama3_2_3b_unloads_at")
    assert unloads_at.state == expected.isoformat(timespec="seconds")
    assert unloads_at.attributes["kept_forever"] is False
    assert "reason" not in unloads_at.attributes  # it has a value
    assert hass.states.get("sensor.ollama_test_llama3_2_3b_gpu_share").state == "100.0"
    assert float(
        hass.states.get("sensor.ollama_test_llama3_2_3b_gpu_memory").state
    ) == pytest.approx(3.0)
    # Polls saw another client's load from its first sighting on: "at least", never the
    # state, which stays for an exact figure.
    cold = hass.states.get("sensor.ollama_test_llama3_2_3b_last_cold_request_duration")
    assert cold.state == STATE_UNKNOWN
    assert cold.attributes["at_least_seconds"] >= 0.2  # a 0.4 s load, seen right after start
    assert cold.attributes["source"] is None
    assert cold.attributes["reason"] == "lower_bound_only"
    # The lower bound as a sensor of its own, named for what it measures: the device page
    # and the Load times graph tell the figure the card tells ("at least 0.3 s").
    partly = hass.states.get(
        "sensor.ollama_test_llama3_2_3b_last_partly_seen_cold_request_at_least"
    )
    assert float(partly.state) == pytest.approx(cold.attributes["at_least_seconds"], abs=0.05)
    assert partly.attributes["unit_of_measurement"] == "s"
    assert "reason" not in partly.attributes
    # A load polling saw is no load the server measured.
    load_figure = hass.states.get("sensor.ollama_test_llama3_2_3b_last_measured_load_duration")
    assert (load_figure.state, load_figure.attributes["reason"]) == (STATE_UNKNOWN, "not_timed_yet")
    assert load_figure.attributes["at_least_seconds"] is None
    partly_load = hass.states.get("sensor.ollama_test_llama3_2_3b_last_partly_seen_load_at_least")
    assert (partly_load.state, partly_load.attributes["reason"]) == (
        STATE_UNKNOWN,
        "no_partly_seen_load",
    )
    # Once seen on a GPU, the GPU memory sensors stay, also across a restart with nothing
    # resident (a model not resident holds 0 GiB there, none of it: a share of 0 %).
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    assert await hass.config_entries.async_reload(init_integration.entry_id)
    await hass.async_block_till_done()
    assert hass.states.get("sensor.ollama_test_llama3_2_3b_gpu_memory").state == "0.0"
    assert hass.states.get("sensor.ollama_test_qwen3_8b_gpu_share").state == "0"
    assert hass.states.get("sensor.ollama_test_resident_gpu_memory").state == "0.0"


async def test_a_cpu_only_server_shows_memory_where_it_is(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    make_resident,
) -> None:
    """On a CPU-only server the models are in system RAM: no "GPU memory 0 GiB" sensors."""
    emulator.vram_budget = 0
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    await make_resident(LLAMA)
    assert hass.states.get("binary_sensor.ollama_test_llama3_2_3b_resident").state == STATE_ON
    ram = hass.states.get("sensor.ollama_test_resident_memory_in_system_ram")
    assert float(ram.state) == pytest.approx(3.0)
    for entity_id in (
        "sensor.ollama_test_resident_gpu_memory",
        "sensor.ollama_test_llama3_2_3b_gpu_memory",
        "sensor.ollama_test_llama3_2_3b_gpu_share",
    ):
        assert hass.states.get(entity_id) is None, entity_id


async def test_ram_spill(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    emulator.add_model(EmulatedModel(name="huge:70b", size=10 * GIB, family="llama"))
    await ollama_request(emulator, "/api/generate", {"model": "huge:70b", "keep_alive": "1h"})
    init_integration.runtime_data.coordinator.monitor._installed_at = None
    await poll()
    await poll()
    assert float(hass.states.get("sensor.ollama_test_resident_memory_in_system_ram").state) == 2.0
    assert float(hass.states.get("sensor.ollama_test_resident_gpu_memory").state) == 8.0
    assert hass.states.get("sensor.ollama_test_huge_70b_gpu_share").state == "80.0"
    unloads_at = hass.states.get("sensor.ollama_test_huge_70b_unloads_at")
    assert unloads_at.state == "2026-11-29T09:00:00+00:00"
    assert unloads_at.attributes["kept_forever"] is False


async def test_kept_forever(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    """Kept with no end: said so, not as a date centuries away that moves on every request."""
    await make_resident(QWEN, keep_alive=-1)
    unloads_at = hass.states.get("sensor.ollama_test_qwen3_8b_unloads_at")
    assert unloads_at.attributes["kept_forever"] is True
    assert unloads_at.state == "unknown"
    assert hass.states.get("sensor.ollama_test_qwen3_8b").state == "kept_warm"
    # Another request moves the server's far-future expiry: nothing is written.
    await make_resident(QWEN, keep_alive=-1)
    await poll()
    assert (
        hass.states.get("sensor.ollama_test_qwen3_8b_unloads_at").last_updated
        == unloads_at.last_updated
    )


async def test_warmth_follows_the_model(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """The one entity to put on a dashboard: cold, loading, warm."""
    warmth = "sensor.ollama_test_qwen3_8b"
    assert hass.states.get(warmth).state == "cold"
    assert hass.states.get(warmth).attributes["options"] == [
        "cold",
        "loading",
        "warm",
        "kept_warm",
        "unloading",
    ]
    load = await start_load(emulator, QWEN, 0.5)
    await poll()
    assert hass.states.get(warmth).state == "loading"
    await load
    await poll()
    await poll()
    assert hass.states.get(warmth).state == "warm"
    assert hass.states.get(warmth).attributes["server_state"] == "loaded"


async def test_server_down_mid_load_is_not_polled_fast(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    coordinator = init_integration.runtime_data.coordinator
    load = await start_load(emulator, LLAMA, 0.3)
    await poll()
    assert coordinator.fast_polling
    load.cancel()
    await emulator.stop()
    await poll()
    assert not coordinator.last_update_success
    assert not coordinator.fast_polling
    assert coordinator.update_interval == timedelta(seconds=10)


STORED_PROBE = {
    "last": {
        "ttft_ms": 35877.2,
        "queue_and_load_ms": 7463.1,
        "prefill_ms": 28402.3,
        "first_decode_ms": 170.2,
        "overhead_ms": 11.8,
        "decode_rate": 5.9,
        "prompt_tokens": 67,
        "eval_tokens": 4,
        "prompt_cache_reuse": None,
        "queue_ms": None,
    },
    "last_probe_at": "2026-11-30T07:30:00+00:00",
    "classification": "cold",
    "dominant_stage": "load",
    "last_cold_ttft_ms": 35877.2,
    "load_seconds": 7.463,
    "load_source": "server",
}


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_probe_entities_of_a_model_probed_before(
    hass: HomeAssistant,
    emulator: OllamaEmulator,
    mock_config_entry: MockConfigEntry,
    entity_registry: er.EntityRegistry,
    hass_storage: dict[str, object],
    snapshot: SnapshotAssertion,
) -> None:
    """A model probed before a restart has its probe sensors; one never probed has none."""
    hass_storage[f"llm_warmth.{mock_config_entry.entry_id}"] = {
        "version": 1,
        "minor_version": 3,
        "key": f"llm_warmth.{mock_config_entry.entry_id}",
        "data": {"models": {LLAMA: STORED_PROBE}},
    }
    mock_config_entry.add_to_hass(hass)
    with patch("custom_components.llm_warmth.PLATFORMS", [Platform.SENSOR]):
        await hass.config_entries.async_setup(mock_config_entry.entry_id)
        await hass.async_block_till_done()
    probed = [
        e
        for e in er.async_entries_for_config_entry(entity_registry, mock_config_entry.entry_id)
        if "time_to_first_token" in e.entity_id or e.entity_id.endswith("_stage")
    ]
    assert probed
    assert all(e.entity_id.startswith("sensor.ollama_test_llama3_2_3b_") for e in probed)
    for entry in sorted(probed, key=lambda e: e.entity_id):
        assert entry == snapshot(name=f"{entry.entity_id}-entry")
        assert hass.states.get(entry.entity_id) == snapshot(name=f"{entry.entity_id}-state")


async def test_the_servers_assistant_warmth(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    """One entity per server for a dashboard: the assistant model's warmth."""
    assistant = "sensor.ollama_test_assistant_warmth"
    state = hass.states.get(assistant)
    assert (state.state, state.attributes["chosen_by"]) == (STATE_UNKNOWN, "none")
    # Agents of other servers (or of no readable address) say nothing about this one.
    for url in ("http://elsewhere:11434", "ftp://nowhere"):
        add_ollama_agent(hass, url, LLAMA, title="Other")
    # Home Assistant's Ollama agent at this address (written its own way) names the model.
    agent = MockConfigEntry(
        domain="ollama",
        data={"url": emulator.url + "/"},
        subentries_data=[
            {
                "data": {"model": QWEN, "num_ctx": 8192},
                "subentry_type": "conversation",
                "title": "Ollama Conversation",
                "unique_id": None,
            }
        ],
    )
    agent.add_to_hass(hass)
    # Home Assistant says an Ollama entry changed: the sensor reads it at once.
    async_dispatcher_send(hass, SIGNAL_CONFIG_ENTRY_CHANGED, ConfigEntryChange.ADDED, agent)
    await hass.async_block_till_done()
    state = hass.states.get(assistant)
    assert (state.state, state.attributes["model"]) == ("cold", QWEN)
    await make_resident(QWEN, keep_alive="1h")
    state = hass.states.get(assistant)
    assert (state.state, state.attributes["model"], state.attributes["chosen_by"]) == (
        "warm",
        QWEN,
        "agent",
    )


async def test_an_assistant_model_chosen_in_the_options(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """Typed as people say it ("gemma3"), read as the server names it ("gemma3:latest")."""
    emulator.add_model(EmulatedModel(name="gemma3:latest", size=GIB))
    init_integration.runtime_data.coordinator.monitor._installed_at = None
    await poll()
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"assistant_model": "gemma3", "scan_interval": 10}
    )
    await hass.async_block_till_done()
    state = hass.states.get("sensor.ollama_test_assistant_warmth")
    assert (state.state, state.attributes["model"], state.attributes["chosen_by"]) == (
        "cold",
        "gemma3:latest",
        "option",
    )
    # An Ollama agent of this server appears: the user's explicit choice still wins.
    agent = add_ollama_agent(hass, emulator.url, QWEN)
    async_dispatcher_send(hass, SIGNAL_CONFIG_ENTRY_CHANGED, ConfigEntryChange.ADDED, agent)
    await hass.async_block_till_done()
    state = hass.states.get("sensor.ollama_test_assistant_warmth")
    assert (state.attributes["model"], state.attributes["chosen_by"]) == (
        "gemma3:latest",
        "option",
    )
    # Without a choice in the options, the agent's model is the assistant's.
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"scan_interval": 10}
    )
    await hass.async_block_till_done()
    state = hass.states.get("sensor.ollama_test_assistant_warmth")
    assert (state.attributes["model"], state.attributes["chosen_by"]) == (QWEN, "agent")


async def test_a_loading_model_says_when_it_should_be_ready(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """Its load's start (as seen) plus its last exact load: an automation can say "one moment"."""
    emulator.models[LLAMA].load_delay = 0.2
    answer = await hass.services.async_call(
        "llm_warmth",
        "preload",
        {"config_entry_id": init_integration.entry_id, "model": LLAMA},
        blocking=True,
        return_response=True,
    )
    assert answer is not None
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await poll()
    warmth = "sensor.ollama_test_llama3_2_3b"
    assert hass.states.get(warmth).attributes["ready_expected_at"] is None  # not loading
    load = await start_load(emulator, LLAMA, None)  # another client's, held
    await poll()
    state = hass.states.get(warmth)
    assert state.state == "loading"
    snapshot = init_integration.runtime_data.coordinator.data
    since = snapshot.loading_since[LLAMA]
    expected = since + timedelta(seconds=float(answer["load_seconds"]))  # type: ignore[arg-type]
    assert state.attributes["ready_expected_at"] == expected.isoformat()
    assert since <= snapshot.polled_at
    emulator.finish_loads()
    await load
    await poll()
    assert hass.states.get(warmth).attributes["ready_expected_at"] is None
