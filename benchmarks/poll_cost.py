"""What following a server costs, per kind: requests and Home Assistant CPU.

Runs a test Home Assistant with the integration against each server kind's emulator from
the tests (Ollama, llama-server in router mode, llama-swap), each emulator in a process of
its own, so that the CPU measured is Home Assistant's alone. Per kind:

* idle polls, with no model loaded and with one loaded: Home Assistant CPU and requests
  per poll (each poll run by hand, back to back);
* one 4 s load by another client while the integration runs on its own timers (2 s
  interval): the requests it sent meanwhile (polls: fast ones where nothing pushes
  events), the pushed snapshots it took (where the server has an event stream), and the
  Home Assistant CPU used.

Goals, each printed next to its figure, met or not: one request per idle poll; at most one
poll per 0.5 s during a load; no extra polls where the server pushes events (at most the
regular polls of the 2 s interval), and the load seen through its events; and this
benchmark's own bars for the CPU: under 1 ms a poll, under 50 ms for a load's polls.
It prints its world first: the emulated model, the machine's CPUs and load at the start
and the end, and what else used the CPUs meanwhile (the CPU figures grow with it).

    .venv/bin/python -m benchmarks.poll_cost [--loads 3] [--idle-polls 200]
"""

import argparse
import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
import contextlib
import math
import multiprocessing
from multiprocessing.connection import Connection
from statistics import median
import time
from typing import Any
from unittest.mock import patch

import aiohttp
from aiohttp.resolver import AsyncResolver
from homeassistant import loader
from homeassistant.const import CONF_SCAN_INTERVAL, CONF_URL, CONF_VERIFY_SSL
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_test_home_assistant,
)

from benchmarks.world import Machine, verdict
from custom_components.llm_warmth.const import CONF_SERVER_KIND, DOMAIN
from tests.llama_server_emulator import EmulatedLlamaModel, LlamaServerEmulator
from tests.llama_swap_emulator import LlamaSwapEmulator, SwapModel
from tests.ollama_emulator import EmulatedModel, OllamaEmulator

MODEL = "bench"
LOAD_SECONDS = 4.0
INTERVAL = 2.0
# What a load's measurement spans: the load, and the poll or event that sees its end.
WINDOW = LOAD_SECONDS + 0.6
PUSHED = ("llama_server", "llama_swap")  # the kinds whose servers push events
KINDS = ("ollama", "llama_server", "llama_swap")
# What the client calls that each send one request to the server.
REQUESTS = ("running_models", "installed_models", "version")


def serve_emulator(kind: str, conn: Connection) -> None:
    """Run one kind's emulator in this process until the parent closes the pipe."""

    async def run() -> None:
        emulator: Any
        if kind == "ollama":
            emulator = OllamaEmulator()
            emulator.add_model(
                EmulatedModel(name=f"{MODEL}:latest", size=1024**3, load_delay=LOAD_SECONDS)
            )
        elif kind == "llama_server":
            emulator = LlamaServerEmulator([EmulatedLlamaModel(MODEL, load_seconds=LOAD_SECONDS)])
        else:
            emulator = LlamaSwapEmulator([SwapModel(MODEL, load_seconds=LOAD_SECONDS)])
        conn.send(await emulator.start())
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # until closed
        await emulator.stop()

    with contextlib.suppress(EOFError):
        asyncio.run(run())


async def load(kind: str, session: aiohttp.ClientSession, url: str) -> None:
    """Load the model as another client would, and return once it is loaded."""
    if kind == "ollama":
        payload = {"model": f"{MODEL}:latest", "stream": False, "keep_alive": "10m"}
        async with session.post(f"{url}/api/generate", json=payload) as reply:
            await reply.read()
    elif kind == "llama_server":
        async with session.post(f"{url}/models/load", json={"model": MODEL}) as reply:
            await reply.read()
        # The load goes on in the background: wait it out without polling (polls from
        # this process would count as Home Assistant's CPU).
        await asyncio.sleep(LOAD_SECONDS + 0.2)
    else:
        async with session.get(f"{url}/upstream/{MODEL}/health") as reply:
            await reply.read()


async def unload(kind: str, session: aiohttp.ClientSession, url: str) -> None:
    """Unload the model as another client would."""
    if kind == "ollama":
        payload = {"model": f"{MODEL}:latest", "stream": False, "keep_alive": 0}
        async with session.post(f"{url}/api/generate", json=payload) as reply:
            await reply.read()
    elif kind == "llama_server":
        async with session.post(f"{url}/models/unload", json={"model": MODEL}) as reply:
            await reply.read()
    else:
        async with session.post(f"{url}/api/models/unload/{MODEL}") as reply:
            await reply.read()
    await asyncio.sleep(1.0)


def counting(method: Callable[..., Awaitable[Any]], counts: Counter[str], key: str) -> Any:
    """Wrap a method so that each call is counted."""

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        counts[key] += 1
        return await method(*args, **kwargs)

    return wrapper


def counting_sync(method: Callable[..., Any], counts: Counter[str], key: str) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counts[key] += 1
        return method(*args, **kwargs)

    return wrapper


