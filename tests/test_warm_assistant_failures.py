"""A warm-assistant turn always ends in words: delegates that raise, fail or are gone.

The two hosts of ``test_warm_assistant``: Home Assistant's own Ollama agents on two
emulators, each told to fail as the real servers were seen to (a chat 404, a reset, a reply
the agent cannot read). Whatever a delegate does, the turn ends in an answer from some agent
or in the assistant's own sentence naming the servers, and its route event fires.
"""

import asyncio
from typing import Any, Literal

from homeassistant.components import conversation
from homeassistant.components.conversation.const import DATA_COMPONENT as CONVERSATION_AGENTS
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
import pytest

from custom_components.llm_warmth.core import assistant_route
from custom_components.llm_warmth.warm_assistant import assistant_primary

from .conftest import LLAMA, QWEN
from .held_answer import HeldAnswer
from .test_warm_assistant import (  # noqa: F401
    ASSISTANT,
    House,
    hass_config_dir_fixture,
    house_fixture,
    last_route,
    make_warm,
)

# Each fault, and how Home Assistant's Ollama agent fails on it: it raises (the ollama
# library's or httpx's error, a JSON error: a ValueError, not an agent that is gone), or it
# answers "Unable to get response" (its server said 200 with nothing in it).
FAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "a chat 404": ({"status": 404, "body": '{"error": "model not found"}'}, "raised"),
    "a reset": ({"drop": True}, "raised"),
    "a reply it cannot read": ({"status": 200, "body": "not json at all"}, "raised"),
    "a server error": ({"status": 500, "body": '{"error": "boom"}'}, "raised"),
    "a 200 with nothing in it": ({"status": 200, "body": ""}, "error"),
}


@pytest.mark.parametrize(("fault", "failure"), FAULTS.values(), ids=FAULTS.keys())
async def test_a_warm_primary_that_fails_is_asked_again_on_the_warm_fall_back(
    house: House, fault: dict[str, Any], failure: str
) -> None:
    """The primary warm, its chat fails: the fall-back answers the same turn, and says so."""
    await make_warm(house, house.big, QWEN)
    await make_warm(house, house.nas, LLAMA)
    house.big.inject("/api/chat", **fault)
    result = await house.turn("hello")
    assert result.response.error_code is None
    assert result.response.speech["plain"]["speech"] == "From the NAS"
    route = last_route(house)
    assert (route["agent"], route["reason"], route["failed"]) == (
        house.fallback,
        "after_a_failure",
        False,
    )
    assert route["failures"] == [{"agent": house.primary, "server": "Big box", "failure": failure}]
    assert (route["agent_server"], route["agent_model"]) == ("NAS", LLAMA)
    assert len(house.routes) == 1  # one event for the turn


async def test_both_hosts_down_the_turn_names_them(house: House, hass: HomeAssistant) -> None:
    """Both servers off (the agents raise on connecting): words naming both, the event fires."""
    await make_warm(house, house.big, QWEN)
    await make_warm(house, house.nas, LLAMA)
    for emulator in (house.big, house.nas):
        emulator.inject("/api/chat", drop=True, times=None)
    result = await house.turn("hello")
    assert result.response.error_code is not None
    assert result.response.speech["plain"]["speech"] == (
        "Sorry, I could not get an answer: Big box, NAS could not be reached. "
        "Please try again in a moment."
    )
    route = last_route(house)
    assert route["failed"] is True
    assert [(f["agent"], f["server"]) for f in route["failures"]] == [
        (house.primary, "Big box"),
        (house.fallback, "NAS"),
    ]
    state = hass.states.get("conversation.house_assistant")
    assert state is not None
    assert state.attributes["failed"] is True


async def test_a_failure_is_not_retried_on_a_cold_fall_back(house: House) -> None:
    """The primary warm and failing, the NAS cold (no load known): no wait for its load."""
    await make_warm(house, house.big, QWEN)
    house.big.inject("/api/chat", status=500, body='{"error": "boom"}')
    result = await house.turn("hello")
    assert result.response.error_code is not None
    assert "Big box could not be reached" in result.response.speech["plain"]["speech"]
    assert [r for r in house.nas.requests if r.path == "/api/chat"] == []
    assert [f["agent"] for f in last_route(house)["failures"]] == [house.primary]


async def test_the_next_turn_after_a_failure_goes_by_the_route_again(house: House) -> None:
    """One failure is not remembered as the primary's state: the next turn is the primary's."""
    await make_warm(house, house.big, QWEN)
    await make_warm(house, house.nas, LLAMA)
    house.big.inject("/api/chat", status=500, body='{"error": "boom"}')
    first = await house.turn("hello")
    second = await house.turn("again", first.conversation_id)
    assert second.response.speech["plain"]["speech"] == "From the big box"
    route = last_route(house)
    assert (route["agent"], route["reason"], route["failures"]) == (
        house.primary,
        "primary_warm",
        [],
    )
    assert route["switched_from"] == house.fallback


