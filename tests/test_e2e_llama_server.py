"""End to end against the real llama-server in router mode (LLM_WARMTH_LLAMA_URL).

The server CI starts holds one model at a time (``--models-max 1``) and reads its weights
through a 200 MiB/s throttle. The integration is added through the config flow (which
finds out the kind by itself) and talks to the server through a recording proxy on its
own 2 s timers. Its figures are compared with what the server itself said: the test
follows ``/models/sse`` on a connection of its own and reads the replies' ``timings``.
"""

import asyncio
from collections.abc import AsyncIterator
import contextlib
import json
import os
import subprocess
import time

import aiohttp
from homeassistant.const import STATE_OFF, STATE_ON
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import async_capture_events

from custom_components.llm_warmth.const import (
    DOMAIN,
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
)

from .conftest import model_id
from .e2e import add_server, drop_from_page_cache, wait_until
from .recording_proxy import RecordingProxy

pytestmark = pytest.mark.e2e
BIG, TINY = "big", "tiny"
INTERVAL = 2.0
PROMPT = "Reply with one word: ready?"


@pytest.fixture
async def proxy(llama_url: str) -> AsyncIterator[RecordingProxy]:
    recording = RecordingProxy(llama_url)
    await recording.start()
    yield recording
    await recording.stop()


async def call(url: str, path: str, payload: dict[str, object] | None = None) -> object:
    """Talk to the real server directly, as another client would."""
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session,
        session.request("POST" if payload else "GET", f"{url}{path}", json=payload) as response,
    ):
        return await response.json(content_type=None)


async def statuses(url: str) -> dict[str, str]:
    reply = await call(url, "/models")
    assert isinstance(reply, dict)
    return {m["id"]: m["status"]["value"] for m in reply["data"]}


async def unload_all(url: str) -> None:
    """Leave the server with nothing loaded."""
    for model, status in (await statuses(url)).items():
        if status != "unloaded":
            await call(url, "/models/unload", {"model": model})
    for _ in range(100):
        if set((await statuses(url)).values()) == {"unloaded"}:
            return
        await asyncio.sleep(0.1)
    pytest.fail("the server kept a model loaded")


async def model_path(url: str, model: str) -> str:
    reply = await call(url, "/models")
    assert isinstance(reply, dict)
    args = next(m["status"]["args"] for m in reply["data"] if m["id"] == model)
    return str(args[args.index("--model") + 1])


