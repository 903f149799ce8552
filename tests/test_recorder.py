"""Volatile attributes stay out of the recorder (Home Assistant's own recorder, in memory)."""

from __future__ import annotations

from datetime import timedelta
from types import MappingProxyType

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components.recorder import Recorder
from homeassistant.components.recorder.history import get_significant_states
from homeassistant.config_entries import ConfigSubentry
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
    # The signals learnt change with every edge: shown, never recorded.
    "sensor.ollama_test_llama3_2_3b_warming_signals": ("signals",),
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


async def test_learning_starts_from_the_recorders_past_of_a_chosen_entity(
    recorder_mock: Recorder,
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A signal chosen today is not weeks away from use: its past edges are read once."""
    motion, alarm = "input_boolean.bedroom_motion", "sensor.phone_next_alarm"
    start = dt_util.utcnow() - timedelta(days=3)
    changes = [(0, "off"), (600, "on"), (1200, "unavailable"), (1800, "on"), (2400, "off")]
    for seconds, state in changes:
        freezer.move_to(start + timedelta(seconds=seconds))
        hass.states.async_set(motion, state)
    # The phone's next alarm: the first came while it still said so; the second was moved
    # before it came; the third came (it is still the sensor's state).
    rang = start + timedelta(hours=8)
    freezer.move_to(start + timedelta(hours=1))
    hass.states.async_set(alarm, rang.isoformat(), {"device_class": "timestamp"})
    freezer.move_to(rang + timedelta(minutes=5))
    hass.states.async_set(
        alarm, (rang + timedelta(days=1)).isoformat(), {"device_class": "timestamp"}
    )
    freezer.move_to(rang + timedelta(hours=2))
    hass.states.async_set(
        alarm, (rang + timedelta(days=2)).isoformat(), {"device_class": "timestamp"}
    )
    await async_wait_recording_done(hass)
    freezer.move_to(start + timedelta(days=3))
    emulator.clock.set(dt_util.utcnow())
    mock_config_entry.add_to_hass(hass)
    hass.config_entries.async_add_subentry(
        mock_config_entry,
        ConfigSubentry(
            data=MappingProxyType({"model": LLAMA, "entities": [motion, alarm]}),
            subentry_type="warming_signals",
            title=LLAMA,
            unique_id=None,
        ),
    )
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done(wait_background_tasks=True)
    record = mock_config_entry.runtime_data.usage.get(LLAMA)
    assert record is not None
    second = int(start.timestamp())
    assert record.planner.edges.as_dict() == {
        # off, on, (unavailable: nothing), on again is no edge, off.
        motion: {"off": [second, second + 2400], "on": [second + 600]},
        alarm: {"alarm": [int(rang.timestamp()), int((rang + timedelta(days=2)).timestamp())]},
    }
