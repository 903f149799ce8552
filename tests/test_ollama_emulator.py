"""Tests for the loopback Ollama emulator (driven over real HTTP)."""

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
import json
import math
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from .ollama_emulator import (
    GO_ZERO_TIME,
    MAX_QUEUE_ERROR,
    EmulatedModel,
    FakeClock,
    OllamaEmulator,
    format_go_time,
    parse_go_duration,
    parse_keep_alive,
    split_tokens,
)

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


@pytest.fixture
async def emulator(socket_enabled: None) -> AsyncIterator[OllamaEmulator]:
    """A started emulator with a fast model ``tiny:latest`` and a slow-loading ``slow:7b``."""
    emu = OllamaEmulator()
    emu.add_model(EmulatedModel("tiny:latest", size=1_000_000))
    emu.add_model(EmulatedModel("slow:7b", size=5_000_000, load_delay=0.3))
    await emu.start()
    yield emu
    await emu.stop()


@pytest.fixture
async def session(socket_enabled: None) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


async def _post(
    session: aiohttp.ClientSession, emu: OllamaEmulator, path: str, body: dict[str, Any]
) -> tuple[int, Any]:
    async with session.post(emu.url + path, json=body) as resp:
        return resp.status, await resp.json(content_type=None)


async def _ps(session: aiohttp.ClientSession, emu: OllamaEmulator) -> list[dict[str, Any]]:
    async with session.get(emu.url + "/api/ps") as resp:
        assert resp.status == 200
        models: list[dict[str, Any]] = (await resp.json())["models"]
        return models


async def _ndjson(resp: aiohttp.ClientResponse) -> list[dict[str, Any]]:
    return [json.loads(line) async for line in resp.content if line.strip()]


async def _stream(
    session: aiohttp.ClientSession, emu: OllamaEmulator, path: str, body: dict[str, Any]
) -> list[dict[str, Any]]:
    async with session.post(emu.url + path, json=body) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/x-ndjson"
        return await _ndjson(resp)


def _at(seconds: float) -> str:
    return format_go_time(T0 + timedelta(seconds=seconds))


# ----------------------------------------------------------------- pure helpers


def test_helpers() -> None:
    assert parse_go_duration("1h30m") == 5400
    assert parse_go_duration("1.5s") == 1.5
    assert parse_go_duration("0") == 0
    assert parse_go_duration("-1m") == -60
    assert parse_keep_alive(None) is None
    assert parse_keep_alive(300) == 300
    assert parse_keep_alive("10m") == 600
    assert parse_keep_alive(-1) == math.inf
    assert parse_keep_alive("-1m") == math.inf
    assert parse_keep_alive(0) == 0
    with pytest.raises(ValueError, match="missing unit"):
        parse_keep_alive("300")
    with pytest.raises(ValueError, match="invalid duration"):
        parse_keep_alive("soon")
    assert split_tokens("Hello there friend") == ["Hello", " there", " friend"]
    assert split_tokens("one") == ["one"]
    assert format_go_time(None) == GO_ZERO_TIME
    assert _at(300.123456) == "2026-11-29T08:05:00.123456000Z"
    clock = FakeClock()
    clock.advance(90)
    assert clock.now() == T0 + timedelta(seconds=90)
    clock.set(datetime(2027, 1, 1, tzinfo=UTC))
    assert clock.now().year == 2027


# ------------------------------------------------------------ basic endpoints


async def test_root_version_and_recording(
    emulator: OllamaEmulator, session: aiohttp.ClientSession
) -> None:
    async with session.get(emulator.url + "/") as resp:
        assert await resp.text() == "Ollama is running"
    async with session.get(emulator.url + "/api/version") as resp:
        assert await resp.json() == {"version": "0.12.6"}
    emulator.version = "0.13.1"
    async with session.get(emulator.url + "/api/version") as resp:
        assert await resp.json() == {"version": "0.13.1"}
    async with session.get(emulator.url + "/api/nope") as resp:
        assert resp.status == 404
    await _post(session, emulator, "/api/show", {"model": "tiny"})
    last = emulator.requests[-1]
    assert (last.method, last.path, last.json) == ("POST", "/api/show", {"model": "tiny"})
    assert last.headers["Content-Type"] == "application/json"
    assert [r.path for r in emulator.requests[:2]] == ["/", "/api/version"]


