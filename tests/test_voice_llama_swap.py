"""Voice turns on llama-swap: the agent's request joined with llama-swap's own record of it.

An OpenAI-compatible agent (as Extended OpenAI Conversation is) answers through a
llama-swap of the test's own, the emulator and the real binary alike (``swaps``);
llama-swap's activity log (``/api/metrics/activity``) tells each request's wall time, its
prompt tokens and rates: what the request waited before its prefill (a load when the
model was cold, else the queue) and its prefill. On the real one the record's time is in
whole seconds and its clock is the machine's: the join must hold there.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import async_capture_events
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.llm_warmth.const import EVENT_VOICE_TURN

from .assist import Assist, hass_config_dir_fixture, setup_assist  # noqa: F401 (a fixture)
from .e2e import add_server, wait_until
from .llama_swaps import Swaps, SwapSpec

MODEL = "tiny"


async def activity(url: str) -> list[dict[str, Any]]:
    """llama-swap's activity records, oldest first."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{url}/api/metrics/activity?limit=100") as response,
    ):
        rows: list[dict[str, Any]] = (await response.json())["data"]
    return sorted(rows, key=lambda row: row["id"])


async def unload(url: str, model: str) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/api/models/unload/{model}") as response,
    ):
        response.raise_for_status()


async def turn(hass: HomeAssistant, assist: Assist, **kwargs: object) -> dict[str, object]:
    """Run a turn; return its event's data once LLM Warmth has told it."""
    turns = async_capture_events(hass, EVENT_VOICE_TURN)
    await assist.turn(**kwargs)  # type: ignore[arg-type]
    await wait_until(lambda: turns, 10, "the voice turn")
    return dict(turns[-1].data)


async def test_a_turn_is_joined_with_llama_swaps_record_of_its_request(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, swaps: Swaps
) -> None:
    url = await swaps.start([SwapSpec(MODEL)])
    entry = await add_server(hass, url)
    assist = await setup_assist(hass, hass_client, url, MODEL, openai=True)

    # Cold: the agent's request started the model; llama-swap timed it. (A quick speech to
    # text: the load, 0.1 s on the emulator, 0.25-0.3 s on the real one, costs most.)
    cold = await turn(hass, assist, stt_seconds=0.05)
    request = cold["server_request"]
    assert isinstance(request, dict)
    record = next(r for r in await activity(url) if r["req_path"] == "/v1/chat/completions")
    assert (request["source"], request["id"]) == ("llama-swap activity", record["id"])
    assert request["seconds"] == record["duration_ms"] / 1000
    assert request["prompt_tokens"] == record["tokens"]["input_tokens"]
    assert cold["resident_at_intent_start"] is False
    assert cold["load_source"] == "server"
    stages = cold["stages"]
    assert isinstance(stages, dict)
    # The load as llama-swap timed the request's wait before its prefill; the stage within
    # the wait Home Assistant saw for the first words.
    assert cold["load_seconds"] == request["waited_seconds"]
    assert stages["load"] == min(request["waited_seconds"], cold["agent_first_text_seconds"])
    # The emulator's 0.1 s load; the real one's start and its first health check at 0.25 s.
    assert 0.1 <= stages["load"] < 1.5
    assert stages["prefill"] == request["prefill_seconds"]
    assert stages["prefill"] > 0
    assert cold["dominant_stage"] == "load"

    # Warm: nothing to wait for before the prefill (no queue), the prefill from llama-swap.
    await entry.runtime_data.coordinator.async_refresh()
    warm = await turn(hass, assist)
    request = warm["server_request"]
    assert isinstance(request, dict)
    assert request["id"] == (await activity(url))[-1]["id"]
    assert warm["resident_at_intent_start"] is True
    stages = warm["stages"]
    assert isinstance(stages, dict)
    assert "load" not in stages
    assert stages.get("queue", 0.0) < 0.2
    # Within the wait Home Assistant saw (llama-swap counts whole milliseconds).
    assert stages["prefill"] == pytest.approx(request["prefill_seconds"], abs=0.01)
    assert stages["prefill"] <= warm["agent_first_text_seconds"]


async def test_warm_on_wake_for_an_agent_whose_prompt_is_not_known_only_loads(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, swaps: Swaps
) -> None:
    """llama-swap starts the model at the wake; no prompt warm-up (its prompt is unknown)."""
    url = await swaps.start([SwapSpec(MODEL)])
    entry = await add_server(hass, url)
    assist = await setup_assist(hass, hass_client, url, MODEL, openai=True)
    await turn(hass, assist)  # the first wake finds the pipeline
    voice = entry.runtime_data.voice
    voice.set_enabled(assist.pipeline_id, True)
    await unload(url, MODEL)
    await wait_until(lambda: MODEL not in entry.runtime_data.coordinator.data.held, 10, "gone")
    seen = len(await activity(url))
    warmed = await turn(hass, assist, speech_ms=2000, real_time=True)
    assert warmed["warmed_on_wake"] is True
    assert warmed["resident_at_intent_start"] is True
    assert warmed["warm_prefix"] is None
    # llama-swap recorded only the agent's chat: our load went through /upstream/.../health.
    chats = [r for r in (await activity(url))[seen:] if r["req_path"] == "/v1/chat/completions"]
    assert len(chats) == 1
    assert voice.counts[assist.pipeline_id].helped == 1
    await hass.config_entries.async_unload(entry.entry_id)
