"""What polling costs: requests and Home Assistant CPU during a load, and per idle poll.

Runs a test Home Assistant with the integration against the Ollama emulator of the tests,
which runs in a process of its own (so that the CPU measured is Home Assistant's alone).
While another client loads a model for 4 s, the integration runs on its own timers; the
table shows how many /api/ps polls it sent and the CPU the Home Assistant process used.
Then it times idle polls (each by hand, back to back) and counts their requests.
Goal (issue 7): at most one poll per 0.5 s during a load; one request per idle poll.

    .venv/bin/python -m benchmarks.poll_cost [--loads 3] [--idle-polls 300]
"""

import argparse
import asyncio
from collections import Counter
from collections.abc import Callable
import contextlib
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

from custom_components.llm_warmth.const import DOMAIN
from tests.ollama_emulator import EmulatedModel, OllamaEmulator

MODEL = "bench:latest"
LOAD_SECONDS = 4.0


def serve_emulator(conn: Connection) -> None:
    """Run the emulator in this process until the parent closes the pipe."""

    async def run() -> None:
        emulator = OllamaEmulator()
        emulator.add_model(EmulatedModel(name=MODEL, size=1024**3, load_delay=LOAD_SECONDS))
        conn.send(await emulator.start())
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # until closed
        await emulator.stop()

    with contextlib.suppress(EOFError):
        asyncio.run(run())


def counting(method: Callable[..., Any], counts: Counter[str], key: str) -> Callable[..., Any]:
    """Wrap a client method so that each call is counted."""

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        counts[key] += 1
        return await method(*args, **kwargs)

    return wrapper


async def other_client(session: aiohttp.ClientSession, url: str, payload: dict[str, Any]) -> None:
    async with session.post(f"{url}/api/generate", json={"stream": False, **payload}) as reply:
        await reply.read()


async def main(loads: int, idle_polls: int) -> None:
    """Measure and print the table."""
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(target=serve_emulator, args=(child,))
    server.start()
    url = parent.recv()
    counts: Counter[str] = Counter()
    rows: list[tuple[str, str]] = []
    try:
        # As the test harness does: plain DNS instead of Home Assistant's mDNS resolver.
        with patch(
            "homeassistant.helpers.aiohttp_client._async_make_resolver",
            return_value=AsyncResolver(),
        ):
            await measure(url, loads, idle_polls, counts, rows)
    finally:
        parent.close()
        server.join(timeout=10)
    width = max(len(name) for name, _ in rows)
    print(f"{'measure':{width}}  value")
    for name, value in rows:
        print(f"{name:{width}}  {value}")


async def measure(
    url: str, loads: int, idle_polls: int, counts: Counter[str], rows: list[tuple[str, str]]
) -> None:
    """Run Home Assistant with the integration and fill ``rows``."""
    async with (
        async_test_home_assistant() as hass,
        aiohttp.ClientSession() as session,
    ):
        hass.data.pop(loader.DATA_CUSTOM_COMPONENTS, None)  # load custom_components/
        entry = MockConfigEntry(
            domain=DOMAIN,
            data={CONF_URL: url, CONF_VERIFY_SSL: True},
            options={CONF_SCAN_INTERVAL: 2},
        )
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        coordinator = entry.runtime_data.coordinator
        client = coordinator.client
        client.running_models = counting(client.running_models, counts, "ps")
        client.version = counting(client.version, counts, "version")

        polls, cpu_ms = [], []
        for _ in range(loads):
            await asyncio.sleep(2.5)  # a regular poll or two before the load
            counts.clear()
            cpu = time.process_time()
            await other_client(session, url, {"model": MODEL, "keep_alive": "10m"})
            cpu_ms.append((time.process_time() - cpu) * 1000)
            polls.append(counts["ps"])
            await other_client(session, url, {"model": MODEL, "keep_alive": 0})
        rows += [
            (f"polls during a {LOAD_SECONDS:g} s load (median of {loads})", f"{median(polls)}"),
            ("  at most (0.5 s apart, + the first regular one)", f"{LOAD_SECONDS / 0.5 + 1:g}"),
            ("HA CPU during the load, ms (median)", f"{median(cpu_ms):.1f}"),
        ]

        await asyncio.sleep(1.0)
        counts.clear()
        cpu = time.process_time()
        for _ in range(idle_polls):
            await coordinator.async_refresh()
        per_poll = (time.process_time() - cpu) * 1000 / idle_polls
        requests = (counts["ps"] + counts["version"]) / idle_polls
        rows += [
            (f"HA CPU per idle poll, ms (mean of {idle_polls})", f"{per_poll:.3f}"),
            ("requests per idle poll (/api/ps + /api/version)", f"{requests:.2f}"),
        ]
        await hass.config_entries.async_unload(entry.entry_id)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--idle-polls", type=int, default=300)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.loads, arguments.idle_polls))
