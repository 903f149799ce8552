"""The warm assistant on two hosts: Home Assistant's Ollama agents on two Ollama emulators.

The big box's agent is the primary, the always-on NAS's the fall-back; both servers are
LLM Warmth entries. Turns go through Home Assistant's conversation API to the assistant,
which hands them on through the same API.
"""

import asyncio
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any
from unittest.mock import patch

from homeassistant.components import conversation
from homeassistant.components.assist_pipeline import async_get_pipeline, async_update_pipeline
from homeassistant.config_entries import SOURCE_RECONFIGURE, ConfigEntryState
from homeassistant.const import CONF_API_KEY, CONF_SCAN_INTERVAL, CONF_URL, CONF_VERIFY_SSL
from homeassistant.core import Context, Event, HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import device_registry as dr, entity_registry as er, issue_registry as ir
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.llm_warmth.const import DOMAIN, EVENT_ASSISTANT_ROUTE, EVENT_VOICE_TURN
from custom_components.llm_warmth.coordinator import LlmWarmthCoordinator
from custom_components.llm_warmth.core import assistant_route
from custom_components.llm_warmth.core.voice import WAKE_KEEP
from custom_components.llm_warmth.dashboard import build_dashboard
from custom_components.llm_warmth.diagnostics import async_get_config_entry_diagnostics
from custom_components.llm_warmth.warm_assistant import AssistantSettings

from .assist import (  # noqa: F401
    AGENT_SETTINGS,
    add_ollama_voice_agent,
    hass_config_dir_fixture,
    setup_assist,
)
from .conftest import LLAMA, QWEN, ollama_request
from .ollama_emulator import EmulatedModel, FakeClock, OllamaEmulator
from .test_voice import settle

GIB = 1024**3
ASSISTANT = "conversation.house_assistant"


@dataclass
class House:
    """Two hosts, their LLM Warmth entries, their agents and the warm assistant."""

    hass: HomeAssistant
    big: OllamaEmulator
    nas: OllamaEmulator
    big_entry: MockConfigEntry
    nas_entry: MockConfigEntry
    primary: str
    fallback: str
    routes: list[Event]

    async def poll(self) -> None:
        for entry in (self.big_entry, self.nas_entry):
            await entry.runtime_data.coordinator.async_refresh()
        await self.hass.async_block_till_done()

    async def turn(self, text: str, conversation_id: str | None = None) -> Any:
        return await conversation.async_converse(
            self.hass, text, conversation_id, Context(), agent_id=ASSISTANT
        )

    def chats(self, emulator: OllamaEmulator) -> list[Any]:
        return [r for r in emulator.requests if r.path == "/api/chat"]


def server_entry(url: str, title: str, **subentries: Any) -> MockConfigEntry:
    return MockConfigEntry(
        domain=DOMAIN,
        title=title,
        unique_id=url,
        version=2,
        data={CONF_URL: url, CONF_API_KEY: "", CONF_VERIFY_SSL: True, "server_kind": "ollama"},
        options={CONF_SCAN_INTERVAL: 10},
        subentries_data=[
            {"data": data, "subentry_type": "warm_assistant", "title": name, "unique_id": None}
            for name, data in subentries.items()
        ],
    )