async def test_tags(emulator: OllamaEmulator, session: aiohttp.ClientSession) -> None:
    async with session.head(emulator.url + "/api/tags") as resp:
        assert resp.status == 200
    async with session.get(emulator.url + "/api/tags") as resp:
        models = (await resp.json())["models"]
    tiny = next(m for m in models if m["name"] == "tiny:latest")
    assert tiny == {
        "name": "tiny:latest",
        "model": "tiny:latest",
        "modified_at": "2026-11-01T00:00:00.000000000Z",
        "size": 700_000,
        "digest": emulator.models["tiny:latest"].digest,
        "details": {
            "parent_model": "",
            "format": "gguf",
            "family": "llama",
            "families": ["llama"],
            "parameter_size": "3.2B",
            "quantization_level": "Q4_K_M",
        },
    }
    assert len(tiny["digest"]) == 64
    emulator.remove_model("tiny")
    async with session.get(emulator.url + "/api/tags") as resp:
        assert [m["name"] for m in (await resp.json())["models"]] == ["slow:7b"]


async def test_show_and_404(emulator: OllamaEmulator, session: aiohttp.ClientSession) -> None:
    status, body = await _post(session, emulator, "/api/show", {"model": "tiny"})
    assert status == 200
    assert body["model_info"]["llama.context_length"] == 8192
    assert body["model_info"]["general.architecture"] == "llama"
    assert body["capabilities"] == ["completion"]
    assert body["modelfile"].startswith('# Modelfile generated by "ollama show"\nFROM /models/')
    assert body["details"]["family"] == "llama"
    status, body = await _post(session, emulator, "/api/show", {"model": "ghost"})
    assert (status, body) == (404, {"error": "model 'ghost' not found"})
    status, body = await _post(session, emulator, "/api/generate", {"model": "ghost"})
    assert (status, body) == (404, {"error": 'model "ghost" not found, try pulling it first'})


# ------------------------------------------------------------------- /api/ps


