"""Setup, unload, unavailability and recovery, devices of models that come and go."""

from datetime import timedelta
import logging
from typing import Any
from unittest.mock import patch

from homeassistant.config_entries import SOURCE_REAUTH, ConfigEntryState
from homeassistant.const import (
    CONF_API_KEY,
    CONF_SCAN_INTERVAL,
    CONF_URL,
    CONF_VERIFY_SSL,
    STATE_OFF,
    STATE_ON,
    STATE_UNAVAILABLE,
    STATE_UNKNOWN,
)
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr, entity_registry as er
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.llm_warmth import async_remove_config_entry_device
from custom_components.llm_warmth.const import DOMAIN

from .conftest import ENTRY_ID, LLAMA, QWEN, model_device, ollama_request, start_load
from .ollama_emulator import EmulatedModel, OllamaEmulator

SERVER_ONLINE = "binary_sensor.ollama_test_connectivity"
RESIDENT_MODELS = "sensor.ollama_test_resident_models"
LLAMA_RESIDENT = "binary_sensor.ollama_test_llama3_2_3b_resident"


# A diagnosis as releases before 1.6 of the store kept it: the verdict in English words.
STORED_DIAGNOSIS: dict[str, Any] = {
    "verdict": "one slow request, then normal: the model was evicted (load 6.5 s of 7.0 s)",
    "pattern": "evicted",
    "stage": "load",
    "expanded_ms": 6500.0,
    "recommendation": "keep_resident",
    "model": LLAMA,
    "scenario": "cold_vs_repeat",
    "at": "2026-11-30T06:00:00+00:00",
    "runs": [
        # A row of the runs table as releases from 0.4 on wrote it.
        {
            "run": "cold",
            "model": LLAMA,
            "resident_before": False,
            "resident_after": True,
            "resident_models": [LLAMA],
            "gpus": [],
            "ttft_ms": 7000.0,
            "queue_and_load_ms": 6500.0,
            "prefill_ms": 400.0,
            "first_decode_ms": 90.0,
            "overhead_ms": 10.0,
            "decode_rate": 12.5,
            "prompt_tokens": 67,
            "eval_tokens": 4,
            "prompt_cache_reuse": None,
            "queue_ms": None,
        }
    ],
}


async def test_setup_and_unload(hass: HomeAssistant, init_integration: MockConfigEntry) -> None:
    assert init_integration.state is ConfigEntryState.LOADED
    assert hass.states.get(SERVER_ONLINE).state == STATE_ON
    assert await hass.config_entries.async_unload(init_integration.entry_id)
    await hass.async_block_till_done()
    assert init_integration.state is ConfigEntryState.NOT_LOADED


async def test_async_setup_without_entries(hass: HomeAssistant) -> None:
    assert await async_setup_component(hass, DOMAIN, {})


@pytest.mark.parametrize(
    ("fault", "key"),
    [
        ({"drop": True, "times": None}, "cannot_connect"),
        ({"delay": 30, "times": None}, "timeout"),
        ({"status": 200, "body": "<html>hello</html>", "times": None}, "not_supported"),
    ],
)
async def test_setup_retries_with_a_translated_reason(
    hass: HomeAssistant,
    emulator: OllamaEmulator,
    mock_config_entry: MockConfigEntry,
    fault: dict[str, object],
    key: str,
) -> None:
    emulator.inject("/api/version", **fault)  # type: ignore[arg-type]
    mock_config_entry.add_to_hass(hass)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("custom_components.llm_warmth.core.backends.http.DEFAULT_TIMEOUT", 0.3)
        await hass.config_entries.async_setup(mock_config_entry.entry_id)
    assert mock_config_entry.state is ConfigEntryState.SETUP_RETRY
    assert mock_config_entry.error_reason_translation_key == key


async def test_setup_with_malformed_reply_retries(
    hass: HomeAssistant, emulator: OllamaEmulator, mock_config_entry: MockConfigEntry
) -> None:
    emulator.inject("/api/ps", status=200, body='{"models": [{"size": "big"}]}', times=None)
    mock_config_entry.add_to_hass(hass)
    await hass.config_entries.async_setup(mock_config_entry.entry_id)
    assert mock_config_entry.state is ConfigEntryState.SETUP_RETRY
    assert mock_config_entry.error_reason_translation_key == "unexpected_response"


