"""The events fired between snapshots: model loaded/unloaded, server restarted."""

from datetime import timedelta
import time

from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events

from custom_components.llm_warmth.const import (
    DOMAIN,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
)
from custom_components.llm_warmth.core.monitor import VERSION_REFRESH_SECONDS

from .conftest import ENTRY_ID, LLAMA, QWEN, ollama_request, start_load
from .ollama_emulator import HeldAnswer, OllamaEmulator


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
    # Polling cannot tell the load from the request that caused it: it reports the cold
    # request, seen busy from right after it started to right after it ended (0.5 s).
    assert data["load_seconds"] is None
    assert data["load_source"] is None
    assert data["cold_request_seconds"] >= 0.3
    assert data["cold_request_source"] == "polling"
    assert data["reloaded"] is False
    # The measurement is kept for the sensor and the next start, as the lower bound it is.
    timing = init_integration.runtime_data.coordinator.data.timings[LLAMA]
    assert timing.cold_request_at_least_seconds == data["cold_request_seconds"]
    assert (timing.cold_request_seconds, timing.cold_request_source) == (None, None)
    assert timing.load_seconds is None


async def test_on_ollama_0_30_a_load_is_seen_once_over_without_a_figure(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """0.34.4 lists a model only once it is loaded (as recorded from the real server).

    The integration learns the new release when the server comes back with it, and from
    then on takes a first sighting as the end of a load whose length polling cannot know.
    """
    coordinator = init_integration.runtime_data.coordinator
    assert coordinator.monitor.capabilities.lists_while_loading
    restarted = async_capture_events(hass, EVENT_SERVER_RESTARTED)
    await emulator.stop()
    await poll()
    emulator.version = "0.34.4"
    await emulator.start()
    await poll()
    assert [e.data["version"] for e in restarted] == ["0.34.4"]
    assert not coordinator.monitor.capabilities.lists_while_loading
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    load = await start_load(emulator, LLAMA, 0.5)
    await poll()
    assert LLAMA not in coordinator.data.resident  # not listed while it loads
    assert loaded == []
    await load
    await poll()
    assert [(e.data["model"], e.data["load_seconds"]) for e in loaded] == [(LLAMA, None)]
    assert loaded[0].data["cold_request_seconds"] is None
    assert coordinator.data.timings[LLAMA].cold_request_seconds is None


async def test_loaded_event_without_load_time_when_not_seen_loading(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    await poll()
    assert loaded == []  # first sighting with an expiry: confirmed on the next poll
    await poll()
    assert [e.data["cold_request_seconds"] for e in loaded] == [None]
    assert [e.data["cold_request_source"] for e in loaded] == [None]
    await poll()
    assert len(loaded) == 1


async def test_unloaded_expired(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await make_resident(LLAMA, keep_alive="2m")
    emulator.clock.advance(121)
    await poll()
    assert [(e.data["model"], e.data["reason"]) for e in unloaded] == [(LLAMA, "expired")]


async def test_unloaded_evicted_for_another_model(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await make_resident(LLAMA, keep_alive=-1)
    # qwen does not fit beside llama in the 8 GiB budget: llama is evicted early.
    await ollama_request(emulator, "/api/generate", {"model": QWEN})
    await poll()
    assert [(e.data["model"], e.data["reason"], e.data["replaced_by"]) for e in unloaded] == [
        (LLAMA, "displaced", [QWEN])
    ]


async def test_unloaded_early_by_another_client(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await make_resident(QWEN, keep_alive="1h")
    versions_before = sum(r.path == "/api/version" for r in emulator.requests)
    await ollama_request(emulator, "/api/generate", {"model": QWEN, "keep_alive": 0})
    await poll()
    # Early, and nothing came in: a replacement may still show up (for 3 s).
    assert unloaded == []
    assert init_integration.runtime_data.coordinator.fast_polling
    await poll()
    assert unloaded == []
    # An unexplained unload has the version read once (an upgrade empties the server).
    assert sum(r.path == "/api/version" for r in emulator.requests) == versions_before + 1
    monkeypatch.setattr("custom_components.llm_warmth.core.residency.REPLACEMENT_WINDOW_SECONDS", 0)
    await poll()
    assert [(e.data["model"], e.data["reason"], e.data["replaced_by"]) for e in unloaded] == [
        (QWEN, "unloaded", [])
    ]


async def test_reload_for_another_context_is_a_load(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    """Another client's num_ctx makes the server load the model again, in place."""
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await make_resident(LLAMA)
    assert len(loaded) == 1
    load = await start_load(emulator, LLAMA, 0.4, options={"num_ctx": 8192})
    await poll()
    await load
    await poll()
    assert unloaded == []
    assert [(e.data["model"], e.data["reloaded"]) for e in loaded] == [
        (LLAMA, False),
        (LLAMA, True),
    ]
    assert loaded[1].data["cold_request_seconds"] >= 0.2


async def test_server_restart(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    restarted = async_capture_events(hass, EVENT_SERVER_RESTARTED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await make_resident(LLAMA)
    await emulator.stop()
    await poll()
    await poll()
    assert restarted == []
    await emulator.start()
    await poll()
    server_device = dr.async_get(hass).async_get_device_by_identifier((DOMAIN, ENTRY_ID), ENTRY_ID)
    assert server_device is not None
    assert [e.data for e in restarted] == [
        {
            "server": "Ollama test",
            "config_entry_id": ENTRY_ID,
            # The logbook files it under the server's connectivity and device.
            "entity_id": "binary_sensor.ollama_test_connectivity",
            "device_id": server_device.id,
            "reason": "reconnected",
            "version": emulator.version,
            "previous_version": emulator.version,
        }
    ]
    assert [(e.data["model"], e.data["reason"]) for e in unloaded] == [(LLAMA, "server_restarted")]


async def test_version_change_is_a_restart(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    restarted = async_capture_events(hass, EVENT_SERVER_RESTARTED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await make_resident(LLAMA)
    # An upgrade between two polls: the model is gone, nothing replaced it; the next poll
    # asks for the version before it names a reason.
    await emulator.restart(version="0.13.1")
    await poll()
    await poll()
    assert [
        (e.data["reason"], e.data["previous_version"], e.data["version"]) for e in restarted
    ] == [("version_changed", "0.12.6", "0.13.1")]
    assert [(e.data["model"], e.data["reason"]) for e in unloaded] == [(LLAMA, "server_restarted")]
    await poll()
    assert len(restarted) == 1


async def test_version_is_read_every_few_minutes(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def version_reads() -> int:
        return sum(r.path == "/api/version" for r in emulator.requests)

    restarted = async_capture_events(hass, EVENT_SERVER_RESTARTED)
    before = version_reads()
    for _ in range(3):
        await poll()
    assert version_reads() == before  # one request per regular poll: /api/ps
    emulator.version = "0.13.1"
    now = time.monotonic()
    monkeypatch.setattr(
        "custom_components.llm_warmth.coordinator.time.monotonic",
        lambda: now + VERSION_REFRESH_SECONDS + 1,
    )
    await poll()
    assert version_reads() == before + 1
    assert [e.data["reason"] for e in restarted] == ["version_changed"]


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


async def test_a_slow_reply_is_no_restart(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only a server that could not be connected to at all has restarted when it is back."""
    restarted = async_capture_events(hass, EVENT_SERVER_RESTARTED)
    monkeypatch.setattr(init_integration.runtime_data.client._http, "timeout", 0.3)
    emulator.inject("/api/ps", hold=HeldAnswer())  # never released: the poll times out
    await poll()
    assert not init_integration.runtime_data.coordinator.last_update_success
    await poll()
    assert init_integration.runtime_data.coordinator.last_update_success
    assert restarted == []


async def test_fast_polling_gives_up_after_its_limit(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A load that never ends (or a server always reporting one) is polled regularly."""
    coordinator = init_integration.runtime_data.coordinator
    monkeypatch.setattr("custom_components.llm_warmth.fast_poll.FAST_POLL_LIMIT", timedelta())
    # Decide an early unload at once (no replacement window): the server settles at once.
    monkeypatch.setattr("custom_components.llm_warmth.core.residency.REPLACEMENT_WINDOW_SECONDS", 0)
    load = await start_load(emulator, LLAMA, 5)
    await poll()
    assert coordinator.fast_polling
    await poll()
    assert not coordinator.fast_polling
    load.cancel()
    emulator.loaded.clear()
    await poll()  # gone: an unload to explain
    await poll()  # settled: the limit starts again with the next load
    assert not coordinator.fast_polling
    load = await start_load(emulator, LLAMA, 5)
    await poll()
    assert coordinator.fast_polling
    load.cancel()


async def test_no_fast_poll_is_left_after_unload(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    coordinator = init_integration.runtime_data.coordinator
    load = await start_load(emulator, LLAMA, 5)
    await poll()
    assert coordinator.fast_polling
    assert await hass.config_entries.async_unload(init_integration.entry_id)
    assert not coordinator.fast_polling
    load.cancel()