async def test_ps_zero_time_while_loading(
    emulator: OllamaEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.hold_loads()  # the load lasts until finish_loads()
    pending = asyncio.create_task(
        session.post(emulator.url + "/api/generate", json={"model": "slow:7b"})
    )
    await emulator.wait_loading("slow:7b")
    await asyncio.sleep(0.1)  # time for headers to arrive, had any been sent
    assert not pending.done()  # no headers are sent while the model loads
    (entry,) = await _ps(session, emulator)
    assert entry["name"] == "slow:7b"
    assert entry["expires_at"] == GO_ZERO_TIME
    assert entry["context_length"] == 2048
    assert (entry["size"], entry["size_vram"]) == (5_000_000, 5_000_000)
    assert emulator.loaded["slow:7b"].loading
    emulator.finish_loads()
    async with await pending as resp:
        assert resp.headers["Content-Type"].startswith("application/json")
        body = await resp.json()
    assert (body["done"], body["done_reason"], body["response"]) == (True, "load", "")
    (entry,) = await _ps(session, emulator)
    assert entry["expires_at"] == _at(300)


async def test_ps_legacy_floating_expiry(socket_enabled: None) -> None:
    emu = OllamaEmulator(version="0.9.3", legacy_expires=True, report_context_length=False)
    emu.add_model(EmulatedModel("slow:7b", size=10))
    emu.hold_loads()  # the load lasts until finish_loads()
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            body = {"model": "slow:7b", "keep_alive": "10m"}
            pending = asyncio.create_task(_post(session, emu, "/api/generate", body))
            await emu.wait_loading("slow:7b")
            (entry,) = await _ps(session, emu)
            assert entry["expires_at"] == _at(600)
            assert "context_length" not in entry
            emu.clock.advance(60)
            (entry,) = await _ps(session, emu)
            assert entry["expires_at"] == _at(660)  # floats with the clock while loading
            emu.finish_loads()
            assert (await pending)[1]["done_reason"] == "load"
            emu.clock.advance(60)
            (entry,) = await _ps(session, emu)
            assert entry["expires_at"] == _at(660)  # fixed once the request finished
    finally:
        await emu.stop()


CURRENT = Path(__file__).parent / "fixtures" / "ollama_current"


def _recorded(name: str) -> Any:
    return json.loads((CURRENT / name).read_bytes())


async def test_from_0_30_the_emulator_follows_the_real_0_34_4(socket_enabled: None) -> None:
    """A load polled as on the real server: not listed, then listed with the recorded keys."""
    emu = OllamaEmulator(version="0.34.4")
    emu.add_model(EmulatedModel("slow:7b", size=10))
    emu.hold_loads()  # the load lasts until finish_loads()
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            body = {"model": "slow:7b", "prompt": "hi", "stream": False, "keep_alive": "10m"}
            pending = asyncio.create_task(_post(session, emu, "/api/generate", body))
            await emu.wait_loading("slow:7b")
            assert emu.loaded["slow:7b"].loading
            # ps_during_load.json: the real server lists nothing while it loads
            assert await _ps(session, emu) == _recorded("ps_during_load.json")["models"]
            emu.finish_loads()
            _, reply = await pending
            (entry,) = await _ps(session, emu)
    finally:
        await emu.stop()
    recorded_entry = _recorded("ps_after_load.json")["models"][0]
    assert entry.keys() == recorded_entry.keys()
    assert entry["expires_at"] == _at(600)
    recorded_reply = _recorded("generate_cold_big.json")
    assert reply.keys() - {"context"} == recorded_reply.keys() - {"context"}
    assert reply["prompt_eval_cached_count"] == 0


async def test_ps_sorted_by_expiry_and_forever(
    emulator: OllamaEmulator, session: aiohttp.ClientSession
) -> None:
    await _post(session, emulator, "/api/generate", {"model": "tiny", "keep_alive": -1})
    await _post(session, emulator, "/api/generate", {"model": "slow:7b", "keep_alive": "1m"})
    entries = await _ps(session, emulator)
    assert [e["name"] for e in entries] == ["tiny:latest", "slow:7b"]
    forever = datetime.fromisoformat(entries[0]["expires_at"])
    assert forever - T0 == timedelta(days=292 * 365)
    assert entries[1]["expires_at"] == _at(60)


# ------------------------------------------------------------ load / unload


async def test_preload_and_unload(emulator: OllamaEmulator, session: aiohttp.ClientSession) -> None:
    status, body = await _post(session, emulator, "/api/chat", {"model": "tiny", "messages": []})
    assert status == 200
    assert body["message"] == {"role": "assistant", "content": ""}
    assert (body["model"], body["done"], body["done_reason"]) == ("tiny", True, "load")
    assert "tiny:latest" in emulator.loaded
    unload = {"model": "tiny", "keep_alive": 0}
    status, body = await _post(session, emulator, "/api/generate", unload)
    assert (status, body["done_reason"], body["response"]) == (200, "unload", "")
    assert await _ps(session, emulator) == []
    # Unloading a model that is not loaded does not load it.
    started = asyncio.get_running_loop().time()
    status, body = await _post(session, emulator, "/api/generate", {**unload, "model": "slow:7b"})
    assert body["done_reason"] == "unload"
    assert asyncio.get_running_loop().time() - started < 0.25
    assert emulator.loaded == {}
    # A real prompt with keep_alive 0 unloads right after the response.
    status, body = await _post(
        session, emulator, "/api/generate", {**unload, "prompt": "hi", "stream": False}
    )
    assert (status, body["response"]) == (200, "Hello there friend")
    assert emulator.loaded == {}


async def test_client_disconnect_aborts_load(
    emulator: OllamaEmulator, session: aiohttp.ClientSession
) -> None:
    with pytest.raises(TimeoutError):
        async with session.post(
            emulator.url + "/api/generate",
            json={"model": "slow:7b"},
            timeout=aiohttp.ClientTimeout(total=0.1),
        ):
            pass
    await asyncio.sleep(0.05)
    assert await _ps(session, emulator) == []


# ---------------------------------------------------------------- streaming


async def test_streaming_generate_final_fields(socket_enabled: None) -> None:
    emu = OllamaEmulator()
    emu.add_model(
        EmulatedModel(
            "m:1b", size=10, load_delay=0.1, prefill_delay=0.05, token_delay=0.02, reply="A b c"
        )
    )
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            chunks = await _stream(
                session, emu, "/api/generate", {"model": "m:1b", "prompt": "why is the sky blue"}
            )
    finally:
        await emu.stop()
    assert [c["response"] for c in chunks] == ["A", " b", " c", ""]
    assert all(c["done"] is False for c in chunks[:-1])
    assert all("total_duration" not in c for c in chunks[:-1])
    final = chunks[-1]
    assert (final["done"], final["done_reason"], final["model"]) == (True, "stop", "m:1b")
    assert final["prompt_eval_count"] == 10
    assert final["eval_count"] == 3
    for key in ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration"):
        assert isinstance(final[key], int)
    assert final["load_duration"] >= 100_000_000
    assert final["prompt_eval_duration"] >= 50_000_000
    assert final["eval_duration"] >= 60_000_000
    assert final["total_duration"] >= (
        final["load_duration"] + final["prompt_eval_duration"] + final["eval_duration"]
    )
    assert final["created_at"].endswith("Z")


async def test_chat_thinking_one_token_and_non_stream(
    emulator: OllamaEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.add_model(EmulatedModel("qwen3:4b", size=10, thinking="Let me see", reply="Yes"))
    body = {"model": "qwen3:4b", "messages": [{"role": "user", "content": "ok?"}], "think": True}
    chunks = await _stream(session, emulator, "/api/chat", body)
    assert [c["message"].get("thinking") for c in chunks] == ["Let", " me", " see", None]
    assert [c["message"]["content"] for c in chunks] == ["", "", "", "Yes"]
    assert chunks[-1]["done"] is True
    assert chunks[-1]["eval_count"] == 4
    # One-token reply without thinking: a single chunk carrying the token.
    chunks = await _stream(session, emulator, "/api/chat", {**body, "think": False})
    assert len(chunks) == 1
    assert (chunks[0]["message"]["content"], chunks[0]["done_reason"]) == ("Yes", "stop")
    status, reply = await _post(
        session, emulator, "/api/generate", {"model": "tiny", "prompt": "hi", "stream": False}
    )
    assert (status, reply["response"], reply["done"], reply["eval_count"]) == (
        200,
        "Hello there friend",
        True,
        3,
    )


# ---------------------------------------------------------------- keep_alive


async def test_keep_alive_expiry_with_clock(
    emulator: OllamaEmulator, session: aiohttp.ClientSession
) -> None:
    await _post(session, emulator, "/api/generate", {"model": "tiny", "keep_alive": "10s"})
    (entry,) = await _ps(session, emulator)
    assert entry["expires_at"] == _at(10)
    emulator.clock.advance(9.5)
    assert len(await _ps(session, emulator)) == 1
    emulator.clock.advance(0.5)
    assert await _ps(session, emulator) == []
    status, body = await _post(session, emulator, "/api/generate", {"model": "tiny"})
    assert (status, body["done_reason"]) == (200, "load")
    body = {"model": "tiny", "keep_alive": "x"}
    status, body = await _post(session, emulator, "/api/generate", body)
    assert status == 400
    assert "invalid duration" in body["error"]


async def test_keep_alive_last_writer_wins(
    emulator: OllamaEmulator, session: aiohttp.ClientSession
) -> None:
    await _post(session, emulator, "/api/generate", {"model": "tiny", "keep_alive": 60})
    emulator.clock.advance(10)
    body = {"model": "tiny", "prompt": "hi", "stream": False}
    assert (await _post(session, emulator, "/api/generate", body))[0] == 200
    assert emulator.loaded["tiny:latest"].keep_alive == 60  # omitted: value is kept
    (entry,) = await _ps(session, emulator)
    assert entry["expires_at"] == _at(70)
    await _post(session, emulator, "/api/chat", {"model": "tiny", "keep_alive": "2m"})
    (entry,) = await _ps(session, emulator)
    assert entry["expires_at"] == _at(130)
    # First load without keep_alive uses the server default (5m).
    await _post(session, emulator, "/api/generate", {"model": "slow:7b"})
    assert emulator.loaded["slow:7b"].keep_alive == 300


async def test_num_ctx_mismatch_reloads(
    emulator: OllamaEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.models["slow:7b"].load_delay = 0.1

    async def gen(num_ctx: int) -> dict[str, Any]:
        body = {
            "model": "slow:7b",
            "prompt": "hi",
            "stream": False,
            "options": {"num_ctx": num_ctx},
        }
        reply: dict[str, Any] = (await _post(session, emulator, "/api/generate", body))[1]
        return reply

    first = (await gen(8192))["load_duration"]
    assert first >= 100_000_000
    # Same num_ctx: no reload, the load stage is a small part of the first one.
    assert (await gen(8192))["load_duration"] * 2 < first
    assert (await _ps(session, emulator))[0]["context_length"] == 8192
    assert (await gen(4096))["load_duration"] >= 100_000_000
    assert (await _ps(session, emulator))[0]["context_length"] == 4096


# ---------------------------------------------------------------- scheduler


async def test_vram_budget_eviction_and_spill(socket_enabled: None) -> None:
    emu = OllamaEmulator(vram_budget=10_000)
    for name, size in (("a", 4000), ("b", 4000), ("c", 5000), ("huge", 25_000)):
        emu.add_model(EmulatedModel(f"{name}:latest", size=size))
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            await _post(session, emu, "/api/generate", {"model": "b", "keep_alive": -1})
            await _post(session, emu, "/api/generate", {"model": "a", "keep_alive": "1h"})
            await _post(session, emu, "/api/generate", {"model": "c"})
            # "c" did not fit next to a+b: "a" (shorter keep_alive than "b") was evicted.
            assert sorted(emu.loaded) == ["b:latest", "c:latest"]
            await _post(session, emu, "/api/generate", {"model": "huge"})
            (entry,) = await _ps(session, emu)
            assert (entry["name"], entry["size"], entry["size_vram"]) == (
                "huge:latest",
                25_000,
                10_000,
            )
    finally:
        await emu.stop()


async def test_queue_fifo_and_503(socket_enabled: None) -> None:
    emu = OllamaEmulator(max_queue=1)
    emu.add_model(EmulatedModel("slow:7b", size=10, load_delay=0.2))
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            body = {"model": "slow:7b", "prompt": "hi", "stream": False}
            first = asyncio.create_task(_post(session, emu, "/api/generate", body))
            await asyncio.sleep(0.05)
            second = asyncio.create_task(_post(session, emu, "/api/generate", body))
            await asyncio.sleep(0.05)
            status, err = await _post(session, emu, "/api/generate", body)
            assert (status, err) == (503, {"error": MAX_QUEUE_ERROR})
            assert not first.done()
            (s1, r1), (s2, r2) = await asyncio.gather(first, second)
            assert (s1, s2) == (200, 200)
            # The queued request waited for the first one: its load_duration includes the wait.
            assert r1["load_duration"] >= 200_000_000
            assert r2["load_duration"] >= 100_000_000
    finally:
        await emu.stop()


async def test_auth(socket_enabled: None) -> None:
    emu = OllamaEmulator(api_key="s3cret")
    emu.add_model(EmulatedModel("tiny", size=10))
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(emu.url + "/api/tags") as resp:
                assert (resp.status, await resp.json()) == (401, {"error": "unauthorized"})
            headers = {"Authorization": "Bearer wrong"}
            async with session.get(emu.url + "/api/ps", headers=headers) as resp:
                assert resp.status == 401
            headers = {"Authorization": "Bearer s3cret"}
            async with session.get(emu.url + "/api/tags", headers=headers) as resp:
                assert resp.status == 200
                assert (await resp.json())["models"][0]["name"] == "tiny"
            async with session.get(emu.url + "/") as resp:
                assert resp.status == 200
    finally:
        await emu.stop()


# -------------------------------------------------------------------- faults


async def test_http_faults(emulator: OllamaEmulator, session: aiohttp.ClientSession) -> None:
    emulator.inject("/api/ps", status=500, body='{"error":"boom"}')
    assert (await _post(session, emulator, "/api/show", {"model": "tiny"}))[0] == 200
    async with session.get(emulator.url + "/api/ps") as resp:
        assert (resp.status, await resp.json()) == (500, {"error": "boom"})
    assert await _ps(session, emulator) == []  # times=1: back to normal

    emulator.inject("/api/version", delay=0.2)
    with pytest.raises(TimeoutError):
        async with session.get(
            emulator.url + "/api/version", timeout=aiohttp.ClientTimeout(total=0.05)
        ):
            pass

    emulator.inject("/api/tags", drop=True, times=None)
    for _ in range(2):
        with pytest.raises((aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)):
            async with session.get(emulator.url + "/api/tags"):
                pass
    emulator.clear_faults()
    async with session.get(emulator.url + "/api/tags") as resp:
        assert resp.status == 200

    emulator.inject("*", status=502, body="bad gateway", content_type="text/plain", method="GET")
    async with session.get(emulator.url + "/") as resp:
        assert (resp.status, await resp.text()) == (502, "bad gateway")


async def test_stream_fault_error_line(
    emulator: OllamaEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.inject_stream_fault(kind="error_line", after_chunks=2, message="CUDA error")
    chunks = await _stream(session, emulator, "/api/generate", {"model": "tiny", "prompt": "x"})
    assert chunks == [
        {"model": "tiny", "created_at": _at(0), "response": "Hello", "done": False},
        {"model": "tiny", "created_at": _at(0), "response": " there", "done": False},
        {"error": "CUDA error"},
    ]
    chunks = await _stream(session, emulator, "/api/generate", {"model": "tiny", "prompt": "x"})
    assert chunks[-1]["done"] is True


async def test_stream_fault_drop(emulator: OllamaEmulator, session: aiohttp.ClientSession) -> None:
    emulator.inject_stream_fault(kind="drop", after_chunks=1)
    received: list[bytes] = []

    async def consume() -> None:
        async with session.post(
            emulator.url + "/api/chat",
            json={"model": "tiny", "messages": [{"role": "user", "content": "x"}]},
        ) as resp:
            assert resp.status == 200
            received.extend([line async for line in resp.content])

    with pytest.raises(aiohttp.ClientPayloadError):
        await consume()
    assert len(received) <= 1
    # The runner survives the dropped stream.
    assert emulator.loaded["tiny:latest"].busy == 0


async def test_stream_fault_hang_releases_on_disconnect(
    emulator: OllamaEmulator, session: aiohttp.ClientSession
) -> None:
    emulator.inject_stream_fault(kind="hang", after_chunks=1)
    lines: list[bytes] = []
    with pytest.raises(TimeoutError):
        async with session.post(
            emulator.url + "/api/generate",
            json={"model": "tiny", "prompt": "x"},
            timeout=aiohttp.ClientTimeout(total=0.3),
        ) as resp:
            lines.extend([line async for line in resp.content])
    assert emulator.loaded["tiny:latest"].busy in (0, 1)
    # Client gave up; the scheduler is free again for the next request.
    status, body = await _post(
        session, emulator, "/api/generate", {"model": "tiny", "prompt": "x", "stream": False}
    )
    assert (status, body["done"]) == (200, True)


async def test_stream_fault_hang_until_stop(socket_enabled: None) -> None:
    emu = OllamaEmulator()
    emu.add_model(EmulatedModel("tiny", size=10))
    await emu.start()
    emu.inject_stream_fault(kind="hang", after_chunks=0)
    async with aiohttp.ClientSession() as session:
        pending = asyncio.create_task(
            session.post(emu.url + "/api/generate", json={"model": "tiny", "prompt": "x"})
        )
        await asyncio.sleep(0.1)
        assert not pending.done()
        await emu.stop()
        with pytest.raises((aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)):
            await pending


# ------------------------------------------------------------------- restart


async def test_restart_same_port(emulator: OllamaEmulator, session: aiohttp.ClientSession) -> None:
    url = emulator.url
    await _post(session, emulator, "/api/generate", {"model": "tiny"})
    assert len(await _ps(session, emulator)) == 1
    await emulator.restart(version="0.13.0")
    assert emulator.url == url
    assert await _ps(session, emulator) == []
    async with session.get(url + "/api/version") as resp:
        assert await resp.json() == {"version": "0.13.0"}
    await emulator.stop()
    with pytest.raises(aiohttp.ClientConnectorError):
        async with session.get(url + "/api/version"):
            pass
    assert await emulator.start() == url