async def test_auth_failure_starts_reauth(
    hass: HomeAssistant, emulator: OllamaEmulator, mock_config_entry: MockConfigEntry
) -> None:
    emulator.inject("/api/version", status=401, body='{"error": "unauthorized"}')
    mock_config_entry.add_to_hass(hass)
    await hass.config_entries.async_setup(mock_config_entry.entry_id)
    assert mock_config_entry.state is ConfigEntryState.SETUP_ERROR
    flows = hass.config_entries.flow.async_progress()
    assert [(f["context"]["source"], f["step_id"]) for f in flows] == [
        (SOURCE_REAUTH, "reauth_confirm")
    ]


async def test_auth_failure_after_setup_starts_reauth(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    emulator.inject("/api/ps", status=403, body="forbidden", content_type="text/plain")
    await poll()
    flows = hass.config_entries.flow.async_progress()
    assert [f["context"]["source"] for f in flows] == [SOURCE_REAUTH]


async def test_unavailable_and_back_logs_once_each(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await make_resident(LLAMA)
    assert hass.states.get(LLAMA_RESIDENT).state == STATE_ON
    caplog.clear()
    caplog.set_level(logging.DEBUG, logger="custom_components.llm_warmth")
    emulator.inject("/api/ps", drop=True, times=None)
    for _ in range(3):
        await poll()
    assert hass.states.get(LLAMA_RESIDENT).state == STATE_UNAVAILABLE
    assert hass.states.get(RESIDENT_MODELS).state == STATE_UNAVAILABLE
    assert hass.states.get(SERVER_ONLINE).state == STATE_OFF
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failures) == 1
    assert "Cannot connect to the server at" in failures[0].getMessage()
    assert failures[0].exc_info is None
    emulator.clear_faults()
    await poll()
    assert hass.states.get(LLAMA_RESIDENT).state == STATE_ON
    assert hass.states.get(SERVER_ONLINE).state == STATE_ON
    recovered = [r for r in caplog.records if "recovered" in r.getMessage()]
    assert len(recovered) == 1
    assert recovered[0].levelno == logging.INFO


@pytest.mark.parametrize(
    "body",
    [
        "<!DOCTYPE html><html><body>502 Bad Gateway</body></html>",
        '{"models": "nope"}',
        '{"models": [{"name": "x", "size": -1, "expires_at": "0001-01-01T00:00:00Z"}]}',
        "{truncated",
    ],
)
async def test_malformed_replies_mark_unavailable_without_traceback(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    caplog: pytest.LogCaptureFixture,
    body: str,
) -> None:
    emulator.inject("/api/ps", status=200, body=body, times=None)
    await poll()
    assert hass.states.get(RESIDENT_MODELS).state == STATE_UNAVAILABLE
    assert "unexpected response" in caplog.text
    # The traceback goes to the debug log only.
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.INFO]
    emulator.clear_faults()
    await poll()
    assert hass.states.get(RESIDENT_MODELS).state == "0"


async def test_model_devices_follow_the_server(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    device_registry: dr.DeviceRegistry,
    entity_registry: er.EntityRegistry,
) -> None:
    server = device_registry.async_get_device_by_identifier((DOMAIN, ENTRY_ID), ENTRY_ID)
    assert server is not None
    assert server.sw_version == emulator.version
    llama = model_device(device_registry, LLAMA)
    assert llama is not None
    # A model is a part of its server: a child device, its entity ids naming the server.
    assert llama.parent_device_id == server.id
    assert llama.name == "llama3.2:3b"
    warmth = hass.states.get("sensor.ollama_test_llama3_2_3b")
    assert (warmth.attributes["family"], warmth.attributes["parameter_size"]) == ("llama", "3.2B")

    emulator.add_model(EmulatedModel(name="gemma3:4b", size=4 * 1024**3, family="gemma3"))
    init_integration.runtime_data.coordinator.monitor._installed_at = None
    await poll()
    assert model_device(device_registry, "gemma3:4b")
    assert hass.states.get("binary_sensor.ollama_test_gemma3_4b_resident").state == STATE_OFF

    emulator.remove_model(QWEN)
    init_integration.runtime_data.coordinator.monitor._installed_at = None
    await poll()
    assert model_device(device_registry, QWEN) is None
    assert entity_registry.async_get("binary_sensor.ollama_test_qwen3_8b_resident") is None
    assert hass.states.get("binary_sensor.ollama_test_qwen3_8b_resident") is None

    # Installed again: it comes back with fresh entities.
    emulator.add_model(EmulatedModel(name=QWEN, size=6 * 1024**3, family="qwen3"))
    init_integration.runtime_data.coordinator.monitor._installed_at = None
    await poll()
    assert hass.states.get("binary_sensor.ollama_test_qwen3_8b_resident").state == STATE_OFF


