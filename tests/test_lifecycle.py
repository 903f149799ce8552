"""Removing or reloading an entry in the middle of a long-running thing leaves nothing behind.

Each case starts something that waits on a load the emulator holds (a probe, a preload,
a diagnosis, a pin's first load), then removes or reloads the entry while it runs. After
that no request of the old entry reaches the server, no task or timer of it fails later,
and a reloaded entry works on its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.config_entries import ConfigEntry
from homeassistant.const import STATE_ON
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.llm_warmth.const import CONF_PROTECTED_ENTITIES, DOMAIN
from custom_components.llm_warmth.core.pins import Pin

from .conftest import ENTRY_ID, LLAMA, ollama_request
from .ollama_emulator import OllamaEmulator

PLEX = "binary_sensor.plex_transcoding"
ACTIONS: dict[str, dict[str, Any]] = {
    "probe": {},
    "preload": {"keep_for": {"minutes": 10}},
    "pin": {},
    "diagnose": {"scenario": "cold_vs_repeat"},
}


def generations(emulator: OllamaEmulator) -> int:
    return sum(1 for r in emulator.requests if r.path in ("/api/chat", "/api/generate"))


async def _later(hass: HomeAssistant, emulator: OllamaEmulator, how: str) -> ConfigEntry | None:
    """Let the old entry's timers (fast polls, pins, restores) come due; return the new run.

    After a removal nothing of the old entry reaches the server; after a reload the entry
    is there again (returned).
    """
    sent = generations(emulator)
    for minutes in (1, 10, 60):
        async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=minutes))
        await hass.async_block_till_done(wait_background_tasks=True)
    entry = hass.config_entries.async_get_entry(ENTRY_ID)
    if how == "remove":
        assert entry is None
        assert generations(emulator) == sent  # nothing of the old entry reached the server
        return None
    assert entry is not None
    return entry


def _nothing_failed(caplog: pytest.LogCaptureFixture) -> None:
    for failure in ("Task exception was never retrieved", "AttributeError", "Error doing job"):
        assert failure not in caplog.text


@pytest.mark.parametrize("how", ["remove", "reload"])
@pytest.mark.parametrize("action", list(ACTIONS))
async def test_an_entry_goes_while_an_action_waits_on_a_load(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    caplog: pytest.LogCaptureFixture,
    action: str,
    how: str,
) -> None:
    emulator.hold_loads()  # the load lasts until finish_loads()
    running = asyncio.create_task(
        hass.services.async_call(
            DOMAIN,
            action,
            {"config_entry_id": ENTRY_ID, "model": LLAMA, **ACTIONS[action]},
            blocking=True,
            return_response=action != "pin",
        )
    )
    async with asyncio.timeout(5):
        await emulator.wait_loading(LLAMA)
    if how == "remove":
        await hass.config_entries.async_remove(ENTRY_ID)
    else:
        await hass.config_entries.async_reload(ENTRY_ID)
    emulator.finish_loads()  # the emulator's load ends
    await hass.async_block_till_done(wait_background_tasks=True)
    # The action ends, one way or another, in Home Assistant's words or with its answer.
    try:
        async with asyncio.timeout(10):
            await running
    except HomeAssistantError, asyncio.CancelledError:
        pass
    entry = await _later(hass, emulator, how)
    if entry is not None:
        assert entry.runtime_data.coordinator.last_update_success
        await hass.config_entries.async_unload(ENTRY_ID)
    _nothing_failed(caplog)


async def test_nothing_of_an_unloaded_entry_is_written_after_its_last_save(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_storage: dict[str, Any],
    freezer: FrozenDateTimeFactory,
) -> None:
    """Each feature's section is written when the entry unloads, and nothing after.

    A change that reached a feature of the old run later must not overwrite what the
    entry's next run keeps.
    """
    runtime = init_integration.runtime_data
    await hass.services.async_call(
        "number",
        "set_value",
        {"entity_id": "number.ollama_test_llama3_2_3b_ttft_target", "value": 2.5},
        blocking=True,
    )
    await hass.config_entries.async_unload(ENTRY_ID)
    key = f"{DOMAIN}.{ENTRY_ID}"
    assert hass_storage[key]["data"]["ttft_targets"] == {LLAMA: 2.5}
    runtime.ttft_targets.set(LLAMA, 9.0)  # late changes of the run that unloaded:
    runtime.pins.pin(Pin(model=LLAMA, since=dt_util.utcnow()))  # saved at once, or not at all
    await hass.async_block_till_done()
    freezer.tick(timedelta(seconds=30))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    assert hass_storage[key]["data"]["ttft_targets"] == {LLAMA: 2.5}
    assert hass_storage[key]["data"]["pins"] == {}


async def _until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(10):
        while not condition():
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("how", ["remove", "reload"])
@pytest.mark.parametrize("what", ["pin_reassertion", "guard_release"])
async def test_an_entry_goes_while_a_pin_is_asserted_again_or_released(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    caplog: pytest.LogCaptureFixture,
    what: str,
    how: str,
) -> None:
    """The controller's re-assertion and the guard's release run as the entry's tasks."""
    hass.states.async_set(PLEX, "off")
    mock_config_entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(
        mock_config_entry, options={CONF_PROTECTED_ENTITIES: [PLEX]}
    )
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    await hass.services.async_call(
        DOMAIN, "pin", {"config_entry_id": ENTRY_ID, "model": LLAMA}, blocking=True
    )
    coordinator = mock_config_entry.runtime_data.coordinator
    if what == "pin_reassertion":
        # Another client unloads the pinned model; its re-assertion's load takes a second.
        emulator.models[LLAMA].load_delay = 1.0
        await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
        await coordinator.async_refresh()
        await _until(lambda: LLAMA in emulator.loaded and emulator.loaded[LLAMA].loading)
    else:
        # Plex starts: the guard releases the pin, and its unload takes a second to answer.
        emulator.inject("/api/generate", delay=1.0)
        hass.states.async_set(PLEX, STATE_ON)
        await _until(
            lambda: any(
                r.path == "/api/generate" and (r.json or {}).get("keep_alive") == 0
                for r in emulator.requests
            )
        )
        assert LLAMA in emulator.loaded  # the unload is still on its way
    if how == "remove":
        await hass.config_entries.async_remove(ENTRY_ID)
    else:
        await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done(wait_background_tasks=True)
    entry = await _later(hass, emulator, how)
    if entry is not None:
        # The new run has the pin (released by the guard: kept, to be applied again).
        pin = entry.runtime_data.pins.get(LLAMA)
        assert pin is not None
        assert (pin.released is not None) is (what == "guard_release")
        await hass.config_entries.async_unload(ENTRY_ID)
    _nothing_failed(caplog)
