"""Deterministic loopback Ollama emulator for integration tests.

The emulator is a small :mod:`aiohttp.web` application that speaks the parts of the Ollama
HTTP API the integration uses (``/``, ``/api/version``, ``/api/tags``, ``/api/ps``,
``/api/show``, ``/api/generate`` and ``/api/chat``) over real HTTP on 127.0.0.1.

It models the server behaviour that matters for warmth tracking, following the facts in
``llm-servers.md`` section 1 (Ollama ``server/routes.go`` and ``server/sched.go``):

* a single scheduler serving one request at a time, FIFO queue, 503 when the queue is full;
* model loads that take (real) time, during which ``/api/ps`` already lists the runner and no
  response headers are sent to the requester;
* ``keep_alive`` parsing and "last writer wins" semantics, expiry driven by a :class:`FakeClock`;
* reload on ``options.num_ctx`` mismatch, VRAM budget eviction and partial offload;
* ``expires_at`` reporting of Ollama 0.10-0.29 as written from its source (Go zero time
  while loading; not recorded from a real server) or, with ``legacy_expires=True``, of 0.9.x
  (``now + keep_alive`` that floats with the clock);
* from version 0.30 on, what the real 0.34.4 does (``tests/fixtures/ollama_current/``): a
  loading model is not listed in ``/api/ps`` at all, a busy one's expiry floats like 0.9's,
  and replies carry ``prompt_eval_cached_count``;
* fault injection: HTTP errors, delays, dropped connections, and mid-stream errors/drops/hangs.

Handlers never read the wall clock for anything observable except the ``*_duration`` metrics,
which are measured with :func:`time.perf_counter_ns` like the real server measures them.
"""

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
import hashlib
import json
import math
import re
import time
from typing import Any, Literal, NoReturn

from aiohttp import web

from .held_answer import HeldAnswer

__all__ = [
    "DEFAULT_CLOCK_START",
    "GO_ZERO_TIME",
    "MAX_QUEUE_ERROR",
    "EmulatedModel",
    "FakeClock",
    "HeldAnswer",
    "OllamaEmulator",
    "RecordedRequest",
    "Runner",
    "format_go_time",
    "parse_go_duration",
    "parse_keep_alive",
    "split_tokens",
]

DEFAULT_CLOCK_START = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
DEFAULT_MODIFIED_AT = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)
GO_ZERO_TIME = "0001-01-01T00:00:00Z"
# Go's time.Duration(math.MaxInt64) is ~292.47 years; Ollama adds it to now() for "forever".
FOREVER = timedelta(days=292 * 365)
DEFAULT_NUM_CTX = 2048
PARAMETER_COUNT = 3212749888
MAX_QUEUE_ERROR = "server busy, please try again.  maximum pending requests exceeded"
NDJSON = "application/x-ndjson"

_DURATION_UNITS: dict[str, float] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # Go accepts both the micro sign and the Greek mu
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class FakeClock:
    """Wall clock the emulator uses for expires_at and keep_alive expiry (UTC, tz-aware)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = _as_utc(start if start is not None else DEFAULT_CLOCK_START)

    def now(self) -> datetime:
        """Return the current fake time."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` (negative values move it back)."""
        self._now += timedelta(seconds=seconds)

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (must be timezone-aware)."""
        self._now = _as_utc(when)


def _as_utc(when: datetime) -> datetime:
    if when.tzinfo is None:
        raise ValueError("FakeClock needs a timezone-aware datetime")
    return when.astimezone(UTC)


def format_go_time(when: datetime | None) -> str:
    """Format like Go's RFC3339Nano in UTC, always with 9 fraction digits.

    ``None`` renders as Go's zero time ``0001-01-01T00:00:00Z`` (what Ollama prints for a
    runner that has no expiry yet).
    """
    if when is None:
        return GO_ZERO_TIME
    utc = when.astimezone(UTC)
    return f"{utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond:06d}000Z"


def parse_go_duration(text: str) -> float:
    """Parse a Go ``time.ParseDuration`` string into seconds (may be negative)."""
    rest = text
    sign = 1.0
    if rest[:1] in ("+", "-"):
        sign = -1.0 if rest[0] == "-" else 1.0
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise ValueError(f'time: invalid duration "{text}"')
    total = 0.0
    pos = 0
    while pos < len(rest):
        match = _DURATION_PART.match(rest, pos)
        if match is None:
            if re.fullmatch(r"[\d.]+", rest[pos:]):
                raise ValueError(f'time: missing unit in duration "{text}"')
            raise ValueError(f'time: invalid duration "{text}"')
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    return sign * total


def parse_keep_alive(value: object) -> float | None:
    """Parse a request ``keep_alive`` like Ollama's ``api.Duration.UnmarshalJSON``.

    Returns seconds, ``math.inf`` for "forever" (any negative value), or ``None`` when the
    field is absent/null (the runner keeps its current value).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("Unsupported type: 'bool'")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = parse_go_duration(value)
    else:
        raise ValueError(f"Unsupported type: '{type(value).__name__}'")
    return math.inf if seconds < 0 else seconds