async def test_model_devices_of_an_earlier_install_become_child_devices(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    device_registry: dr.DeviceRegistry,
    entity_registry: er.EntityRegistry,
) -> None:
    """Up to 0.2 a model was a device of its own (via the server): it keeps its id."""
    mock_config_entry.add_to_hass(hass)
    server = device_registry.async_get_or_create(
        config_entry_id=ENTRY_ID, identifiers={(DOMAIN, ENTRY_ID)}, name="Ollama test"
    )
    old = device_registry.async_get_or_create(
        config_entry_id=ENTRY_ID,
        identifiers={(DOMAIN, f"{ENTRY_ID}_{LLAMA}")},
        name="llama3.2:3b",
        model="llama 3.2B",
        via_device_id=server.id,
    )
    # Registered by the earlier run, which ended: this run has not registered them yet.
    device_registry.async_config_entry_unloaded(ENTRY_ID)
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    child = model_device(device_registry, LLAMA)
    assert child is not None
    assert (child.id, child.parent_device_id) == (old.id, server.id)
    warmth = entity_registry.async_get("sensor.ollama_test_llama3_2_3b")
    assert warmth is not None
    assert warmth.device_id == old.id


async def test_resident_model_unknown_to_tags_gets_a_device(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """A model resident but not yet listed makes the coordinator list the models again."""
    emulator.add_model(EmulatedModel(name="phi4:14b", size=2 * 1024**3, family="phi3"))
    await ollama_request(emulator, "/api/generate", {"model": "phi4:14b"})
    await poll()
    assert hass.states.get("binary_sensor.ollama_test_phi4_14b_resident").state == STATE_ON


async def test_version_change_updates_the_device(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    device_registry: dr.DeviceRegistry,
) -> None:
    emulator.version = "0.14.0"
    # The version is read every few minutes, and first after a failed poll.
    emulator.inject("/api/ps", drop=True, times=2)  # aiohttp retries a reused connection once
    await poll()
    await poll()
    server = device_registry.async_get_device_by_identifier((DOMAIN, ENTRY_ID), ENTRY_ID)
    assert server is not None
    assert server.sw_version == "0.14.0"


async def test_remove_config_entry_device(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    device_registry: dr.DeviceRegistry,
) -> None:
    server = device_registry.async_get_device_by_identifier((DOMAIN, ENTRY_ID), ENTRY_ID)
    llama = model_device(device_registry, LLAMA)
    assert server is not None
    assert llama is not None
    assert not await async_remove_config_entry_device(hass, init_integration, server)
    assert not await async_remove_config_entry_device(hass, init_integration, llama)
    stale = device_registry.async_get_or_create_child(
        config_entry_id=init_integration.entry_id,
        identifiers={(DOMAIN, f"{ENTRY_ID}_old:1b")},
        parent_device_id=server.id,
    )
    assert await async_remove_config_entry_device(hass, init_integration, stale)


async def test_removing_the_entry_deletes_its_stored_data(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_storage: dict[str, object],
) -> None:
    key = f"{DOMAIN}.{ENTRY_ID}"
    hass_storage[key] = {"version": 1, "data": {"models": {}}}
    await hass.config_entries.async_remove(init_integration.entry_id)
    await hass.async_block_till_done()
    assert key not in hass_storage


async def test_stored_load_times_survive_a_restart(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    hass_storage: dict[str, object],
) -> None:
    hass_storage[f"{DOMAIN}.{ENTRY_ID}"] = {
        "version": 1,
        "minor_version": 2,
        "key": f"{DOMAIN}.{ENTRY_ID}",
        "data": {
            "models": {
                LLAMA: {
                    "load_seconds": 7.25,
                    "cold_request_seconds": 16.5,
                    "cold_request_source": "client",
                },
                QWEN: {"load_seconds": "garbage"},
                "old:1b": "garbage",
            }
        },
    }
    mock_config_entry.add_to_hass(hass)
    await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    load = hass.states.get("sensor.ollama_test_llama3_2_3b_last_measured_load_duration")
    assert (load.state, load.attributes["source"]) == ("7.25", "server")
    cold = hass.states.get("sensor.ollama_test_llama3_2_3b_last_cold_request_duration")
    assert (cold.state, cold.attributes["source"]) == ("16.5", "client")
    assert (
        hass.states.get("sensor.ollama_test_qwen3_8b_last_measured_load_duration").state
        == "unknown"
    )


async def test_stored_figures_of_version_1_1_are_migrated(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    hass_storage: dict[str, object],
) -> None:
    """1.1 stored what polling saw as "load_seconds": it was the cold request."""
    hass_storage[f"{DOMAIN}.{ENTRY_ID}"] = {
        "version": 1,
        "key": f"{DOMAIN}.{ENTRY_ID}",
        "data": {"models": {LLAMA: {"load_seconds": 7.25}, QWEN: {"load_seconds": None}}},
    }
    mock_config_entry.add_to_hass(hass)
    await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    assert (
        hass.states.get("sensor.ollama_test_llama3_2_3b_last_measured_load_duration").state
        == "unknown"
    )
    # What polls saw is a lower bound (1.7): an attribute, never the state.
    cold = hass.states.get("sensor.ollama_test_llama3_2_3b_last_cold_request_duration")
    assert (cold.state, cold.attributes["source"], cold.attributes["at_least_seconds"]) == (
        "unknown",
        None,
        7.25,
    )
    timings = mock_config_entry.runtime_data.coordinator.data.timings
    assert timings[QWEN].cold_request_seconds is None
    await hass.config_entries.async_unload(mock_config_entry.entry_id)
    stored = hass_storage[f"{DOMAIN}.{ENTRY_ID}"]
    assert stored["minor_version"] == 8  # type: ignore[index]
    models = stored["data"]["models"]  # type: ignore[index]
    assert models[LLAMA]["cold_request_at_least_seconds"] == 7.25
    assert models[LLAMA]["cold_request_seconds"] is None


async def test_new_load_times_are_saved(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    hass_storage: dict[str, object],
) -> None:
    load = await start_load(emulator, LLAMA, 0.3)
    await poll()
    await load
    await poll()
    # The usage recorded at the poll asks for the write a moment after the measurement
    # does: Home Assistant's store then waits for the later one by the loop's clock, which
    # firing the time alone does not move.
    with patch.object(hass.loop, "time", return_value=hass.loop.time() + 10):
        async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=10))
        await hass.async_block_till_done()
    stored = hass_storage[f"{DOMAIN}.{ENTRY_ID}"]["data"]  # type: ignore[index]
    measured = init_integration.runtime_data.coordinator.data.timings[LLAMA]
    # Polls saw another client's load: a lower bound, kept apart from exact figures.
    assert measured.cold_request_seconds is None
    assert measured.cold_request_at_least_seconds is not None
    assert measured.cold_request_at_least_seconds > 0.1
    saved = stored["models"][LLAMA]
    assert saved["cold_request_at_least_seconds"] == measured.cold_request_at_least_seconds
    assert (saved["cold_request_seconds"], saved["cold_request_source"]) == (None, None)


