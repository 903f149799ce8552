"""End to end against the real Ollama (LLM_WARMTH_OLLAMA_URL): residency and its events."""

from datetime import timedelta

from homeassistant.config_entries import SOURCE_USER, ConfigEntryState
from homeassistant.const import CONF_URL, CONF_VERIFY_SSL, STATE_OFF, STATE_ON
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.util import dt as dt_util, slugify
import pytest
from pytest_homeassistant_custom_component.common import async_capture_events

from custom_components.llm_warmth.const import DOMAIN, EVENT_MODEL_LOADED, EVENT_MODEL_UNLOADED

from .e2e import evict, ollama_call, server_url

pytestmark = pytest.mark.e2e


@pytest.fixture
def ollama_url(socket_enabled: None) -> str:
    return server_url("LLM_WARMTH_OLLAMA_URL")


async def test_residency_follows_the_real_server(hass: HomeAssistant, ollama_url: str) -> None:
    # Start from a known state: tiny not resident.
    await evict(ollama_url, "tiny")

    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: ollama_url, CONF_VERIFY_SSL: True}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    entry = result["result"]
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    coordinator = entry.runtime_data.coordinator
    resident = "binary_sensor.tiny_latest_resident"
    assert hass.states.get(resident).state == STATE_OFF

    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    reply = await ollama_call(ollama_url, "/api/generate", {"model": "tiny", "keep_alive": "10m"})
    assert reply["done_reason"] == "load"
    preloaded_at = dt_util.utcnow()
    for _ in range(3):
        await coordinator.async_refresh()
        await hass.async_block_till_done()
        if loaded:
            break
    assert [e.data["model"] for e in loaded] == ["tiny:latest"]
    assert hass.states.get(resident).state == STATE_ON
    unloads_at = dt_util.parse_datetime(hass.states.get("sensor.tiny_latest_unloads_at").state)
    assert unloads_at is not None
    assert abs(unloads_at - (preloaded_at + timedelta(minutes=10))) < timedelta(seconds=5)
    assert hass.states.get(f"sensor.{slugify(entry.title)}_resident_models").state != "0"

    # Ollama unloads asynchronously: wait until /api/ps no longer lists it, then poll.
    await evict(ollama_url, "tiny")
    await coordinator.async_refresh()
    await hass.async_block_till_done()
    assert [(e.data["model"], e.data["reason"]) for e in unloaded] == [("tiny:latest", "displaced")]
    assert hass.states.get(resident).state == STATE_OFF
    await hass.config_entries.async_unload(entry.entry_id)
