"""An emulated Ollama on a GPU box, and a household morning on it, in fast-forward.

The server is the test suite's Ollama emulator on a wall clock: loads take seconds,
``keep_alive`` runs out, an 8 GiB GPU holds one of the two models at a time (loading the
other evicts it). The morning is a script of requests from the household's clients (the
voice assistant, a chat UI) and LLM Warmth's own probes, minutes compressed into seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
import random

import aiohttp

from tests.ollama_emulator import EmulatedModel, FakeClock, OllamaEmulator

GIB = 1024**3
ASSISTANT = "llama3.2:3b"
CHAT = "qwen3:8b"


class WallClock(FakeClock):
    """The real time: ``keep_alive`` runs out as it would on a real server."""

    def now(self) -> datetime:
        """Return the current time."""
        return datetime.now(UTC)


def gpu_box() -> OllamaEmulator:
    """Return an Ollama 0.12 with an 8 GiB GPU, a 3 GiB assistant and a 6 GiB chat model."""
    server = OllamaEmulator(vram_budget=8 * GIB, clock=WallClock())
    server.add_model(
        EmulatedModel(
            name=ASSISTANT,
            size=3 * GIB,
            parameter_size="3.2B",
            load_delay=4.0,
            prefill_delay=0.15,
            token_delay=0.03,
        )
    )
    server.add_model(
        EmulatedModel(
            name=CHAT,
            size=6 * GIB,
            family="qwen3",
            parameter_size="8.2B",
            load_delay=7.0,
            prefill_delay=0.3,
            token_delay=0.06,
        )
    )
    return server


type Say = Callable[[str], None]
type Probe = Callable[[str], Awaitable[str]]


async def ask(server: OllamaEmulator, model: str, keep_alive: str) -> None:
    """Send one chat request, as a household client would."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{server.url}/api/chat",
            json={
                "model": model,
                "stream": False,
                "keep_alive": keep_alive,
                "messages": [{"role": "user", "content": "Good morning!"}],
            },
        ) as answer,
    ):
        answer.raise_for_status()
        await answer.read()


async def morning(
    server: OllamaEmulator,
    probe: Probe,
    refresh_dashboard: Callable[[], Awaitable[object]],
    say: Say,
) -> None:
    """Play the morning, then go on with an occasional request, until cancelled.

    After the first probe the dashboard is built again: its time-to-first-token card
    shows the sensors that a model's first probe creates.
    """
    scenes: list[tuple[float, str, Callable[[], Awaitable[object]]]] = [
        (
            3,
            f"06:50  LLM Warmth probes the assistant model {ASSISTANT}: it is cold",
            lambda: probe(ASSISTANT),
        ),
        (
            6,
            f"06:55  a second probe of {ASSISTANT}: warm now",
            lambda: probe(ASSISTANT),
        ),
        (
            6,
            f"07:05  the kitchen's chat UI opens {CHAT}: it evicts {ASSISTANT} (8 GiB GPU)",
            lambda: ask(server, CHAT, "20s"),
        ),
        (
            6,
            f"07:10  the voice assistant asks {ASSISTANT}: a cold start, it evicts {CHAT}",
            lambda: ask(server, ASSISTANT, "30s"),
        ),
        (
            4,
            f"07:12  a probe of {ASSISTANT} right after: warm",
            lambda: probe(ASSISTANT),
        ),
    ]
    for number, (pause, line, action) in enumerate(scenes):
        await asyncio.sleep(pause)
        say(line)
        result = await action()
        if isinstance(result, str):
            say(f"        {result}")
        if number == 0:
            await refresh_dashboard()
    say(f"        {ASSISTANT} unloads when its keep_alive (30 s here) runs out")
    # Then now and then another client, until stopped.
    chance = random.Random(7)
    while True:
        await asyncio.sleep(chance.uniform(40, 70))
        model = chance.choice([ASSISTANT, ASSISTANT, CHAT])
        say(f"later: another client asks {model}")
        await ask(server, model, "30s")
