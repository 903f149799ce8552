"""Removing or reloading an entry in the middle of a long-running thing leaves nothing behind.

Each case starts something that waits on a slow load of the emulator (a probe, a preload,
a diagnosis, a pin's first load), then removes or reloads the entry while it runs. After
that no request of the old entry reaches the server, no task or timer of it fails later,
and a reloaded entry works on its own.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.llm_warmth.const import DOMAIN

from .conftest import ENTRY_ID, LLAMA
from .ollama_emulator import OllamaEmulator

ACTIONS: dict[str, dict[str, Any]] = {
    "probe": {},
    "preload": {"keep_for": {"minutes": 10}},
    "pin": {},
    "diagnose": {"scenario": "cold_vs_repeat"},
}


def generations(emulator: OllamaEmulator) -> int:
    return sum(1 for r in emulator.requests if r.path in ("/api/chat", "/api/generate"))


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
    emulator.models[LLAMA].load_delay = 1.0
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
        while not (LLAMA in emulator.loaded and emulator.loaded[LLAMA].loading):
            await asyncio.sleep(0.01)
    if how == "remove":
        await hass.config_entries.async_remove(ENTRY_ID)
    else:
        await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done(wait_background_tasks=True)
    # The action ends, one way or another, in Home Assistant's words or with its answer.
    try:
        async with asyncio.timeout(10):
            await running
    except HomeAssistantError, asyncio.CancelledError:
        pass
    sent = generations(emulator)
    # Later: the old entry's timers (fast polls, pins, the diagnosis' restore) are gone.
    await asyncio.sleep(1.2)  # the emulator's load ends
    for minutes in (1, 10, 60):
        async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=minutes))
        await hass.async_block_till_done(wait_background_tasks=True)
    if how == "remove":
        assert hass.config_entries.async_get_entry(ENTRY_ID) is None
        assert generations(emulator) == sent  # nothing of the old entry reached the server
    else:
        entry = hass.config_entries.async_get_entry(ENTRY_ID)
        assert entry is not None
        assert entry.runtime_data.coordinator.last_update_success
        await hass.config_entries.async_unload(ENTRY_ID)
    for failure in ("Task exception was never retrieved", "AttributeError", "Error doing job"):
        assert failure not in caplog.text


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
    runtime.ttft_targets.set(LLAMA, 9.0)  # a late change of the run that unloaded
    freezer.tick(timedelta(seconds=30))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    assert hass_storage[key]["data"]["ttft_targets"] == {LLAMA: 2.5}