async def test_the_old_observed_load_sensor_becomes_the_cold_request_sensor(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    hass_storage: dict[str, object],
    entity_registry: er.EntityRegistry,
) -> None:
    """What 0.1 called "Last observed load duration" was the cold request all along."""
    mock_config_entry.add_to_hass(hass)
    for model, object_id in ((LLAMA, "llama3_2_3b"), (QWEN, "qwen3_8b")):
        entity_registry.async_get_or_create(
            "sensor",
            DOMAIN,
            f"{ENTRY_ID}_{model}_last_load_duration",
            config_entry=mock_config_entry,
            suggested_object_id=f"{object_id}_last_observed_load_duration",
        )
    # Both kinds exist already for qwen (a half-done upgrade): the old one goes.
    entity_registry.async_get_or_create(
        "sensor",
        DOMAIN,
        f"{ENTRY_ID}_{QWEN}_last_cold_request_duration",
        config_entry=mock_config_entry,
        suggested_object_id="qwen3_8b_last_cold_request_duration",
    )
    hass_storage[f"{DOMAIN}.{ENTRY_ID}"] = {
        "version": 1,
        "key": f"{DOMAIN}.{ENTRY_ID}",
        "data": {"models": {LLAMA: {"load_seconds": 7.25}}},
    }
    await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    # Entities of an earlier install keep their ids (without the server); new ones name it.
    kept = entity_registry.async_get("sensor.llama3_2_3b_last_observed_load_duration")
    assert kept is not None
    assert kept.unique_id == f"{ENTRY_ID}_{LLAMA}_last_cold_request_duration"
    state = hass.states.get("sensor.llama3_2_3b_last_observed_load_duration")
    assert (state.state, state.attributes["at_least_seconds"]) == ("unknown", 7.25)
    assert (
        hass.states.get("sensor.ollama_test_llama3_2_3b_last_measured_load_duration").state
        == "unknown"
    )
    assert entity_registry.async_get("sensor.qwen3_8b_last_observed_load_duration") is None
    assert entity_registry.async_get("sensor.qwen3_8b_last_cold_request_duration") is not None


