"""The event stream a timed request watches (``core.backends.events.StateWatch``).

A small SSE server on loopback: the watch must read the stream's current state (as far as
``until`` asks) before the request it watches is sent, and say when it could not.
"""

import asyncio
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web
import pytest

from custom_components.llm_warmth.core.backends.errors import LlmServerError
from custom_components.llm_warmth.core.backends.events import StateWatch
from custom_components.llm_warmth.core.backends.http import HttpTransport


def _states(frame: object) -> list[tuple[str, str]]:
    return [(str(frame["model"]), str(frame["state"]))] if isinstance(frame, dict) else []


def _transport(session: aiohttp.ClientSession, url: str) -> HttpTransport:
    return HttpTransport(
        session, url, api_key=None, timeout=5, error_for_status=lambda *_: LlmServerError("")
    )


@pytest.fixture
async def stream(socket_enabled: None) -> AsyncIterator[tuple[str, asyncio.Event]]:
    """An SSE stream: one model's state now, a pause, a second frame, then silence."""
    finish = asyncio.Event()

    async def events(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b'data: {"model": "m", "state": "loading"}\n\n')
        await asyncio.sleep(0.3)
        await response.write(b'data: {"model": "m", "state": "loaded"}\n\n')
        await finish.wait()
        return response

    app = web.Application()
    app.router.add_get("/events", events)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", finish
    finish.set()
    await runner.cleanup()


async def test_start_returns_once_the_frames_so_far_satisfy_until(
    stream: tuple[str, asyncio.Event],
) -> None:
    """``until`` asks for two frames: start returns after the second, not at the first."""
    url, _finish = stream
    async with aiohttp.ClientSession() as session:
        watch = StateWatch("m", "loaded", _states)
        await watch.start(_transport(session, url), "/events", lambda f: len(f) >= 2, timeout=5)
        assert len(watch.frames) == 2
        assert watch.ready_ns is not None  # the second frame said "loaded"
        assert watch.trustworthy
        await watch.stop()


async def test_without_until_start_returns_at_the_connection(
    stream: tuple[str, asyncio.Event],
) -> None:
    url, _finish = stream
    async with aiohttp.ClientSession() as session:
        watch = StateWatch("m", "loaded", _states)
        await watch.start(_transport(session, url), "/events", timeout=5)
        assert watch.trustworthy
        assert watch.ready_ns is None  # "loaded" is 0.3 s away
        await watch.stop()
