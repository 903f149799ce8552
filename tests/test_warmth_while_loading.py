"""A cold model reads loading, never warm, while a load runs (the shell's sensor)."""

import asyncio
from collections.abc import Awaitable, Callable

from homeassistant.core import HomeAssistant
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.const import DOMAIN

from .conftest import ENTRY_ID, LLAMA
from .ollama_emulator import OllamaEmulator


async def test_ollama_0_9_shows_a_cold_load_loading_from_its_first_poll(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    poll: Callable[[], Awaitable[None]],
) -> None:
    """Ollama 0.9 lists a loading model with an expiry that floats: it read warm at first."""
    emulator.version, emulator.legacy_expires = "0.9.3", True
    mock_config_entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(
        mock_config_entry, options={**mock_config_entry.options, "assistant_model": LLAMA}
    )
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    warmth = "sensor.ollama_test_assistant_warmth"  # the assistant model's: LLAMA
    assert hass.states.get(warmth).state == "cold"
    emulator.hold_loads()
    preload = asyncio.create_task(
        hass.services.async_call(
            DOMAIN,
            "preload",
            {"config_entry_id": ENTRY_ID, "model": LLAMA},
            blocking=True,
            return_response=True,
        )
    )
    async with asyncio.timeout(5):
        await emulator.wait_loading(LLAMA)
    seen = []
    coordinator = mock_config_entry.runtime_data.coordinator
    for _ in range(2):  # not poll(): it waits for every task, the held preload's too
        emulator.clock.advance(0.5)  # the expiry floats with the server's clock
        await coordinator.async_refresh()
        seen.append(hass.states.get(warmth).state)
    assert seen == ["loading", "loading"]
    emulator.finish_loads()
    await preload
    emulator.clock.advance(0.5)
    await poll()
    assert hass.states.get(warmth).state == "warm"


async def test_ollama_0_9_shows_another_clients_cold_load_loading_from_its_first_poll(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    poll: Callable[[], Awaitable[None]],
) -> None:
    """Another client's load, first seen by a poll, read warm for that poll, then loading."""
    emulator.version, emulator.legacy_expires = "0.9.3", True
    mock_config_entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(
        mock_config_entry, options={**mock_config_entry.options, "assistant_model": LLAMA}
    )
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    warmth = "sensor.ollama_test_assistant_warmth"
    assert hass.states.get(warmth).state == "cold"
    emulator.hold_loads()
    session = async_get_clientsession(hass)
    # somebody else's client: a chat with the model, not sent through the integration
    other = asyncio.create_task(
        session.post(
            f"{emulator.url}/api/chat",
            json={"model": LLAMA, "messages": [{"role": "user", "content": "hi"}]},
        )
    )
    async with asyncio.timeout(5):
        await emulator.wait_loading(LLAMA)
    coordinator = mock_config_entry.runtime_data.coordinator
    seen = []
    for _ in range(2):
        emulator.clock.advance(0.5)
        await coordinator.async_refresh()
        seen.append(hass.states.get(warmth).state)
    assert seen == ["loading", "loading"]
    emulator.finish_loads()
    (await other).release()
    emulator.clock.advance(0.5)
    await poll()
    assert hass.states.get(warmth).state == "warm"


async def test_ollama_0_9_shows_a_load_seen_only_once_it_ended_warm_on_the_next_poll(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
) -> None:
    """A load that began and ended between two polls reads loading for one poll, no more."""
    emulator.version, emulator.legacy_expires = "0.9.3", True
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    warmth = "sensor.ollama_test_llama3_2_3b"  # the model's own: named as its device
    session = async_get_clientsession(hass)
    reply = await session.post(
        f"{emulator.url}/api/generate", json={"model": LLAMA, "prompt": "hi", "stream": False}
    )
    reply.release()
    coordinator = mock_config_entry.runtime_data.coordinator
    seen = []
    for _ in range(2):
        emulator.clock.advance(0.5)  # the expiry stays: nothing runs against the model
        await coordinator.async_refresh()
        seen.append(hass.states.get(warmth).state)
    assert seen == ["loading", "warm"]
