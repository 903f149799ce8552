"""The conversation agents of a model: Home Assistant's Ollama agents and OpenAI-compatible ones."""

from __future__ import annotations

from types import MappingProxyType
from unittest.mock import patch

from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntryChange,
    ConfigSubentry,
)
from homeassistant.core import HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_send
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.agents import agent_context
from custom_components.llm_warmth.const import DOMAIN
from custom_components.llm_warmth.diagnostics import async_get_config_entry_diagnostics

from .conftest import LLAMA, QWEN, add_entry, add_ollama_agent
from .ollama_emulator import OllamaEmulator

WARMTH = "sensor.ollama_test_{}"


async def test_the_agents_of_a_model_are_named_on_its_device(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    add_ollama_agent(hass, emulator.url, LLAMA, num_ctx=8192)
    # An OpenAI-compatible integration pointed at the server's /v1 (model in its options),
    # one with agents as subentries, and some that are not this server's.
    add_entry(
        hass,
        MockConfigEntry(
            domain="extended_openai_conversation",
            title="Office assistant",
            data={"base_url": f"{emulator.url}/v1", "api_key": "x"},
            options={"chat_model": "qwen3:8b"},
        ),
    )
    add_entry(
        hass,
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
                {
                    "data": {},
                    "subentry_type": "conversation",
                    "title": "No model",
                    "unique_id": None,
                },
            ],
        ),
    )
    for data in ({"base_url": "http://elsewhere:8080/v1"}, {"base_url": "::not a url"}, {}):
        add_entry(hass, MockConfigEntry(domain="other", data={**data, "chat_model": "qwen3:8b"}))
    # No poll in between: the entries' changes alone update the sensors.
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


async def test_the_agents_are_read_again_when_an_entry_changes(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Read once, and again on each change of a config entry: not on every poll."""
    agent = add_ollama_agent(hass, emulator.url, LLAMA, title="Kitchen", num_ctx=8192)
    await hass.async_block_till_done()
    runtime = init_integration.runtime_data
    assert agent_context(init_integration, LLAMA) == (8192, "Kitchen")
    # The agent moves to qwen3:8b with another context (its subentry is changed).
    subentry = next(iter(agent.subentries.values()))
    hass.config_entries.async_update_subentry(
        agent, subentry, data={"model": QWEN, "num_ctx": 4096}, title="Kitchen (big)"
    )
    await hass.async_block_till_done()
    assert agent_context(init_integration, LLAMA) == (None, None)
    assert agent_context(init_integration, QWEN) == (4096, "Kitchen (big)")
    assert hass.states.get(WARMTH.format("qwen3_8b")).attributes["agents"] == ["Kitchen (big)"]
    assert hass.states.get(WARMTH.format("llama3_2_3b")).attributes["agents"] == []
    assistant = hass.states.get("sensor.ollama_test_assistant_warmth")
    assert assistant.attributes["model"] == QWEN
    # Polls do not read the entries again.
    with patch.object(
        hass.config_entries, "async_entries", wraps=hass.config_entries.async_entries
    ) as entries:
        await runtime.coordinator.async_refresh()
        await hass.async_block_till_done()
    assert entries.call_count == 0
    # A second agent added as a subentry, then removed again.
    office = ConfigSubentry(
        data=MappingProxyType({"model": LLAMA, "num_ctx": 2048}),
        subentry_type="conversation",
        title="Office",
        unique_id=None,
    )
    hass.config_entries.async_add_subentry(agent, office)
    await hass.async_block_till_done()
    assert agent_context(init_integration, LLAMA) == (2048, "Office")
    assert hass.states.get(WARMTH.format("llama3_2_3b")).attributes["agents"] == ["Office"]
    hass.config_entries.async_remove_subentry(agent, office.subentry_id)
    await hass.async_block_till_done()
    assert agent_context(init_integration, LLAMA) == (None, None)
    # Removed: no agent left.
    await hass.config_entries.async_remove(agent.entry_id)
    await hass.async_block_till_done()
    assert runtime.agents.ollama == ()
    assert hass.states.get(WARMTH.format("qwen3_8b")).attributes["agents"] == []


async def test_llm_warmths_own_entry_changes_are_not_read(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """Its own entries hold no agents (and change at every load): no reading for them."""
    with patch.object(
        hass.config_entries, "async_entries", wraps=hass.config_entries.async_entries
    ) as entries:
        async_dispatcher_send(
            hass, SIGNAL_CONFIG_ENTRY_CHANGED, ConfigEntryChange.UPDATED, init_integration
        )
        await hass.async_block_till_done()
        # (The household guard reads LLM Warmth's own entries: the host's services.)
        assert [c for c in entries.call_args_list if c.args[:1] != (DOMAIN,)] == []
        add_entry(hass, MockConfigEntry(domain="other", data={}))
        await hass.async_block_till_done()
        assert entries.call_count > 0  # another integration's entry: read again
