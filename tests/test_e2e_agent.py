"""Home Assistant's own Ollama agent beside LLM Warmth, on the real Ollama (e2e).

The agent asks with num_ctx 1024: a preload without num_ctx loads the model with 1024, and
the agent's next turn does not reload it (its load stage, as Ollama reports it, < 100 ms).
"""

from __future__ import annotations

from homeassistant.components import conversation
from homeassistant.components.ollama.config_flow import OllamaConfigFlow
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_capture_events,
)

from custom_components.llm_warmth.const import DOMAIN, EVENT_MODEL_LOADED

from .e2e import add_server, evict
from .recording_proxy import RecordingProxy


@pytest.mark.e2e
async def test_a_preload_spares_the_agents_next_turn_a_reload(
    hass: HomeAssistant, ollama_url: str
) -> None:
    url = ollama_url
    proxy = RecordingProxy(url)
    await proxy.start()
    try:
        assert await async_setup_component(hass, "homeassistant", {})
        agent_entry = MockConfigEntry(
            domain="ollama",
            title="Ollama",
            version=OllamaConfigFlow.VERSION,
            minor_version=OllamaConfigFlow.MINOR_VERSION,
            data={"url": proxy.url},
            subentries_data=[
                {
                    "data": {
                        "model": "tiny:latest",
                        "num_ctx": 1024,
                        "keep_alive": -1,
                        "max_history": 20,
                        "prompt": "Answer in one word.",
                    },
                    "subentry_type": "conversation",
                    "title": "Kitchen",
                    "unique_id": None,
                }
            ],
        )
        agent_entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(agent_entry.entry_id)
        await hass.async_block_till_done()
        agent_id = next(
            e.entity_id
            for e in er.async_entries_for_config_entry(er.async_get(hass), agent_entry.entry_id)
            if e.domain == "conversation"
        )
        entry = await add_server(hass, proxy.url)
        await evict(url, "tiny")

        answer = await hass.services.async_call(
            DOMAIN,
            "preload",
            {"config_entry_id": entry.entry_id, "model": "tiny"},
            blocking=True,
            return_response=True,
        )
        assert answer is not None
        assert (answer["num_ctx"], answer["agent"]) == (1024, "Kitchen")
        assert answer["already_resident"] is False
        load = [r for r in proxy.requests if r.path == "/api/generate"][-1]
        assert load.json()["options"] == {"num_ctx": 1024}

        loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
        result = await conversation.async_converse(
            hass, "Is the kitchen light on?", None, Context(), agent_id=agent_id
        )
        assert result.response.speech["plain"]["speech"]
        turn = [r for r in proxy.requests if r.path == "/api/chat"][-1]
        assert turn.json()["options"]["num_ctx"] == 1024
        final = turn.last_reply_line()
        print(f"\nthe agent's turn after the preload: load_duration {final['load_duration']} ns")
        assert final["load_duration"] < 100_000_000  # no reload: under 100 ms
        await hass.async_block_till_done()
        assert not [e for e in loaded if e.data.get("reloaded")]
        await hass.config_entries.async_unload(entry.entry_id)
        await hass.config_entries.async_unload(agent_entry.entry_id)
    finally:
        await proxy.stop()