async def test_a_primary_that_says_nothing_is_left_for_the_warm_fall_back(
    house: House, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The primary's server takes the chat and never answers: past its first words' due
    time the fall-back answers the turn, and the route says the primary was silent."""
    monkeypatch.setattr(assistant_route, "FIRST_WORDS_SECONDS", 0.3)
    await make_warm(house, house.big, QWEN)
    await make_warm(house, house.nas, LLAMA)
    held = HeldAnswer()
    house.big.inject("/api/chat", hold=held)
    try:
        result = await asyncio.wait_for(house.turn("hello"), 10)
    finally:
        held.release()
    assert held.arrived.is_set()  # the primary was asked, and held the turn
    assert result.response.speech["plain"]["speech"] == "From the NAS"
    route = last_route(house)
    assert route["failures"] == [{"agent": house.primary, "server": "Big box", "failure": "silent"}]
    assert route["reason"] == "after_a_failure"


async def test_no_agent_says_a_word_the_turn_names_the_servers(
    house: House, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both servers hold the chat: the assistant's own sentence, once both were due."""
    monkeypatch.setattr(assistant_route, "FIRST_WORDS_SECONDS", 0.2)
    await make_warm(house, house.big, QWEN)
    await make_warm(house, house.nas, LLAMA)
    holds = [HeldAnswer(), HeldAnswer()]
    house.big.inject("/api/chat", hold=holds[0])
    house.nas.inject("/api/chat", hold=holds[1])
    try:
        result = await asyncio.wait_for(house.turn("hello"), 10)
    finally:
        for held in holds:
            held.release()
    assert "Big box, NAS could not be reached" in result.response.speech["plain"]["speech"]
    assert [f["failure"] for f in last_route(house)["failures"]] == ["silent", "silent"]


async def test_the_assistants_own_words_are_in_the_turns_language(
    house: House, hass: HomeAssistant
) -> None:
    """A Dutch (Flemish) turn that no agent answers: the assistant's sentence in Dutch."""
    await make_warm(house, house.big, QWEN)
    await make_warm(house, house.nas, LLAMA)
    for emulator in (house.big, house.nas):
        emulator.inject("/api/chat", drop=True, times=None)
    result = await conversation.async_converse(
        hass, "hallo", None, Context(), language="nl-BE", agent_id=ASSISTANT
    )
    assert result.response.speech["plain"]["speech"] == (
        "Sorry, ik kreeg geen antwoord, want ik kon Big box, NAS niet bereiken. "
        "Probeer het zo nog eens."
    )


class TimingOut(conversation.ConversationEntity):
    """An agent whose own code runs into a timeout (not the assistant's bound)."""

    _attr_unique_id = "timing_out"
    entity_id = "conversation.timing_out"

    @property
    def supported_languages(self) -> Literal["*"]:
        return "*"

    async def async_process(
        self, user_input: conversation.ConversationInput
    ) -> conversation.ConversationResult:
        raise TimeoutError


async def test_a_delegates_own_timeout_is_a_failure_it_raised_not_silence(
    house: House, hass: HomeAssistant
) -> None:
    """Only the assistant's own bound makes an agent "silent"."""
    await make_warm(house, house.nas, LLAMA)
    await hass.data[CONVERSATION_AGENTS].async_add_entities([TimingOut()])
    (subentry,) = house.nas_entry.subentries.values()
    hass.config_entries.async_update_subentry(
        house.nas_entry,
        subentry,
        data={**subentry.data, "primary_agent": "conversation.timing_out"},
    )
    await hass.async_block_till_done()
    result = await house.turn("hello")
    assert result.response.speech["plain"]["speech"] == "From the NAS"
    assert last_route(house)["failures"] == [
        {"agent": "conversation.timing_out", "server": None, "failure": "raised"}
    ]


async def test_only_a_warm_assistants_conversation_entity_has_a_primary(
    house: House, hass: HomeAssistant
) -> None:
    registry = er.async_get(hass)
    ours = registry.async_get(ASSISTANT)
    assert ours is not None
    assert assistant_primary(hass, ours) == house.primary
    # Another entity of the integration, and another integration's agent: none.
    sensor = next(
        e
        for e in er.async_entries_for_config_entry(registry, house.nas_entry.entry_id)
        if e.domain == "sensor"
    )
    assert assistant_primary(hass, sensor) is None
    theirs = registry.async_get(house.fallback)
    assert theirs is not None
    assert assistant_primary(hass, theirs) is None
