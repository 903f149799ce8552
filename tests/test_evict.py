"""llm_warmth.evict: unload a model (or all) now; the entities show it when it returns."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from homeassistant.const import STATE_OFF, STATE_ON
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError, Unauthorized
from homeassistant.helpers import device_registry as dr
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockUser,
    async_capture_events,
)

from custom_components.llm_warmth.const import DOMAIN, EVENT_MODEL_UNLOADED

from .conftest import ENTRY_ID, LLAMA, QWEN, model_device, model_id, ollama_request
from .e2e import add_server, ollama_call, ollama_get, wait_until
from .llama_server_emulator import LlamaServerEmulator
from .llama_swap_emulator import LlamaSwapEmulator
from .ollama_emulator import OllamaEmulator
from .test_llama_server import server  # noqa: F401 (a fixture)
from .test_llama_swap import add_swap, swap  # noqa: F401 (a fixture)

RESIDENT = "binary_sensor.ollama_test_{}_resident"


async def evict(hass: HomeAssistant, **data: Any) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN, "evict", data, blocking=True, return_response=True
    )
    assert response is not None
    return dict(response)


async def test_evict_a_model_shows_at_once(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    make_resident,
    device_registry: dr.DeviceRegistry,
) -> None:
    await make_resident(LLAMA, keep_alive="1h")
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    device = model_device(device_registry, LLAMA)
    assert device is not None
    answer = await evict(hass, device_id=device.id)
    assert answer == {
        "unloaded": [LLAMA],
        "unpinned": [],
        "not_resident": [],
        "summary": f"unloaded {LLAMA}",
    }
    # At once, not a poll interval later (the peer integration's weak spot).
    assert hass.states.get(RESIDENT.format("llama3_2_3b")).state == STATE_OFF
    assert hass.states.get("sensor.ollama_test_llama3_2_3b").state == "cold"
    assert LLAMA not in emulator.loaded
    assert [(e.data["model"], e.data["reason"]) for e in unloaded] == [(LLAMA, "on_request")]
    # Again: nothing to do.
    again = await evict(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert again == {
        "unloaded": [],
        "unpinned": [],
        "not_resident": [LLAMA],
        "summary": f"not resident: {LLAMA}",
    }
    # A model the server does not have.
    with pytest.raises(ServiceValidationError) as err:
        await evict(hass, config_entry_id=ENTRY_ID, model="llama3.2")
    assert err.value.translation_key == "model_not_found"


async def test_evict_all(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    make_resident,
) -> None:
    emulator.vram_budget = None  # room for both
    await make_resident(LLAMA, keep_alive="1h")
    await make_resident(QWEN, keep_alive=-1)
    answer = await evict(hass, config_entry_id=ENTRY_ID, all=True)
    assert answer["unloaded"] == [LLAMA, QWEN]
    assert emulator.loaded == {}
    for model in ("llama3_2_3b", "qwen3_8b"):
        assert hass.states.get(RESIDENT.format(model)).state == STATE_OFF
    assert (await evict(hass, config_entry_id=ENTRY_ID, all=True))["summary"] == (
        "nothing was resident"
    )


async def test_evict_needs_one_target(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    for data in (
        {"config_entry_id": ENTRY_ID},
        {"config_entry_id": ENTRY_ID, "model": LLAMA, "all": True},
    ):
        with pytest.raises(ServiceValidationError) as err:
            await evict(hass, **data)
        assert err.value.translation_key == "evict_target"


async def test_evict_is_for_administrators(
    hass: HomeAssistant, init_integration: MockConfigEntry, hass_read_only_user: MockUser
) -> None:
    from homeassistant.core import Context  # noqa: PLC0415

    with pytest.raises(Unauthorized):
        await hass.services.async_call(
            DOMAIN,
            "evict",
            {"config_entry_id": ENTRY_ID, "all": True},
            blocking=True,
            context=Context(user_id=hass_read_only_user.id),
        )


async def test_evict_on_llama_server_and_llama_swap(
    hass: HomeAssistant,
    server: LlamaServerEmulator,  # noqa: F811 (the fixture imported above)
    swap: LlamaSwapEmulator,  # noqa: F811
) -> None:
    """Every kind unloads through its own API; the entities show it on return."""
    for entry, emulator in (
        (await add_server(hass, server.url), server),
        (await add_swap(hass, swap.url), swap),
    ):
        coordinator = entry.runtime_data.coordinator
        await emulator.load_by_other_client("tiny")
        await wait_until(lambda c=coordinator: "tiny" in c.data.held, 3, "tiny loaded")
        unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
        answer = await evict(hass, config_entry_id=entry.entry_id, model="tiny")
        assert answer["unloaded"] == ["tiny"]
        assert hass.states.get(model_id(entry, "binary_sensor.tiny_resident")).state == STATE_OFF
        await hass.async_block_till_done()
        assert [(e.data["model"], e.data["reason"]) for e in unloaded] == [("tiny", "on_request")]


@pytest.mark.e2e
async def test_evict_on_the_real_servers(
    hass: HomeAssistant, ollama_url: str, llama_url: str
) -> None:
    """The real Ollama (each release) and llama-server let the model go, the entities at once."""
    ollama, llama = ollama_url, llama_url
    await ollama_call(ollama, "/api/generate", {"model": "tiny", "keep_alive": "10m"})
    await llama_call(llama, "/models/load", {"model": "tiny"})
    for url in (ollama, llama):
        entry = await add_server(hass, url)
        coordinator = entry.runtime_data.coordinator
        name = coordinator.resolve_model("tiny")  # Ollama's is tiny:latest
        await wait_until(lambda c=coordinator, n=name: n in c.data.held, 60, f"{name} on {url}")
        answer = await evict(hass, config_entry_id=entry.entry_id, model="tiny")
        assert answer["unloaded"] == [name], answer
        assert hass.states.get(model_id(entry, "binary_sensor.tiny_resident")).state == STATE_OFF
        # The server's own list agrees.
        listed = await ollama_get(ollama, "/api/ps") if url == ollama else await llama_models(llama)
        assert "tiny" not in str(listed), listed  # the server's own names
        await hass.config_entries.async_unload(entry.entry_id)


async def llama_call(url: str, path: str, payload: dict[str, object]) -> None:
    """POST to the real llama-server as another client would ("already running" is fine)."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}{path}", json=payload) as answer,
    ):
        if "already running" not in await answer.text():
            answer.raise_for_status()


