"""An upgrade from every store version the project wrote: nothing the user had is lost.

For each minor version 1.1 to 1.7, a stored file as that version wrote it (the sections it
had: a model's figures from 1.1, their sources from 1.3, a TTFT target from 1.5, polled
lower bounds apart from 1.7) is set up with today's code: the entities show what was
stored, and the file is written back at today's version with the same figures.
"""

from typing import Any

from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.const import DOMAIN
from custom_components.llm_warmth.core.store_migration import STORAGE_MINOR_VERSION

from .conftest import ENTRY_ID, LLAMA, QWEN

KEY = f"{DOMAIN}.{ENTRY_ID}"
LOAD = "sensor.ollama_test_llama3_2_3b_last_measured_load_duration"
COLD = "sensor.ollama_test_llama3_2_3b_last_cold_request_duration"
TARGET = "number.ollama_test_llama3_2_3b_ttft_target"

# What each version wrote: llama's figures (in that version's names) and, from 1.5, a target.
WRITTEN: dict[int, dict[str, Any]] = {
    1: {"models": {LLAMA: {"load_seconds": 7.25}}},  # polled: the cold request, a bound
    2: {"models": {LLAMA: {"load_seconds": 7.25, "cold_request_seconds": 16.5}}},
    3: {"models": {LLAMA: {"load_seconds": 7.25, "load_source": "server"}}},
    4: {"models": {LLAMA: {"load_seconds": 7.25, "load_source": "server"}}, "pins": {}},
    5: {
        "models": {LLAMA: {"load_seconds": 7.25, "load_source": "server"}},
        "ttft_targets": {LLAMA: 1.5},
    },
    6: {
        "models": {LLAMA: {"load_seconds": 7.25, "load_source": "server"}},
        "ttft_targets": {LLAMA: 1.5},
    },
    7: {
        "models": {
            LLAMA: {"load_seconds": 7.25, "load_source": "server"},
            QWEN: {"load_at_least_seconds": 3.0, "load_source": None},
        },
        "ttft_targets": {LLAMA: 1.5},
    },
}


@pytest.mark.parametrize("minor", sorted(WRITTEN), ids=lambda m: f"from 1.{m}")
async def test_an_upgrade_keeps_what_was_stored(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    hass_storage: dict[str, Any],
    minor: int,
) -> None:
    hass_storage[KEY] = {"version": 1, "minor_version": minor, "key": KEY, "data": WRITTEN[minor]}
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    if minor == 1:
        # 1.1's figure was what polls saw of the cold request: kept as its lower bound.
        cold = hass.states.get(COLD)
        assert cold.attributes["at_least_seconds"] == 7.25
    else:
        assert hass.states.get(LOAD).state == "7.25"
    if minor == 2:
        assert hass.states.get(COLD).state == "16.5"
    if minor >= 5:
        assert float(hass.states.get(TARGET).state) == 1.5
    await hass.config_entries.async_unload(mock_config_entry.entry_id)
    stored = hass_storage[KEY]
    assert stored["minor_version"] == STORAGE_MINOR_VERSION
    figures = stored["data"]["models"][LLAMA]
    if minor == 1:
        assert figures["cold_request_at_least_seconds"] == 7.25
    else:
        assert (figures["load_seconds"], figures["load_source"]) == (7.25, "server")
    if minor == 2:
        assert figures["cold_request_seconds"] == 16.5
    if minor >= 5:
        assert stored["data"]["ttft_targets"] == {LLAMA: 1.5}
    if minor == 7:
        assert stored["data"]["models"][QWEN]["load_at_least_seconds"] == 3.0
