"""The silence after a spoken command, with and without warm on wake, on a real Ollama.

Part 1 runs cold turns of the kit's ``big`` model (1.24 GB behind the throttled disk,
evicted and dropped from the page cache before each turn) through a real Assist pipeline
in a test Home Assistant, with Home Assistant's own Ollama agent: 3 s of speech in real
time, then 3 s of speech-to-text. It prints the silence (end of speech to the reply's
audio asked for) without and with warm on wake, median and spread, and the share of the
cold load that warming hid (the turn's hidden seconds over our load's own seconds).

Part 2 measures what the prompt warm-up costs on a server with one slot (Ollama's default
``OLLAMA_NUM_PARALLEL=1``): the first token of an agent-like turn after a load-only
warm-up, after a prompt warm-up that had ended, and when the turn comes 0.3 s into one.

    PREFIX=/opt/llm-warmth-servers BIG=1 SLOW_DISK_MBPS=200 scripts/llm_servers start
    eval "$(scripts/llm_servers env)"
    .venv/bin/python -m benchmarks.voice_warm [--runs 5] [--slot-runs 2] [--server VAR]

It prints; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from statistics import median
import subprocess
import sys
import tempfile
import time
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
# An agent's system prompt: instructions and a dozen exposed entities (about 680 tokens
# with the kit's small vocabulary), and a turn after it.
SYSTEM = "You are a voice assistant for a home. " + " ".join(
    f"Entity light.room_{i} is named Room {i} light and is in area Room {i}." for i in range(12)
)
NUM_CTX = 2048


def spread(values: list[float]) -> str:
    """Return 'median (min-max)' of seconds."""
    return f"{median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"


def part_one(runs: int, server: str) -> None:
    """Run the turns in pytest (the test Home Assistant), then print their table."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "turns.json"
        env = {
            **os.environ,
            "LLM_WARMTH_BENCH_OUT": str(out),
            "LLM_WARMTH_BENCH_RUNS": str(runs),
            "LLM_WARMTH_BENCH_SERVER": server,
        }
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += ["-o", "addopts=", "--timeout=0", "tests/bench_voice_warm.py"]
        done = subprocess.run(
            command, check=False, cwd=ROOT, env=env, capture_output=True, text=True
        )
        if done.returncode != 0 or not out.exists():
            print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
            raise SystemExit("the voice turns did not run (above: what pytest said)")
        result = json.loads(out.read_text())
    turns: list[dict[str, Any]] = result["turns"]
    without = [t for t in turns if not t["warm_on_wake"]]
    warmed = [t for t in turns if t["warm_on_wake"]]
    print(
        f"\n{result['server']}, model big (1.24 GB, 200 MiB/s disk, not in page cache), "
        f"{result['speech_seconds']:g} s of speech, {result['stt_seconds']:g} s of "
        f"speech-to-text; {runs} turns each, interleaved\n"
    )
    print(f"{'':34} {'median (min-max) s':>22}")
    print(f"{'silence, without warm on wake':34} {spread([t['silence'] for t in without]):>22}")
    print(f"{'silence, with warm on wake':34} {spread([t['silence'] for t in warmed]):>22}")
    loads = [t["agent_load_server_seconds"] for t in without]
    print(f"{'cold load (Ollama load_duration)':34} {spread(loads):>22}")
    shares = [t["hidden"] / t["our_load_seconds"] for t in warmed if t["our_load_seconds"]]
    hidden = median(shares) * 100 if shares else float("nan")
    print(f"{'share of the cold load hidden':34} {hidden:>14.0f} % (median)")
    ready = sum(1 for t in warmed if t["resident_at_intent_start"])
    print(f"{'warm at the agent start':34} {ready:>14} of {len(warmed)}")


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


async def part_two(runs: int, url: str, model: str) -> None:
    """Time an agent's turn after a load, after a prompt warm-up, and during one."""
    after_load, after_warm, during_warm, warm_up = [], [], [], []
    turn = "turn on the kitchen light"
    timeout = aiohttp.ClientTimeout(total=900)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.get(f"{url}/api/version") as response:
            version = (await response.json())["version"]
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
    print(
        f"\nOllama {version} (one slot), model {model}, an agent's system prompt of a dozen "
        f"entities; {runs} runs; seconds from the warm-up's start (or the turn's) to the "
        "turn's first token\n"
    )
    print(f"{'':46} {'median (min-max) s':>22}")
    print(f"{'turn after a load-only warm-up':46} {spread(after_load):>22}")
    print(f"{'the prompt warm-up itself':46} {spread(warm_up):>22}")
    print(f"{'turn after a prompt warm-up that ended':46} {spread(after_warm):>22}")
    print(f"{'turn that came 0.3 s into a prompt warm-up':46} {spread(during_warm):>22}")


def main() -> None:
    """Run both parts and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="turns without and with (each)")
    parser.add_argument("--slot-runs", type=int, default=2, help="runs of part 2 (0: skip)")
    parser.add_argument(
        "--server",
        default="LLM_WARMTH_OLLAMA_CURRENT_URL",
        help="the variable naming the Ollama's URL (scripts/llm_servers env)",
    )
    args = parser.parse_args()
    if not os.environ.get(args.server):
        raise SystemExit(f"{args.server} is not set: see this script's docstring")
    part_one(args.runs, args.server)
    if args.slot_runs:
        asyncio.run(part_two(args.slot_runs, os.environ[args.server], "big-voice:latest"))


if __name__ == "__main__":
    main()