async def measure(kind: str, url: str, loads: int, idle_polls: int) -> dict[str, float]:
    """Run Home Assistant with the integration against one emulator; return the figures."""
    counts: Counter[str] = Counter()
    async with async_test_home_assistant() as hass, aiohttp.ClientSession() as session:
        hass.data.pop(loader.DATA_CUSTOM_COMPONENTS, None)  # load custom_components/
        entry = MockConfigEntry(
            domain=DOMAIN,
            version=2,
            data={CONF_URL: url, CONF_VERIFY_SSL: True, CONF_SERVER_KIND: kind},
            options={CONF_SCAN_INTERVAL: INTERVAL},
        )
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        coordinator = entry.runtime_data.coordinator
        client = coordinator.client
        for name in REQUESTS:
            setattr(client, name, counting(getattr(client, name), counts, "requests"))
        coordinator._observe_pushed = counting_sync(
            coordinator._observe_pushed,
            counts,
            "pushed",
        )
        await asyncio.sleep(1.0)

        async def idle(label: str) -> dict[str, float]:
            counts.clear()
            cpu = time.process_time()
            for _ in range(idle_polls):
                await coordinator.async_refresh()
            per_poll = (time.process_time() - cpu) * 1000 / idle_polls
            return {
                f"CPU per poll, {label} (ms)": per_poll,
                f"requests per poll, {label}": counts["requests"] / idle_polls,
            }

        row = await idle("idle")
        polls, pushed, cpu_ms = [], [], []
        for number in range(loads):
            await asyncio.sleep(2.5)  # a regular poll or two before the load
            counts.clear()
            cpu = time.process_time()
            await load(kind, session, url)
            await asyncio.sleep(0.6)  # the poll or event that sees the end
            cpu_ms.append((time.process_time() - cpu) * 1000)
            polls.append(counts["requests"])
            pushed.append(counts["pushed"])
            if number == loads - 1:
                row |= await idle("loaded")
            await unload(kind, session, url)
        row |= {
            f"requests during a {LOAD_SECONDS:g} s load": median(polls),
            "pushed snapshots taken": median(pushed),
            "CPU during the load (ms)": median(cpu_ms),
        }
        await hass.config_entries.async_unload(entry.entry_id)
    return row


async def run_kind(kind: str, loads: int, idle_polls: int) -> dict[str, float]:
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(target=serve_emulator, args=(kind, child))
    server.start()
    url = parent.recv()
    try:
        # As the test harness does: plain DNS instead of Home Assistant's mDNS resolver.
        with patch(
            "homeassistant.helpers.aiohttp_client._async_make_resolver",
            return_value=AsyncResolver(),
        ):
            return await measure(kind, url, loads, idle_polls)
    finally:
        parent.close()
        server.join(timeout=10)


# Each figure's goal: (what it is, whether a kind's figure meets it), per row of the table.
FAST_POLLS = math.floor(WINDOW / 0.5) + 1  # at most one poll per 0.5 s
REGULAR_POLLS = math.floor(WINDOW / INTERVAL) + 1  # the interval's own polls
Goal = tuple[str, Callable[[str, float], bool]]
GOALS: dict[str, Goal] = {
    "CPU per poll, idle (ms)": ("< 1 ms each", lambda _, v: v < 1),
    "requests per poll, idle": ("1 each", lambda _, v: v == 1),
    "CPU per poll, loaded (ms)": ("< 1 ms each", lambda _, v: v < 1),
    "requests per poll, loaded": ("1 each", lambda _, v: v == 1),
    f"requests during a {LOAD_SECONDS:g} s load": (
        f"ollama <= {FAST_POLLS} (one per 0.5 s), pushed kinds <= {REGULAR_POLLS} "
        f"(the {INTERVAL:g} s interval's)",
        lambda k, v: v <= (REGULAR_POLLS if k in PUSHED else FAST_POLLS),
    ),
    "pushed snapshots taken": (
        ">= 1 where the server pushes (llama_server, llama_swap)",
        lambda k, v: v >= 1 if k in PUSHED else True,
    ),
    "CPU during the load (ms)": ("< 50 ms each", lambda _, v: v < 50),
}


def cell(name: str, value: float) -> str:
    """Return a figure as its row prints it."""
    if name == "CPU during the load (ms)":
        return f"{value:.1f}"
    if name.startswith("CPU"):
        return f"{value:.3f}"
    if name.startswith("requests per poll"):
        return f"{value:.2f}"
    return f"{value:g}"


async def main(loads: int, idle_polls: int) -> None:
    """Measure each kind and print the world, then one table (one column per kind)."""
    machine = Machine()
    columns = {kind: await run_kind(kind, loads, idle_polls) for kind in KINDS}
    print(
        "world: the integration in a test Home Assistant, against each kind's emulator "
        "(tests/) in a process of its own; model "
        f"{MODEL!r} (1 GiB, a {LOAD_SECONDS:g} s load by another client), polled every "
        f"{INTERVAL:g} s; median of {loads} loads, {idle_polls} polls each"
    )
    print(machine.start_line())
    print("\n".join(machine.end_lines()))
    print("(the CPU figures are this process's CPU time: they grow with the machine's load)\n")
    names = list(columns[KINDS[0]])
    width = max(len(name) for name in names)
    print(f"{'measure':{width}}  " + "  ".join(f"{kind:>12}" for kind in KINDS) + "   goal")
    for name in names:
        goal, meets = GOALS[name]
        met = all(meets(kind, columns[kind][name]) for kind in KINDS)
        print(
            f"{name:{width}}  "
            + "  ".join(f"{cell(name, columns[k][name]):>12}" for k in KINDS)
            + f"   {goal} -> {verdict(met)}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--idle-polls", type=int, default=200)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.loads, arguments.idle_polls))
