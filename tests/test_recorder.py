"""Volatile attributes stay out of the recorder (Home Assistant's own recorder, in memory)."""

from __future__ import annotations

from homeassistant.components.recorder import Recorder
from homeassistant.components.recorder.history import get_significant_states
from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.components.recorder.common import (
    async_wait_recording_done,
)

from .conftest import ENTRY_ID, LLAMA, ollama_request
from .ollama_emulator import OllamaEmulator

pytestmark = pytest.mark.recorder

# Attributes that change on every poll or probe, or are long: shown, never recorded.
VOLATILE = {
    "sensor.ollama_test_llama3_2_3b": ("probe_running", "ready_expected_at"),
    "sensor.ollama_test_assistant_warmth": ("ready_expected_at",),
    "sensor.ollama_test_resident_models": ("names",),
}


async def test_volatile_attributes_are_not_recorded(
    recorder_mock: Recorder,
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
) -> None:
    start = dt_util.utcnow()
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    await mock_config_entry.runtime_data.coordinator.async_refresh()
    await hass.async_block_till_done()
    for entity_id, attributes in VOLATILE.items():
        for attribute in attributes:
            assert attribute in hass.states.get(entity_id).attributes, attribute  # shown
    await async_wait_recording_done(hass)
    history = await hass.async_add_executor_job(
        get_significant_states, hass, start, None, list(VOLATILE)
    )
    for entity_id, attributes in VOLATILE.items():
        assert history[entity_id], entity_id
        for state in history[entity_id]:
            for attribute in attributes:
                assert attribute not in state.attributes, (entity_id, attribute)
        # What is not volatile is recorded (the check can fail).
        assert "friendly_name" in history[entity_id][-1].attributes
