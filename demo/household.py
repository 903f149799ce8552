"""An emulated Ollama on a GPU box, and a household morning on it, in fast-forward.

The server is the test suite's Ollama emulator on a wall clock: loads take seconds,
``keep_alive`` runs out, an 8 GiB GPU holds one of the two models at a time (loading the
other evicts it). The morning is a script of requests from the household's clients (the
kitchen's voice satellite through an Assist pipeline, a chat UI) and LLM Warmth's own
probes, minutes compressed into seconds; then the household's daily routine, which LLM
Warmth learnt from three weeks of uses, at its time: auto-warm loads the model ahead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
import random

import aiohttp
from aiohttp import web

from tests.ollama_emulator import EmulatedModel, FakeClock, OllamaEmulator

GIB = 1024**3
ASSISTANT = "llama3.2:3b"
CHAT = "qwen3:8b"
# The household's always-on NAS: a small model it keeps loaded, for the warm assistant.
NAS_MODEL = "llama3.2:1b"


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


def nas_box() -> OllamaEmulator:
    """Return the household's NAS: an Ollama with a 4 GiB GPU and a small model, always warm.

    The warm assistant's fall-back: it answers while the GPU box's assistant model loads.
    """
    server = OllamaEmulator(vram_budget=4 * GIB, clock=WallClock())
    server.add_model(
        EmulatedModel(
            name=NAS_MODEL,
            size=GIB + GIB // 4,
            parameter_size="1.2B",
            load_delay=1.5,
            prefill_delay=0.05,
            token_delay=0.02,
            reply="It is 21 degrees and sunny, from the NAS.",
        )
    )
    return server


class GpuExporter:
    """The GPU box's GPU as nvidia_gpu_exporter shows it (``/metrics``): 8 GiB, what is used.

    Used: what the emulated server's models hold, and a desktop's quarter GiB besides (the
    other processes); LLM Warmth reads it as a GPU source, as it would the real exporter.
    """

    UUID = "GPU-8d3f6a2e-demo-4c1b-9e07-0123456789ab"
    NAME = "NVIDIA GeForce RTX 3070"
    TOTAL = 8 * GIB
    OTHER = GIB // 4

    def __init__(self, server: OllamaEmulator) -> None:
        """Report what ``server`` holds."""
        self.server = server
        self.url = ""
        self._runner: web.AppRunner | None = None

    def text(self) -> str:
        """Return the exporter's page."""
        models = sum(runner.size_vram for runner in self.server.loaded.values())
        used = min(self.TOTAL, models + self.OTHER)
        gpu = f'uuid="{self.UUID}"'
        return "\n".join(
            [
                f'nvidia_smi_gpu_info{{index="0",name="{self.NAME}",{gpu}}} 1',
                f"nvidia_smi_index{{{gpu}}} 0",
                f"nvidia_smi_memory_total_bytes{{{gpu}}} {self.TOTAL}",
                f"nvidia_smi_memory_used_bytes{{{gpu}}} {used}",
                f"nvidia_smi_memory_free_bytes{{{gpu}}} {self.TOTAL - used}",
                "",
            ]
        )

    async def start(self) -> str:
        """Serve the page on a free port of 127.0.0.1; return its URL."""

        async def metrics(_request: web.Request) -> web.Response:
            return web.Response(text=self.text(), content_type="text/plain")

        app = web.Application()
        app.router.add_get("/metrics", metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/metrics"
        return self.url

    async def stop(self) -> None:
        """Stop serving it."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


type Say = Callable[[str], None]
# The other clients keep away from the routine from this long before it until after it: its
# voice turn shows auto-warm's work, not a chat that pushed the model out just before.
QUIET_BEFORE = timedelta(minutes=3)
QUIET_AFTER = timedelta(minutes=2)
# The routine's voice turn, this long after its expected start.
ROUTINE_TURN = timedelta(seconds=30)
# The dashboard's live view (its charts' span, hours) as the demo runs: three minutes at
# first, then twice as long each time the demo has run 80 % of it, up to a household's 6
# hours. Its charts span about what the demo has shown, never its last pixels.
SPANS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.0)


@dataclass(frozen=True)
class Household:
    """What the household does through Home Assistant (its public APIs)."""

    # LLM Warmth's probe of a model; its summary.
    probe: Callable[[str], Awaitable[str]]
    # A command spoken to the kitchen satellite; the reply (or the turn's error).
    speak: Callable[[str], Awaitable[str]]
    # Build and save the dashboard again (entities that came since: probe sensors, the
    # pipeline's voice device), its live view spanning so many hours.
    refresh_dashboard: Callable[[float], Awaitable[object]]
    # Turn the pipeline's "Warm on wake" on.
    warm_on_wake: Callable[[], Awaitable[object]]


def live_span(ran: timedelta) -> float:
    """Return the live view's span (hours) once the demo has run ``ran``.

    The first of ``SPANS`` that it has not run 80 % of yet (the last: a household's 6 h).
    """
    hours = ran.total_seconds() / 3600
    return next((span for span in SPANS if hours < 0.8 * span), SPANS[-1])


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
    server: OllamaEmulator, household: Household, say: Say, *, routine: datetime
) -> None:
    """Play the morning, the routine at ``routine``, an occasional request, until cancelled.

    After the first probe and after the first voice turn the dashboard is built again: the
    sensors of a model's first probe, and the pipeline's voice device, come with them.
    Warming at the wake is turned on after the first voice turn (its cold start).
    """
    probe, speak = household.probe, household.speak
    started = datetime.now(UTC)
    shown = SPANS[0]

    async def widen() -> None:
        """Save the dashboard with a longer span once the demo has run 80 % of its span."""
        nonlocal shown
        span = live_span(datetime.now(UTC) - started)
        if span != shown:
            shown = span
            await household.refresh_dashboard(span)

    scenes: list[tuple[float, str, Callable[[], Awaitable[object]]]] = [
        (
            3,
            f"LLM Warmth probes the assistant model {ASSISTANT}: it is cold",
            lambda: probe(ASSISTANT),
        ),
        (
            6,
            f"a second probe of {ASSISTANT}: warm now",
            lambda: probe(ASSISTANT),
        ),
        (
            6,
            f"the kitchen's chat UI opens {CHAT}: it evicts {ASSISTANT} (8 GiB GPU)",
            lambda: ask(server, CHAT, "20s"),
        ),
        (
            6,
            f"the kitchen satellite: 'okay nabu, what's the weather like?' ({ASSISTANT} is "
            f"cold: the warm assistant answers from the NAS's {NAS_MODEL} while {ASSISTANT} "
            f"loads, evicting {CHAT})",
            lambda: speak("What's the weather like?"),
        ),
        (
            4,
            f"a probe of {ASSISTANT} right after: warm",
            lambda: probe(ASSISTANT),
        ),
    ]
    for number, (pause, line, action) in enumerate(scenes):
        await asyncio.sleep(pause)
        # The real clock's time: the charts beside it are on it (the morning is compressed).
        say(f"{datetime.now().astimezone():%H:%M:%S}  {line}")
        result = await action()
        if isinstance(result, str):
            say(f"        {result}")
        if number == 0:
            await household.refresh_dashboard(shown)
        if number == 3:
            await household.refresh_dashboard(shown)
            await household.warm_on_wake()
            say("        warm on wake turned on: later turns load the model while you speak")
    say(f"        {ASSISTANT} unloads when its keep_alive (30 s here) runs out")
    say(
        f"at {routine.astimezone():%H:%M} (the real clock): the household's daily routine, "
        f"learnt from three weeks of uses; auto-warm loads {ASSISTANT} a minute ahead"
    )
    # Then now and then another client, and the routine at its time, until stopped.
    chance = random.Random(7)
    quiet = (routine - QUIET_BEFORE, routine + QUIET_AFTER)
    turn_at: datetime | None = routine + ROUTINE_TURN
    while True:
        await widen()
        pause = chance.uniform(40, 70)
        now = datetime.now(UTC)
        if turn_at is not None and now + timedelta(seconds=pause) >= turn_at:
            await asyncio.sleep(max((turn_at - now).total_seconds(), 0))
            say(f"{turn_at.astimezone():%H:%M}  the routine: 'okay nabu, what's on today?'")
            say(f"        {await speak("What's on today?")}")
            turn_at = None
            continue
        await asyncio.sleep(pause)
        if quiet[0] <= datetime.now(UTC) <= quiet[1]:
            continue  # the routine's minutes are its own
        client = chance.choice([ASSISTANT, CHAT, "voice"])
        if client == "voice":
            say("later: the kitchen satellite: 'okay nabu, turn on the kitchen lights'")
            say(f"        {await speak('Turn on the kitchen lights')}")
        else:
            say(f"later: another client asks {client}")
            await ask(server, client, "30s")
