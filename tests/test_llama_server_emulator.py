"""Tests for the loopback llama-server (router mode) emulator, against the recorded replies."""

import asyncio
from collections.abc import AsyncIterator, Callable
import json
from pathlib import Path
import time
from typing import Any

import aiohttp
import pytest

from .llama_server_emulator import (
    BUILD_INFO,
    JSON_CT,
    KILLED_EXIT_CODE,
    SSE_CT,
    EmulatedLlamaModel,
    LlamaServerEmulator,
    split_tokens,
)

FIXTURES = Path(__file__).parent / "fixtures" / "llama_server"
QUESTION = "Reply with one word: ready?"
CHAT = {
    "model": "tiny",
    "stream": True,
    "max_tokens": 4,
    "temperature": 0,
    "seed": 1,
    "messages": [{"role": "user", "content": QUESTION}],
}
COMPLETION = {
    "model": "tiny",
    "stream": True,
    "max_tokens": 4,
    "temperature": 0,
    "seed": 1,
    "prompt": QUESTION,
}
# Chat: BOS, the user marker, five words and the assistant marker; completion: BOS + words.
CHAT_PROMPT_N = 8
COMPLETION_PROMPT_N = 6


def _fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _fixture_status(name: str) -> int:
    return int(_fixture(name).decode().strip())


def _tiny(**kwargs: Any) -> EmulatedLlamaModel:
    """``tiny`` as recorded (the defaults), fast."""
    return EmulatedLlamaModel(
        "tiny", load_seconds=0.04, prompt_ms_per_token=0.1, token_ms=1.0, **kwargs
    )


def _big(**kwargs: Any) -> EmulatedLlamaModel:
    """``big`` as recorded (F16, 619M parameters), slower to load."""
    return EmulatedLlamaModel(
        "big",
        load_seconds=0.12,
        prompt_ms_per_token=0.1,
        token_ms=1.0,
        n_params=619284480,
        size=1238671360,
        n_embd=2048,
        ftype="F16",
        **kwargs,
    )


