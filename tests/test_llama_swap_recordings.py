"""The llama-swap emulator replays what the real one answered (tests/fixtures/llama_swap).

``scripts/record_fixtures --only llama_swap`` recorded a real llama-swap (v250-5-g0bdb37)
with two of its own: the front one (``tiny``, ``big``, ``brief`` with a 2 s ttl, ``broken``
whose llama-server exits at once) and its peer ``lab`` serving ``tiny``. Each test drives
the emulator, set up the same way, through the same requests and compares: whole bodies
where nothing in them varies from run to run, key orders and JSON types elsewhere, and the
order of the event stream's frames. Ports, times and token rates are what differ.
"""

import asyncio
from collections.abc import AsyncIterator
import json
from pathlib import Path
import re
import time
from typing import Any

import aiohttp
import pytest

from .llama_swap_emulator import LlamaSwapEmulator, SwapModel, SwapPeer

FIXTURES = Path(__file__).parent / "fixtures" / "llama_swap"
PROMPT = "Reply with one word: ready?"
# The real one checks a ttl once a second: recorded, "brief" (ttl 2) left /running 3.0 s
# after the reply that ended its last request.
TTL_S = 2
WHOLE_SECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def recorded(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def recorded_json(name: str) -> Any:
    return json.loads(recorded(name))


def recorded_status(name: str) -> int:
    return int((FIXTURES / Path(name).with_suffix(".status").name).read_text())


def chat(model: str, *, stream: bool = False) -> dict[str, Any]:
    """The recording's chat (scripts/record_fixtures ``swap_chat``)."""
    return {
        "model": model,
        "stream": stream,
        "max_tokens": 4,
        "temperature": 0,
        "seed": 1,
        "messages": [{"role": "user", "content": PROMPT}],
    }


def shape(value: Any) -> Any:
    """Key names (in order) at every level and the JSON type of every leaf."""
    if isinstance(value, dict):
        return [(key, shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return ["list", *(shape(item) for item in value[:1])]
    return (
        "number"
        if isinstance(value, int | float) and not isinstance(value, bool)
        else (type(value).__name__)
    )


def frames(raw: bytes) -> list[tuple[str, Any]]:
    """(type, decoded data) of each event-stream frame, llama-swap's logs left out."""
    out: list[tuple[str, Any]] = []
    for frame in raw.decode().split("\n\n"):
        if not frame:
            continue
        event, data = frame.split("\n")
        assert event == "event:message"
        envelope = json.loads(data.removeprefix("data:"))
        assert list(envelope) == ["type", "data"]
        if envelope["type"] != "logData":
            out.append((envelope["type"], json.loads(envelope["data"])))
    return out


def states(events: list[tuple[str, Any]], model: str) -> list[str]:
    """The successive states of ``model`` in the modelStatus frames (repeats folded)."""
    seen: list[str] = []
    for kind, data in events:
        if kind == "modelStatus":
            state = next(entry["state"] for entry in data if entry["id"] == model)
            if not seen or seen[-1] != state:
                seen.append(state)
    return seen


@pytest.fixture
async def swaps(socket_enabled: None) -> AsyncIterator[tuple[LlamaSwapEmulator, LlamaSwapEmulator]]:
    """The recording's two llama-swaps, emulated: the front one and its peer ``lab``."""
    peer = LlamaSwapEmulator([SwapModel("tiny", load_seconds=0.05)], ttl_check_interval=1.0)
    await peer.start()
    front = LlamaSwapEmulator(
        [
            SwapModel("tiny", load_seconds=0.2),
            SwapModel("big", load_seconds=0.3),
            SwapModel("brief", load_seconds=0.05, ttl=TTL_S),
            SwapModel(
                "broken", load_seconds=0.05, load_error="upstream command exited prematurely"
            ),
        ],
        ttl_check_interval=1.0,
        peers={"lab": SwapPeer(peer.url, ("tiny",))},
    )
    await front.start()
    yield front, peer
    await front.stop()
    await peer.stop()


async def send(
    session: aiohttp.ClientSession, method: str, url: str, body: Any = None
) -> tuple[int, str, bytes]:
    async with session.request(method, url, json=body) as response:
        return response.status, response.headers.get("Content-Type", ""), await response.read()


class EventReader:
    """Reads /api/events in the background until ``stop``."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.raw = bytearray()
        self._session = session
        self._url = url
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        response = await self._session.get(self._url + "/api/events")
        self._task = asyncio.create_task(self._read(response))
        await asyncio.sleep(0.2)

    async def _read(self, response: aiohttp.ClientResponse) -> None:
        async with response:
            async for chunk in response.content.iter_any():
                self.raw += chunk

    async def stop(self) -> bytes:
        await asyncio.sleep(0.3)
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        return bytes(self.raw)


async def test_idle_models_and_version_as_recorded(
    swaps: tuple[LlamaSwapEmulator, LlamaSwapEmulator],
) -> None:
    front, _ = swaps
    async with aiohttp.ClientSession() as session:
        _, _, idle = await send(session, "GET", front.url + "/running")
        _, _, models = await send(session, "GET", front.url + "/v1/models")
        _, _, version = await send(session, "GET", front.url + "/api/version")
    assert idle == recorded("running_idle.json")
    # Every entry as recorded, the peer's model too ("lab/tiny", type peer, "lab: tiny"),
    # sorted by id among the local ones; only the creation time differs.
    blank = re.compile(rb'"created":\d+')
    assert (
        blank.sub(b'"created":0', models)
        == blank.sub(b'"created":0', recorded("models.json").strip()) + b"\n"
    )
    assert list(json.loads(version)) == list(recorded_json("version.json"))


async def test_a_load_a_request_during_it_a_swap_and_the_unloads_as_recorded(
    swaps: tuple[LlamaSwapEmulator, LlamaSwapEmulator],
) -> None:
    front, _ = swaps
    async with aiohttp.ClientSession() as session:
        events = EventReader(session, front.url)
        await events.start()
        cold = asyncio.create_task(
            send(session, "POST", front.url + "/v1/chat/completions", chat("tiny"))
        )
        while front.state("tiny") != "starting":
            await asyncio.sleep(0.01)
        _, _, loading = await send(session, "GET", front.url + "/running")
        during = asyncio.create_task(
            send(session, "POST", front.url + "/v1/chat/completions", chat("tiny"))
        )
        cold_reply, during_reply = await cold, await during
        _, _, ready = await send(session, "GET", front.url + "/running")
        stream = await send(
            session, "POST", front.url + "/v1/chat/completions", chat("tiny", stream=True)
        )
        health = await send(session, "GET", front.url + "/upstream/tiny/health")
        big = await send(session, "POST", front.url + "/v1/chat/completions", chat("big"))
        _, _, swapped = await send(session, "GET", front.url + "/running")
        unload_one = await send(session, "POST", front.url + "/api/models/unload/big")
        _, _, after_one = await send(session, "GET", front.url + "/running")
        await send(session, "POST", front.url + "/v1/chat/completions", chat("tiny"))
        unload_all = await send(session, "POST", front.url + "/api/models/unload")
        _, _, after_all = await send(session, "GET", front.url + "/running")
        raw_events = await events.stop()

    for mine, name in ((loading, "running_loading.json"), (ready, "running_ready.json")):
        (entry,) = json.loads(mine)["running"]
        (real,) = recorded_json(name)["running"]
        assert shape(entry) == shape(real)
        assert (entry["model"], entry["state"]) == (real["model"], real["state"])
        assert re.fullmatch(r"http://localhost:\d+", entry["proxy"])
        assert re.fullmatch(r"http://localhost:\d+", real["proxy"])
    # Both requests are answered once the load is done: the second one joined it.
    for reply, name in (
        (cold_reply, "chat_cold_tiny.json"),
        (during_reply, "chat_during_load.json"),
    ):
        assert reply[0] == 200
        assert shape(json.loads(reply[2])) == shape(recorded_json(name))
    assert stream[1] == "text/event-stream"
    assert stream[2].startswith(b"data: {")
    assert recorded("chat_stream_tiny.sse").startswith(b"data: {")
    assert health[2] == recorded("upstream_health.json")
    assert big[0] == 200
    assert [e["model"] for e in json.loads(swapped)["running"]] == [
        e["model"] for e in recorded_json("running_swapped.json")["running"]
    ]
    assert (unload_one[0], unload_one[2]) == (
        recorded_status("unload_one.txt"),
        recorded("unload_one.txt"),
    )
    assert unload_one[1].startswith("text/plain")
    assert (unload_all[0], unload_all[2]) == (
        recorded_status("unload_all.json"),
        recorded("unload_all.json"),
    )
    assert after_one == recorded("running_after_unload_one.json")
    assert after_all == recorded("running_after_unload_all.json")

    # The event stream: the same frames in the same order, logs left out.
    mine_events, real_events = frames(raw_events), frames(recorded("events_load_unload.sse"))
    initial = ["modelStatus", "uiConfig", "profileChanged", "inflight"]
    assert [kind for kind, _ in mine_events[:4]] == initial
    assert [kind for kind, _ in real_events[:4]] == initial
    assert mine_events[0][1] == [
        {**entry, "state": entry["state"]} for entry in real_events[0][1]
    ]  # the peer's model last, with no state
    for model in ("tiny", "big"):
        assert states(mine_events, model) == states(real_events, model), model
    activity_ids = [data["id"] for kind, data in mine_events if kind == "activity"]
    assert activity_ids == [data["id"] for kind, data in real_events if kind == "activity"]
    ops = {data["operation"] for kind, data in mine_events if kind == "inflight"}
    assert ops == {data["operation"] for kind, data in real_events if kind == "inflight"}


async def test_unknown_models_a_failed_start_and_their_activity_as_recorded(
    swaps: tuple[LlamaSwapEmulator, LlamaSwapEmulator],
) -> None:
    front, _ = swaps
    async with aiohttp.ClientSession() as session:
        for body in (
            chat("tiny"),
            chat("tiny"),
            chat("tiny", stream=True),
            chat("big"),
            chat("tiny"),
        ):
            await send(session, "POST", front.url + "/v1/chat/completions", body)
        replies = {
            "chat_unknown_model.json": await send(
                session, "POST", front.url + "/v1/chat/completions", chat("nope")
            ),
            "unload_unknown.json": await send(
                session, "POST", front.url + "/api/models/unload/nope"
            ),
            "upstream_unknown.json": await send(
                session, "GET", front.url + "/upstream/nope/health"
            ),
            "chat_failed_start.json": await send(
                session, "POST", front.url + "/v1/chat/completions", chat("broken")
            ),
        }
        _, _, activity = await send(session, "GET", front.url + "/api/metrics/activity?limit=20")
    for name, (status, content_type, body) in replies.items():
        assert (status, body.strip()) == (recorded_status(name), recorded(name).strip()), name
        assert content_type == "application/json"
    mine, real = json.loads(activity), recorded_json("activity.json")
    assert [k for k in mine if k != "data"] == [k for k in real if k != "data"]
    assert (mine["total"], mine["page"], mine["limit"]) == (real["total"], 1, 20)
    for row, real_row in zip(mine["data"], real["data"], strict=True):
        assert shape(row) == shape(real_row)
        for key in ("id", "model", "req_path", "resp_status_code", "resp_content_type"):
            assert row[key] == real_row[key], key
        assert row.get("error_msg") == real_row.get("error_msg")
        assert WHOLE_SECONDS.fullmatch(row["timestamp"])
        assert WHOLE_SECONDS.fullmatch(real_row["timestamp"])
        if real_row["resp_status_code"] != 200:
            assert row["tokens"] == real_row["tokens"]  # all zeros


async def test_a_ttl_expires_within_a_second_of_its_end_as_recorded(
    swaps: tuple[LlamaSwapEmulator, LlamaSwapEmulator],
) -> None:
    front, _ = swaps
    async with aiohttp.ClientSession() as session:
        events = EventReader(session, front.url)
        await events.start()
        await send(session, "POST", front.url + "/v1/chat/completions", chat("brief"))
        answered = time.monotonic()
        _, _, ready = await send(session, "GET", front.url + "/running")
        while front.state("brief") != "stopped":
            await asyncio.sleep(0.05)
        left = time.monotonic() - answered
        _, _, after = await send(session, "GET", front.url + "/running")
        raw = await events.stop()
    (entry,) = json.loads(ready)["running"]
    (real,) = recorded_json("running_brief.json")["running"]
    assert (entry["ttl"], shape(entry)) == (real["ttl"], shape(real))
    # Recorded: gone 3.0 s after the reply (checked once a second, once past the ttl).
    assert TTL_S < left <= TTL_S + 1.2
    assert after == recorded("running_after_ttl.json")
    assert states(frames(raw), "brief") == states(frames(recorded("events_ttl.sse")), "brief")


async def test_the_peer_through_the_front_one_as_recorded(
    swaps: tuple[LlamaSwapEmulator, LlamaSwapEmulator],
) -> None:
    front, peer = swaps
    async with aiohttp.ClientSession() as session:
        reply = await send(session, "POST", front.url + "/v1/chat/completions", chat("lab/tiny"))
        _, _, front_running = await send(session, "GET", front.url + "/running")
        _, _, peer_running = await send(session, "GET", peer.url + "/running")
        _, _, peer_models = await send(session, "GET", peer.url + "/v1/models")
        events = EventReader(session, front.url)
        await events.start()
        raw = await events.stop()
        unload = await send(session, "POST", front.url + "/api/models/unload/lab%2Ftiny")
        health = await send(session, "GET", front.url + "/upstream/lab/tiny/health")
        _, _, activity = await send(session, "GET", front.url + "/api/metrics/activity?limit=1")
        await peer.stop_serving()
        down = await send(session, "POST", front.url + "/v1/chat/completions", chat("lab/tiny"))

    assert reply[0] == 200
    assert shape(json.loads(reply[2])) == shape(recorded_json("chat_peer.json"))
    # The peer ran it, under its own name; the front one does not list it as running.
    assert front_running == recorded("running_front_peer.json")
    assert [e["model"] for e in json.loads(peer_running)["running"]] == ["tiny"]
    assert (
        json.loads(peer_models)["data"][0]["status"]
        == recorded_json("peer_models.json")["data"][0]["status"]
    )
    (status,) = [data for kind, data in frames(raw) if kind == "modelStatus"]
    (real_status,) = [
        data for kind, data in frames(recorded("events_peer.sse")) if kind == "modelStatus"
    ]
    assert status[-1] == real_status[-1]  # the peer's model: no state, even while it runs
    assert (unload[0], unload[2].strip()) == (
        recorded_status("unload_peer.json"),
        recorded("unload_peer.json").strip(),
    )
    assert (health[0], health[2]) == (200, recorded("upstream_peer_health.json"))
    (row,) = json.loads(activity)["data"]
    (real_row,) = recorded_json("activity_peer.json")["data"]
    assert shape(row) == shape(real_row)  # no fifo metadata
    assert row["model"] == real_row["model"] == "lab/tiny"
    real_down = recorded_json("chat_peer_down.json")
    assert down[0] == recorded_status("chat_peer_down.json") == 502
    mine_down = json.loads(down[2])
    assert shape(mine_down) == shape(real_down)
    port = re.compile(r":\d+:")
    assert port.sub(":P:", mine_down["error"]["message"]) == port.sub(
        ":P:", real_down["error"]["message"]
    )


async def test_a_restart_starts_the_activity_log_again_as_recorded(
    swaps: tuple[LlamaSwapEmulator, LlamaSwapEmulator],
) -> None:
    front, _ = swaps
    async with aiohttp.ClientSession() as session:
        await send(session, "POST", front.url + "/v1/chat/completions", chat("tiny"))
        await front.restart()
        _, _, empty = await send(session, "GET", front.url + "/api/metrics/activity?limit=20")
        await send(session, "POST", front.url + "/v1/chat/completions", chat("tiny"))
        _, _, one = await send(session, "GET", front.url + "/api/metrics/activity?limit=20")
    assert empty.strip() == recorded("activity_after_restart.json").strip()
    mine, real = json.loads(one), recorded_json("activity_after_restart_one.json")
    assert shape(mine) == shape(real)
    assert mine["data"][0]["id"] == real["data"][0]["id"] == 1
