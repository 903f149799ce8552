"""Each model's TTFT target (a number, stored) and its "Within TTFT target" sensor."""

from __future__ import annotations

from homeassistant.const import STATE_OFF, STATE_ON
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from .conftest import ENTRY_ID, LLAMA
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