async def test_a_version_1_entry_becomes_an_ollama_entry_and_keeps_everything(
    hass: HomeAssistant,
    emulator: OllamaEmulator,
    entity_registry: er.EntityRegistry,
    hass_storage: dict[str, object],
) -> None:
    """Entries of 0.1 name no server kind: they were all Ollama, and keep their entities."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Ollama test",
        entry_id=ENTRY_ID,
        unique_id=emulator.url,
        version=1,
        minor_version=1,
        data={CONF_URL: emulator.url, CONF_API_KEY: "", CONF_VERIFY_SSL: True},
    )
    entry.add_to_hass(hass)
    # What 0.1 registered and stored: an entity with a renamed id, and a measurement.
    old = entity_registry.async_get_or_create(
        "sensor",
        DOMAIN,
        f"{ENTRY_ID}_{LLAMA}_last_ttft",
        config_entry=entry,
        suggested_object_id="my_assistant_ttft",
    )
    hass_storage[f"{DOMAIN}.{ENTRY_ID}"] = {
        "version": 1,
        "minor_version": 2,
        "key": f"{DOMAIN}.{ENTRY_ID}",
        "data": {"models": {LLAMA: {"load_seconds": 2.5, "cold_request_seconds": 4.0}}},
    }
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert (entry.version, entry.minor_version) == (2, 2)
    assert entry.data == {
        CONF_URL: emulator.url,
        CONF_API_KEY: "",
        CONF_VERIFY_SSL: True,
        "server_kind": "ollama",
    }
    assert entry.unique_id == emulator.url
    # 2.2: the household guard's services belong to the server's host, from its URL.
    assert entry.options == {"host": "127.0.0.1"}
    assert entity_registry.async_get(old.entity_id).unique_id == old.unique_id
    assert hass.states.get(old.entity_id) is not None
    load = hass.states.get("sensor.ollama_test_llama3_2_3b_last_measured_load_duration")
    assert (load.state, load.attributes["source"]) == ("2.5", "server")
    cold = hass.states.get("sensor.ollama_test_llama3_2_3b_last_cold_request_duration")
    assert cold.state == "4.0"


async def test_an_entry_of_a_newer_release_is_not_guessed(
    hass: HomeAssistant, emulator: OllamaEmulator
) -> None:
    entry = MockConfigEntry(
        domain=DOMAIN,
        unique_id=emulator.url,
        version=3,
        data={CONF_URL: emulator.url, "server_kind": "ollama"},
    )
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.MIGRATION_ERROR


async def test_damaged_pins_guard_record_and_diagnoses_are_dropped_not_fatal(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    hass_storage: dict[str, object],
    caplog: pytest.LogCaptureFixture,
) -> None:
    hass_storage[f"{DOMAIN}.{ENTRY_ID}"] = {
        "version": 1,
        "minor_version": 4,
        "key": f"{DOMAIN}.{ENTRY_ID}",
        "data": {
            "models": {},
            "pins": {
                LLAMA: {"model": LLAMA, "priority": 2, "since": "2026-11-30T06:00:00+00:00"},
                "broken": {"model": "broken", "priority": "high"},
            },
            "guard": {"contended_seconds": -5},
            "diagnoses": {
                LLAMA: {**STORED_DIAGNOSIS},
                "broken": ["not", "one"],
                # A pattern this release does not know: dropped, not shown as if it were one.
                "unknown": {**STORED_DIAGNOSIS, "pattern": "haunted", "model": "unknown"},
            },
        },
    }
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    runtime = mock_config_entry.runtime_data
    assert list(runtime.pins.pins) == [LLAMA]
    assert runtime.guard.guard.record.contended_seconds == 0
    assert list(runtime.diagnoses.as_stored()) == [LLAMA]
    assert "Ignoring the stored pin of broken" in caplog.text
    assert "Ignoring the stored diagnosis of unknown: 'haunted' is not a valid Pattern" in (
        caplog.text
    )
    assert "Ignoring the household guard's stored record" in caplog.text
    assert "Ignoring the stored diagnosis of broken" in caplog.text


async def test_a_1_4_store_without_the_later_sections_is_migrated_to_1_5(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, hass_storage: dict[str, object]
) -> None:
    """Diagnoses, TTFT targets and idle profiles came inside 1.4: 1.5 has them always."""
    key = f"{DOMAIN}.{ENTRY_ID}"
    hass_storage[key] = {
        "version": 1,
        "minor_version": 4,
        "key": key,
        "data": {"models": {}, "pins": {}, "guard": {}},
    }
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    runtime = mock_config_entry.runtime_data
    assert (
        runtime.diagnoses.as_stored(),
        runtime.ttft_targets.as_stored(),
        runtime.profiler.profiles,
    ) == ({}, {}, {})
    await hass.config_entries.async_unload(ENTRY_ID)
    stored = hass_storage[key]
    assert stored["minor_version"] == 8  # type: ignore[index]
    for section in ("diagnoses", "ttft_targets", "idle_profiles"):
        assert stored["data"][section] == {}  # type: ignore[index]


async def test_a_diagnosis_stored_in_words_keeps_them_through_the_1_6_migration(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, hass_storage: dict[str, object]
) -> None:
    """Before 1.6 a verdict was stored as English words; they are shown as they were."""
    key = f"{DOMAIN}.{ENTRY_ID}"
    words = STORED_DIAGNOSIS["verdict"]
    hass_storage[key] = {
        "version": 1,
        "minor_version": 5,
        "key": key,
        "data": {"diagnoses": {LLAMA: {**STORED_DIAGNOSIS}}},
    }
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    state = hass.states.get("sensor.ollama_test_llama3_2_3b_last_diagnosis")
    assert (state.state, state.attributes["verdict"]) == ("evicted", words)
    await hass.config_entries.async_unload(ENTRY_ID)
    stored = hass_storage[key]
    assert stored["minor_version"] == 8  # type: ignore[index]
    diagnosis = stored["data"]["diagnoses"][LLAMA]  # type: ignore[index]
    assert "verdict" not in diagnosis
    assert diagnosis["said"] == {"key": "diagnosis_as_stored", "figures": {"words": words}}
    assert diagnosis["runs"] == STORED_DIAGNOSIS["runs"]  # the table read and written back
    assert state.attributes["runs"] == STORED_DIAGNOSIS["runs"]


async def test_each_store_section_has_one_owner(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """Two owners of a section would overwrite each other's records."""
    store = init_integration.runtime_data.store
    for section in ("models", "pins", "guard", "diagnoses", "ttft_targets", "idle_profiles"):
        with pytest.raises(ValueError, match="has an owner"):
            store.section(section, dict)