def agent_id(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    registry = er.async_get(hass)
    return next(
        e.entity_id
        for e in er.async_entries_for_config_entry(registry, entry.entry_id)
        if e.domain == "conversation"
    )


@pytest.fixture(name="house")
async def house_fixture(hass: HomeAssistant, socket_enabled: None) -> AsyncGenerator[House]:
    """The big box (qwen, 1 s loads) is the primary; the NAS (llama) the fall-back."""
    clock = FakeClock()
    big = OllamaEmulator(vram_budget=8 * GIB, clock=clock)
    big.add_model(EmulatedModel(name=QWEN, size=6 * GIB, reply="From the big box"))
    nas = OllamaEmulator(vram_budget=4 * GIB, clock=clock)
    nas.add_model(EmulatedModel(name=LLAMA, size=3 * GIB, reply="From the NAS"))
    await big.start()
    await nas.start()
    assert await async_setup_component(hass, "homeassistant", {})
    big_agent = add_ollama_voice_agent(hass, big.url, QWEN, title="Big box", **AGENT_SETTINGS)
    nas_agent = add_ollama_voice_agent(hass, nas.url, LLAMA, title="NAS", **AGENT_SETTINGS)
    # Setting up the one sets up Home Assistant's Ollama integration, with both entries.
    assert await hass.config_entries.async_setup(big_agent.entry_id)
    await hass.async_block_till_done()
    primary, fallback = agent_id(hass, big_agent), agent_id(hass, nas_agent)
    big_entry = server_entry(big.url, "Big box")
    nas_entry = server_entry(
        nas.url,
        "NAS",
        **{
            "House assistant": {
                "primary_agent": primary,
                "fallback_agents": [fallback],
                "max_wait_seconds": 3.0,
            }
        },
    )
    routes = async_capture_events(hass, EVENT_ASSISTANT_ROUTE)
    with patch.object(LlmWarmthCoordinator, "utcnow", staticmethod(clock.now)):
        for entry in (big_entry, nas_entry):
            entry.add_to_hass(hass)
            assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        yield House(hass, big, nas, big_entry, nas_entry, primary, fallback, routes)
        for entry in (nas_entry, big_entry):
            if hass.config_entries.async_get_entry(entry.entry_id):  # not removed
                await hass.config_entries.async_unload(entry.entry_id)
    await big.stop()
    await nas.stop()


async def make_warm(house: House, emulator: OllamaEmulator, model: str) -> None:
    await ollama_request(emulator, "/api/generate", {"model": model, "keep_alive": -1})
    await house.poll()
    await house.poll()


def last_route(house: House) -> dict[str, Any]:
    return dict(house.routes[-1].data)


async def test_cold_primary_warm_fall_back(house: House) -> None:
    """The NAS answers while the big box loads; the next turn is the big box's, same chat."""
    await make_warm(house, house.nas, LLAMA)
    first = await house.turn("turn on the kitchen light")
    assert first.response.speech["plain"]["speech"] == "From the NAS"
    route = last_route(house)
    assert route["agent"] == house.fallback
    assert route["reason"] == "fallback_primary_cold"
    assert route["primary_readiness"] == "cold"
    assert route["primary_ready_in"] is None  # no load of the big box measured yet
    assert route["warming_primary"] is True
    assert route["agent_server"] == "NAS"
    assert route["agent_model"] == LLAMA
    assert route["conversation_id"] == first.conversation_id
    assert route["switched_from"] is None
    await house.hass.async_block_till_done()
    # The big box was loaded for the next turn: one load-only request with the agent's keep.
    loads = [r for r in house.big.requests if r.path == "/api/generate"]
    assert len(loads) == 1
    assert loads[0].json["keep_alive"] == -1
    assert loads[0].json["options"]["num_ctx"] == AGENT_SETTINGS["num_ctx"]
    assert house.chats(house.big) == []
    # The load takes the big box 1 s: the next turn comes once it is over (while it runs,
    # the big box is loading, not warm, and the NAS answers again).
    await house.hass.async_block_till_done(wait_background_tasks=True)
    await house.poll()
    second = await house.turn("and the hall", first.conversation_id)
    assert second.response.speech["plain"]["speech"] == "From the big box"
    assert second.conversation_id == first.conversation_id
    route = last_route(house)
    assert route["agent"] == house.primary
    assert route["reason"] == "primary_warm"
    assert route["warming_primary"] is False
    assert route["switched_from"] == house.fallback
    # The primary read the whole conversation: the NAS's turn is in its messages.
    messages = house.chats(house.big)[0].json["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == [
        "turn on the kitchen light",
        "and the hall",
    ]
    assert "From the NAS" in [m["content"] for m in messages if m["role"] == "assistant"]
    state = house.hass.states.get(ASSISTANT)
    assert state is not None
    assert state.attributes["agent"] == house.primary
    assert state.attributes["reason"] == "primary_warm"
    assert state.attributes["primary_agent"] == house.primary
    assert state.attributes["fallback_agents"] == [house.fallback]
    assert state.attributes["max_wait_seconds"] == 3.0


async def test_primary_ready_within_the_wait_answers(house: House) -> None:
    """A load measured at 1 s, a wait of 3 s: the cold primary answers, nothing else loads."""
    house.big.models[QWEN].load_delay = 0.0
    await house.hass.services.async_call(
        DOMAIN,
        "preload",
        {"config_entry_id": house.big_entry.entry_id, "model": QWEN},
        blocking=True,
        return_response=True,
    )
    timing = house.big_entry.runtime_data.coordinator.data.timings[QWEN]
    assert timing.load_seconds is not None
    assert timing.load_seconds <= 3.0
    await house.hass.services.async_call(
        DOMAIN,
        "evict",
        {"config_entry_id": house.big_entry.entry_id, "model": QWEN},
        blocking=True,
    )
    await house.poll()
    await make_warm(house, house.nas, LLAMA)
    loads_before = len(house.big.requests)
    result = await house.turn("what time is it")
    assert result.response.speech["plain"]["speech"] == "From the big box"
    route = last_route(house)
    assert route["reason"] == "primary_within_wait"
    assert route["primary_ready_in"] == timing.load_seconds
    assert route["warming_primary"] is False
    assert [r.path for r in house.big.requests[loads_before:]] == ["/api/chat"]
    assert house.chats(house.nas) == []


async def test_a_loading_primary_is_ready_in_what_is_left_of_its_load(house: House) -> None:
    """Another client loads the big box's model: ready in its last load less the time it
    has loaded (the core's rule, fed by the assistant the load's start as polls saw it)."""
    house.big.models[QWEN].load_delay = 1.0
    entry_id = house.big_entry.entry_id
    await house.hass.services.async_call(
        DOMAIN, "preload", {"config_entry_id": entry_id, "model": QWEN}, blocking=True
    )
    load = house.big_entry.runtime_data.coordinator.data.timings[QWEN].load_seconds
    assert load is not None
    assert load >= 1.0
    await house.hass.services.async_call(
        DOMAIN, "evict", {"config_entry_id": entry_id, "model": QWEN}, blocking=True
    )
    house.big.hold_loads()
    other = asyncio.create_task(ollama_request(house.big, "/api/generate", {"model": QWEN}))
    await house.big.wait_loading(QWEN)
    await house.big_entry.runtime_data.coordinator.async_refresh()
    house.big.clock.advance(0.5)  # half a second of the load later, by the polls' clock
    entity = house.hass.data["entity_components"]["conversation"].get_entity(ASSISTANT)
    decision = entity.assistant.decide()
    assert decision.primary.readiness.value == "loading"
    assert decision.primary.ready_in_s == pytest.approx(load - 0.5, abs=0.1)
    house.big.finish_loads()
    await other


async def test_warm_primary_answers_directly(house: House) -> None:
    """A warm primary: the turn is the primary's, the fall-back never asked."""
    await make_warm(house, house.big, QWEN)
    await make_warm(house, house.nas, LLAMA)
    result = await house.turn("hello")
    assert result.response.speech["plain"]["speech"] == "From the big box"
    assert last_route(house)["reason"] == "primary_warm"
    assert house.chats(house.nas) == []


async def test_primary_server_down_fall_back_without_a_wait(
    house: House, caplog: pytest.LogCaptureFixture
) -> None:
    """The big box is off: the NAS answers (cold or not), nothing is sent to the big box;
    one log line and one repair say so, both gone once the big box answers again."""
    await house.big.stop()
    await house.poll()
    assert not house.big_entry.runtime_data.coordinator.last_update_success
    caplog.clear()
    for _ in range(2):
        result = await house.turn("hello")
        assert result.response.speech["plain"]["speech"] == "From the NAS"
        route = last_route(house)
        assert route["reason"] == "fallback_primary_down"
        assert route["primary_readiness"] == "down"
        assert route["warming_primary"] is False
    said = [r for r in caplog.records if "is down" in r.getMessage()]
    assert len(said) == 1
    assert said[0].levelname == "WARNING"
    issues = ir.async_get(house.hass).issues
    (issue,) = [i for (domain, _), i in issues.items() if domain == DOMAIN]
    assert issue.translation_key == "assistant_primary_down"
    assert issue.is_fixable is False  # nothing to do in a form: the server must come back
    assert issue.translation_placeholders == {
        "assistant": "House assistant",
        "agent": house.primary,
        "server": "Big box",
    }
    # The same address (the emulator keeps its port), up again.
    await house.big.start()
    await house.poll()
    await house.turn("hello")
    assert last_route(house)["primary_readiness"] != "down"
    assert not [k for k in ir.async_get(house.hass).issues if k[0] == DOMAIN]


async def test_primary_cold_no_fall_back_ready_the_primary_loads(house: House) -> None:
    """The NAS's model is cold too (no load measured): the primary answers, loading."""
    result = await house.turn("hello")
    assert result.response.speech["plain"]["speech"] == "From the big box"
    assert last_route(house)["reason"] == "primary_no_ready_fallback"


async def test_primary_under_the_guard_is_not_warmed(house: House, hass: HomeAssistant) -> None:
    """The big box's household needs its GPU: the NAS answers and the big box is left alone."""
    hass.states.async_set("media_player.plex", "playing")
    hass.config_entries.async_update_entry(
        house.big_entry,
        options={**house.big_entry.options, "protected_entities": ["media_player.plex"]},
    )
    assert await hass.config_entries.async_reload(house.big_entry.entry_id)
    await hass.async_block_till_done()
    await make_warm(house, house.nas, LLAMA)
    result = await house.turn("hello")
    await hass.async_block_till_done()
    assert result.response.speech["plain"]["speech"] == "From the NAS"
    assert last_route(house)["reason"] == "fallback_primary_cold"
    assert last_route(house)["warming_primary"] is False
    assert [r for r in house.big.requests if r.path in ("/api/generate", "/api/chat")] == []


async def test_an_agent_that_is_gone_is_said_in_words(house: House, hass: HomeAssistant) -> None:
    """The fall-back's integration was removed, the primary cold: the turn says so in words."""
    await make_warm(house, house.nas, LLAMA)
    ollama_nas = er.async_get(hass).async_get(house.fallback)
    assert ollama_nas is not None
    assert ollama_nas.config_entry_id
    await hass.config_entries.async_unload(ollama_nas.config_entry_id)
    await hass.async_block_till_done()
    entity = hass.data["entity_components"]["conversation"].get_entity(ASSISTANT)
    # The registry still names the agent (its entry is only unloaded), it answers no more.
    result = await entity.async_process(
        conversation.ConversationInput(
            text="hello",
            context=Context(),
            conversation_id=None,
            device_id=None,
            satellite_id=None,
            language="en",
            agent_id=ASSISTANT,
        )
    )
    assert result.response.error_code is not None
    assert result.response.speech["plain"]["speech"] == (
        f"The agent {house.fallback} is gone; choose another in the warm assistant's settings."
    )
    route = last_route(house)
    assert (route["failed"], route["agent"]) == (True, house.fallback)
    assert route["failures"] == [{"agent": house.fallback, "server": "NAS", "failure": "gone"}]


async def test_unloading_the_primary_entry_mid_warm_leaves_nothing(
    house: House, hass: HomeAssistant
) -> None:
    """The big box's entry goes while the warm-up loads: its task is cancelled with it."""
    house.big.hold_loads()
    await make_warm(house, house.nas, LLAMA)
    await house.turn("hello")
    await house.big.wait_loading(QWEN)
    tasks: Callable[[], set[Any]] = lambda: {  # noqa: E731
        t for t in house.big_entry._background_tasks if not t.done()
    }
    assert tasks()
    await hass.config_entries.async_unload(house.big_entry.entry_id)
    await hass.async_block_till_done()
    assert not tasks()
    house.big.finish_loads()


async def test_a_voice_pipeline_with_the_warm_assistant(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, socket_enabled: None
) -> None:
    """An Assist pipeline whose agent is the warm assistant: the NAS speaks first, streamed
    into the pipeline (its text reaches text-to-speech before the turn ends), the voice turn
    says who answered; the next turn, the big box, warmed in between, answers."""
    clock = FakeClock()
    big = OllamaEmulator(vram_budget=8 * GIB, clock=clock)
    # A load longer than the wake to the agent's start: the wake's warm-up cannot hide it all.
    big.add_model(EmulatedModel(name=QWEN, size=6 * GIB, reply="From the big box", load_delay=2.0))
    nas = OllamaEmulator(vram_budget=4 * GIB, clock=clock)
    nas.add_model(EmulatedModel(name=LLAMA, size=3 * GIB, reply="From the NAS", token_delay=0.05))
    await big.start()
    await nas.start()
    assist = await setup_assist(hass, hass_client, big.url, QWEN, emulator=big, title="Big box")
    nas_agent = add_ollama_voice_agent(hass, nas.url, LLAMA, title="NAS", **AGENT_SETTINGS)
    assert await hass.config_entries.async_setup(nas_agent.entry_id)
    fallback = agent_id(hass, nas_agent)
    settings = {
        "primary_agent": assist.agent_entity_id,
        "fallback_agents": [fallback],
        "max_wait_seconds": 3.0,
    }
    big_entry = server_entry(big.url, "Big box", **{"House assistant": settings})
    nas_entry = server_entry(nas.url, "NAS")
    voice_turns = async_capture_events(hass, EVENT_VOICE_TURN)
    with patch.object(LlmWarmthCoordinator, "utcnow", staticmethod(clock.now)):
        for entry in (big_entry, nas_entry):
            entry.add_to_hass(hass)
            assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        pipeline = async_get_pipeline(hass, assist.pipeline_id)
        await async_update_pipeline(hass, pipeline, conversation_engine=ASSISTANT)
        await ollama_request(nas, "/api/generate", {"model": LLAMA, "keep_alive": -1})
        for entry in (big_entry, nas_entry):
            await entry.runtime_data.coordinator.async_refresh()
            await entry.runtime_data.coordinator.async_refresh()
        await hass.async_block_till_done()

        first = await assist.turn(stt_seconds=0.1)
        assert first.error is None
        assert first.response_text == "From the NAS"
        # Streamed through the delegate: the text reached text-to-speech as it came. The
        # pipeline streams only an agent that says it does (the delegate writes into the
        # pipeline's chat log either way, so the delta alone proves nothing of it).
        assert first.event("intent-progress").data["chat_log_delta"]
        info = conversation.async_get_agent_info(hass, ASSISTANT)
        assert info is not None
        assert info.supports_streaming is True
        await settle(hass)
        assert voice_turns[-1].data["assistant_route"] == {
            "agent": fallback,
            "reason": "fallback_primary_cold",
            "agent_server": "NAS",
            "agent_model": LLAMA,
        }
        # The wake warmed the primary (its load began at the wake, not at the agent's
        # start), as warm on wake does a plain agent's model; the assistant's own warm-up
        # came after it, with the agent's keep for the next turns (on the same load).
        assert voice_turns[-1].data["warmed_on_wake"] is True
        loads = [r.json["keep_alive"] for r in big.requests if r.path == "/api/generate"]
        assert loads == [WAKE_KEEP, -1]
        # A turn that reaches no agent (nothing heard) has no route: not the last one's.
        told = len(voice_turns)
        await assist.turn(text="")
        await settle(hass)
        assert len(voice_turns) == told + 1
        assert voice_turns[-1].data["assistant_route"] is None
        assist.stt.text = "tell me about the weather"
        await hass.async_block_till_done(wait_background_tasks=True)  # the load ends
        for _ in range(2):  # seen, then confirmed
            await big_entry.runtime_data.coordinator.async_refresh()
        await hass.async_block_till_done()
        second = await assist.turn(stt_seconds=0.1)
        assert second.response_text == "From the big box"
        await settle(hass)
        assert voice_turns[-1].data["assistant_route"]["reason"] == "primary_warm"
        for entry in (big_entry, nas_entry):
            await hass.config_entries.async_unload(entry.entry_id)
    await big.stop()
    await nas.stop()


async def test_a_streaming_reply_longer_than_the_first_words_bound_is_not_cut(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    socket_enabled: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In an Assist pipeline the bound is on the first words, not the reply: a warm agent
    that speaks at once and takes longer than the bound to finish keeps the turn."""
    monkeypatch.setattr(assistant_route, "FIRST_WORDS_SECONDS", 0.3)
    reply = "one two three four five six seven eight"
    nas = OllamaEmulator(vram_budget=4 * GIB)
    nas.add_model(EmulatedModel(name=LLAMA, size=3 * GIB, reply=reply, token_delay=0.1))
    await nas.start()
    assist = await setup_assist(hass, hass_client, nas.url, LLAMA, emulator=nas, title="NAS")
    settings = {
        "primary_agent": assist.agent_entity_id,
        "fallback_agents": [],
        "max_wait_seconds": 3.0,
    }
    entry = server_entry(nas.url, "NAS", **{"House assistant": settings})
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    pipeline = async_get_pipeline(hass, assist.pipeline_id)
    await async_update_pipeline(hass, pipeline, conversation_engine=ASSISTANT)
    await ollama_request(nas, "/api/generate", {"model": LLAMA, "keep_alive": -1})
    for _ in range(2):
        await entry.runtime_data.coordinator.async_refresh()
    await hass.async_block_till_done()
    started = asyncio.get_running_loop().time()
    turn = await assist.turn(stt_seconds=0.1)
    # The reply took longer than the bound (eight words a tenth of a second apart).
    assert asyncio.get_running_loop().time() - started > 0.6
    assert turn.response_text == reply
    assert hass.states.get(ASSISTANT).attributes["failed"] is False
    await hass.config_entries.async_unload(entry.entry_id)
    await nas.stop()


async def test_the_household_device_shows_every_server(house: House, hass: HomeAssistant) -> None:
    """A house of two servers gets its household entry (no step asked): one device with a
    line per server: its reach, host, every model's warmth, the agents that use its models;
    one server down or removed changes its own line alone."""
    await make_warm(house, house.nas, LLAMA)
    (household,) = [e for e in hass.config_entries.async_entries(DOMAIN) if e.title == "Household"]
    assert household.data == {"household": True}
    assert household.state is ConfigEntryState.LOADED
    (device,) = dr.async_entries_for_config_entry(dr.async_get(hass), household.entry_id)
    assert device.name == "Household"
    lines = {
        e.entity_id
        for e in er.async_entries_for_device(er.async_get(hass), device.id)
        if e.domain == "sensor"
    }
    assert lines == {"sensor.household_big_box", "sensor.household_nas"}
    nas = hass.states.get("sensor.household_nas")
    assert nas is not None
    assert nas.state == "up"
    assert nas.attributes["host"] == "127.0.0.1"
    assert nas.attributes["server_kind"] == "ollama"
    assert nas.attributes["warm_models"] == [LLAMA]
    assert nas.attributes["models"] == {LLAMA: {"warmth": "kept_warm", "peer": None}}
    assert nas.attributes["agents"] == {"NAS": LLAMA}
    assert nas.attributes["gpus"] == []
    big = hass.states.get("sensor.household_big_box")
    assert big is not None
    assert big.attributes["models"] == {QWEN: {"warmth": "cold", "peer": None}}
    assert big.attributes["warm_models"] == []
    assert big.attributes["agents"] == {"Big box": QWEN}

    # The ready dashboard opens with the household: both lines and the warm assistant.
    card = build_dashboard(hass)["views"][0]["cards"][0]
    assert card == {
        "type": "custom:llm-warmth-card",
        "title": "Household",
        "household": {
            "servers": ["sensor.household_big_box", "sensor.household_nas"],
            "assistants": [ASSISTANT],
        },
    }

    await house.big.stop()
    await house.poll()
    assert hass.states.get("sensor.household_big_box").state == "down"
    assert hass.states.get("sensor.household_nas").state == "up"
    # The big box's entry unloaded: its line unavailable; removed: its line gone.
    await hass.config_entries.async_unload(house.big_entry.entry_id)
    await hass.async_block_till_done()
    assert hass.states.get("sensor.household_big_box").state == "unavailable"
    await hass.config_entries.async_remove(house.big_entry.entry_id)
    await hass.async_block_till_done()
    assert hass.states.get("sensor.household_big_box") is None
    assert er.async_get(hass).async_get("sensor.household_big_box") is None
    assert hass.states.get("sensor.household_nas").state == "up"
    # A third server comes: its line appears.
    await house.big.start()
    third = server_entry(house.big.url, "Lab")
    third.add_to_hass(hass)
    assert await hass.config_entries.async_setup(third.entry_id)
    await hass.async_block_till_done()
    assert hass.states.get("sensor.household_lab").state == "up"
    await hass.config_entries.async_unload(third.entry_id)


async def test_the_household_entry_is_no_server(house: House, hass: HomeAssistant) -> None:
    """Actions that name it are refused in words; it has no options, no reconfigure and no
    warm assistants of its own."""
    await hass.async_block_till_done()
    (household,) = [e for e in hass.config_entries.async_entries(DOMAIN) if e.title == "Household"]
    with pytest.raises(ServiceValidationError) as err:
        await hass.services.async_call(
            DOMAIN,
            "preload",
            {"config_entry_id": household.entry_id, "model": QWEN},
            blocking=True,
            return_response=True,
        )
    assert err.value.translation_key == "household_not_a_server"
    (device,) = dr.async_entries_for_config_entry(dr.async_get(hass), household.entry_id)
    with pytest.raises(ServiceValidationError) as err:
        await hass.services.async_call(
            DOMAIN, "preload", {"device_id": device.id}, blocking=True, return_response=True
        )
    assert err.value.translation_key == "not_a_model_device"
    assert household.supports_options is False
    assert household.supported_subentry_types == {}
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_RECONFIGURE, "entry_id": household.entry_id}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "household_not_a_server"
    # Its diagnostics name the servers it shows.
    assert await async_get_config_entry_diagnostics(hass, household) == {
        "household": True,
        "servers": [
            {"title": "Big box", "state": "loaded"},
            {"title": "NAS", "state": "loaded"},
        ],
    }
    # Only one household, however many servers start.
    await hass.config_entries.async_reload(house.nas_entry.entry_id)
    await hass.async_block_till_done()
    assert [e.title for e in hass.config_entries.async_entries(DOMAIN)].count("Household") == 1


GOOD = {
    "primary_agent": "conversation.big",
    "fallback_agents": ["conversation.nas"],
    "max_wait_seconds": 3,
}


@pytest.mark.parametrize(
    ("change", "field", "error"),
    [
        ({"primary_agent": None}, "primary_agent", "assistant_not_agent"),
        ({"primary_agent": "sensor.big"}, "primary_agent", "assistant_not_agent"),
        ({"fallback_agents": "conversation.nas"}, "fallback_agents", "assistant_not_agent"),
        ({"fallback_agents": [3]}, "fallback_agents", "assistant_not_agent"),
        ({"fallback_agents": ["sensor.nas"]}, "fallback_agents", "assistant_not_agent"),
        ({"fallback_agents": ["conversation.big"]}, "fallback_agents", "assistant_agents_repeat"),
        (
            {"fallback_agents": ["conversation.nas", "conversation.nas"]},
            "fallback_agents",
            "assistant_agents_repeat",
        ),
        ({"max_wait_seconds": True}, "max_wait_seconds", "assistant_wait_range"),
        ({"max_wait_seconds": "3"}, "max_wait_seconds", "assistant_wait_range"),
        ({"max_wait_seconds": -0.5}, "max_wait_seconds", "assistant_wait_range"),
        ({"max_wait_seconds": 60.5}, "max_wait_seconds", "assistant_wait_range"),
    ],
)
def test_settings_refused_field_by_field(change: dict[str, Any], field: str, error: str) -> None:
    """Stored settings are read as strictly as the form checks them."""
    with pytest.raises(ValueError, match=error) as err:
        AssistantSettings.from_data({**GOOD, **change})
    assert err.value.args == (field, error)


@pytest.mark.parametrize("wait", [0, 0.0, 60, 60.0, 2.5])
def test_settings_within_range(wait: float) -> None:
    """The bounds are the form's: 0 and 60 s included; no fall-back at all is fine."""
    settings = AssistantSettings.from_data({**GOOD, "max_wait_seconds": wait})
    assert settings == AssistantSettings("conversation.big", ("conversation.nas",), float(wait))
    alone = AssistantSettings.from_data(
        {"primary_agent": "conversation.big", "max_wait_seconds": 1}
    )
    assert alone.fallbacks == ()


async def test_home_assistants_own_agent_as_the_fall_back(
    house: House, hass: HomeAssistant
) -> None:
    """An agent with no model (Home Assistant's own) is taken as ready: with the big box cold
    it answers, and a turn it cannot understand is recorded as failed."""
    assert await async_setup_component(hass, "conversation", {})
    subentry = next(iter(house.nas_entry.subentries.values()))
    hass.config_entries.async_update_subentry(
        house.nas_entry,
        subentry,
        data={**subentry.data, "fallback_agents": ["conversation.home_assistant"]},
    )
    await hass.async_block_till_done()
    result = await house.turn("frobnicate the quux")
    route = last_route(house)
    assert route["agent"] == "conversation.home_assistant"
    assert route["reason"] == "fallback_primary_cold"
    assert route["agent_server"] is None
    assert route["agent_model"] is None
    assert result.response.error_code is not None
    assert route["failed"] is True
    # A turn that works is no failure.
    await make_warm(house, house.big, QWEN)
    await house.turn("hello")
    assert last_route(house)["failed"] is False


async def test_warm_assistants_come_and_go_without_a_reload(
    house: House, hass: HomeAssistant
) -> None:
    """The big box gets its first warm assistant, then a second; one is reconfigured, one
    removed: the entry is never reloaded (its coordinator stays, no entity of it goes
    unavailable), and each change shows at once."""
    entry = house.big_entry
    coordinator = entry.runtime_data.coordinator
    went_unavailable: list[str] = []

    def watch(event: Event) -> None:
        new = event.data["new_state"]
        if new is not None and new.state == "unavailable":
            went_unavailable.append(event.data["entity_id"])

    hass.bus.async_listen("state_changed", watch)

    async def add(name: str) -> str:
        result = await hass.config_entries.subentries.async_init(
            (entry.entry_id, "warm_assistant"), context={"source": "user"}
        )
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"],
            {
                "name": name,
                "primary_agent": house.primary,
                "fallback_agents": [house.fallback],
                "max_wait_seconds": 3.0,
            },
        )
        assert result["type"] is FlowResultType.CREATE_ENTRY
        await hass.async_block_till_done()
        (subentry,) = [s for s in entry.subentries.values() if s.title == name]
        return subentry.subentry_id

    first = await add("Kitchen assistant")
    assert hass.states.get("conversation.kitchen_assistant") is not None
    second = await add("Office assistant")
    assert hass.states.get("conversation.office_assistant") is not None
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, "warm_assistant"),
        context={"source": SOURCE_RECONFIGURE, "subentry_id": first},
    )
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {"primary_agent": house.primary, "fallback_agents": [], "max_wait_seconds": 10.0},
    )
    assert result["type"] is FlowResultType.ABORT
    await hass.async_block_till_done()
    kitchen = hass.states.get("conversation.kitchen_assistant")
    assert (kitchen.attributes["max_wait_seconds"], kitchen.attributes["fallback_agents"]) == (
        10.0,
        [],
    )
    assert hass.config_entries.async_remove_subentry(entry, second)
    await hass.async_block_till_done()
    assert hass.states.get("conversation.office_assistant") is None
    assert entry.runtime_data.coordinator is coordinator
    assert went_unavailable == []
    # The new assistant answers at once: no reload stands between its flow and its first turn.
    answer = await conversation.async_converse(
        hass, "hello", None, Context(), agent_id="conversation.kitchen_assistant"
    )
    assert answer.response.error_code is None
