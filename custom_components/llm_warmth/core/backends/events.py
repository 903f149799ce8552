"""Following a server's event stream (Server-Sent Events).

llama-server (``/models/sse``) and llama-swap (``/api/events``) announce state changes on
an event stream. The clients read it beside a timed request to date a load on their own
clock, and llama-swap's to follow residency between polls.
"""

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable
import contextlib
import time
from typing import Final

from .base import GENERATION_TIMEOUT
from .errors import LlmServerError, LlmServerResponseError
from .http import HttpTransport
from .replies import decode_json, iter_lines

# A subscription is renewed at least this often (seconds).
STREAM_LIFETIME: Final = 86_400.0
# A parser turns one ``data:`` payload into (model, state) pairs; junk gives none.
type FrameParser = Callable[[object], Iterable[tuple[str, str]]]


def _payload(raw: bytes) -> object | None:
    """Return the JSON of a ``data:`` line, None for any other line or for junk."""
    line = raw.strip()
    if not line.startswith(b"data:"):
        return None
    try:
        payload: object = decode_json(line.removeprefix(b"data:").strip())
    except ValueError:
        return None  # one garbled event does not end the stream
    return payload


# What sse_payloads yields first: the stream answered (its headers came).
CONNECTED: Final = object()


async def sse_payloads(http: HttpTransport, path: str, timeout: float) -> AsyncGenerator[object]:
    """Yield ``CONNECTED`` once the stream answers, then the JSON of each ``data:`` line.

    The stream's end, silence for ``timeout`` seconds, and every network failure raise
    ``LlmServerError``.
    """
    async with http.stream("GET", path, json=None, timeout=STREAM_LIFETIME) as (
        response,
        _sent,
        _headers,
    ):
        yield CONNECTED
        lines = aiter(iter_lines(response, path))
        while True:
            try:
                async with asyncio.timeout(timeout):
                    raw = await anext(lines)
            except StopAsyncIteration:
                break
            except TimeoutError as err:
                raise LlmServerResponseError(f"{path}: no event for {timeout:g} s") from err
            if (payload := _payload(raw)) is not None:
                yield payload
    raise LlmServerResponseError(f"{path}: the event stream ended")


class StateWatch:
    """Follows an event stream for one model: when (monotonic ns) it reached a state.

    ``trustworthy``: the stream answered before the request was sent and stayed until it
    was stopped; what it did not say otherwise is unknown.
    """

    # How long a timed request waits for the stream to connect before going without it.
    CONNECT_SECONDS: Final = 2.0

    def __init__(self, model: str, ready_state: str, parse: FrameParser) -> None:
        """Watch for ``model`` reaching ``ready_state`` in the frames ``parse`` reads."""
        self.model = model
        self.ready_state = ready_state
        self.ready_ns: int | None = None
        self.frames: list[object] = []
        self.frame_times: list[int] = []  # monotonic ns, one per frame
        self._parse = parse
        self._until: Callable[[list[object]], bool] | None = None
        self._connected = False
        self._broken = False
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(
        self,
        http: HttpTransport,
        path: str,
        until: Callable[[list[object]], bool] | None = None,
        *,
        timeout: float = GENERATION_TIMEOUT,
    ) -> None:
        """Connect and follow in the background.

        Return once connected, or (with ``until``) once the frames so far satisfy it: a
        stream that opens with the current state is read that far first. Wait at most
        ``CONNECT_SECONDS``.
        """
        self._until = until
        self._task = asyncio.create_task(self._follow(http, path, timeout))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.CONNECT_SECONDS):
                await self._ready.wait()

    async def stop(self) -> None:
        """Stop following."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def trustworthy(self) -> bool:
        """Return True when the stream was there for the whole request."""
        return self._connected and not self._broken

    async def _follow(self, http: HttpTransport, path: str, timeout: float) -> None:
        try:
            # A little longer than the request it watches, so that it sees that end.
            async with http.stream("GET", path, json=None, timeout=timeout + 5, what="event") as (
                response,
                _sent,
                _headers,
            ):
                self._connected = True
                if self._until is None:
                    self._ready.set()
                async for raw in iter_lines(response, path):
                    if (payload := _payload(raw)) is not None:
                        self.frames.append(payload)
                        self.frame_times.append(time.monotonic_ns())
                        self._read(payload)
                        if self._until is not None and self._until(self.frames):
                            self._ready.set()
        except LlmServerError:
            pass
        self._broken = True
        self._ready.set()

    def _read(self, payload: object) -> None:
        for model, state in self._parse(payload):
            if model == self.model and state == self.ready_state and self.ready_ns is None:
                self.ready_ns = time.monotonic_ns()