def _shape(value: Any) -> Any:
    """Key names (in order) at every level and the JSON type of every leaf."""
    if isinstance(value, dict):
        return [(key, _shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return ["list", *(_shape(item) for item in value[:1])]
    return type(value).__name__


def _normalize_models(payload: dict[str, Any]) -> dict[str, Any]:
    """Blank what differs between runs: ``created`` and the children's ``--port``."""
    for entry in payload["data"]:
        entry["created"] = 0
        args = entry["status"]["args"]
        args[args.index("--port") + 1] = "PORT"
    return payload


def _frames(raw: bytes) -> list[bytes]:
    """Split an SSE body into its ``data: ...`` frames; the body must end with a blank line."""
    assert raw.endswith(b"\n\n")
    frames = raw[:-2].split(b"\n\n")
    assert all(frame.startswith(b"data: ") and b"\n" not in frame for frame in frames)
    return frames


def _frame_json(frame: bytes) -> Any:
    return json.loads(frame.removeprefix(b"data: "))


class SseReader:
    """Collects the raw body of one ``GET /models/sse`` in the background."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self._session = session
        self._url = url
        self.raw = bytearray()
        self.ended = asyncio.Event()
        self.response: aiohttp.ClientResponse | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> SseReader:
        self.response = await self._session.get(self._url + "/models/sse")
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        assert self.response is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self.response.close()

    async def _read(self) -> None:
        assert self.response is not None
        try:
            async for chunk in self.response.content.iter_any():
                self.raw.extend(chunk)
        except aiohttp.ClientError:
            pass
        finally:
            self.ended.set()

    def events(self) -> list[dict[str, Any]]:
        if not self.raw:
            return []
        return [_frame_json(frame) for frame in _frames(bytes(self.raw))]

    async def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool]) -> None:
        async with asyncio.timeout(3):
            while not predicate(self.events()):
                await asyncio.sleep(0.005)


def _has(model: str, status: str) -> Callable[[list[dict[str, Any]]], bool]:
    def check(events: list[dict[str, Any]]) -> bool:
        return any(
            e["model"] == model
            and e.get("data", {}).get("status") == status
            and e["event"] == "status_change"
            for e in events
        )

    return check


@pytest.fixture
async def emulator(socket_enabled: None) -> AsyncIterator[LlamaServerEmulator]:
    """A started router with ``big`` and ``tiny`` and ``--models-max 1``, as recorded."""
    emu = LlamaServerEmulator([_tiny(), _big()])
    await emu.start()
    yield emu
    await emu.stop()


@pytest.fixture
async def session(socket_enabled: None) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


async def _raw(
    session: aiohttp.ClientSession,
    emu: LlamaServerEmulator,
    method: str,
    path: str,
    body: object = None,
) -> tuple[int, bytes, aiohttp.ClientResponse]:
    async with session.request(method, emu.url + path, json=body) as resp:
        return resp.status, await resp.read(), resp


async def _get_json(session: aiohttp.ClientSession, emu: LlamaServerEmulator, path: str) -> Any:
    status, raw, _ = await _raw(session, emu, "GET", path)
    assert status == 200
    return json.loads(raw)


async def _models(session: aiohttp.ClientSession, emu: LlamaServerEmulator) -> dict[str, Any]:
    models: dict[str, Any] = await _get_json(session, emu, "/models")
    return models


async def _stream(
    session: aiohttp.ClientSession, emu: LlamaServerEmulator, path: str, body: dict[str, Any]
) -> list[bytes]:
    async with session.post(emu.url + path, json=body) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == SSE_CT
        return _frames(await resp.read())


# --------------------------------------------------------------------- router replies


async def test_props_and_health_are_the_recorded_bytes(
    emulator: LlamaServerEmulator, session: aiohttp.ClientSession
) -> None:
    status, raw, resp = await _raw(session, emulator, "GET", "/props")
    assert (status, raw) == (200, _fixture("props.json"))
    assert resp.headers["Content-Type"] == JSON_CT
    assert resp.headers["Server"] == "llama.cpp"
    status, raw, _ = await _raw(session, emulator, "GET", "/health")
    assert (status, raw) == (200, _fixture("health.json"))
    emulator.build_info = "b12000-Debian"
    assert (await _get_json(session, emulator, "/props"))["build_info"] == "b12000-Debian"
    assert emulator.counts["GET /props"] == 2
    assert [(r.method, r.path) for r in emulator.requests[:2]] == [
        ("GET", "/props"),
        ("GET", "/health"),
    ]


async def test_models_unloaded_matches_the_recording(
    emulator: LlamaServerEmulator, session: aiohttp.ClientSession
) -> None:
    recorded = _normalize_models(json.loads(_fixture("models_unloaded.json")))
    listed = await _models(session, emulator)
    assert [e["status"]["args"][7] for e in listed["data"]] == ["0", "0"]  # never started
    assert _normalize_models(listed) == recorded
    assert await _get_json(session, emulator, "/v1/models") == await _models(session, emulator)


async def test_load_sequence_matches_the_recordings(
    emulator: LlamaServerEmulator, session: aiohttp.ClientSession
) -> None:
    async with SseReader(session, emulator.url) as sse:
        assert sse.response is not None
        assert sse.response.headers["Content-Type"] == SSE_CT
        await asyncio.sleep(0.02)
        assert sse.raw == b""  # nothing on connect
        status, raw, _ = await _raw(session, emulator, "POST", "/models/load", {"model": "big"})
        assert (status, raw) == (200, _fixture("load_ok.json"))
        loading = await _models(session, emulator)
        assert _normalize_models(loading) == _normalize_models(
            json.loads(_fixture("models_loading.json"))
        )
        assert emulator.state("big") == "loading"
        await sse.wait_for(_has("big", "loaded"))
        loaded = await _models(session, emulator)
        created = loaded["data"][0]["created"]
        port = loaded["data"][0]["status"]["args"][7]
        assert port == str(emulator.port_of("big")) != "0"
        assert _normalize_models(loaded) == _normalize_models(
            json.loads(_fixture("models_loaded.json"))
        )
        recorded = _frames(_fixture("models_sse_load.sse"))
        got = _frames(bytes(sse.raw))
        assert got[:-1] == recorded[:-1]  # byte for byte
        last, want = _frame_json(got[-1]), _frame_json(recorded[-1])
        assert created - 1 <= last["data"]["info"].pop("created") <= created
        want["data"]["info"].pop("created")
        assert last == want
    assert emulator.loaded_models() == ["big"]
    assert emulator.sse_events == [_frame_json(f) for f in got]


# ------------------------------------------------------------------------- generation


async def test_chat_autoload_evicts_lru_and_streams_like_the_recording(
    emulator: LlamaServerEmulator, session: aiohttp.ClientSession
) -> None:
    await emulator.load_by_other_client("big")
    async with SseReader(session, emulator.url) as sse:
        frames = await _stream(session, emulator, "/v1/chat/completions", CHAT)
        await sse.wait_for(_has("tiny", "loaded"))
        events = sse.events()
    recorded = _frames(_fixture("chat_stream_tiny.sse"))
    assert len(frames) == len(recorded)
    assert frames[-1] == recorded[-1] == b"data: [DONE]"
    chunks = [_frame_json(f) for f in frames[:-1]]
    assert [_shape(c) for c in chunks] == [_shape(_frame_json(f)) for f in recorded[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    reply = split_tokens(emulator.models["tiny"].reply)
    assert [c["choices"][0]["delta"].get("content") for c in chunks[1:-1]] == reply[:4]
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["id"].startswith("chatcmpl-")
    assert len(chunks[0]["id"]) == 41
    final = chunks[-1]
    assert (final["model"], final["system_fingerprint"]) == ("tiny", BUILD_INFO)
    assert final["choices"][0]["finish_reason"] == "length"
    timings = final["timings"]
    assert (timings["cache_n"], timings["prompt_n"], timings["predicted_n"]) == (
        0,
        CHAT_PROMPT_N,
        4,
    )
    assert timings["predicted_ms"] == 3 * 1.0  # the first token comes out of the prompt pass
    assert timings["predicted_per_token_ms"] == 1.0
    # --models-max 1: big is stopped (exit 0) before tiny starts.
    assert [(e["model"], e["event"], e["data"]["status"]) for e in events] == [
        ("big", "status_change", "unloaded"),
        ("tiny", "model_status", "loading"),
        ("tiny", "status_change", "loading"),
        ("tiny", "status_change", "loading"),
        ("tiny", "status_change", "loaded"),
    ]
    assert events[0]["data"] == {"status": "unloaded", "exit_code": 0}
    assert emulator.loaded_models() == ["tiny"]

    frames = await _stream(session, emulator, "/v1/completions", COMPLETION)
    recorded = _frames(_fixture("completion_stream_tiny.sse"))
    assert len(frames) == len(recorded)
    assert frames[-1] == b"data: [DONE]"
    chunks = [_frame_json(f) for f in frames[:-1]]
    assert [_shape(c) for c in chunks] == [_shape(_frame_json(f)) for f in recorded[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks) == "".join(reply[:4])
    final = chunks[-1]
    assert final["usage"] == {
        "completion_tokens": 4,
        "prompt_tokens": COMPLETION_PROMPT_N,
        "total_tokens": COMPLETION_PROMPT_N + 4,
        "prompt_tokens_details": {"cached_tokens": 1},  # the BOS token of the chat prompt
    }
    assert (final["timings"]["cache_n"], final["timings"]["prompt_n"]) == (1, 5)


async def test_non_stream_replies_and_include_usage(
    emulator: LlamaServerEmulator, session: aiohttp.ClientSession
) -> None:
    # Key orders as the real b11669 answered (probed once, not recorded as fixtures).
    status, raw, resp = await _raw(
        session, emulator, "POST", "/v1/chat/completions", {**CHAT, "stream": False}
    )
    assert status == 200
    assert resp.headers["Content-Type"] == JSON_CT
    reply = json.loads(raw)
    assert list(reply) == [
        "choices",
        "created",
        "model",
        "system_fingerprint",
        "object",
        "usage",
        "id",
        "timings",
    ]
    assert reply["object"] == "chat.completion"
    assert reply["choices"] == [
        {
            "finish_reason": "length",
            "index": 0,
            "message": {"role": "assistant", "content": "Warm and ready to"},
        }
    ]
    assert list(reply["usage"]) == [
        "completion_tokens",
        "prompt_tokens",
        "total_tokens",
        "prompt_tokens_details",
    ]
    status, raw, _ = await _raw(
        session,
        emulator,
        "POST",
        "/v1/completions",
        {"model": "tiny", "prompt": QUESTION},
    )
    reply = json.loads(raw)
    assert list(reply) == [
        "choices",
        "created",
        "model",
        "system_fingerprint",
        "object",
        "usage",
        "id",
        "timings",
    ]
    choice = reply["choices"][0]
    assert choice == {
        "text": emulator.models["tiny"].reply,
        "index": 0,
        "logprobs": None,
        "finish_reason": "stop",
    }
    body = {**CHAT, "stream_options": {"include_usage": True}}
    frames = await _stream(session, emulator, "/v1/chat/completions", body)
    finish, usage = _frame_json(frames[-3]), _frame_json(frames[-2])
    assert "timings" not in finish
    assert finish["choices"][0]["finish_reason"] == "length"
    assert usage["choices"] == []
    assert list(usage)[-2:] == ["usage", "timings"]


async def test_prompt_cache_reuse_and_reset_on_unload(
    emulator: LlamaServerEmulator, session: aiohttp.ClientSession
) -> None:
    async def timings(body: dict[str, Any]) -> dict[str, Any]:
        frames = await _stream(session, emulator, "/v1/completions", body)
        result: dict[str, Any] = _frame_json(frames[-2])["timings"]
        return result

    first = await timings(COMPLETION)
    assert (first["cache_n"], first["prompt_n"]) == (0, COMPLETION_PROMPT_N)
    # The same prompt again: all but the last token come from the cache.
    again = await timings(COMPLETION)
    assert (again["cache_n"], again["prompt_n"]) == (COMPLETION_PROMPT_N - 1, 1)
    assert again["prompt_ms"] == 1 * 0.1
    # The cache holds the generated tokens too.
    generated = "".join(split_tokens(emulator.models["tiny"].reply)[:4])
    follow = await timings({**COMPLETION, "prompt": f"{QUESTION} {generated} more"})
    assert (follow["cache_n"], follow["prompt_n"]) == (COMPLETION_PROMPT_N + 4, 1)
    assert emulator.prompt_cache("tiny")[:2] == ["<s>", "Reply"]
    no_cache = await timings({**COMPLETION, "cache_prompt": False})
    assert no_cache["cache_n"] == 0
    status, _, _ = await _raw(session, emulator, "POST", "/models/unload", {"model": "tiny"})
    assert status == 200
    await emulator.unload("tiny")
    assert emulator.prompt_cache("tiny") == []
    reloaded = await timings(COMPLETION)
    assert (reloaded["cache_n"], reloaded["prompt_n"]) == (0, COMPLETION_PROMPT_N)


async def test_real_time_prefill_and_decode(socket_enabled: None) -> None:
    emu = LlamaServerEmulator(
        [EmulatedLlamaModel("m", load_seconds=0.05, prompt_ms_per_token=20.0, token_ms=30.0)]
    )
    await emu.start()
    try:
        await emu.load_by_other_client("m")
        async with aiohttp.ClientSession() as session:
            body = {**COMPLETION, "model": "m", "max_tokens": 3}
            started = time.monotonic()
            async with session.post(emu.url + "/v1/completions", json=body) as resp:
                first = await resp.content.readuntil(b"\n\n")
                ttft = time.monotonic() - started
                rest = await resp.read()
            total = time.monotonic() - started
    finally:
        await emu.stop()
    assert _frame_json(first.rstrip(b"\n"))["choices"][0]["text"] == "Warm"
    assert ttft >= COMPLETION_PROMPT_N * 0.020
    assert total >= COMPLETION_PROMPT_N * 0.020 + 2 * 0.030
    final = _frame_json(_frames(first + rest)[-2])
    timings = final["timings"]
    assert timings["prompt_ms"] == COMPLETION_PROMPT_N * 20.0
    assert timings["prompt_per_token_ms"] == 20.0
    assert timings["prompt_per_second"] == 50.0
    assert (timings["predicted_ms"], timings["predicted_per_token_ms"]) == (60.0, 30.0)


async def test_unload_cuts_a_running_stream(
    emulator: LlamaServerEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.models["tiny"].token_ms = 40.0
    await emulator.load_by_other_client("tiny")
    async with session.post(emulator.url + "/v1/completions", json=COMPLETION) as resp:
        await resp.content.readuntil(b"\n\n")
        await emulator.unload("tiny")
        rest = await resp.read()
    assert b"[DONE]" not in rest
    assert emulator.state("tiny") == "unloaded"
    assert emulator.exit_code("tiny") == 0


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("path", "body", "name"),
    [
        ("/models/unload", {"model": "big"}, "unload_not_running"),
        ("/models/unload", {"model": "nope"}, "unload_unknown"),
        ("/models/load", {"model": "nope"}, "load_unknown"),
        (
            "/v1/chat/completions",
            {"model": "nope", "stream": False, "max_tokens": 4, "messages": CHAT["messages"]},
            "chat_unknown_model",
        ),
    ],
)
async def test_error_replies_are_the_recorded_bytes(
    emulator: LlamaServerEmulator,
    session: aiohttp.ClientSession,
    path: str,
    body: dict[str, Any],
    name: str,
) -> None:
    status, raw, resp = await _raw(session, emulator, "POST", path, body)
    assert (status, raw) == (_fixture_status(f"{name}.status"), _fixture(f"{name}.json"))
    assert resp.headers["Content-Type"] == JSON_CT
    assert emulator.running_models() == []


async def test_other_errors(emulator: LlamaServerEmulator, session: aiohttp.ClientSession) -> None:
    def error(code: int, message: str, kind: str = "invalid_request_error") -> bytes:
        return json.dumps(
            {"error": {"code": code, "message": message, "type": kind}}, separators=(",", ":")
        ).encode()

    status, raw, _ = await _raw(session, emulator, "POST", "/v1/chat/completions", {})
    assert (status, raw) == (400, error(400, "model name is missing from the request"))
    status, raw, _ = await _raw(session, emulator, "GET", "/nope")
    assert (status, raw) == (404, _fixture("load_unknown.json"))  # httplib's File Not Found
    status, raw, _ = await _raw(session, emulator, "GET", "/models/load")
    assert status == 404
    async with session.post(emulator.url + "/models/load", data=b"xx") as resp:
        assert resp.status == 400
        message = (await resp.json())["error"]["message"]
    assert message.startswith("[json.exception.parse_error.101] parse error at line 1, column 1")
    await _raw(session, emulator, "POST", "/models/load", {"model": "tiny"})
    status, raw, _ = await _raw(session, emulator, "POST", "/models/load", {"model": "tiny"})
    assert (status, raw) == (400, error(400, "model is already running"))

    emu = LlamaServerEmulator([_tiny()], api_key="secret", autoload=False)
    await emu.start()
    try:
        status, raw, _ = await _raw(session, emu, "GET", "/props")
        assert (status, json.loads(raw)) == (
            401,
            {"error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}},
        )
        assert (await _raw(session, emu, "GET", "/models"))[0] == 200  # public
        headers = {"Authorization": "Bearer secret"}
        async with session.get(emu.url + "/props", headers=headers) as resp:
            assert (await resp.json())["models_autoload"] is False
        async with session.post(emu.url + "/v1/completions", json=COMPLETION, headers=headers) as r:
            assert (r.status, await r.read()) == (400, error(400, "model is not loaded"))
        async with session.post(
            emu.url + "/v1/completions?autoload=true", json=COMPLETION, headers=headers
        ) as resp:
            assert resp.status == 200
        assert emu.loaded_models() == ["tiny"]
    finally:
        await emu.stop()


async def test_failed_and_killed_loads(
    emulator: LlamaServerEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.set_failing("tiny", exit_code=3)
    async with SseReader(session, emulator.url) as sse:
        status, raw, _ = await _raw(
            session, emulator, "POST", "/v1/chat/completions", {**CHAT, "stream": False}
        )
        await sse.wait_for(_has("tiny", "unloaded"))
        events = sse.events()
    assert (status, json.loads(raw)) == (
        500,
        {
            "error": {
                "code": 500,
                "message": "model name=tiny failed to load",
                "type": "server_error",
            }
        },
    )
    assert events[-1] == {
        "model": "tiny",
        "event": "status_change",
        "data": {"status": "unloaded", "exit_code": 3},
    }
    tiny = (await _models(session, emulator))["data"][1]
    assert tiny["status"]["value"] == "unloaded"
    assert list(tiny["status"])[-2:] == ["exit_code", "failed"]
    assert (tiny["status"]["exit_code"], tiny["status"]["failed"]) == (3, True)
    assert "meta" not in tiny
    with pytest.raises(RuntimeError, match="failed to load"):
        await emulator.load_by_other_client("tiny")
    emulator.set_failing("tiny", False)
    await emulator.load_by_other_client("tiny")
    assert "failed" not in (await _models(session, emulator))["data"][1]["status"]

    # Unloading a model that is still loading kills it.
    await _raw(session, emulator, "POST", "/models/load", {"model": "big"})
    assert emulator.state("big") == "loading"
    status, raw, _ = await _raw(session, emulator, "POST", "/models/unload", {"model": "big"})
    assert (status, raw) == (200, _fixture("load_ok.json"))
    assert (emulator.state("big"), emulator.exit_code("big")) == ("unloaded", KILLED_EXIT_CODE)
    emulator.crash("big")  # not running: nothing happens
    await emulator.load_by_other_client("tiny")
    emulator.crash("tiny", exit_code=139)
    assert (emulator.state("tiny"), emulator.exit_code("tiny")) == ("unloaded", 139)


async def test_lru_eviction_with_two_slots(socket_enabled: None) -> None:
    emu = LlamaServerEmulator(
        [EmulatedLlamaModel(n, load_seconds=0.02, token_ms=0.0) for n in ("a", "b", "c")],
        models_max=2,
    )
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            assert (await _get_json(session, emu, "/props"))["max_instances"] == 2
            await emu.load_by_other_client("a")
            await emu.load_by_other_client("b")
            body = {**COMPLETION, "model": "a", "stream": False}
            assert (await _raw(session, emu, "POST", "/v1/completions", body))[0] == 200
            await emu.load_by_other_client("c")  # b is now the least recently used
            assert emu.loaded_models() == ["a", "c"]
            # GET /props?model=X starts X without making it recently used.
            props = await _get_json(session, emu, "/props?model=b")
            assert props["model_alias"] == "b"
            assert emu.loaded_models() == ["b", "c"]
            slots = await _get_json(session, emu, "/slots?model=b")
            assert slots[0]["n_ctx"] == 512
    finally:
        await emu.stop()


# ------------------------------------------------------------------- test controls


async def test_inject_faults(emulator: LlamaServerEmulator, session: aiohttp.ClientSession) -> None:
    emulator.inject("/models", status=503, body='{"error":"busy"}', times=2)
    assert (await _raw(session, emulator, "GET", "/models"))[:2] == (503, b'{"error":"busy"}')
    assert (await _raw(session, emulator, "GET", "/models"))[0] == 503
    assert (await _raw(session, emulator, "GET", "/models"))[0] == 200
    emulator.inject("/props", status=500)
    status, raw, _ = await _raw(session, emulator, "GET", "/props")
    assert (status, json.loads(raw)["error"]["type"]) == (500, "server_error")
    emulator.inject("/health", delay=0.1)
    started = time.monotonic()
    assert (await _raw(session, emulator, "GET", "/health"))[0] == 200
    assert time.monotonic() - started >= 0.1
    emulator.inject("*", drop=True, method="POST")
    with pytest.raises(aiohttp.ClientError):
        await _raw(session, emulator, "POST", "/models/load", {"model": "tiny"})
    assert emulator.state("tiny") == "unloaded"
    emulator.inject("/health", status=500, times=None)
    emulator.clear_faults()
    assert (await _raw(session, emulator, "GET", "/health"))[0] == 200
    assert emulator.counts["GET /models"] == 3
    assert emulator.counts["POST /models/load"] == 1


async def test_stall_cut_restart_and_outage(
    emulator: LlamaServerEmulator, session: aiohttp.ClientSession
) -> None:
    async with SseReader(session, emulator.url) as sse:
        await asyncio.sleep(0.01)
        assert emulator.sse_open == 1
        emulator.stall_sse()
        await emulator.load_by_other_client("tiny")
        assert sse.raw == b""
        assert [e["event"] for e in emulator.sse_events][-1] == "status_change"
        emulator.stall_sse(False)
        await emulator.unload("tiny")
        await sse.wait_for(_has("tiny", "unloaded"))
        assert len(sse.events()) == 1
        assert emulator.cut_sse() == 1
        await asyncio.wait_for(sse.ended.wait(), 1)
    assert _frames(bytes(sse.raw))  # ended cleanly after whole frames
    assert emulator.sse_open == 0

    await emulator.load_by_other_client("tiny")
    url = emulator.url
    async with SseReader(session, emulator.url) as sse:
        await asyncio.sleep(0.01)
        events_before = len(emulator.sse_events)
        await emulator.restart(build_info="b12000-Debian")
        await asyncio.wait_for(sse.ended.wait(), 1)
    assert emulator.url == url
    assert emulator.running_models() == []
    assert emulator.port_of("tiny") == 0
    assert len(emulator.sse_events) == events_before  # no events for the restart
    assert (await _get_json(session, emulator, "/props"))["build_info"] == "b12000-Debian"

    await emulator.load_by_other_client("tiny")
    async with emulator.outage():
        with pytest.raises(aiohttp.ClientConnectorError):
            await _raw(session, emulator, "GET", "/health")
    assert emulator.loaded_models() == ["tiny"]  # an outage keeps the children
    await emulator.stop()
    with pytest.raises(aiohttp.ClientConnectorError):
        await _raw(session, emulator, "GET", "/health")
    assert emulator.loaded_models() == []
    assert await emulator.start() == url
    assert (await _raw(session, emulator, "GET", "/health"))[0] == 200