def split_tokens(text: str) -> list[str]:
    """Split text into word tokens, keeping each word's leading whitespace."""
    tokens: list[str] = re.findall(r"\s*\S+", text)
    rest = text[sum(len(tok) for tok in tokens) :]
    if rest:
        if tokens:
            tokens[-1] += rest
        else:
            tokens = [rest]
    return tokens


def _lifetime(keep_alive: float) -> timedelta:
    """Return how long a runner stays after going idle (``FOREVER`` for infinite)."""
    return FOREVER if math.isinf(keep_alive) else timedelta(seconds=keep_alive)


def _canonical_name(name: str) -> str:
    """Return the model name with an explicit tag (``tiny`` -> ``tiny:latest``)."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status, dumps=_compact_dumps)


def _compact_dumps(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


@dataclass
class EmulatedModel:
    """A model the emulator has "pulled" (listed by /api/tags)."""

    name: str
    size: int
    file_size: int | None = None
    family: str = "llama"
    parameter_size: str = "3.2B"
    quantization_level: str = "Q4_K_M"
    context_length: int = 8192
    load_delay: float = 0.0
    prefill_delay: float = 0.0
    # More prefill for each word of the prompt (a longer prompt costs more).
    prefill_delay_per_word: float = 0.0
    token_delay: float = 0.0
    reply: str = "Hello there friend"
    thinking: str | None = None
    digest: str = ""
    modified_at: datetime = DEFAULT_MODIFIED_AT

    def __post_init__(self) -> None:
        if self.file_size is None:
            self.file_size = round(self.size * 0.7)
        if not self.digest:
            self.digest = hashlib.sha256(self.name.encode()).hexdigest()

    def details(self) -> dict[str, Any]:
        """Return the ``details`` object Ollama attaches to tags/ps/show entries."""
        return {
            "parent_model": "",
            "format": "gguf",
            "family": self.family,
            "families": [self.family],
            "parameter_size": self.parameter_size,
            "quantization_level": self.quantization_level,
        }


@dataclass
class Runner:
    """A resident (or loading) model instance, like ``runnerRef`` in sched.go."""

    model: EmulatedModel
    keep_alive: float
    num_ctx: int
    expires_at: datetime | None
    size_vram: int
    busy: int = 0
    loading: bool = True


def _monotonic() -> float:
    """Return ``time.monotonic()`` looked up now: a test's frozen clock, if it froze one."""
    return time.monotonic()


@dataclass
class RecordedRequest:
    """One HTTP request the emulator received."""

    method: str
    path: str
    json: Any
    headers: dict[str, str]
    body: bytes = b""
    at: float = field(default_factory=_monotonic)


@dataclass
class _HttpFault:
    path: str
    method: str | None
    status: int | None
    body: str | bytes | None
    content_type: str
    delay: float | None
    drop: bool
    remaining: int | None
    hold: HeldAnswer | None = None


@dataclass
class _StreamFault:
    kind: Literal["error_line", "drop", "hang"]
    after_chunks: int
    message: str
    remaining: int | None


