"""The limits a server's reply is read within, at their edges, over HTTP on loopback.

Each limit is stated as the figure the module's docstring gives (8 MiB a reply, 4 MiB a
stream line, a day of nanoseconds, 2**31 - 1 tokens, 2**53 bytes, 256 characters, the
years 1970 to 9000), not read back from the module: a test that used the module's own
constant would pass whatever the constant said. The figure itself is read; one more is
refused.
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
import json

import aiohttp
from aiohttp import web
import pytest

from custom_components.llm_warmth.core.backends.errors import LlmServerResponseError
from custom_components.llm_warmth.core.backends.ollama import OllamaClient
from custom_components.llm_warmth.core.backends.replies import (
    iter_lines,
    parse_timestamp,
    read_body,
    valid_name,
)

from .conftest import LLAMA
from .ollama_emulator import NDJSON, OllamaEmulator

MIB = 1024 * 1024
DAY_NS = 86_400 * 1_000_000_000

type Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
async def serve(socket_enabled: None) -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    """Serve one handler on 127.0.0.1; return its URL."""
    runners: list[web.AppRunner] = []

    async def start(handler: Handler) -> str:
        app = web.Application()
        app.router.add_get("/reply", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}/reply"

    yield start
    for runner in runners:
        await runner.cleanup()


def _padded(size: int) -> bytes:
    """A JSON object of exactly ``size`` bytes."""
    shell = b'{"pad": ""}'
    return b'{"pad": "' + b"x" * (size - len(shell)) + b'"}'


@pytest.mark.parametrize(("size", "read"), [(8 * MIB, True), (8 * MIB + 1, False)])
async def test_a_reply_of_8_mib_is_read_and_one_byte_more_is_refused(
    serve: Callable[[Handler], Awaitable[str]], size: int, read: bool
) -> None:
    body = _padded(size)

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="application/json")

    url = await serve(handler)
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        if read:
            assert await read_body(response, "/reply") == body
        else:
            with pytest.raises(LlmServerResponseError, match="larger than"):
                await read_body(response, "/reply")


async def _lines_of(url: str) -> list[int]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return [len(line) async for line in iter_lines(response, "/reply")]


@pytest.mark.parametrize("newline_apart", [False, True])
async def test_a_stream_line_of_4_mib_is_read(
    serve: Callable[[Handler], Awaitable[str]], newline_apart: bool
) -> None:
    """Whole, and with its newline arriving after the line's 4 MiB are all in."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"x" * (4 * MIB) + (b"" if newline_apart else b"\n"))
        if newline_apart:
            await asyncio.sleep(0.2)  # the client has read the 4 MiB before the newline
            await response.write(b"\n")
        await response.write(b"end")
        return response

    assert await _lines_of(await serve(handler)) == [4 * MIB, 3]


async def test_a_stream_line_one_byte_over_4_mib_is_refused(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"x" * (4 * MIB + 1) + b"\n")
        return response

    with pytest.raises(LlmServerResponseError, match="stream line longer than"):
        await _lines_of(await serve(handler))


@pytest.fixture
async def client(emulator: OllamaEmulator) -> AsyncIterator[OllamaClient]:
    async with aiohttp.ClientSession() as session:
        yield OllamaClient(session, emulator.url, request_timeout=5)


def _final_chunk(**metrics: int) -> str:
    return json.dumps({"message": {"content": "Hi"}, "done": True, **metrics}) + "\n"


@pytest.mark.parametrize(
    ("metrics", "read"),
    [
        ({"load_duration": DAY_NS}, True),
        ({"load_duration": DAY_NS + 1}, False),
        ({"prompt_eval_count": 2**31 - 1}, True),
        ({"prompt_eval_count": 2**31}, False),
    ],
)
async def test_a_day_of_nanoseconds_and_2_31_tokens_less_one_are_the_largest_figures(
    client: OllamaClient, emulator: OllamaEmulator, metrics: dict[str, int], read: bool
) -> None:
    emulator.inject("/api/chat", status=200, body=_final_chunk(**metrics), content_type=NDJSON)
    if not read:
        with pytest.raises(LlmServerResponseError, match="unexpected final chunk"):
            await client.timed_generation("chat", LLAMA, "hi")
        return
    timed = await client.timed_generation("chat", LLAMA, "hi")
    if "load_duration" in metrics:
        assert timed.load_duration_ns == DAY_NS
    else:
        assert timed.prompt_eval_count == 2**31 - 1


@pytest.mark.parametrize(("size", "read"), [(2**53, True), (2**53 + 1, False)])
async def test_2_53_bytes_is_the_largest_model_size(
    client: OllamaClient, emulator: OllamaEmulator, size: int, read: bool
) -> None:
    model = {"name": LLAMA, "size": size, "size_vram": 0, "expires_at": "2026-11-29T08:05:00Z"}
    emulator.inject("/api/ps", status=200, body=json.dumps({"models": [model]}))
    if read:
        (resident,) = await client.running_models()
        assert resident.size == 2**53
    else:
        with pytest.raises(LlmServerResponseError, match="unexpected model entry"):
            await client.running_models()


def test_a_name_is_one_to_256_characters() -> None:
    assert valid_name("x" * 256) == "x" * 256
    assert valid_name("x") == "x"
    assert valid_name("x" * 257) is None
    assert valid_name("") is None


@pytest.mark.parametrize(
    "text",
    ["1970-01-01T00:00:00Z", "9000-12-31T23:59:59Z", "2026-01-01T00:00:00." + "1" * 43 + "Z"],
)
def test_a_time_from_1970_to_9000_in_at_most_64_characters_is_read(text: str) -> None:
    assert len(text) <= 64
    parsed = parse_timestamp(text)
    assert parsed is not None
    assert parsed.isoformat()[:19] == text[:19]


@pytest.mark.parametrize(
    "text",
    [
        "1969-12-31T23:59:59Z",
        "9001-01-01T00:00:00Z",
        "0002-01-01T00:00:00Z",  # not the Go zero time (year 1): a time out of range
        "2026-01-01T00:00:00." + "1" * 44 + "Z",  # 65 characters
    ],
)
def test_a_time_outside_those_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        parse_timestamp(text)
