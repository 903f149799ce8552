"""The warm assistant on two real hosts (the kit's current and second Ollama), through a real
Assist pipeline (tests/warm_house.py): cold primary, warm primary, primary's server down."""

from __future__ import annotations

import asyncio
import logging
import os

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
import pytest
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.llm_warmth.const import DOMAIN
from custom_components.llm_warmth.core.voice import WAKE_KEEP

from .assist import hass_config_dir_fixture  # noqa: F401 (a fixture)
from .e2e import wait_until
from .voice_runs import agent_wait
from .warm_house import MAX_WAIT, close, now, real_house

pytestmark = pytest.mark.e2e


async def shell(variable: str) -> None:
    """Run the kit's command in ``variable`` (stop or start the second Ollama)."""
    command = os.environ.get(variable)
    if not command:
        pytest.fail(f"{variable} is not set: export what `scripts/llm_servers env` prints")
    process = await asyncio.create_subprocess_shell(
        command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await process.communicate()
    assert process.returncode == 0, err.decode()


async def test_cold_primary_the_fall_back_answers_while_it_loads(
    hass: HomeAssistant, hass_client: ClientSessionGenerator
) -> None:
    """Primary cold: the NAS answers within the accepted wait; the big box loads meanwhile
    (from the wake: warm on wake is on for the assistant's pipeline; the assistant's own
    request then sets the agent's keep on that load), and the next turn is the big box's."""
    house = await real_house(hass, hass_client)
    try:
        await house.fallback_warm()
        await house.primary_cold()
        started = now()
        cold = await house.turn()
        print(f"\ncold primary: {cold.route} silence {cold.silence:.2f} s")
        assert cold.route is not None
        assert cold.route["agent"] == house.fallback
        assert cold.route["reason"] == "fallback_primary_cold"
        assert cold.route["warming_primary"] is True
        assert cold.voice["assistant_route"]["agent"] == house.fallback
        # What the household waited for the agent: no load in it.
        assert agent_wait(cold.voice) < MAX_WAIT
        loads = [
            r for r in house.sent_since(started, "/api/generate") if not r.json().get("prompt")
        ]
        # The wake's load (a short keep), then the assistant's (the agent's keep).
        # (The agents keep for ever: -1; the wake's keep is WAKE_KEEP, in whole seconds.)
        keeps = [r.json().get("keep_alive") for r in loads]
        assert keeps == [round(WAKE_KEEP), -1], [r.json() for r in loads]
        assert house.sent_since(started, "/api/chat") == []
        coordinator = house.big_entry.runtime_data.coordinator
        await wait_until(lambda: house.big_model in coordinator.data.held, 60, "big warmed")
        warm = await house.turn()
        print(f"next turn: {warm.route} silence {warm.silence:.2f} s")
        assert warm.route is not None
        assert (warm.route["agent"], warm.route["reason"]) == (house.primary, "primary_warm")
        assert warm.route["warming_primary"] is False
        # The big box answered (its one chat, beside any prompt warm-up of the wake: one
        # token asked) and loaded nothing more; the NAS was not asked.
        chats = [
            r
            for r in house.sent_since(started, "/api/chat")
            if r.json().get("options", {}).get("num_predict") != 1
        ]
        assert len(chats) == 1
        assert len(house.sent_since(started, "/api/generate")) == 2
        assert [r["agent"] for r in house.routes] == [house.fallback, house.primary]
    finally:
        await close(house)


async def test_primary_down_the_fall_back_answers_said_once(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, caplog: pytest.LogCaptureFixture
) -> None:
    """The big box's Ollama stopped: the NAS answers without a wait; one log line and one
    repair say so; both go once the big box is back."""
    house = await real_house(hass, hass_client)
    coordinator = house.big_entry.runtime_data.coordinator
    stopped = False
    try:
        await house.fallback_warm()
        await shell("LLM_WARMTH_OLLAMA_SECOND_STOP")
        stopped = True
        await wait_until(lambda: not coordinator.last_update_success, 15, "big box down")
        caplog.clear()
        for _ in range(2):
            turn = await house.turn()
            assert turn.route is not None
            assert (turn.route["agent"], turn.route["reason"]) == (
                house.fallback,
                "fallback_primary_down",
            )
            assert agent_wait(turn.voice) < MAX_WAIT
        said = [
            r
            for r in caplog.records
            if r.levelno >= logging.WARNING and "House assistant" in r.getMessage()
        ]
        assert len(said) == 1, [r.getMessage() for r in said]
        issues = [k for k in ir.async_get(hass).issues if k[0] == DOMAIN]
        assert len(issues) == 1
        assert issues[0][1].startswith("assistant_primary_down_")
        await shell("LLM_WARMTH_OLLAMA_SECOND_START")
        stopped = False
        await wait_until(lambda: coordinator.last_update_success, 30, "big box back")
        turn = await house.turn()
        assert turn.route is not None
        assert turn.route["primary_readiness"] != "down"
        assert not [k for k in ir.async_get(hass).issues if k[0] == DOMAIN]
    finally:
        if stopped:  # the kit's second Ollama runs again for the tests after this one
            await shell("LLM_WARMTH_OLLAMA_SECOND_START")
        await close(house)