@dataclass
class _GenRequest:
    """Parsed /api/generate or /api/chat request."""

    chat: bool
    name: str
    model: EmulatedModel
    keep_alive: float | None
    num_ctx: int
    empty: bool
    stream: bool
    think: bool
    prompt_words: int
    started_ns: int
    loaded_ns: int = 0


class _ApiError(Exception):
    """Raised inside handlers to answer ``{"error": message}`` with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _NdjsonWriter:
    """Streams NDJSON lines; headers go out with the first line (like gin's c.Stream)."""

    def __init__(self, request: web.Request) -> None:
        self._request = request
        self.response = web.StreamResponse(status=200)
        self.response.headers["Content-Type"] = NDJSON

    async def write(self, obj: object) -> None:
        if not self.response.prepared:
            await self.response.prepare(self._request)
        await self.response.write(_dumps(obj) + b"\n")

    async def finish(self) -> web.StreamResponse:
        if not self.response.prepared:
            await self.response.prepare(self._request)
        await self.response.write_eof()
        return self.response


def _drop_connection(request: web.BaseRequest) -> NoReturn:
    """Close the connection without (finishing) an HTTP response and end the handler."""
    if request.transport is not None:
        request.transport.close()
    raise asyncio.CancelledError


async def _pause(seconds: float) -> None:
    if seconds > 0:
        await asyncio.sleep(seconds)


class OllamaEmulator:
    """Loopback Ollama server with a scheduler model, fake clock and fault injection."""

    def __init__(
        self,
        *,
        version: str = "0.12.6",
        vram_budget: int | None = None,
        max_queue: int = 8,
        api_key: str | None = None,
        legacy_expires: bool = False,
        report_context_length: bool = True,
        clock: FakeClock | None = None,
        default_keep_alive: float = 300.0,
    ) -> None:
        self.version = version
        self.vram_budget = vram_budget
        self.max_queue = max_queue
        self.api_key = api_key
        self.legacy_expires = legacy_expires
        self.report_context_length = report_context_length
        self.clock = clock if clock is not None else FakeClock()
        self.default_keep_alive = default_keep_alive
        self.default_num_ctx = DEFAULT_NUM_CTX
        self.models: dict[str, EmulatedModel] = {}
        self.loaded: dict[str, Runner] = {}
        self.requests: list[RecordedRequest] = []
        # The chats whose client went away before their answer ended (aiohttp cancels the
        # handler, as Ollama cancels a request whose client disconnects): their models.
        self.abandoned_chats: list[str] = []
        self._faults: list[_HttpFault] = []
        self._stream_faults: list[_StreamFault] = []
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._lock = asyncio.Lock()
        self._waiting = 0
        self._active: dict[int, web.BaseRequest] = {}
        # While set, a load waits for finish_loads() instead of its load_delay.
        self._load_gate: asyncio.Event | None = None
        # Set (and replaced) each time a runner starts loading.
        self._load_started = asyncio.Event()

    # ------------------------------------------------------------------ models

    def add_model(self, model: EmulatedModel) -> EmulatedModel:
        """Make ``model`` available ("ollama pull"); replaces a model with the same name."""
        self.models[model.name] = model
        return model

    def remove_model(self, name: str) -> None:
        """Delete a model ("ollama rm"): gone from /api/tags and unloaded if resident."""
        model = self._resolve(name)
        if model is None:
            raise KeyError(name)
        del self.models[model.name]
        self.loaded.pop(model.name, None)

    def _resolve(self, name: str) -> EmulatedModel | None:
        if name in self.models:
            return self.models[name]
        wanted = _canonical_name(name)
        for model in self.models.values():
            if _canonical_name(model.name) == wanted:
                return model
        return None

    # --------------------------------------------------------------- lifecycle

    async def start(self) -> str:
        """Bind 127.0.0.1 (a free port, or the port used before) and return the base URL."""
        if self._runner is not None:
            return self.url
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/", self._handle_root)
        app.router.add_get("/api/version", self._handle_version)
        app.router.add_get("/api/tags", self._handle_tags)
        app.router.add_get("/api/ps", self._handle_ps)
        app.router.add_post("/api/show", self._handle_show)
        app.router.add_post("/api/generate", self._handle_generate)
        app.router.add_post("/api/chat", self._handle_chat)
        app.router.add_route("*", "/{tail:.*}", self._handle_not_found)
        runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self._port or 0, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._port = int(runner.addresses[0][1])
        self._runner = runner
        self._lock = asyncio.Lock()
        self._waiting = 0
        return self.url

    async def stop(self) -> None:
        """Close the listening socket and every connection; resident models are lost."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        for request in list(self._active.values()):
            if request.transport is not None:
                request.transport.abort()
        await asyncio.sleep(0)
        await runner.cleanup()
        self._active.clear()
        self.loaded.clear()
        self._waiting = 0

    async def restart(self, *, version: str | None = None) -> None:
        """Stop and start again on the same port, optionally reporting a new version."""
        await self.stop()
        if version is not None:
            self.version = version
        await self.start()

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:40123``."""
        if self._port is None:
            raise RuntimeError("emulator has not been started")
        return f"http://127.0.0.1:{self._port}"

    # ------------------------------------------------------------------ faults

    def inject(
        self,
        path: str,
        *,
        status: int | None = None,
        body: str | bytes | None = None,
        content_type: str = "application/json",
        delay: float | None = None,
        drop: bool = False,
        times: int | None = 1,
        method: str | None = None,
        hold: HeldAnswer | None = None,
    ) -> None:
        """Make the next ``times`` requests to ``path`` (``"*"``: any) misbehave.

        ``hold`` waits until the test releases it, ``delay`` sleeps (either then answers
        normally unless something else is given);
        ``status``/``body`` replace the answer; ``drop`` closes the connection without a
        response. ``times=None`` applies until :meth:`clear_faults`.
        """
        if times is not None and times <= 0:
            return
        self._faults.append(
            _HttpFault(
                path=path,
                method=method.upper() if method else None,
                status=status,
                body=body,
                content_type=content_type,
                delay=delay,
                drop=drop,
                remaining=times,
                hold=hold,
            )
        )

    def inject_stream_fault(
        self,
        *,
        kind: Literal["error_line", "drop", "hang"],
        after_chunks: int = 1,
        message: str = "an error was encountered while running the model",
        times: int | None = 1,
    ) -> None:
        """Break the next ``times`` streaming generate/chat replies after ``after_chunks`` chunks.

        ``error_line`` writes ``{"error": message}`` and ends the 200 response, ``drop`` closes
        the connection, ``hang`` stops writing until the client goes away or :meth:`stop`.
        If a reply has fewer content chunks, the fault replaces its final chunk.
        """
        if times is not None and times <= 0:
            return
        self._stream_faults.append(
            _StreamFault(kind=kind, after_chunks=after_chunks, message=message, remaining=times)
        )

    def clear_faults(self) -> None:
        """Remove all pending HTTP and stream faults."""
        self._faults.clear()
        self._stream_faults.clear()

    def _take_fault(self, method: str, path: str) -> _HttpFault | None:
        for fault in self._faults:
            if fault.path not in ("*", path) or fault.method not in (None, method):
                continue
            if fault.remaining is not None:
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults.remove(fault)
            return fault
        return None

    def _take_stream_fault(self) -> _StreamFault | None:
        if not self._stream_faults:
            return None
        fault = self._stream_faults[0]
        if fault.remaining is not None:
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._stream_faults.pop(0)
        return fault

    # ------------------------------------------------------------------- loads

    def hold_loads(self) -> None:
        """Make the loads that start from now on last until :meth:`finish_loads`.

        Instead of their model's ``load_delay``: a test says when a load ends.
        """
        if self._load_gate is None:
            self._load_gate = asyncio.Event()

    def finish_loads(self) -> None:
        """End the held loads now; later loads take their ``load_delay`` again."""
        gate, self._load_gate = self._load_gate, None
        if gate is not None:
            gate.set()

    async def start_while_held[T](
        self, model: str, request: Coroutine[Any, Any, T]
    ) -> asyncio.Task[T]:
        """Hold the loads, start ``request``; return its task once ``model`` is loading."""
        self.hold_loads()
        task = asyncio.create_task(request)
        async with asyncio.timeout(5):
            await self.wait_loading(model)
        return task

    async def wait_loading(self, model: str) -> Runner:
        """Return ``model``'s runner once it is loading (at once if it is)."""
        while (runner := self.loaded.get(model)) is None or not runner.loading:
            await self._load_started.wait()
        return runner

    def _loading(self) -> None:
        started, self._load_started = self._load_started, asyncio.Event()
        started.set()

    # --------------------------------------------------------------- scheduler

    def expire(self) -> None:
        """Unload idle runners whose ``expires_at`` is at or before ``clock.now()``."""
        now = self.clock.now()
        for name, runner in list(self.loaded.items()):
            if runner.busy or runner.loading or runner.expires_at is None:
                continue
            if runner.expires_at <= now:
                del self.loaded[name]

    def _unload(self, runner: Runner) -> None:
        if self.loaded.get(runner.model.name) is runner:
            del self.loaded[runner.model.name]

    def _make_room(self, model: EmulatedModel) -> int:
        """Evict idle runners until ``model`` fits; return its ``size_vram``."""
        budget = self.vram_budget
        if budget is None:
            return model.size
        needed = min(model.size, budget)
        victims = sorted(
            (r for r in self.loaded.values() if not r.busy and not r.loading),
            key=lambda r: (r.keep_alive, r.model.name),
        )
        for victim in victims:
            if self._vram_used() + needed <= budget:
                break
            self._unload(victim)
        return max(0, min(model.size, budget - self._vram_used()))

    def _vram_used(self) -> int:
        return sum(r.size_vram for r in self.loaded.values())

    async def _acquire_runner(self, req: _GenRequest) -> Runner:
        """Return a resident runner for the request (loading it if needed), marked busy."""
        model = req.model
        runner = self.loaded.get(model.name)
        if runner is not None and runner.num_ctx != req.num_ctx:
            self._unload(runner)
            runner = None
        if runner is not None:
            if req.keep_alive is not None:
                runner.keep_alive = req.keep_alive
            runner.busy += 1
            return runner
        keep_alive = req.keep_alive if req.keep_alive is not None else self.default_keep_alive
        runner = Runner(
            model=model,
            keep_alive=keep_alive,
            num_ctx=req.num_ctx,
            expires_at=None,
            size_vram=self._make_room(model),
            busy=1,
            loading=True,
        )
        self.loaded[model.name] = runner
        self._loading()
        try:
            if self._load_gate is not None:
                await self._load_gate.wait()
            else:
                await _pause(model.load_delay)
        except BaseException:
            # Client went away mid-load: Ollama aborts the load (HTTP 499).
            runner.busy -= 1
            self._unload(runner)
            raise
        runner.loading = False
        return runner

    def _release_runner(self, runner: Runner) -> None:
        """Request finished: restart the expiry timer, or unload for keep_alive 0."""
        runner.busy = max(0, runner.busy - 1)
        if runner.busy or self.loaded.get(runner.model.name) is not runner:
            return
        if runner.keep_alive == 0:
            self._unload(runner)
            return
        runner.expires_at = self.clock.now() + _lifetime(runner.keep_alive)

    def _request_unload(self, model: EmulatedModel) -> None:
        """Handle an empty prompt with keep_alive 0 (``expireRunner`` in sched.go)."""
        runner = self.loaded.get(model.name)
        if runner is None:
            return
        if runner.busy or runner.loading:
            runner.keep_alive = 0.0
        else:
            self._unload(runner)

    @property
    def runs_llama_server(self) -> bool:
        """Return True for a version of 0.30 or newer (llama.cpp's llama-server as runner)."""
        found = re.match(r"(\d+)\.(\d+)", self.version)
        return found is not None and (int(found[1]), int(found[2])) >= (0, 30)

    def _reported_expiry(self, runner: Runner) -> datetime | None:
        if runner.expires_at is not None:
            return runner.expires_at
        if not (self.legacy_expires or self.runs_llama_server):
            return None
        return self.clock.now() + _lifetime(runner.keep_alive)

    # -------------------------------------------------------------- middleware

    @web.middleware
    async def _middleware(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        raw = await request.read() if request.body_exists else b""
        parsed: Any = None
        if raw:
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
        self.requests.append(
            RecordedRequest(
                method=request.method,
                path=request.path,
                json=parsed,
                headers=dict(request.headers),
                body=raw,
            )
        )
        self._active[id(request)] = request
        try:
            fault = self._take_fault(request.method, request.path)
            if fault is not None:
                response = await self._apply_fault(request, fault)
                if response is not None:
                    return response
            self.expire()
            if self._unauthorized(request):
                return _json_error(401, "unauthorized")
            try:
                return await handler(request)
            except _ApiError as err:
                return _json_error(err.status, err.message)
            except asyncio.CancelledError:
                if request.path == "/api/chat" and isinstance(parsed, dict):
                    self.abandoned_chats.append(str(parsed.get("model")))
                raise
        finally:
            self._active.pop(id(request), None)

    def _unauthorized(self, request: web.Request) -> bool:
        if self.api_key is None or not request.path.startswith("/api"):
            return False
        return request.headers.get("Authorization") != f"Bearer {self.api_key}"

    async def _apply_fault(self, request: web.Request, fault: _HttpFault) -> web.Response | None:
        if fault.hold is not None:
            fault.hold.arrived.set()
            await fault.hold.released.wait()
        if fault.delay:
            await asyncio.sleep(fault.delay)
        if fault.drop:
            _drop_connection(request)
        if fault.status is None and fault.body is None:
            return None
        status = fault.status if fault.status is not None else 200
        body = fault.body
        if body is None:
            body = _compact_dumps({"error": f"injected fault: HTTP {status}"})
        payload = body.encode() if isinstance(body, str) else body
        response = web.Response(status=status, body=payload)
        response.headers["Content-Type"] = fault.content_type
        return response

    # ---------------------------------------------------------------- handlers

    async def _handle_root(self, request: web.Request) -> web.Response:
        return web.Response(text="Ollama is running")

    async def _handle_not_found(self, request: web.Request) -> web.Response:
        return web.Response(status=404, text="404 page not found")

    async def _handle_version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": self.version}, dumps=_compact_dumps)

    async def _handle_tags(self, request: web.Request) -> web.Response:
        models = sorted(
            self.models.values(),
            key=lambda m: (-int(m.modified_at.timestamp()), m.name),
        )
        entries = [
            {
                "name": m.name,
                "model": m.name,
                "modified_at": format_go_time(m.modified_at),
                "size": m.file_size,
                "digest": m.digest,
                "details": m.details(),
            }
            for m in models
        ]
        return web.json_response({"models": entries}, dumps=_compact_dumps)

    async def _handle_ps(self, request: web.Request) -> web.Response:
        rows: list[tuple[datetime | None, dict[str, Any]]] = []
        for runner in sorted(self.loaded.values(), key=lambda r: r.model.name):
            if runner.loading and self.runs_llama_server:
                continue  # listed once its runner is up (sched.go at v0.34.4)
            expiry = self._reported_expiry(runner)
            entry: dict[str, Any] = {
                "name": runner.model.name,
                "model": runner.model.name,
                "size": runner.model.size,
                "digest": runner.model.digest,
                "details": runner.model.details(),
                "expires_at": format_go_time(expiry),
                "size_vram": runner.size_vram,
            }
            if self.report_context_length:
                entry["context_length"] = runner.num_ctx
            rows.append((expiry, entry))
        floor = datetime.min.replace(tzinfo=UTC)
        rows.sort(key=lambda row: row[0] or floor, reverse=True)
        return web.json_response({"models": [e for _, e in rows]}, dumps=_compact_dumps)

    async def _handle_show(self, request: web.Request) -> web.Response:
        payload = await self._json_body(request)
        name = payload.get("model") or payload.get("name")
        if not isinstance(name, str) or not name:
            raise _ApiError(400, "model is required")
        model = self._resolve(name)
        if model is None:
            raise _ApiError(404, f"model '{name}' not found")
        capabilities = ["completion"]
        if model.thinking is not None:
            capabilities.append("thinking")
        body = {
            "modelfile": (
                '# Modelfile generated by "ollama show"\n'
                f"FROM /models/blobs/sha256-{model.digest}\n"
            ),
            "parameters": f"num_ctx {DEFAULT_NUM_CTX}",
            "template": "{{ if .System }}{{ .System }}\n{{ end }}{{ .Prompt }}",
            "details": model.details(),
            "model_info": {
                "general.architecture": model.family,
                "general.parameter_count": PARAMETER_COUNT,
                f"{model.family}.context_length": model.context_length,
            },
            "capabilities": capabilities,
            "modified_at": format_go_time(model.modified_at),
        }
        return web.json_response(body, dumps=_compact_dumps)

    async def _handle_generate(self, request: web.Request) -> web.StreamResponse:
        return await self._handle_generation(request, chat=False)

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        return await self._handle_generation(request, chat=True)

    @staticmethod
    async def _json_body(request: web.Request) -> dict[str, Any]:
        raw = await request.read()
        if not raw:
            raise _ApiError(400, "missing request body")
        try:
            payload = json.loads(raw)
        except ValueError as err:
            raise _ApiError(400, f"invalid request body: {err}") from err
        if not isinstance(payload, dict):
            raise _ApiError(400, "invalid request body: expected a JSON object")
        return payload

    def _parse_generation(self, payload: dict[str, Any], *, chat: bool) -> _GenRequest:
        started = time.perf_counter_ns()
        name = payload.get("model")
        if not isinstance(name, str) or not name:
            raise _ApiError(400, "model is required")
        try:
            keep_alive = parse_keep_alive(payload.get("keep_alive"))
        except ValueError as err:
            raise _ApiError(400, str(err)) from err
        model = self._resolve(name)
        if model is None:
            raise _ApiError(404, f'model "{name}" not found, try pulling it first')
        options = payload.get("options") or {}
        try:
            num_ctx = int(options.get("num_ctx") or self.default_num_ctx)
        except (AttributeError, TypeError, ValueError) as err:
            raise _ApiError(400, f"invalid options: {err}") from err
        if chat:
            messages = payload.get("messages") or []
            texts = [m.get("content") or "" for m in messages if isinstance(m, dict)]
            empty = not messages
        else:
            texts = [payload.get("system") or "", payload.get("prompt") or ""]
            empty = not payload.get("prompt")
        think = payload.get("think") not in (None, False, "")
        return _GenRequest(
            chat=chat,
            name=name,
            model=model,
            keep_alive=keep_alive,
            num_ctx=num_ctx,
            empty=empty,
            stream=payload.get("stream", True) is not False,
            think=think and model.thinking is not None,
            prompt_words=sum(len(str(t).split()) for t in texts),
            started_ns=started,
        )

    async def _handle_generation(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        req = self._parse_generation(await self._json_body(request), chat=chat)
        if req.empty and req.keep_alive == 0:
            self._request_unload(req.model)
            return web.json_response(self._load_reply(req, "unload"), dumps=_compact_dumps)
        lock = self._lock
        if (lock.locked() or self._waiting) and self._waiting >= self.max_queue:
            raise _ApiError(503, MAX_QUEUE_ERROR)
        self._waiting += 1
        try:
            await lock.acquire()
        finally:
            self._waiting -= 1
        try:
            self.expire()
            runner = await self._acquire_runner(req)
            try:
                req.loaded_ns = time.perf_counter_ns()
                if req.empty:
                    return web.json_response(self._load_reply(req, "load"), dumps=_compact_dumps)
                return await self._generate(request, req)
            finally:
                self._release_runner(runner)
        finally:
            lock.release()

    # -------------------------------------------------------------- generation

    def _chunk(
        self, req: _GenRequest, *, content: str = "", thinking: str = "", done: bool = False
    ) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "model": req.name,
            "created_at": format_go_time(self.clock.now()),
        }
        if req.chat:
            message = {"role": "assistant", "content": content}
            if thinking:
                message["thinking"] = thinking
            chunk["message"] = message
        else:
            chunk["response"] = content
            if thinking:
                chunk["thinking"] = thinking
        chunk["done"] = done
        return chunk

    def _load_reply(self, req: _GenRequest, reason: str) -> dict[str, Any]:
        reply = self._chunk(req, done=True)
        reply["done_reason"] = reason
        return reply

    def _final(
        self,
        req: _GenRequest,
        *,
        content: str,
        thinking: str,
        eval_count: int,
        prefill_ns: int,
        decode_ns: int,
    ) -> dict[str, Any]:
        final = self._chunk(req, content=content, thinking=thinking, done=True)
        final["done_reason"] = "stop"
        prompt_eval_count = req.prompt_words + 5
        if not req.chat:
            final["context"] = list(range(1, prompt_eval_count + eval_count + 1))
        metrics = {
            "total_duration": max(1, time.perf_counter_ns() - req.started_ns),
            "load_duration": max(1, req.loaded_ns - req.started_ns),
            "prompt_eval_count": prompt_eval_count,
            "prompt_eval_duration": max(1, prefill_ns),
            "eval_count": eval_count,
            "eval_duration": max(1, decode_ns) if eval_count else 0,
        }
        # Go tags every metric `omitempty`; the cached count is a pointer, sent when set.
        final.update({key: value for key, value in metrics.items() if value})
        if self.runs_llama_server:
            final["prompt_eval_cached_count"] = 0  # no prompt cache here
        return final

    async def _generate(self, request: web.Request, req: _GenRequest) -> web.StreamResponse:
        model = req.model
        thinking = split_tokens(model.thinking or "") if req.think else []
        reply = split_tokens(model.reply)
        prefill_start = time.perf_counter_ns()
        await _pause(model.prefill_delay + model.prefill_delay_per_word * req.prompt_words)
        decode_start = time.perf_counter_ns()
        if not req.stream:
            for _ in range(len(thinking) + len(reply)):
                await _pause(model.token_delay)
            final = self._final(
                req,
                content="".join(reply),
                thinking="".join(thinking),
                eval_count=len(thinking) + len(reply),
                prefill_ns=decode_start - prefill_start,
                decode_ns=time.perf_counter_ns() - decode_start,
            )
            return web.json_response(final, dumps=_compact_dumps)

        out = _NdjsonWriter(request)
        fault = self._take_stream_fault()
        chunks = [self._chunk(req, thinking=tok) for tok in thinking]
        final_text = ""
        if len(reply) == 1:
            # A one-token answer arrives on the done chunk itself.
            final_text = reply[0]
        else:
            chunks.extend(self._chunk(req, content=tok) for tok in reply)
        for written, chunk in enumerate(chunks):
            await _pause(model.token_delay)
            if fault is not None and written == fault.after_chunks:
                return await self._fire_stream_fault(request, out, fault)
            chunk["created_at"] = format_go_time(self.clock.now())
            await out.write(chunk)
        if final_text:
            await _pause(model.token_delay)
        if fault is not None:
            return await self._fire_stream_fault(request, out, fault)
        await out.write(
            self._final(
                req,
                content=final_text,
                thinking="",
                eval_count=len(thinking) + len(reply),
                prefill_ns=decode_start - prefill_start,
                decode_ns=time.perf_counter_ns() - decode_start,
            )
        )
        return await out.finish()

    @staticmethod
    async def _fire_stream_fault(
        request: web.Request, out: _NdjsonWriter, fault: _StreamFault
    ) -> web.StreamResponse:
        if fault.kind == "error_line":
            await out.write({"error": fault.message})
            return await out.finish()
        if fault.kind == "drop":
            _drop_connection(request)
        # "hang": never write again; ends when the client disconnects or stop() runs.
        await asyncio.get_running_loop().create_future()
        raise AssertionError("unreachable")  # pragma: no cover
