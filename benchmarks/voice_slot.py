"""Part 2 of ``benchmarks/voice_warm.py``: what a prompt warm-up costs on a one-slot server.

Ollama runs one request of a model at a time (``OLLAMA_NUM_PARALLEL=1``): the first token of
an agent-like turn after a load-only warm-up, after a prompt warm-up that had ended, when
the turn comes 0.3 s into one, and when it comes 0.3 s into one that is let go (its request
cancelled at the turn's start, as ``voice_wake.py`` does at the agent's start). It sends
its requests itself, not through the integration. Run by ``voice_warm`` (``--slot-only``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from statistics import median
import time
from typing import Any

import aiohttp

from benchmarks.world import LABEL, row, spread

# An agent's system prompt: instructions and a dozen exposed entities (about 680 tokens
# with the kit's small vocabulary), and a turn after it.
SYSTEM = "You are a voice assistant for a home. " + " ".join(
    f"Entity light.room_{i} is named Room {i} light and is in area Room {i}." for i in range(12)
)
NUM_CTX = 2048


async def _chat(
    session: aiohttp.ClientSession, url: str, model: str, user: str, num_predict: int | None
) -> float:
    """Send a chat like the agent's; return the seconds to its first token."""
    options: dict[str, Any] = {"num_ctx": NUM_CTX}
    if num_predict is not None:
        options["num_predict"] = num_predict
    body = {
        "model": model,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        "options": options,
        "stream": True,
    }
    sent, first = time.monotonic(), None
    async with session.post(f"{url}/api/chat", json=body) as response:
        async for line in response.content:
            chunk = json.loads(line) if line.strip() else {}
            if first is None and (chunk.get("message", {}).get("content") or chunk.get("done")):
                first = time.monotonic()
    return (first or time.monotonic()) - sent


async def _reload(session: aiohttp.ClientSession, url: str, model: str) -> None:
    """Unload the model (its prompt cache with it) and load it again, with no prompt."""
    payload: dict[str, Any] = {"model": model, "keep_alive": 0}
    async with session.post(f"{url}/api/generate", json=payload) as response:
        await response.read()
    await asyncio.sleep(2)
    payload = {"model": model, "keep_alive": -1, "options": {"num_ctx": NUM_CTX}}
    async with session.post(f"{url}/api/generate", json=payload) as response:
        await response.read()


async def part_two(runs: int, url: str, model: str) -> list[str]:
    """Time an agent's turn after a load, after a prompt warm-up, and during one."""
    after_load, after_warm, during_warm, let_go, warm_up = [], [], [], [], []
    turn = "turn on the kitchen light"
    timeout = aiohttp.ClientTimeout(total=900)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for _ in range(runs):
            await _reload(session, url, model)
            after_load.append(await _chat(session, url, model, turn, None))
            await _reload(session, url, model)
            warm_up.append(await _chat(session, url, model, "Hello.", 1))
            after_warm.append(await _chat(session, url, model, turn, None))
            await _reload(session, url, model)
            warming = asyncio.create_task(_chat(session, url, model, "Hello.", 1))
            await asyncio.sleep(0.3)
            during_warm.append(await _chat(session, url, model, turn, None) + 0.3)
            await warming
            # What the integration does at the agent's start (voice_wake.py): a prompt
            # warm-up still running is let go, its request cancelled, then the turn sent.
            await _reload(session, url, model)
            warming = asyncio.create_task(_chat(session, url, model, "Hello.", 1))
            await asyncio.sleep(0.3)
            warming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await warming
            let_go.append(await _chat(session, url, model, turn, None))  # from its own start
    return [
        f"one slot: {runs} runs, an agent's system prompt of a dozen entities (num_ctx "
        f"{NUM_CTX}); seconds from the warm-up's start (or the turn's) to the turn's first token",
        f"  {'':{LABEL}} {'median (min to max)':>28}",
        row("turn after a load-only warm-up", spread(after_load), "none: the reference"),
        row("the prompt warm-up itself", spread(warm_up), "none: its length"),
        row(
            "turn after a prompt warm-up that ended",
            spread(after_warm),
            "below the turn after a load-only warm-up",
            median(after_warm) < median(after_load),
        ),
        row(
            "turn that came 0.3 s into a prompt warm-up",
            spread(during_warm),
            "none: why one is sent only when it ends in time",
        ),
        row(
            "turn 0.3 s into a warm-up let go (own start)",
            spread(let_go),
            "within 10 % of the turn after a load-only warm-up (every run)",
            all(abs(go - load) <= 0.1 * load for go, load in zip(let_go, after_load, strict=True)),
        ),
        "  per run, turn after a load-only warm-up / 0.3 s into one that ran / let go: "
        + "; ".join(
            f"{load:.2f} / {ran:.2f} / {go:.2f} s"
            for load, ran, go in zip(after_load, during_warm, let_go, strict=True)
        ),
    ]
