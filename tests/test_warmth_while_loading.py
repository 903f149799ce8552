"""A cold model reads loading, never warm, while a load runs (the shell's sensor)."""

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import ClientResponse
from homeassistant.core import HomeAssistant
from homeassistant.helpers.aiohttp_client import async_get_clientsession
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.const import DOMAIN

from .conftest import ENTRY_ID, LLAMA
from .ollama_emulator import OllamaEmulator


async def set_up_on_ollama_0_9(
    hass: HomeAssistant, entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Set the entry up on the emulator's Ollama 0.9.3, LLAMA its assistant model."""
    emulator.version, emulator.legacy_expires = "0.9.3", True
    entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(
        entry, options={**entry.options, "assistant_model": LLAMA}
    )
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()


async def two_polls(
    hass: HomeAssistant, entry: MockConfigEntry, emulator: OllamaEmulator, entity_id: str
) -> list[str]:
    """Poll twice, half a second of the server's clock apart; return the states read."""
    seen = []
    for _ in range(2):
        emulator.clock.advance(0.5)  # an expiry that floats moves with the server's clock
        await entry.runtime_data.coordinator.async_refresh()
        seen.append(hass.states.get(entity_id).state)
    return seen


@pytest.mark.parametrize("loader", ["our preload", "another client's chat"])
async def test_ollama_0_9_shows_a_cold_load_loading_from_its_first_poll(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    poll: Callable[[], Awaitable[None]],
    loader: str,
) -> None:
    """Ollama 0.9 lists a loading model with an expiry that floats: it read warm at first.

    Our own preload read warm for its first poll; another client's load, first seen by a
    poll, too, then loading.
    """
    await set_up_on_ollama_0_9(hass, mock_config_entry, emulator)
    warmth = "sensor.ollama_test_assistant_warmth"  # the assistant model's: LLAMA
    assert hass.states.get(warmth).state == "cold"
    emulator.hold_loads()
    if loader == "our preload":
        call = {"config_entry_id": ENTRY_ID, "model": LLAMA}
        load: Awaitable[object] = hass.services.async_call(
            DOMAIN, "preload", call, blocking=True, return_response=True
        )
    else:  # somebody else's client: a chat with the model, not sent through the integration
        chat = {"model": LLAMA, "messages": [{"role": "user", "content": "hi"}]}
        load = async_get_clientsession(hass).post(f"{emulator.url}/api/chat", json=chat)
    loading = asyncio.ensure_future(load)
    async with asyncio.timeout(5):
        await emulator.wait_loading(LLAMA)
    # not poll(): it waits for every task, the held load's too
    assert await two_polls(hass, mock_config_entry, emulator, warmth) == ["loading", "loading"]
    emulator.finish_loads()
    if isinstance(done := await loading, ClientResponse):
        done.release()
    emulator.clock.advance(0.5)
    await poll()
    assert hass.states.get(warmth).state == "warm"


async def test_ollama_0_9_shows_a_load_seen_only_once_it_ended_warm_on_the_next_poll(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
) -> None:
    """A load that began and ended between two polls reads loading for one poll, no more."""
    await set_up_on_ollama_0_9(hass, mock_config_entry, emulator)
    warmth = "sensor.ollama_test_llama3_2_3b"  # the model's own: named as its device
    session = async_get_clientsession(hass)
    reply = await session.post(
        f"{emulator.url}/api/generate", json={"model": LLAMA, "prompt": "hi", "stream": False}
    )
    reply.release()
    # the expiry stays: nothing runs against the model
    assert await two_polls(hass, mock_config_entry, emulator, warmth) == ["loading", "warm"]