async def llama_models(url: str) -> list[str]:
    """Return the models the real llama-server holds (loading or loaded) by its own list."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{url}/models") as answer,
    ):
        data = await answer.json()
    return [
        m["id"] for m in data["data"] if m.get("status", {}).get("value") in ("loaded", "loading")
    ]


async def test_a_server_that_keeps_the_model_or_fails_meanwhile(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    make_resident,
) -> None:
    """A failed unload, one the server answers but does not do, a poll failing meanwhile."""
    await make_resident(LLAMA, keep_alive="1h")
    emulator.inject("/api/generate", status=500, body="boom")
    with pytest.raises(HomeAssistantError) as err:
        await evict(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert err.value.translation_domain == DOMAIN
    assert hass.states.get(RESIDENT.format("llama3_2_3b")).state == STATE_ON
    # Answered, not done: still held when the timeout runs out.
    emulator.inject("/api/generate", status=200, body='{"done": true}')
    with pytest.raises(HomeAssistantError) as err:
        await evict(hass, config_entry_id=ENTRY_ID, model=LLAMA, timeout=1)
    assert (err.value.translation_domain, err.value.translation_key) == (DOMAIN, "timeout")
    # The residency cannot be read after the unload: the poll's own error.
    emulator.inject("/api/ps", status=500, body="boom", times=None)
    with pytest.raises(HomeAssistantError) as err:
        await evict(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert err.value.translation_domain == DOMAIN
    assert err.value.translation_key is not None


async def test_evict_reads_the_server_first(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """A model another client loaded since the last poll is unloaded too (not 'not resident')."""
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": "1h"})
    assert LLAMA not in init_integration.runtime_data.coordinator.data.held  # not polled yet
    answer = await evict(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert answer["unloaded"] == [LLAMA]
    assert LLAMA not in emulator.loaded


async def test_evicting_a_pinned_model_says_it_unpinned_it(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    await hass.services.async_call(
        DOMAIN, "pin", {"config_entry_id": ENTRY_ID, "model": LLAMA}, blocking=True
    )
    answer = await evict(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert (answer["unloaded"], answer["unpinned"]) == ([LLAMA], [LLAMA])
    assert answer["summary"] == f"unloaded {LLAMA}; unpinned {LLAMA}"
    assert init_integration.runtime_data.pins.pins == {}


async def test_an_unload_the_server_finishes_after_its_answer_is_waited_for(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Ollama unloads a busy runner once its request ends: the evict polls until it has."""
    other = await emulator.start_while_held(
        LLAMA, ollama_request(emulator, "/api/generate", {"model": LLAMA})
    )
    evicting = asyncio.create_task(evict(hass, config_entry_id=ENTRY_ID, model=LLAMA, timeout=10))
    async with asyncio.timeout(5):  # answered, still held: the evict reads it again
        while not any((r.json or {}).get("keep_alive") == 0 for r in emulator.requests):
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.6)  # polls that still see it held
    assert not evicting.done()
    emulator.finish_loads()
    await other
    answer = await evicting
    assert answer["unloaded"] == [LLAMA]
    assert hass.states.get(RESIDENT.format("llama3_2_3b")).state == STATE_OFF