class ServerEvents:
    """The server's own account of loads: its /models/sse stream, timed on arrival."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.events: list[tuple[float, str, str]] = []  # (monotonic, model, status)
        self._task: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()

    async def __aenter__(self) -> ServerEvents:
        self._task = asyncio.create_task(self._follow())
        await asyncio.wait_for(self._connected.wait(), 5)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _follow(self) -> None:
        async with aiohttp.ClientSession() as session, session.get(f"{self.url}/models/sse") as r:
            self._connected.set()
            async for line in r.content:
                if line.startswith(b"data:"):
                    event = json.loads(line[5:])
                    status = event["data"].get("status")
                    self.events.append((time.monotonic(), event["model"], status))

    def first(self, model: str, status: str) -> float:
        return next(at for at, m, s in self.events if m == model and s == status)


async def probe(hass: HomeAssistant, entry_id: str, model: str) -> dict[str, object]:
    result = await hass.services.async_call(
        DOMAIN,
        "probe",
        {
            "config_entry_id": entry_id,
            "model": model,
            "prompt": PROMPT,
            "options": {"temperature": 0, "seed": 1, "num_predict": 4},
        },
        blocking=True,
        return_response=True,
    )
    assert result is not None
    return dict(result)


async def test_detect_probe_cold_then_warm_and_a_displacement(
    hass: HomeAssistant, llama_url: str, proxy: RecordingProxy
) -> None:
    """The assistant's model after idle, then warm, then pushed out by another model."""
    await unload_all(llama_url)
    drop_from_page_cache(await model_path(llama_url, BIG))
    entry = await add_server(hass, proxy.url, INTERVAL)
    assert entry.data["server_kind"] == "llama_server"
    assert entry.title.startswith("llama-server ")
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    # Sensors whose data llama-server lacks are not created for it.
    assert hass.states.get(model_id(entry, "sensor.big_unloads_at")) is None
    assert hass.states.get(model_id(entry, "sensor.big_vram")) is None

    async with ServerEvents(llama_url) as server:
        started = time.monotonic()
        cold = await probe(hass, entry.entry_id, BIG)
        server_load = server.first(BIG, "loaded") - started
    print(f"\ncold probe: {cold}\nserver: loaded {server_load:.3f} s after the request")
    assert cold["classification"] == "cold"
    assert cold["dominant_stage"] == "load"
    # The load stage is the client's reading of the server's "loaded" event.
    assert cold["queue_and_load_ms"] / 1000 == pytest.approx(server_load, abs=0.25)
    assert cold["queue_and_load_ms"] > cold["prefill_ms"]
    assert cold["queue_and_load_ms"] > cold["ttft_ms"] / 2
    assert [e.data["model"] for e in loaded] == [BIG]
    assert loaded[0].data["load_source"] == "client"
    assert [e.data["source"] for e in cold_starts] == ["probe"]
    assert hass.states.get(model_id(entry, "binary_sensor.big_resident")).state == STATE_ON
    assert hass.states.get(model_id(entry, "sensor.big")).state == "warm"

    warm = await probe(hass, entry.entry_id, BIG)
    print(f"warm probe: {warm}")
    assert warm["classification"] == "warm"
    assert warm["queue_and_load_ms"] == 0  # the event stream saw no load
    # The same prompt again: the server's prompt cache served all but the last token.
    assert warm["prompt_cache_reuse"] > 50
    reuse = hass.states.get(model_id(entry, "sensor.big_prompt_cache_reuse"))
    assert float(reuse.state) == pytest.approx(warm["prompt_cache_reuse"], abs=0.05)
    assert len(loaded) == 1

    # Another client asks for the other model: with one model allowed, big has to go.
    async with ServerEvents(llama_url) as server:
        requested = time.monotonic()
        await call(llama_url, "/models/load", {"model": TINY})
        await wait_until(lambda: unloaded and len(loaded) == 2, 2 * INTERVAL + 5, "the swap")
        server_load = server.first(TINY, "loaded") - server.first(TINY, "loading")
    print(f"swap: {unloaded[0].data} {loaded[1].data}; server load {server_load:.3f} s")
    assert unloaded[0].data["model"] == BIG
    assert unloaded[0].data["reason"] == "displaced"
    assert unloaded[0].data["replaced_by"] == [TINY]
    assert loaded[1].data["model"] == TINY
    # Seen by polling: a lower bound of the server's own load, or unknown when it was over
    # between two polls.
    seen = loaded[1].data["load_seconds"]
    assert seen is None or seen <= server_load + 0.6
    assert hass.states.get(model_id(entry, "binary_sensor.big_resident")).state == STATE_OFF
    assert hass.states.get(model_id(entry, "binary_sensor.tiny_resident")).state == STATE_ON
    assert hass.states.get(model_id(entry, "sensor.big")).state == "cold"
    assert hass.states.get(model_id(entry, "sensor.tiny")).state == "warm"
    # The integration's own requests: polls and the event stream, never a call that loads;
    # and, the stream being up, only the regular polls (no fast ones) over three intervals.
    await asyncio.sleep(3 * INTERVAL - (time.monotonic() - requested))
    ended = time.monotonic()
    sent = [r for r in proxy.requests if requested <= r.at <= ended]
    print(f"{len(sent)} requests in {ended - requested:.1f} s: {sorted({r.path for r in sent})}")
    assert {r.path for r in sent} <= {"/models", "/props", "/models/sse"}
    assert len([r for r in sent if r.path == "/models"]) <= (ended - requested) / INTERVAL + 1
    await unload_all(llama_url)
    await hass.config_entries.async_unload(entry.entry_id)


async def test_a_server_restart(hass: HomeAssistant, llama_url: str) -> None:
    """Stopped and started again: unavailable meanwhile, then a restart event.

    Straight to the server (no proxy): a stopped server refuses connections.
    """
    restart = os.environ.get("LLM_WARMTH_LLAMA_RESTART")
    if not restart:
        reason = "LLM_WARMTH_LLAMA_RESTART (a command that restarts the server) is not set"
        if os.environ.get("LLM_WARMTH_REQUIRE_E2E"):
            pytest.fail(reason)
        pytest.skip(reason)
    await unload_all(llama_url)
    await call(llama_url, "/models/load", {"model": TINY})
    entry = await add_server(hass, llama_url, INTERVAL)
    await wait_until(
        lambda: hass.states.get(model_id(entry, "binary_sensor.tiny_resident")).state == STATE_ON,
        2 * INTERVAL + 5,
        "tiny resident",
    )
    restarted = async_capture_events(hass, EVENT_SERVER_RESTARTED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    process = await asyncio.create_subprocess_shell(
        restart, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    await wait_until(
        lambda: not entry.runtime_data.coordinator.last_update_success,
        60,
        "the integration seeing the server down",
    )
    assert await process.wait() == 0
    await wait_until(lambda: restarted, 60, "the restart event")
    print(f"\nrestart: {restarted[0].data}; unloaded: {[e.data for e in unloaded]}")
    assert restarted[0].data["reason"] == "reconnected"
    await wait_until(lambda: unloaded, 2 * INTERVAL + 5, "the unload of tiny")
    assert unloaded[0].data == unloaded[0].data | {"model": TINY, "reason": "server_restarted"}
    assert hass.states.get(model_id(entry, "binary_sensor.tiny_resident")).state == STATE_OFF
    await hass.config_entries.async_unload(entry.entry_id)
