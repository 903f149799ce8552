"""A loopback HTTP proxy that records what the integration sends to a real server.

The end-to-end tests point the integration at this proxy instead of the real Ollama: every
request is forwarded as it is (streamed replies stream through) and recorded with its
monotonic arrival time, so that a test can count what the integration's own timers sent.
``outage()`` takes the proxy off its port (connections refused), as a stopped server is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
import json
import time
from typing import Any

import aiohttp
from aiohttp import web

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass(frozen=True, slots=True)
class Forwarded:
    """One request the proxy received: its body, and the reply as it went back."""

    method: str
    path: str
    at: float  # time.monotonic() on arrival
    body: bytes = b""
    reply: bytearray = field(default_factory=bytearray)

    def json(self) -> Any:
        """Return the request's JSON body."""
        return json.loads(self.body)

    def last_reply_line(self) -> Any:
        """Return the last NDJSON line of the reply (a generation's final chunk)."""
        return json.loads(bytes(self.reply).strip().splitlines()[-1])


class RecordingProxy:
    """Forwards 127.0.0.1:<port> to ``target`` and records each request."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.requests: list[Forwarded] = []
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._port = 0
        self.url = ""

    async def start(self) -> str:
        """Listen on a loopback port (a free one the first time) and return the base URL."""
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600))
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port, reuse_address=True)
        await site.start()
        self._port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{self._port}"
        return self.url

    async def stop(self) -> None:
        """Stop listening and close the upstream session."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()

    @asynccontextmanager
    async def outage(self) -> AsyncIterator[None]:
        """Refuse connections while inside the block (then listen on the same port again)."""
        if self._runner is not None:
            await self._runner.cleanup()
        try:
            yield
        finally:
            await self.start()

    def sent(self, path: str, since: float = 0.0, until: float = float("inf")) -> list[float]:
        """Return when requests for ``path`` arrived in [since, until]."""
        return [r.at for r in self.requests if r.path == path and since <= r.at <= until]

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        forwarded = Forwarded(request.method, request.path, time.monotonic(), body)
        self.requests.append(forwarded)
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with self._session.request(
            request.method,
            f"{self.target}{request.path_qs}",
            headers=headers,
            data=body,
        ) as upstream:
            response = web.StreamResponse(status=upstream.status)
            for key, value in upstream.headers.items():
                if key.lower() not in _HOP_BY_HOP:
                    response.headers[key] = value
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                forwarded.reply.extend(chunk)
                await response.write(chunk)
            await response.write_eof()
            return response
