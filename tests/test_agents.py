"""The conversation agents of a model: Home Assistant's Ollama agents and OpenAI-compatible ones."""

from __future__ import annotations

from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.diagnostics import async_get_config_entry_diagnostics

from .conftest import LLAMA, QWEN
from .ollama_emulator import OllamaEmulator

WARMTH = "sensor.ollama_test_{}_warmth"


async def test_the_agents_of_a_model_are_named_on_its_device(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    MockConfigEntry(
        domain="ollama",
        data={"url": emulator.url},
        subentries_data=[
            {
                "data": {"model": "llama3.2:3b", "num_ctx": 8192},
                "subentry_type": "conversation",
                "title": "Kitchen assistant",
                "unique_id": None,
            }
        ],
    ).add_to_hass(hass)
    # An OpenAI-compatible integration pointed at the server's /v1 (model in its options),
    # one with agents as subentries, and some that are not this server's.
    MockConfigEntry(
        domain="extended_openai_conversation",
        title="Office assistant",
        data={"base_url": f"{emulator.url}/v1", "api_key": "x"},
        options={"chat_model": "qwen3:8b"},
    ).add_to_hass(hass)
    MockConfigEntry(
        domain="some_openai_compatible",
        title="Compatible",
        data={"api_base": f"{emulator.url}/v1/"},
        subentries_data=[
            {
                "data": {"model": "qwen3:8b"},
                "subentry_type": "conversation",
                "title": "Garage assistant",
                "unique_id": None,
            },
            {"data": {}, "subentry_type": "conversation", "title": "No model", "unique_id": None},
        ],
    ).add_to_hass(hass)
    for data in ({"base_url": "http://elsewhere:8080/v1"}, {"base_url": "::not a url"}, {}):
        MockConfigEntry(domain="other", data={**data, "chat_model": "qwen3:8b"}).add_to_hass(hass)
    init_integration.runtime_data.coordinator.async_update_listeners()
    await hass.async_block_till_done()
    assert hass.states.get(WARMTH.format("llama3_2_3b")).attributes["agents"] == [
        "Kitchen assistant"
    ]
    assert hass.states.get(WARMTH.format("qwen3_8b")).attributes["agents"] == [
        "Office assistant",
        "Garage assistant",
    ]
    diagnostics = await async_get_config_entry_diagnostics(hass, init_integration)
    assert diagnostics["openai_compatible_agents"] == [
        {"name": "Office assistant", "model": QWEN, "integration": "extended_openai_conversation"},
        {"name": "Garage assistant", "model": QWEN, "integration": "some_openai_compatible"},
    ]
    assert [a["model"] for a in diagnostics["agents"]] == [LLAMA]
