"""The events fired between snapshots: model loaded/unloaded, server restarted."""

from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events

from custom_components.llm_warmth.const import (
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
)

from .conftest import ENTRY_ID, LLAMA, QWEN, ollama_request, start_load
from .ollama_emulator import OllamaEmulator


async def test_loaded_event_with_observed_load_time(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    load = await start_load(emulator, LLAMA, 0.5)
    await poll()
    assert loaded == []
    await load
    await poll()
    assert len(loaded) == 1
    data = loaded[0].data
    assert data["model"] == LLAMA
    assert data["server"] == "Ollama test"
    assert data["config_entry_id"] == ENTRY_ID
    # Seen loading right after it started and loaded right after it ended (0.5 s).
    assert data["load_seconds"] >= 0.3
    # The measurement is kept for the sensor and the next start.
    assert (
        init_integration.runtime_data.coordinator.data.timings[LLAMA].load_seconds
        == data["load_seconds"]
    )


async def test_loaded_event_without_load_time_when_not_seen_loading(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    await poll()
    assert loaded == []  # first sighting with an expiry: confirmed on the next poll
    await poll()
    assert [e.data["load_seconds"] for e in loaded] == [None]
    await poll()
    assert len(loaded) == 1


async def test_unloaded_expired(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": "2m"})
    await poll()
    await poll()
    emulator.clock.advance(121)
    await poll()
    assert [(e.data["model"], e.data["reason"]) for e in unloaded] == [(LLAMA, "expired")]


async def test_unloaded_displaced(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": -1})
    await poll()
    await poll()
    # qwen does not fit beside llama in the 8 GiB budget: llama is evicted early.
    await ollama_request(emulator, "/api/generate", {"model": QWEN})
    await poll()
    assert [(e.data["model"], e.data["reason"]) for e in unloaded] == [(LLAMA, "displaced")]
    # Evicted by hand (keep_alive 0) before its time: displaced too.
    await poll()
    await ollama_request(emulator, "/api/generate", {"model": QWEN, "keep_alive": 0})
    await poll()
    assert [(e.data["model"], e.data["reason"]) for e in unloaded][1:] == [(QWEN, "displaced")]


async def test_server_restart(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    restarted = async_capture_events(hass, EVENT_SERVER_RESTARTED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    await poll()
    await poll()
    await emulator.stop()
    await poll()
    await poll()
    assert restarted == []
    await emulator.start()
    await poll()
    assert [e.data for e in restarted] == [
        {
            "server": "Ollama test",
            "config_entry_id": ENTRY_ID,
            "reason": "reconnected",
            "version": emulator.version,
            "previous_version": emulator.version,
        }
    ]
    assert [(e.data["model"], e.data["reason"]) for e in unloaded] == [(LLAMA, "server_restarted")]


async def test_version_change_is_a_restart(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    restarted = async_capture_events(hass, EVENT_SERVER_RESTARTED)
    await emulator.restart(version="0.13.1")
    await poll()
    assert [
        (e.data["reason"], e.data["previous_version"], e.data["version"]) for e in restarted
    ] == [("version_changed", "0.12.6", "0.13.1")]
    await poll()
    assert len(restarted) == 1


async def test_no_events_on_an_unchanged_server(
    hass: HomeAssistant, init_integration: MockConfigEntry, poll
) -> None:
    events = [
        async_capture_events(hass, name)
        for name in (EVENT_MODEL_LOADED, EVENT_MODEL_UNLOADED, EVENT_SERVER_RESTARTED)
    ]
    await poll()
    await poll()
    assert events == [[], [], []]
