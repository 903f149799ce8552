"""Tests for the loopback llama-swap emulator (driven over real HTTP)."""

import asyncio
import base64
from collections.abc import AsyncIterator, Callable
import json
from pathlib import Path
import time
from typing import Any

import aiohttp
import pytest

from .e2e import wait_until
from .llama_swap_emulator import (
    METRICS_FIXTURE,
    MODEL_UNLOADED_ERROR,
    LlamaSwapEmulator,
    SwapError,
    SwapModel,
    go_json,
)

LLAMA_FIXTURES = Path(__file__).parent / "fixtures" / "llama_server"
CHAT = {
    "model": "tiny",
    "stream": True,
    "max_tokens": 4,
    "messages": [{"role": "user", "content": "Reply with one word: ready?"}],
}
RUNNING_KEYS = ["model", "state", "cmd", "proxy", "ttl", "name", "description"]


def envelope(status: int, message: str) -> dict[str, object]:
    """llama-swap's error body (httperror.go's envelope) for ``status``."""
    kind, code = {
        404: ("invalid_request_error", "not_found"),
        500: ("server_error", "internal_error"),
    }[status]
    return {
        "src": "llama-swap",
        "error": {"message": message, "type": kind, "param": None, "code": code},
    }


def _models() -> list[SwapModel]:
    return [
        SwapModel("tiny", load_seconds=0.1, ttl=300, display_name="Tiny", description="test"),
        SwapModel("big", load_seconds=0.2, unload_seconds=0.15, token_ms=2.0),
    ]


@pytest.fixture
async def emulator(socket_enabled: None) -> AsyncIterator[LlamaSwapEmulator]:
    emu = LlamaSwapEmulator(_models(), ttl_check_interval=0.05)
    await emu.start()
    yield emu
    await emu.stop()


@pytest.fixture
async def session(socket_enabled: None) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