async def test_a_failing_listener_of_a_feature_is_logged_and_the_others_still_hear(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    caplog: pytest.LogCaptureFixture,
    hass_storage: dict[str, Any],
) -> None:
    targets = init_integration.runtime_data.ttft_targets
    heard: list[float | None] = []

    def failing() -> None:
        raise RuntimeError("boom")

    targets.async_add_listener(failing)
    targets.async_add_listener(lambda: heard.append(targets.get(LLAMA)))
    targets.set(LLAMA, 3.0)
    assert heard == [3.0]
    assert "a listener of" in caplog.text
    assert "boom" in caplog.text
    await hass.config_entries.async_unload(ENTRY_ID)
    assert hass_storage[f"{DOMAIN}.{ENTRY_ID}"]["data"]["ttft_targets"] == {LLAMA: 3.0}


async def test_a_polled_figure_stored_before_1_7_becomes_a_lower_bound(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, hass_storage: dict[str, object]
) -> None:
    """Until 1.6 a figure polls saw was stored as the figure, with source "polling"."""
    key = f"{DOMAIN}.{ENTRY_ID}"
    hass_storage[key] = {
        "version": 1,
        "minor_version": 6,
        "key": key,
        "data": {
            "models": {
                LLAMA: {
                    "load_seconds": 0.5,
                    "load_source": "polling",
                    "cold_request_seconds": 16.5,
                    "cold_request_source": "client",
                },
                QWEN: {"cold_request_seconds": 3.5, "cold_request_source": "polling"},
            }
        },
    }
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    load = hass.states.get("sensor.ollama_test_llama3_2_3b_last_measured_load_duration")
    assert (load.state, load.attributes["at_least_seconds"]) == (STATE_UNKNOWN, 0.5)
    cold = hass.states.get("sensor.ollama_test_llama3_2_3b_last_cold_request_duration")
    assert (cold.state, cold.attributes["source"]) == ("16.5", "client")
    cold = hass.states.get("sensor.ollama_test_qwen3_8b_last_cold_request_duration")
    assert (cold.state, cold.attributes["at_least_seconds"]) == (STATE_UNKNOWN, 3.5)
    # The lower bounds, each on a sensor of its own; none where the newest was exact.
    partly = "sensor.ollama_test_{}_last_partly_seen_{}_at_least"
    assert hass.states.get(partly.format("llama3_2_3b", "load")).state == "0.5"
    assert hass.states.get(partly.format("qwen3_8b", "cold_request")).state == "3.5"
    exact = hass.states.get(partly.format("llama3_2_3b", "cold_request"))
    assert (exact.state, exact.attributes["reason"]) == (STATE_UNKNOWN, "no_partly_seen_load")
    await hass.config_entries.async_unload(ENTRY_ID)
    stored = hass_storage[key]
    assert stored["minor_version"] == 8  # type: ignore[index]
    assert stored["data"]["models"][QWEN]["cold_request_at_least_seconds"] == 3.5  # type: ignore[index]


async def test_a_2_1_entry_gets_its_host_and_keeps_its_guard(
    hass: HomeAssistant, emulator: OllamaEmulator
) -> None:
    """The guard's options of 2.1 stay as they were; the host is the URL's, no step asked."""
    options = {
        CONF_SCAN_INTERVAL: 10,
        "protected_entities": ["binary_sensor.plex_transcoding"],
        "guard_clear_minutes": 5,
    }
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Ollama test",
        entry_id=ENTRY_ID,
        unique_id=emulator.url,
        version=2,
        minor_version=1,
        data={
            CONF_URL: emulator.url,
            CONF_API_KEY: "",
            CONF_VERIFY_SSL: True,
            "server_kind": "ollama",
        },
        options=options,
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert (entry.version, entry.minor_version) == (2, 2)
    assert entry.options == {**options, "host": "127.0.0.1"}
    household = entry.runtime_data.household
    assert (household.host, household.protected) == (
        "127.0.0.1",
        ["binary_sensor.plex_transcoding"],
    )
