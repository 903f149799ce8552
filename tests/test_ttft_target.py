"""Each model's TTFT target (a number, stored) and its "Within TTFT target" sensor."""

from __future__ import annotations

from typing import Any

from homeassistant.const import STATE_OFF, STATE_ON
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.const import DOMAIN

from .conftest import ENTRY_ID, LLAMA, ollama_request
from .ollama_emulator import OllamaEmulator
from .test_pin import call

TARGET = "number.ollama_test_llama3_2_3b_ttft_target"
WITHIN = "binary_sensor.ollama_test_llama3_2_3b_within_ttft_target"


async def test_the_last_probe_against_the_models_target(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    assert hass.states.get(TARGET).state == "1.5"  # the default
    assert hass.states.get(WITHIN) is None  # no probe yet: no "unknown" sensor
    await call(hass, "probe", config_entry_id=ENTRY_ID, model=LLAMA)  # warm-ish, fast
    await hass.async_block_till_done()
    within = hass.states.get(WITHIN)
    assert within.state == STATE_ON
    assert within.attributes["target"] == 1.5
    # A stricter target, and a cold probe that takes longer than it.
    await hass.services.async_call(
        "number", "set_value", {"entity_id": TARGET, "value": 0.2}, blocking=True
    )
    await call(hass, "evict", config_entry_id=ENTRY_ID, model=LLAMA)
    emulator.models[LLAMA].load_delay = 0.5
    answer = await call(hass, "probe", config_entry_id=ENTRY_ID, model=LLAMA)
    await hass.async_block_till_done()
    within = hass.states.get(WITHIN)
    assert within.state == STATE_OFF
    # The answer rounds to 0.1 ms and the attribute to 1 ms: compare within that.
    assert within.attributes["last_ttft"] == pytest.approx(answer["ttft_ms"] / 1000, abs=0.001)
    assert within.attributes["last_cold_within_target"] is False
    # Kept across a restart.
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    assert hass.states.get(TARGET).state == "0.2"
    assert hass.states.get(WITHIN).state == STATE_OFF


async def test_what_was_kept_of_a_deleted_model_is_forgotten(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    hass_storage: dict[str, Any],
) -> None:
    """Its timings, last size, TTFT target and preload end go with it (and from the store)."""
    coordinator = init_integration.runtime_data.coordinator
    pins = init_integration.runtime_data.pins
    await hass.services.async_call(
        "number", "set_value", {"entity_id": TARGET, "value": 0.2}, blocking=True
    )
    await call(hass, "preload", config_entry_id=ENTRY_ID, model=LLAMA, keep_for={"minutes": 30})
    await call(hass, "probe", config_entry_id=ENTRY_ID, model=LLAMA)
    await poll()
    assert LLAMA in coordinator.data.timings
    assert LLAMA in coordinator.monitor.last_sizes
    assert LLAMA in init_integration.runtime_data.ttft_targets
    assert LLAMA in pins.preloads  # the end the preload action asked (the repair's)
    # Deleted from the server (ollama rm): gone from its lists.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    del emulator.models[LLAMA]
    coordinator.monitor._installed_at = None  # the installed list is read on this poll
    await poll()
    assert LLAMA not in coordinator.data.models
    assert LLAMA not in coordinator.data.timings
    assert LLAMA not in coordinator.monitor.last_sizes
    assert LLAMA not in init_integration.runtime_data.ttft_targets
    assert LLAMA not in pins.preloads
    # The other model's records stay; the store is written without the deleted one.
    await hass.config_entries.async_unload(ENTRY_ID)
    stored = [data for key, data in hass_storage.items() if key.startswith(DOMAIN)]
    assert stored
    assert LLAMA not in str(stored)
