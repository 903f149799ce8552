"""The voice turns ``benchmarks/voice_warm.py`` times (not a ``test_`` module: never run by CI).

Two parts, through a real Assist pipeline on a real Ollama with Home Assistant's own Ollama
agent, each turn a new conversation with the same prompt:

- cold pairs: ``big`` evicted and dropped from the page cache before each turn; one turn
  with warm on wake off (the control arm), one with it on;
- resident pairs: the model resident in both arms (loaded with the agent's settings by a
  turn before them; each turn's prompt prefix, up to Home Assistant's time of day, read by
  the turn before it); one turn off, one on.

The order of the two arms is drawn per pair (``random.Random(LLM_WARMTH_BENCH_SEED)``:
the cold pairs' orders first, then the resident pairs'). Each turn's figures are written
as JSON to ``LLM_WARMTH_BENCH_OUT``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import random
import time
from typing import Any

from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from .assist import hass_config_dir_fixture, setup_assist  # noqa: F401 (a fixture)
from .e2e import add_server, evict, ollama_get, server_url, wait_until
from .recording_proxy import Forwarded, RecordingProxy
from .voice_runs import (
    NUM_CTX,
    PROMPT,
    SPEECH_MS,
    STT_SECONDS,
    ColdTurns,
    agent_wait,
    make_big_voice,
)

pytestmark = pytest.mark.e2e


def orders(rng: random.Random, pairs: int) -> list[tuple[bool, bool]]:
    """Return each pair's arms in the order they run: (warm on wake of the 1st, of the 2nd)."""
    return [(False, True) if rng.random() < 0.5 else (True, False) for _ in range(pairs)]


async def test_voice_warm_runs(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, socket_enabled: None
) -> None:
    url = server_url(os.environ.get("LLM_WARMTH_BENCH_SERVER", "LLM_WARMTH_OLLAMA_CURRENT_URL"))
    pairs = int(os.environ.get("LLM_WARMTH_BENCH_RUNS", "5"))
    resident_pairs = int(os.environ.get("LLM_WARMTH_BENCH_RESIDENT_RUNS", str(pairs)))
    rng = random.Random(int(os.environ.get("LLM_WARMTH_BENCH_SEED", "1")))
    cold_orders, resident_orders = orders(rng, pairs), orders(rng, resident_pairs)
    model = await make_big_voice(url)
    proxy = RecordingProxy(url)
    await proxy.start()
    cold: list[dict[str, Any]] = []
    resident: list[dict[str, Any]] = []
    try:
        entry = await add_server(hass, proxy.url)
        assist = await setup_assist(
            hass, hass_client, proxy.url, model, num_ctx=NUM_CTX, prompt=PROMPT
        )
        turns = ColdTurns(hass, entry, assist, proxy)
        for pair, order in enumerate(cold_orders):
            for position, warm in enumerate(order):
                turn = (await turns.run(url, model, warm_on_wake=warm)).as_dict()
                cold.append(turn | {"pair": pair, "position": position})
        # The model resident with the agent's settings and its prompt read once: a turn
        # with warm on wake off (its agent loads the model if the last cold turn left
        # none), not counted.
        await resident_turn(turns, model, warm_on_wake=False)
        for pair, order in enumerate(resident_orders):
            for position, warm in enumerate(order):
                turn = await resident_turn(turns, model, warm_on_wake=warm)
                resident.append(turn | {"pair": pair, "position": position})
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()
        await evict(url, model)  # the server as it was found: the model not held forever
    version = (await ollama_get(url, "/api/version"))["version"]
    write(
        {
            "server": f"Ollama {version}",
            "model": model,
            "speech_seconds": SPEECH_MS / 1000,
            "stt_seconds": STT_SECONDS,
            "turns": cold,
            "resident": resident,
        }
    )


async def resident_turn(turns: ColdTurns, model: str, *, warm_on_wake: bool) -> dict[str, Any]:
    """Run one turn with the model left as it is (resident); return what it was."""
    entry, assist, proxy = turns.entry, turns.assist, turns.proxy
    coordinator = entry.runtime_data.coordinator
    entry.runtime_data.voice.set_enabled(assist.pipeline_id, warm_on_wake)
    if turns.events:  # once a turn ran: the model is resident and the integration knows it
        await wait_until(lambda: model in coordinator.data.held, 30, f"{model} resident")
    seen, started = len(turns.events), time.monotonic()
    await assist.turn(
        speech_ms=SPEECH_MS, stt_seconds=STT_SECONDS, real_time=True, new_conversation=True
    )
    await wait_until(lambda: len(turns.events) > seen, 30, "the voice turn")
    event = turns.events[-1]
    sent = [r for r in proxy.requests if r.at >= started]
    warm_ups = [r for r in sent if r.path == "/api/chat" and _num_predict(r) == 1]
    agents = [r for r in sent if r.path == "/api/chat" and _num_predict(r) != 1]
    server = _server_figures(agents[-1]) if agents else {}
    return {
        "warm_on_wake": warm_on_wake,
        "silence": event["silence_seconds"],
        "agent_wait": agent_wait(event),
        "resident_at_intent_start": event["resident_at_intent_start"],
        "warm_prefix": event["warm_prefix"],
        "loads_sent": sum(
            1 for r in sent if r.path == "/api/generate" and not r.json().get("prompt")
        ),
        "prompt_warm_ups_sent": len(warm_ups),
        "requests_sent": len(sent),  # everything: polls, the agent's, ours
        **server,
        "event": event,
    }


def _num_predict(request: Forwarded) -> object:
    return request.json().get("options", {}).get("num_predict")


def _server_figures(request: Forwarded) -> dict[str, Any]:
    """Return the server's own figures of the agent's request (its reply's last line)."""
    try:
        last = request.last_reply_line()
    except ValueError, IndexError:
        return {}
    seconds = {
        key: round(float(last[key]) / 1e9, 3)
        for key in ("load_duration", "prompt_eval_duration")
        if last.get(key) is not None
    }
    return {
        "agent_load_server_seconds": seconds.get("load_duration"),
        "agent_prompt_server_seconds": seconds.get("prompt_eval_duration"),
        "agent_prompt_tokens": last.get("prompt_eval_count"),
    }


def write(result: dict[str, object]) -> None:
    """Write the result where the benchmark reads it."""
    Path(os.environ["LLM_WARMTH_BENCH_OUT"]).write_text(json.dumps(result))
