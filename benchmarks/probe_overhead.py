"""What the probe's own measurement adds to time to first token, on loopback.

Runs the integration's ``OllamaClient.timed_generation`` and a bare aiohttp request, timed
the same way (request sent -> first chunk with content), alternately against the Ollama
emulator of the tests, and prints the extra milliseconds of the probe: median and p95.
Goal: under 1 ms median. It prints its world first: the emulator and its model, the
machine's CPUs and load at the start and the end, and what else used the CPUs meanwhile.

    .venv/bin/python -m benchmarks.probe_overhead [--runs 300]
"""

import argparse
import asyncio
import json
from statistics import median, quantiles
import time

import aiohttp

from benchmarks.world import Machine, verdict
from custom_components.llm_warmth.core.backends.ollama import OllamaClient
from tests.ollama_emulator import EmulatedModel, OllamaEmulator

MODEL = "bench:latest"
PROMPT = "Reply with one word: ready?"


async def bare_ttft_ms(session: aiohttp.ClientSession, url: str) -> float:
    """Time a plain streamed chat request to its first content chunk."""
    payload = {"model": MODEL, "messages": [{"role": "user", "content": PROMPT}]}
    sent = time.monotonic_ns()
    async with session.post(f"{url}/api/chat", json=payload) as response:
        first = None
        async for line in response.content:
            if first is None and line.strip():
                chunk = json.loads(line)
                if chunk.get("message", {}).get("content") or chunk.get("done"):
                    first = time.monotonic_ns()
    assert first is not None
    return (first - sent) / 1e6


async def main(runs: int) -> None:
    """Run the comparison and print the world, then the table."""
    machine = Machine()
    emulator = OllamaEmulator()
    emulator.add_model(EmulatedModel(name=MODEL, size=1024**3))
    url = await emulator.start()
    try:
        async with aiohttp.ClientSession() as session:
            client = OllamaClient(session, url)
            for _ in range(20):  # warm-up: connections, the emulator's runner
                await client.timed_generation("chat", MODEL, PROMPT)
                await bare_ttft_ms(session, url)
            probe, bare = [], []
            for _ in range(runs):
                reply = await client.timed_generation("chat", MODEL, PROMPT)
                probe.append((reply.first_token_ns - reply.sent_ns) / 1e6)
                bare.append(await bare_ttft_ms(session, url))
    finally:
        await emulator.stop()
    extra = [p - b for p, b in zip(probe, bare, strict=True)]
    print(
        f"world: the tests' Ollama emulator on loopback, in this process; model {MODEL} "
        "(1 GiB, resident: no load); a probe and a bare request alternately, "
        f"{runs} runs each after 20 warm-ups"
    )
    print(machine.start_line())
    print("\n".join(machine.end_lines()))
    print()
    rows = [
        ("probe TTFT", probe, "none: the probe's own figure"),
        ("bare aiohttp TTFT", bare, "none: the reference"),
        ("probe extra", extra, f"median < 1 ms -> {verdict(median(extra) < 1)}"),
    ]
    print(f"milliseconds{'':8} {'median':>8} {'p95':>8}   goal")
    for name, values, goal in rows:
        print(f"{name:20} {median(values):8.3f} {quantiles(values, n=20)[-1]:8.3f}   {goal}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    asyncio.run(main(parser.parse_args().runs))