class Events:
    """Reads ``/api/events`` frames and checks the exact envelope bytes."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp
        self.seen: list[tuple[str, Any]] = []

    async def next(self, timeout: float = 2.0) -> tuple[str, Any]:
        raw = await asyncio.wait_for(self.resp.content.readuntil(b"\n\n"), timeout)
        assert raw.startswith(b"event:message\ndata:{"), raw
        envelope = json.loads(raw.removeprefix(b"event:message\ndata:"))
        assert list(envelope) == ["type", "data"]
        assert isinstance(envelope["data"], str)  # double-encoded JSON
        frame = (envelope["type"], json.loads(envelope["data"]))
        self.seen.append(frame)
        return frame

    async def until(
        self, predicate: Callable[[str, Any], bool], timeout: float = 3.0
    ) -> list[tuple[str, Any]]:
        frames: list[tuple[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            kind, data = await self.next(max(0.01, deadline - time.monotonic()))
            frames.append((kind, data))
            if predicate(kind, data):
                return frames


async def _events(session: aiohttp.ClientSession, emu: LlamaSwapEmulator) -> Events:
    resp = await session.get(emu.url + "/api/events")
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "text/event-stream"
    assert resp.headers["X-Accel-Buffering"] == "no"
    assert resp.headers["Cache-Control"] == "no-cache"
    return Events(resp)


def _states(frame: tuple[str, Any]) -> dict[str, str] | None:
    kind, data = frame
    return {m["id"]: m["state"] for m in data} if kind == "modelStatus" else None


async def _running(session: aiohttp.ClientSession, emu: LlamaSwapEmulator) -> list[Any]:
    async with session.get(emu.url + "/running") as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/json"
        running: list[Any] = (await resp.json())["running"]
        return running


async def _sse(resp: aiohttp.ClientResponse) -> list[Any]:
    lines = [line async for line in resp.content if line.strip()]
    assert lines[-1] == b"data: [DONE]\n"
    return [json.loads(line.removeprefix(b"data: ")) for line in lines[:-1]]


async def _chat(
    session: aiohttp.ClientSession, emu: LlamaSwapEmulator, **changes: Any
) -> tuple[int, Any]:
    body = CHAT | {"stream": False} | changes
    async with session.post(emu.url + "/v1/chat/completions", json=body) as resp:
        return resp.status, await resp.json(content_type=None)


def _fixture_chunks(name: str) -> list[dict[str, Any]]:
    text = (LLAMA_FIXTURES / name).read_text()
    lines = [line for line in text.splitlines() if line.startswith("data: {")]
    return [json.loads(line.removeprefix("data: ")) for line in lines]


# ------------------------------------------------------------------- basics


async def test_plain_endpoints(emulator: LlamaSwapEmulator, session: aiohttp.ClientSession) -> None:
    async with session.get(emulator.url + "/health") as resp:
        assert (resp.status, await resp.text()) == (200, "OK")
        assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    async with session.get(emulator.url + "/api/version") as resp:
        assert await resp.text() == (
            '{"build_date":"2026-08-14T15:45:40Z","commit":"60226b63","version":"v250"}\n'
        )
    async with session.get(emulator.url + "/metrics") as resp:
        assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert await resp.text() == METRICS_FIXTURE.read_text()
    async with session.get(emulator.url + "/v1/models") as resp:
        body = await resp.json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == ["big", "tiny"]
    tiny = body["data"][1]
    assert list(tiny) == [
        "id",
        "object",
        "created",
        "owned_by",
        "name",
        "description",
        "meta",
        "status",
    ]
    assert tiny["owned_by"] == "llama-swap"
    assert tiny["meta"] == {"llamaswap": {"type": "model"}}
    assert tiny["status"] == {"value": "unloaded"}
    assert "name" not in body["data"][0]
    async with session.get(emulator.url + "/nope") as resp:
        assert (resp.status, await resp.text()) == (404, "404 page not found\n")
    async with session.post(emulator.url + "/running") as resp:
        assert resp.status == 405
    async with session.get(emulator.url + "/", allow_redirects=False) as resp:
        assert (resp.status, resp.headers["Location"]) == (302, "/ui")
    assert emulator.requests["GET /health"] == 1
    assert emulator.requests["GET /v1/models"] == 1
    assert go_json({"a": "<&>", "b": -1.0}) == '{"a":"\\u003c\\u0026\\u003e","b":-1}'


async def test_running_through_load_and_swap(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    async with session.get(emulator.url + "/running") as resp:
        assert await resp.text() == '{"running":[]}\n'
    pending = asyncio.create_task(_chat(session, emulator))
    await asyncio.sleep(0.05)
    assert not pending.done()  # the request blocks while the model loads
    (entry,) = await _running(session, emulator)
    assert list(entry) == RUNNING_KEYS
    assert entry == {
        "model": "tiny",
        "state": "starting",
        "cmd": "/app/llama-server --port 5800 -m /models/tiny.gguf",
        "proxy": "http://localhost:5800",
        "ttl": 300,
        "name": "Tiny",
        "description": "test",
    }
    status, _ = await pending
    assert status == 200
    assert [(e["model"], e["state"]) for e in await _running(session, emulator)] == [
        ("tiny", "ready")
    ]
    assert emulator.loaded_models() == ["tiny"]

    # Swap: the victim is stopped first (ready → stopping → stopped), then big starts.
    await emulator.load_by_other_client("big")
    swap = asyncio.create_task(_chat(session, emulator, model="tiny"))
    seen: list[list[tuple[str, str]]] = []
    while not swap.done():
        snapshot = [(e["model"], e["state"]) for e in await _running(session, emulator)]
        if not seen or seen[-1] != snapshot:
            seen.append(snapshot)
        await asyncio.sleep(0.01)
    assert (await swap)[0] == 200
    order = [snapshot for snapshot in seen if snapshot and snapshot != [("big", "ready")]]
    assert order[:2] == [[("big", "stopping")], [("tiny", "starting")]]
    assert all(len(snapshot) <= 1 for snapshot in seen)  # exclusive group
    assert [(e["model"], e["state"]) for e in await _running(session, emulator)] == [
        ("tiny", "ready")
    ]
    assert emulator.state("big") == "stopped"
    async with session.get(emulator.url + "/v1/models") as resp:
        statuses = {m["id"]: m["status"]["value"] for m in (await resp.json())["data"]}
    assert statuses == {"big": "unloaded", "tiny": "loaded"}


async def test_non_exclusive_models_run_side_by_side(socket_enabled: None) -> None:
    emu = LlamaSwapEmulator(_models(), exclusive=False)
    await emu.start()
    try:
        await asyncio.gather(emu.load_by_other_client("tiny"), emu.load_by_other_client("big"))
        assert emu.loaded_models() == ["big", "tiny"]
        async with aiohttp.ClientSession() as session:
            running = await _running(session, emu)
        assert [(e["model"], e["state"], e["ttl"]) for e in running] == [
            ("big", "ready", 0),
            ("tiny", "ready", 300),
        ]
    finally:
        await emu.stop()


# ------------------------------------------------------------------ unload


async def test_unload_endpoints(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    await emulator.load_by_other_client("big")
    async with session.post(emulator.url + "/api/models/unload/big") as resp:
        assert (resp.status, await resp.text()) == (200, "OK")
        assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert emulator.state("big") == "stopped"  # blocked until stopped
    async with session.post(emulator.url + "/api/models/unload/big") as resp:
        assert (resp.status, await resp.text()) == (200, "OK")  # idempotent
    async with session.post(emulator.url + "/api/models/unload/nope") as resp:
        assert resp.status == 404
        assert resp.headers["Content-Type"] == "application/json"
        assert await resp.text() == (
            '{"src":"llama-swap","error":{"message":"model not found",'
            '"type":"invalid_request_error","param":null,"code":"not_found"}}'
        )
    headers = {"Accept": "text/plain"}
    async with session.post(emulator.url + "/api/models/unload/nope", headers=headers) as resp:
        assert (resp.status, await resp.text()) == (404, "llama-swap: model not found")

    await emulator.load_by_other_client("tiny")
    async with session.post(emulator.url + "/api/models/unload") as resp:
        assert (resp.status, await resp.text()) == (200, '{"msg":"ok"}\n')
    assert emulator.state("tiny") == "stopped"
    await emulator.load_by_other_client("tiny")
    async with session.get(emulator.url + "/unload") as resp:
        assert (resp.status, await resp.text()) == (200, "OK")
    assert emulator.running_models() == []
    async with session.get(emulator.url + "/api/models/unload") as resp:
        assert resp.status == 405


async def test_unload_during_load_fails_the_waiters(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    pending = asyncio.create_task(_chat(session, emulator, model="big"))
    await asyncio.sleep(0.05)
    assert emulator.state("big") == "starting"
    async with session.post(emulator.url + "/api/models/unload/big") as resp:
        assert resp.status == 200
    assert emulator.state("big") == "stopped"
    assert await pending == (500, envelope(500, MODEL_UNLOADED_ERROR))


# --------------------------------------------------------------- generation


async def test_streaming_chat_matches_llama_server(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.add_model(SwapModel("tiny", load_seconds=0.05, prompt_ms_per_token=5.0))
    recorded = _fixture_chunks("chat_stream_tiny.sse")
    start = time.monotonic()
    async with session.post(emulator.url + "/v1/chat/completions", json=CHAT) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "text/event-stream"
        first = await resp.content.readline()
        ttft = time.monotonic() - start
        rest = [line async for line in resp.content]
    chunks = [json.loads(first.removeprefix(b"data: "))]
    chunks += [json.loads(line.removeprefix(b"data: ")) for line in rest[1:-2] if line.strip()]
    assert rest[-2:] == [b"data: [DONE]\n", b"\n"]
    assert len(chunks) == len(recorded) == 6
    for mine, real in zip(chunks, recorded, strict=True):
        assert list(mine) == list(real)  # same keys in the same order
        assert list(mine["choices"][0]) == list(real["choices"][0])
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    assert "".join(c["choices"][0]["delta"]["content"] for c in chunks[1:5]) == " ".join(
        ["Warm", "and", "ready", "to"]
    )
    final = chunks[-1]
    assert final["choices"][0] == {"finish_reason": "length", "index": 0, "delta": {}}
    assert list(final["timings"]) == list(recorded[-1]["timings"])
    prompt_tokens = 1 + 1 + 5 + 1  # BOS, role marker, five words, assistant marker
    timings = final["timings"]
    assert (timings["cache_n"], timings["prompt_n"], timings["predicted_n"]) == (
        0,
        prompt_tokens,
        4,
    )
    assert timings["prompt_ms"] == prompt_tokens * 5.0
    assert timings["prompt_per_second"] == pytest.approx(200.0)
    assert ttft >= 0.05 + timings["prompt_ms"] / 1000  # load + prompt processing
    assert {c["id"] for c in chunks} == {chunks[0]["id"]}
    assert chunks[0]["model"] == "tiny"

    # Prompt cache: the same prompt again reuses all but the last token.
    status, body = await _chat(session, emulator)
    assert status == 200
    assert body["timings"]["cache_n"] == prompt_tokens - 1
    assert body["timings"]["prompt_n"] == 1
    assert body["usage"] == {
        "completion_tokens": 4,
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + 4,
        "prompt_tokens_details": {"cached_tokens": prompt_tokens - 1},
    }
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Warm and ready to"}
    assert body["object"] == "chat.completion"
    # A follow-up turn that includes the reply hits the cache for the whole history.
    history = [
        *CHAT["messages"],  # type: ignore[misc]
        {"role": "assistant", "content": "Warm and ready to"},
        {"role": "user", "content": "and now?"},
    ]
    status, body = await _chat(session, emulator, messages=history, max_tokens=None)
    assert body["timings"]["cache_n"] == prompt_tokens + 4
    assert body["choices"][0]["finish_reason"] == "stop"
    # Unloading clears the cache.
    await emulator.unload("tiny")
    status, body = await _chat(session, emulator)
    assert body["timings"]["cache_n"] == 0


async def test_streaming_completion_matches_llama_server(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    recorded = _fixture_chunks("completion_stream_tiny.sse")
    body = {"model": "tiny", "stream": True, "max_tokens": 4, "prompt": "Reply: ready?"}
    async with session.post(emulator.url + "/v1/completions", json=body) as resp:
        chunks = await _sse(resp)
    assert len(chunks) == len(recorded)
    for mine, real in zip(chunks, recorded, strict=True):
        assert list(mine) == list(real)
    assert chunks[-1]["usage"]["prompt_tokens"] == 3
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    body["stream"] = False
    async with session.post(emulator.url + "/v1/completions", json=body) as resp:
        reply = await resp.json()
    assert reply["object"] == "text_completion"
    assert reply["choices"][0]["text"] == "Warm and ready to"
    assert reply["timings"]["cache_n"] == 2
    # stream_options.include_usage adds usage to the final chat chunk.
    chat = CHAT | {"stream_options": {"include_usage": True}}
    async with session.post(emulator.url + "/v1/chat/completions", json=chat) as resp:
        assert "usage" in (await _sse(resp))[-1]


async def test_model_errors(emulator: LlamaSwapEmulator, session: aiohttp.ClientSession) -> None:
    assert await _chat(session, emulator, model="nope") == (
        404,
        envelope(404, "no router for requested model"),
    )
    async with session.post(emulator.url + "/v1/chat/completions", json={"x": 1}) as resp:
        # Recorded from the real llama-swap (a request with no JSON body).
        assert await resp.text() == (
            '{"src":"llama-swap","error":{"message":"no model id could be identified",'
            '"type":"invalid_request_error","param":null,"code":"not_found"}}'
        )
    data = json.dumps(CHAT)
    async with session.post(emulator.url + "/v1/chat/completions", data=data) as resp:
        assert resp.status == 404  # llama-swap needs the JSON content type to find the model
    headers = {"Accept": "text/html"}
    async with session.post(emulator.url + "/v1/completions", json={}, headers=headers) as resp:
        assert resp.headers["Content-Type"] == "text/html"
        assert "<h1>llama-swap</h1>" in await resp.text()
    async with session.get(emulator.url + "/upstream/nope/health") as resp:
        assert (resp.status, await resp.json()) == (
            404,
            envelope(404, "model not found"),
        )
    assert emulator.running_models() == []
    # Only the routed unknown model reaches the metrics middleware (no model id: rejected before).
    assert [(r["model"], r["resp_status_code"]) for r in emulator.activity] == [("nope", 404)]
    assert emulator.activity[0]["error_msg"] == "no router for requested model"


async def test_load_error(socket_enabled: None) -> None:
    emu = LlamaSwapEmulator([SwapModel("bad", load_seconds=0.01, load_error="boom")])
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            status, body = await _chat(session, emu, model="bad")
        assert (status, body) == (500, envelope(500, "unspecific error: boom"))
        assert emu.state("bad") == "stopped"
        with pytest.raises(SwapError, match="boom"):
            await emu.load_by_other_client("bad")
    finally:
        await emu.stop()


async def test_upstream_passthrough(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    async with session.get(emulator.url + "/upstream/tiny/health") as resp:
        assert (resp.status, await resp.json()) == (200, {"status": "ok"})
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
    assert emulator.loaded_models() == ["tiny"]
    async with session.get(emulator.url + "/upstream/tiny", allow_redirects=False) as resp:
        assert (resp.status, resp.headers["Location"]) == (301, "/upstream/tiny/")
    async with session.get(emulator.url + "/upstream/big/x.json") as resp:
        assert resp.status == 409  # ignorePaths while not loaded: no swap
    assert emulator.loaded_models() == ["tiny"]
    body = CHAT | {"model": "ignored"}
    url = emulator.url + "/upstream/big/v1/chat/completions"
    async with session.post(url, json=body) as resp:
        assert (await _sse(resp))[-1]["timings"]["predicted_n"] == 4
    assert emulator.loaded_models() == ["big"]
    assert emulator.activity[-1]["req_path"] == "/v1/chat/completions"
    assert emulator.activity[-1]["model"] == "big"


# ------------------------------------------------------------------- events


async def test_events_envelope_snapshot_and_request_lifecycle(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    async with session.get(emulator.url + "/api/events") as resp:
        raw = await resp.content.readuntil(b"\n\n")
        assert raw == (
            b'event:message\ndata:{"type":"logData","data":"{\\"data\\":\\"\\",'
            b'\\"source\\":\\"proxy\\"}"}\n\n'
        )
        events = Events(resp)
        initial = [await events.next() for _ in range(5)]
        assert [kind for kind, _ in initial] == [
            "logData",
            "modelStatus",
            "uiConfig",
            "profileChanged",
            "inflight",
        ]
        assert initial[1][1] == [
            {
                "id": "big",
                "name": "",
                "description": "",
                "state": "stopped",
                "unlisted": False,
                "peerID": "",
            },
            {
                "id": "tiny",
                "name": "Tiny",
                "description": "test",
                "state": "stopped",
                "unlisted": False,
                "peerID": "",
            },
        ]
        assert initial[2][1] == {
            "activity": {"session_id": ["X-Session-ID", "X-Litellm-Session-Id"]}
        }
        assert initial[3][1] == {"active": None}
        assert initial[4][1] == {"operation": "snapshot"}

        headers = {"Authorization": "Bearer secret", "X-Session-ID": "abc"}
        async with session.post(
            emulator.url + "/v1/chat/completions", json=CHAT, headers=headers
        ) as chat:
            await _sse(chat)
        frames = await events.until(lambda k, d: k == "inflight" and d["operation"] == "remove")

    kinds = [kind for kind, _ in frames]
    assert kinds[0] == "inflight"
    add = frames[0][1]
    assert add["operation"] == "upsert"
    entry = add["request"]
    assert list(entry) == [
        "id",
        "timestamp",
        "model",
        "req_path",
        "method",
        "req_headers",
        "remote_ip",
        "resp_headers",
        "resp_bytes",
        "elapsed_ms",
    ]
    assert (entry["id"], entry["model"], entry["req_path"], entry["method"]) == (
        "1",
        "tiny",
        "/v1/chat/completions",
        "POST",
    )
    assert entry["req_headers"]["Authorization"] == "[REDACTED]"
    assert entry["req_headers"]["Content-Type"] == "application/json"
    assert (entry["remote_ip"], entry["resp_headers"], entry["resp_bytes"]) == ("127.0.0.1", {}, 0)
    states = [s for s in map(_states, frames) if s is not None]
    assert [s["tiny"] for s in states] == ["starting", "ready"]
    headers_upsert = next(
        d for k, d in frames[1:] if k == "inflight" and d["operation"] == "upsert"
    )
    assert headers_upsert["request"]["resp_headers"]["Content-Type"] == "text/event-stream"
    assert kinds[-2:] == ["activity", "inflight"]
    assert frames[-2][1] == {"id": 1}
    assert frames[-1][1] == {"operation": "remove", "id": "1"}
    url = emulator.url + "/api/metrics/activity?min_id=1&max_id=1"
    async with session.get(url) as resp:
        page = await resp.json()
    assert (page["page"], page["limit"], page["total"], page["total_pages"]) == (1, 25, 1, 1)
    (row,) = page["data"]
    assert row["tokens"] == {
        "cache_tokens": 0,
        "draft_tokens": -1,
        "draft_acc_tokens": -1,
        "input_tokens": 8,
        "output_tokens": 4,
        "prompt_per_second": 1000,
        "tokens_per_second": 200,
    }
    # Recorded: a served request is captured (the default buffer) and has its priority.
    assert (row["model"], row["resp_status_code"], row["has_capture"]) == ("tiny", 200, True)
    assert row["metadata"] == {"fifo_priority": "0"}
    assert row["timestamp"].endswith("Z")
    assert "." not in row["timestamp"]  # whole seconds, as stored
    assert emulator.events_connections == 1


async def test_events_snapshot_lists_inflight_and_swap_states(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.add_model(SwapModel("tiny", load_seconds=0.05, token_ms=100.0))
    await emulator.load_by_other_client("big")
    chat = asyncio.create_task(session.post(emulator.url + "/v1/chat/completions", json=CHAT))
    await asyncio.sleep(0.02)
    async with session.get(emulator.url + "/api/events") as resp:
        events = Events(resp)
        initial = [await events.next() for _ in range(6)]
        snapshot = initial[-1][1]
        assert snapshot["operation"] == "snapshot"
        assert [r["model"] for r in snapshot["requests"]] == ["tiny"]
        frames = await events.until(lambda k, d: k == "modelStatus" and d[1]["state"] == "ready")
        states = [s for s in map(_states, initial + frames) if s is not None]
        assert states[-3:] == [
            {"big": "stopped", "tiny": "stopped"},
            {"big": "stopped", "tiny": "starting"},
            {"big": "stopped", "tiny": "ready"},
        ]
        assert {"big": "stopping", "tiny": "stopped"} in states
        async with await chat as reply:
            await _sse(reply)
        # Throttled upserts (250 ms) while bytes flow, then remove.
        frames = await events.until(lambda k, d: k == "inflight" and d["operation"] == "remove")
        upserts = [d for k, d in frames if k == "inflight" and d["operation"] == "upsert"]
        assert upserts
        assert upserts[-1]["request"]["resp_bytes"] > 0


async def test_ttl_expiry(socket_enabled: None) -> None:
    emu = LlamaSwapEmulator(
        [SwapModel("quick", load_seconds=0.01, ttl=1), SwapModel("slow", load_seconds=0.01)],
        exclusive=False,
        ttl_check_interval=0.05,
    )
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            events = await _events(session, emu)
            [await events.next() for _ in range(6)]
            status, _ = await _chat(session, emu, model="quick")
            assert status == 200
            used = time.monotonic()
            assert emu.state("quick") == "ready"
            await asyncio.sleep(0.5)
            assert emu.state("quick") == "ready"
            frames = await events.until(
                lambda k, d: k == "modelStatus" and d[0]["state"] == "stopped", timeout=2.0
            )
            assert 1.0 <= time.monotonic() - used < 1.5
            states = [s["quick"] for s in map(_states, frames) if s is not None]
            assert states[-2:] == ["stopping", "stopped"]
            events.resp.close()
        # ttl 0 never expires; advance() jumps the TTL clock.
        await emu.load_by_other_client("slow")
        emu.advance(10_000)
        await asyncio.sleep(0.1)
        assert emu.state("slow") == "ready"
        emu.add_model(SwapModel("slow", load_seconds=0.01, ttl=300))
        emu.advance(301)
        await asyncio.sleep(0.1)
        assert emu.state("slow") == "stopped"
    finally:
        await emu.stop()


async def test_busy_model_drains_before_swap(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.add_model(SwapModel("tiny", load_seconds=0.01, token_ms=200.0))
    first = asyncio.create_task(_chat(session, emulator))
    second = asyncio.create_task(_chat(session, emulator))
    # Both joined one load (waited for, not slept for: a busy machine is slow to start them).
    await wait_until(lambda: emulator.inflight("tiny") == 2, 5, "two requests in flight")
    swap = asyncio.create_task(_chat(session, emulator, model="big"))
    await asyncio.sleep(0.05)
    assert not first.done()
    assert emulator.state("tiny") == "ready"  # the swap waits for tiny to drain
    assert [(await first)[0], (await second)[0]] == [200, 200]
    assert (await swap)[0] == 200
    assert emulator.loaded_models() == ["big"]


async def test_unload_mid_stream_drops_the_reply(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.add_model(SwapModel("tiny", load_seconds=0.01, token_ms=100.0))
    async with session.post(emulator.url + "/v1/chat/completions", json=CHAT) as resp:
        await resp.content.readline()
        await emulator.unload("tiny")
        with pytest.raises(aiohttp.ClientPayloadError):
            await resp.read()
    assert emulator.inflight("tiny") == 0


# ---------------------------------------------------------- fault injection


async def test_restart_closes_streams_and_stops_models(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    await emulator.load_by_other_client("tiny")
    events = await _events(session, emulator)
    [await events.next() for _ in range(6)]
    await emulator.restart()
    with pytest.raises((aiohttp.ClientPayloadError, asyncio.IncompleteReadError)):
        await events.resp.content.readuntil(b"\n\n")
    events.resp.close()
    assert emulator.running_models() == []
    assert await _running(session, emulator) == []
    events = await _events(session, emulator)
    initial = [await events.next() for _ in range(6)]
    assert {m["state"] for m in initial[2][1]} == {"stopped"}
    assert emulator.events_connections == 2
    assert emulator.requests["GET /api/events"] == 2
    events.resp.close()


async def test_stall_and_cut_events(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    streams = [await _events(session, emulator) for _ in range(2)]
    for events in streams:
        [await events.next() for _ in range(6)]
    emulator.stall_events(True)
    await emulator.load_by_other_client("tiny")
    for events in streams:
        with pytest.raises(TimeoutError):
            await events.next(timeout=0.1)
    assert emulator.events_open == 2
    emulator.stall_events(False)
    await emulator.unload()
    for events in streams:
        assert _states(await events.next()) == {"big": "stopped", "tiny": "stopping"}
    assert emulator.cut_events() == 2
    for events in streams:
        [await events.next() for _ in range(1)]  # the pending "stopped" frame
        assert await events.resp.content.read() == b""  # clean end of stream
    assert emulator.events_connections == 2
    await asyncio.sleep(0.01)
    assert emulator.events_open == 0
    # abort=True resets the connection instead of ending the stream.
    events = await _events(session, emulator)
    await events.next()
    assert emulator.cut_events(abort=True) == 1
    with pytest.raises(aiohttp.ClientPayloadError):
        await events.resp.content.read()
    events.resp.close()
    assert emulator.events_connections == 3


async def test_http_faults_and_outage(
    emulator: LlamaSwapEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.fail_next("/running", 503, "busy", "text/plain")
    async with session.get(emulator.url + "/running") as resp:
        assert (resp.status, await resp.text()) == (503, "busy")
    emulator.malformed_next("/running")
    async with session.get(emulator.url + "/running") as resp:
        assert resp.status == 200
        with pytest.raises(json.JSONDecodeError):
            json.loads(await resp.text())
    # POST: aiohttp retries an idempotent request once after a disconnect.
    emulator.drop_next("/api/models/unload")
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await session.post(emulator.url + "/api/models/unload")
    assert await _running(session, emulator) == []
    emulator.malformed_next("/api/events")
    async with session.get(emulator.url + "/api/events") as resp:
        broken = await resp.content.readuntil(b"\n\n")
        with pytest.raises(json.JSONDecodeError):
            json.loads(broken.removeprefix(b"event:message\ndata:"))
        assert (await Events(resp).next())[0] == "logData"
    async with emulator.outage():
        with pytest.raises(aiohttp.ClientConnectorError):
            await session.get(emulator.url + "/health")
    async with session.get(emulator.url + "/health") as resp:
        assert resp.status == 200
    assert emulator.requests["GET /running"] == 3


async def test_api_key(socket_enabled: None) -> None:
    emu = LlamaSwapEmulator(_models(), api_key="k")
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(emu.url + "/running") as resp:
                assert resp.status == 401
                assert resp.headers["WWW-Authenticate"] == 'Basic realm="llama-swap"'
            async with session.get(emu.url + "/health") as resp:
                assert resp.status == 200
            for headers in ({"Authorization": "Bearer k"}, {"x-api-key": "k"}):
                async with session.get(emu.url + "/running", headers=headers) as resp:
                    assert resp.status == 200
            basic = {"Authorization": "Basic " + base64.b64encode(b"user:k").decode()}
            async with session.get(emu.url + "/running", headers=basic) as resp:
                assert resp.status == 200
    finally:
        await emu.stop()
