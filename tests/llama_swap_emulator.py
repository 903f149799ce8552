"""Deterministic loopback llama-swap emulator for integration tests.

The emulator is a small :mod:`aiohttp.web` application on 127.0.0.1 that speaks the wire
formats of llama-swap (https://github.com/mostlygeek/llama-swap) release v250, i.e. the
net/http code base of v218+ with the v240+ ``inflight`` events. Each configured model is an
emulated llama.cpp ``llama-server`` behind the swap; its replies are shaped like the recorded
real ones in ``tests/fixtures/llama_server/*.sse``.

Source references (snapshot ``0bdb3720199f530b622a1934c0db89f32c94819c``, ``v250-5-g0bdb3720``;
the release tag ``v250`` is commit ``60226b63``):

* ``internal/server/server.go``: the route table (model-routed POST/GET routes, ``/running``,
  ``/unload``, ``/upstream/{path...}``, ``/api/*``), the middleware order (auth, request context,
  inflight, metrics) and ``localPeerHandler`` (404 ``no router for requested model``).
* ``internal/server/api.go``: ``handleRunning`` (``{"running":[{model,state,cmd,proxy,ttl,name,
  description}]}`` sorted by model), ``handleListModels`` (``owned_by: "llama-swap"``, ``status``),
  ``handleUnload``, ``handleHealth``, ``handleMetrics`` and ``handleUpstream`` (longest-match model
  in the path, 301/308 to the trailing slash, ``upstream.ignorePaths`` 409).
* ``internal/server/apigroup.go``: ``handleAPIUnloadAll`` (``{"msg":"ok"}``),
  ``handleAPIUnloadModel`` (``OK`` / 404 ``model not found``), ``handleAPIVersion``,
  ``handleAPIActivity`` and ``handleAPIEvents`` with its SSE envelope
  ``event:message\\ndata:{"type":T,"data":"<JSON string>"}\\n\\n`` and the initial snapshot
  (logData proxy, logData upstream, modelStatus, uiConfig, profileChanged, inflight snapshot).
* ``internal/server/inflight.go`` + ``internal/swaputil/events.go``: inflight upsert on add, on
  response headers and at most every 250 ms while bytes flow; remove when done; snapshot with
  ``requests`` omitted when empty.
* ``internal/server/metrics.go`` / ``metrics_middleware.go`` + ``internal/store/store.go``: one
  ActivityLogEntry per model-routed POST (also for 404s), announced as ``activity`` ``{"id":N}``.
* ``internal/process/process.go`` + ``internal/process/process_command.go``: the states
  ``stopped|starting|ready|stopping|shutdown``, start ``stopped→starting→ready`` (or back to
  ``stopped`` on failure/abort), stop ``ready→stopping→stopped``, the TTL ticker (every 1 s while
  ready: stop when no request is in flight and ``now - lastUse > ttl``; ``lastUse`` is set when a
  proxied request completes).
* ``internal/router/scheduler/fifo.go`` + ``internal/router/group.go``: the default group is
  ``swap: true, exclusive: true`` (loading one model first stops every other one, in parallel);
  same-model requests join one swap; a swap that would evict a busy model waits for it to drain;
  ``Unload`` blocks until stopped and fails pending loads with ``group: model unloaded``.
* ``internal/swaputil/http.go`` and ``httperror.go``: ``SendResponse`` error bodies, the
  OpenAI-style envelope ``{"src":"llama-swap","error":{"message","type","param","code"}}``
  (recorded from the real one: ``"no model id could be identified"``, ``invalid_request_error``,
  ``not_found``) unless ``Accept`` asks for text/plain or text/html (v250 sent
  ``{"error":"<msg>","src":"llama-swap"}``; the client reads both).
* ``internal/store``: activity kept in memory (the default), so a restart starts its ids at
  1 again; times stored in whole seconds; ``has_capture`` true (the default capture
  buffer) and ``metadata.fifo_priority`` on a served request (recorded).

Peers (``SwapPeer``: ``peers:`` in the config) follow ``internal/router/peer.go`` and the
recordings in ``tests/fixtures/llama_swap``: listed by ``<peer>/<model>``, never with a state,
requests proxied with the model renamed, 502 ``peer proxy error: ...`` when the peer is down.

Deliberate simplifications: one swap group (``exclusive=False`` lets models run side by side),
no profiles, selectors, ``sendLoadingState`` or live ``logData`` frames; the process
``cmd``/``proxy`` values are synthetic (ports from ``startPort`` 5800). The emulated
llama-server tokenises by words (a chat template adds one marker token per message and the
prompt starts with a BOS token) and keeps a one-slot prompt cache per model, cleared on unload.
Reported ``timings`` are the planned values (``prompt_n * prompt_ms_per_token`` and
``predicted_n * token_ms``); the handlers really sleep that long, so TTFT is measurable.
"""

import asyncio
import base64
import binascii
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Mapping
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
import hashlib
import html
from http import HTTPStatus
import json
import math
from pathlib import Path
import re
import time
from typing import Any, Final, Literal, NoReturn
from urllib.parse import parse_qs, urlsplit

import aiohttp
from aiohttp import web

__all__ = [
    "DEFAULT_BUILD_DATE",
    "DEFAULT_COMMIT",
    "DEFAULT_VERSION",
    "LLAMA_SWAP_SOURCE_COMMIT",
    "METRICS_FIXTURE",
    "MODEL_UNLOADED_ERROR",
    "NO_MODEL_ERROR",
    "NO_ROUTER_ERROR",
    "LlamaSwapEmulator",
    "ProcessState",
    "SwapError",
    "SwapModel",
    "format_go_time",
    "go_json",
]

LLAMA_SWAP_SOURCE_COMMIT: Final = "0bdb3720199f530b622a1934c0db89f32c94819c"
DEFAULT_VERSION: Final = "v250"
DEFAULT_COMMIT: Final = "60226b63"
DEFAULT_BUILD_DATE: Final = "2026-08-14T15:45:40Z"
LLAMA_SERVER_BUILD: Final = "b11669-Debian"
START_PORT: Final = 5800

FIXTURES = Path(__file__).parent / "fixtures"
METRICS_FIXTURE = FIXTURES / "gpu" / "llama_swap_metrics.txt"

ProcessState = Literal["stopped", "starting", "ready", "stopping", "shutdown"]
STOPPED: Final = "stopped"
STARTING: Final = "starting"
READY: Final = "ready"
STOPPING: Final = "stopping"
SHUTDOWN: Final = "shutdown"
_NOT_RUNNING = (STOPPED, SHUTDOWN)

NO_MODEL_ERROR: Final = "no model id could be identified"
NO_ROUTER_ERROR: Final = "no router for requested model"
MODEL_NOT_FOUND: Final = "model not found"
MODEL_UNLOADED_ERROR: Final = "unspecific error: group: model unloaded"
UNAUTHORIZED_ERROR: Final = "unauthorized: invalid or missing API key"

JSON: Final = "application/json"
TEXT_SNIFFED: Final = "text/plain; charset=utf-8"
PROMETHEUS: Final = "text/plain; version=0.0.4; charset=utf-8"
CPP_JSON: Final = "application/json; charset=utf-8"
SSE: Final = "text/event-stream"

# internal/server/server.go modelPostJSONRoutes + modelPostFormRoutes / modelGetRoutes.
MODEL_POST_ROUTES: Final = frozenset(
    {
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/completions",
        "/v1/messages",
        "/v1/messages/count_tokens",
        "/v1/embeddings",
        "/reranking",
        "/rerank",
        "/v1/rerank",
        "/v1/reranking",
        "/infill",
        "/completion",
        "/v1/audio/speech",
        "/v1/audio/voices",
        "/v1/images/generations",
        "/sdapi/v1/txt2img",
        "/sdapi/v1/img2img",
        "/audioapi/v1/tasks/run",
        "/v/chat/completions",
        "/v/responses",
        "/v/completions",
        "/v/messages",
        "/v/messages/count_tokens",
        "/v/embeddings",
        "/v/rerank",
        "/v/reranking",
        "/v1/audio/transcriptions",
        "/v1/images/edits",
    }
)
MODEL_GET_ROUTES: Final = frozenset({"/v1/audio/voices", "/sdapi/v1/loras", "/props"})
# config default upstream.ignorePaths
IGNORE_PATHS: Final = re.compile(r".*\.(js|json|css|png|gif|jpg|jpeg|ico|txt)$")
SENSITIVE_HEADERS: Final = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"}
)
SESSION_ID_HEADERS: Final = ("X-Session-ID", "X-Litellm-Session-Id")
INFLIGHT_UPDATE_INTERVAL: Final = 0.25


# ----------------------------------------------------------------------------- encoding


def _go_value(obj: Any) -> Any:
    """Make integral floats ints so they print like Go's encoding/json (``-1``, not ``-1.0``)."""
    if isinstance(obj, float) and obj.is_integer() and abs(obj) < 1e21:
        return int(obj)
    if isinstance(obj, dict):
        return {key: _go_value(value) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [_go_value(value) for value in obj]
    return obj


def go_json(obj: object) -> str:
    """Encode like Go's ``json.Marshal``: compact, UTF-8, HTML characters escaped."""
    text = json.dumps(_go_value(obj), separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def _cpp_json(obj: object) -> str:
    """Encode like llama-server's nlohmann ``ordered_json::dump()`` (compact, raw UTF-8)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _error_type(status: int) -> tuple[str, str]:
    """``errorTypeForStatus`` of ``internal/swaputil/httperror.go``: (type, default code)."""
    named = {
        400: ("invalid_request_error", "bad_request"),
        401: ("authentication_error", "unauthorized"),
        403: ("authentication_error", "forbidden"),
        404: ("invalid_request_error", "not_found"),
        409: ("invalid_request_error", "conflict"),
        429: ("rate_limit_error", "rate_limit_exceeded"),
        502: ("server_error", "bad_gateway"),
        503: ("server_error", "service_unavailable"),
        504: ("server_error", "gateway_timeout"),
    }
    if status in named:
        return named[status]
    if 400 <= status < 500:
        return "invalid_request_error", "invalid_request"
    return "server_error", "internal_error"


def format_go_time(when: datetime) -> str:
    """Format like Go's ``time.Time`` JSON (RFC3339Nano, trailing fraction zeros trimmed)."""
    utc = when.astimezone(UTC)
    fraction = f".{utc.microsecond:06d}".rstrip("0") if utc.microsecond else ""
    return f"{utc:%Y-%m-%dT%H:%M:%S}{fraction}Z"


def _canonical_header(key: str) -> str:
    """Return Go's ``textproto.CanonicalMIMEHeaderKey`` form of ``key``."""
    return "-".join(part[:1].upper() + part[1:].lower() for part in key.split("-"))


def _reply_tokens(text: str) -> list[str]:
    """Split a reply into word tokens that keep their leading whitespace."""
    tokens: list[str] = re.findall(r"\s*\S+", text)
    return tokens or ([text] if text else [])


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        return " ".join(parts)
    return ""


def _timings(
    cache_n: int, prompt_n: int, prompt_ms: float, predicted_n: int, predicted_ms: float
) -> dict[str, Any]:
    """Build llama-server's ``timings`` object (C++ divisions; inf/nan become null)."""

    def ratio(num: float, den: float) -> float | None:
        if den == 0:
            return None
        value = num / den
        return value if math.isfinite(value) else None

    def rate(ms: float, n: int) -> float | None:
        if ms == 0:
            return None
        value = 1e3 / ms * n
        return value if math.isfinite(value) else None

    return {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": ratio(prompt_ms, prompt_n),
        "prompt_per_second": rate(prompt_ms, prompt_n),
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": ratio(predicted_ms, predicted_n),
        "predicted_per_second": rate(predicted_ms, predicted_n),
    }


# ------------------------------------------------------------------------------ models


@dataclass
class SwapModel:
    """One entry of the llama-swap config's ``models:`` map (served by an emulated llama-server).

    ``ttl`` is the configured ``ttl`` in seconds (0: never unload). ``display_name`` and
    ``description`` are the config's ``name``/``description``. ``load_error`` makes every load
    fail (after ``load_seconds``) with 500 ``unspecific error: <load_error>``.
    """

    name: str
    load_seconds: float = 0.5
    ttl: int = 0
    prompt_ms_per_token: float = 1.0
    token_ms: float = 5.0
    unload_seconds: float = 0.05
    reply: str = "Warm and ready to help you today."
    display_name: str = ""
    description: str = ""
    aliases: tuple[str, ...] = ()
    load_error: str | None = None


@dataclass(eq=False)
class _Process:
    """A llama-swap process (``internal/process``) for one model."""

    model: SwapModel
    port: int
    state: str = STOPPED
    inflight: int = 0
    last_use: float = -math.inf  # lastUse: never set until a proxied request completes
    cache: list[str] = field(default_factory=list)
    epoch: int = 0  # bumped when the upstream goes away; in-flight generations notice
    abort: asyncio.Event | None = None
    stop_task: asyncio.Task[None] | None = None

    @property
    def cmd(self) -> str:
        return f"/app/llama-server --port {self.port} -m /models/{self.model.name}.gguf"

    @property
    def proxy(self) -> str:
        # Recorded (running_ready.json): the config's proxy default names localhost.
        return f"http://localhost:{self.port}"


@dataclass(frozen=True)
class SwapPeer:
    """One entry of the config's ``peers:`` map: another llama-swap (or any ``/v1`` server).

    Its models are routed as ``<peer id>/<model>`` (and by the bare name when no local model
    and no other peer has it); the request's ``model`` is rewritten to the peer's name.
    """

    proxy: str
    models: tuple[str, ...]


class SwapError(Exception):
    """A load/swap failed (HTTP requests get ``SendResponse(status, message)``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _UpstreamGone(Exception):
    """The model's process stopped while its request was being served."""


@dataclass(eq=False)
class _Swap:
    """One scheduled swap to ``target``; requests for the same model join it."""

    target: _Process
    done: asyncio.Future[None]
    waiters: int = 0
    unloaded: bool = False
    task: asyncio.Task[None] | None = None


@dataclass
class _HttpFault:
    path: str
    method: str | None
    kind: Literal["fail", "malformed", "drop"]
    status: int
    body: str | bytes | None
    content_type: str
    remaining: int | None


@dataclass(eq=False)
class _EventConn:
    request: web.Request
    queue: asyncio.Queue[bytes | None]
    abort: bool = False


@dataclass(eq=False)
class _Inflight:
    """An inflight tracker entry (``swaputil.InflightRequestEntry``)."""

    id: str
    started: float
    timestamp: datetime
    model: str
    req_path: str
    method: str
    req_headers: dict[str, str]
    remote_ip: str
    resp_headers: dict[str, str] = field(default_factory=dict)
    resp_bytes: int = 0
    last_emitted: float = 0.0
    timer: asyncio.TimerHandle | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "timestamp": format_go_time(self.timestamp),
            "model": self.model,
            "req_path": self.req_path,
            "method": self.method,
            "req_headers": dict(sorted(self.req_headers.items())),
            "remote_ip": self.remote_ip,
            "resp_headers": dict(sorted(self.resp_headers.items())),
            "resp_bytes": self.resp_bytes,
            "elapsed_ms": max(0, int((time.monotonic() - self.started) * 1000)),
        }


@dataclass(eq=False)
class _Exchange:
    """One model-routed request as the inflight and metrics middleware see it."""

    request: web.Request
    model: str
    req_path: str
    started: float
    inflight: _Inflight | None = None
    status: int = 0
    content_type: str = ""
    timings: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    error: str = ""


_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _redirect(location: str) -> _Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(location)

    return handler


def _drop_connection(request: web.BaseRequest) -> NoReturn:
    """Close the connection without (finishing) an HTTP response and end the handler."""
    if request.transport is not None:
        request.transport.close()
    raise asyncio.CancelledError


# --------------------------------------------------------------------------- emulator


class LlamaSwapEmulator:
    """Loopback llama-swap (v250 wire formats) with one swap group and fault injection."""

    def __init__(
        self,
        models: Iterable[SwapModel] = (),
        *,
        exclusive: bool = True,
        version: str = DEFAULT_VERSION,
        commit: str = DEFAULT_COMMIT,
        build_date: str = DEFAULT_BUILD_DATE,
        api_key: str | None = None,
        ttl_check_interval: float = 1.0,
        llama_server_build: str = LLAMA_SERVER_BUILD,
        metrics_text: str | None = None,
        peers: Mapping[str, SwapPeer] | None = None,
    ) -> None:
        self.exclusive = exclusive
        self.version = version
        self.commit = commit
        self.build_date = build_date
        self.api_key = api_key
        self.ttl_check_interval = ttl_check_interval
        self.llama_server_build = llama_server_build
        self.metrics_text = metrics_text
        self.models: dict[str, SwapModel] = {}
        self.peers: dict[str, SwapPeer] = dict(peers or {})
        self._peer_session: aiohttp.ClientSession | None = None
        self.requests: Counter[str] = Counter()
        self.events_connections = 0
        self.activity: list[dict[str, Any]] = []
        self._procs: dict[str, _Process] = {}
        self._faults: list[_HttpFault] = []
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._active: dict[int, web.BaseRequest] = {}
        self._event_conns: list[_EventConn] = []
        self._malformed_events: set[int] = set()
        self._events_stalled = False
        self._swaps: dict[str, _Swap] = {}
        self._evicting: set[str] = set()
        self._swap_lock: asyncio.Lock | None = None
        self._tick: asyncio.Future[None] | None = None
        self._inflight: dict[str, _Inflight] = {}
        self._inflight_ids = 0
        self._completion_ids = 0
        self._skew = 0.0
        self._ttl_task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        for model in models:
            self.add_model(model)

    # ---------------------------------------------------------------------- models

    def add_model(self, model: SwapModel) -> SwapModel:
        """Add (or replace) a model in the config; running emulators announce modelStatus."""
        old = self._procs.get(model.name)
        port = old.port if old is not None else START_PORT + len(self._procs)
        self.models[model.name] = model
        if old is not None:
            old.model = model
        else:
            self._procs[model.name] = _Process(model=model, port=port)
        self._emit_model_status()
        return model

    def state(self, model: str) -> str:
        """Return the process state of ``model`` (``stopped`` ... ``shutdown``)."""
        return self._procs[model].state

    def loaded_models(self) -> list[str]:
        """Return the models whose process is ``ready``, sorted."""
        return sorted(name for name, proc in self._procs.items() if proc.state == READY)

    def running_models(self) -> list[str]:
        """Return the models ``/running`` lists (not stopped/shutdown), sorted."""
        return sorted(name for name, p in self._procs.items() if p.state not in _NOT_RUNNING)

    def inflight(self, model: str) -> int:
        """Return how many proxied requests ``model``'s process is serving (or has reserved)."""
        return self._procs[model].inflight

    def prompt_cache(self, model: str) -> list[str]:
        """Return a copy of ``model``'s slot cache (prompt + generated tokens)."""
        return list(self._procs[model].cache)

    def _resolve(self, name: str) -> _Process | None:
        """Resolve a model id or alias (``cfg.RealModelName``)."""
        if name in self._procs:
            return self._procs[name]
        for proc in self._procs.values():
            if name in proc.model.aliases:
                return proc
        return None

    # ------------------------------------------------------------------- lifecycle

    async def start(self) -> str:
        """Bind 127.0.0.1 (a free port, or the one used before) and return the base URL."""
        if self._runner is not None:
            return self.url
        loop = asyncio.get_running_loop()
        self._tick = loop.create_future()
        self._swap_lock = asyncio.Lock()
        await self._listen()
        self._ttl_task = asyncio.create_task(self._ttl_loop())
        if self.peers:
            self._peer_session = aiohttp.ClientSession(auto_decompress=False)
        return self.url

    async def stop(self) -> None:
        """Stop serving, stop the TTL ticker and kill every process (no events)."""
        await self.stop_serving()
        if self._peer_session is not None:
            await self._peer_session.close()
            self._peer_session = None
        if self._ttl_task is not None:
            self._ttl_task.cancel()
            await asyncio.gather(self._ttl_task, return_exceptions=True)
            self._ttl_task = None
        await self._kill_processes()

    async def restart(self) -> None:
        """Restart llama-swap on the same port.

        Every connection (SSE streams included) is closed, every process is gone at once
        (``stopped``, prompt caches cleared, no events) and pending loads fail. The activity
        log starts again (in memory: ids from 1); counters and inflight ids keep counting;
        config and faults are kept.
        """
        await self.down()
        await self.start_serving()

    async def down(self) -> None:
        """Go down as a stopped llama-swap does (``start_serving`` brings it back).

        Off its port, its processes gone, its in-memory activity log with them.
        """
        await self.stop_serving()
        await self._kill_processes()
        self.activity.clear()

    async def stop_serving(self) -> None:
        """Take the server off its port (connections refused, open ones dropped).

        Processes keep their state, like a network outage between client and llama-swap.
        """
        runner, self._runner = self._runner, None
        if runner is None:
            return
        for request in list(self._active.values()):
            if request.transport is not None:
                request.transport.abort()
        await asyncio.sleep(0)
        await runner.cleanup()
        self._active.clear()

    async def start_serving(self) -> None:
        """Listen again on the same port after :meth:`stop_serving`."""
        if self._runner is None:
            await self._listen()

    @asynccontextmanager
    async def outage(self) -> AsyncIterator[None]:
        """Refuse connections while inside the block (then serve on the same port again)."""
        await self.stop_serving()
        try:
            yield
        finally:
            await self.start_serving()

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:40123``."""
        if self._port is None:
            raise RuntimeError("emulator has not been started")
        return f"http://127.0.0.1:{self._port}"

    async def _listen(self) -> None:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_route("*", "/{tail:.*}", self._route)
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

    async def _kill_processes(self) -> None:
        for swap in list(self._swaps.values()):
            swap.unloaded = True
            if not swap.done.done():
                swap.done.set_exception(SwapError(502, "unspecific error: shutdown"))
        tasks: list[asyncio.Task[None]] = [t for t in self._background if not t.done()]
        tasks.extend(s.task for s in self._swaps.values() if s.task is not None)
        for proc in self._procs.values():
            if proc.stop_task is not None:
                tasks.append(proc.stop_task)
            proc.stop_task = None
            if proc.abort is not None:
                proc.abort.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for proc in self._procs.values():
            proc.state = STOPPED
            proc.epoch += 1
            proc.cache.clear()
            proc.abort = None
        self._swaps.clear()
        self._evicting.clear()
        self._swap_lock = asyncio.Lock()
        for entry in self._inflight.values():
            if entry.timer is not None:
                entry.timer.cancel()
        self._inflight.clear()
        self._poke()

    # ---------------------------------------------------------------------- faults

    def fail_next(
        self,
        path: str,
        status: int = 500,
        body: str | bytes | None = None,
        content_type: str = JSON,
        *,
        method: str | None = None,
        times: int | None = 1,
    ) -> None:
        """Answer the next ``times`` requests to ``path`` (``"*"``: any) with ``status``/``body``.

        ``body`` defaults to llama-swap's JSON error shape; ``times=None`` applies until
        :meth:`clear_faults`. Paths are compared without the query string.
        """
        self._add_fault(path, method, "fail", status, body, content_type, times)

    def malformed_next(self, path: str, *, times: int | None = 1) -> None:
        """Answer the next request to ``path`` with 200 and a truncated (invalid) JSON body.

        For ``/api/events`` the next connection instead starts with one frame whose ``data``
        is not valid JSON, then streams normally.
        """
        self._add_fault(path, None, "malformed", 200, None, JSON, times)

    def drop_next(self, path: str, *, times: int | None = 1) -> None:
        """Close the connection of the next request to ``path`` without any response."""
        self._add_fault(path, None, "drop", 0, None, JSON, times)

    def clear_faults(self) -> None:
        """Remove every pending fault."""
        self._faults.clear()

    def _add_fault(
        self,
        path: str,
        method: str | None,
        kind: Literal["fail", "malformed", "drop"],
        status: int,
        body: str | bytes | None,
        content_type: str,
        times: int | None,
    ) -> None:
        if times is not None and times <= 0:
            return
        self._faults.append(
            _HttpFault(
                path=path,
                method=method.upper() if method else None,
                kind=kind,
                status=status,
                body=body,
                content_type=content_type,
                remaining=times,
            )
        )

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

    # ---------------------------------------------------------------- SSE controls

    def stall_events(self, stalled: bool = True) -> None:
        """Stall every ``/api/events`` stream: connections stay open but get no more frames.

        Frames emitted while stalled are dropped (new connections get headers only); after
        ``stall_events(False)`` new events flow again.
        """
        self._events_stalled = stalled

    def cut_events(self, *, abort: bool = False) -> int:
        """Close every open ``/api/events`` stream now; return how many were open.

        By default the response ends cleanly (chunked EOF, as when llama-swap shuts down);
        ``abort=True`` resets the TCP connection instead.
        """
        conns = list(self._event_conns)
        for conn in conns:
            conn.abort = abort
            conn.queue.put_nowait(None)
        return len(conns)

    @property
    def events_open(self) -> int:
        """Number of ``/api/events`` streams currently open."""
        return len(self._event_conns)

    # ------------------------------------------------------------- other clients

    async def load_by_other_client(self, model: str) -> None:
        """Load ``model`` like another client's ``GET /upstream/<model>/health`` would.

        The load goes through the swap (evicting the others in exclusive mode) and the request
        completes at once (setting lastUse); such a request is not model-dispatched, so it
        produces no inflight/activity events, only modelStatus frames. Raises
        :class:`SwapError` when the load fails or the model is unloaded meanwhile.
        """
        proc = self._resolve(model)
        if proc is None:
            raise KeyError(model)
        await self._acquire(proc)
        self._release(proc)

    async def unload(self, model: str | None = None) -> None:
        """Unload ``model`` (or all), like ``POST /api/models/unload[/<model>]``; blocks."""
        if model is None:
            targets = list(self._procs.values())
        else:
            proc = self._resolve(model)
            if proc is None:
                raise KeyError(model)
            targets = [proc]
        for swap in list(self._swaps.values()):
            if swap.target in targets:
                swap.unloaded = True
                self._fail_swap(swap, SwapError(500, MODEL_UNLOADED_ERROR))
        self._poke()
        await asyncio.gather(*(self._stop(proc) for proc in targets))

    def crash(self, model: str) -> None:
        """Make ``model``'s upstream exit on its own: ``ready → stopped``, requests fail."""
        proc = self._procs[model]
        if proc.state != READY:
            return
        proc.epoch += 1
        proc.cache.clear()
        self._set_state(proc, STOPPED)

    def advance(self, seconds: float) -> None:
        """Move the TTL clock forward (idle time passes instantly) and run a TTL check."""
        self._skew += seconds
        self._check_ttl()

    # ------------------------------------------------------------------- scheduler

    def _now(self) -> float:
        return time.monotonic() + self._skew

    def _poke(self) -> None:
        """Wake every ``_wait_until`` (state or inflight counts changed)."""
        tick = self._tick
        if tick is None:
            return
        self._tick = tick.get_loop().create_future()
        if not tick.done():
            tick.set_result(None)

    async def _wait_until(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            assert self._tick is not None
            await asyncio.shield(self._tick)

    def _set_state(self, proc: _Process, state: str) -> None:
        if proc.state == state:
            return
        proc.state = state
        self._poke()
        self._emit_model_status()

    def _victims(self, proc: _Process) -> list[_Process]:
        if not self.exclusive:
            return []
        return [p for p in self._procs.values() if p is not proc and p.state not in _NOT_RUNNING]

    async def _acquire(self, proc: _Process) -> None:
        """Return once ``proc`` is ready and this request counts as in flight on it."""
        name = proc.model.name
        while True:
            if proc.state == READY and not self._victims(proc) and name not in self._evicting:
                proc.inflight += 1  # FIFO fast path
                return
            swap = self._swaps.get(name)
            if swap is None:
                loop = asyncio.get_running_loop()
                swap = _Swap(target=proc, done=loop.create_future())
                swap.done.add_done_callback(_retrieve)
                self._swaps[name] = swap
                swap.task = asyncio.create_task(self._run_swap(swap))
            swap.waiters += 1
            try:
                await asyncio.shield(swap.done)
            except asyncio.CancelledError:
                # The client went away: give back the reservation (or leave the waiters).
                if swap.done.done() and not swap.done.cancelled() and not swap.done.exception():
                    self._release(proc)
                elif not swap.done.done():
                    swap.waiters -= 1
                raise
            return  # the swap reserved a slot for every waiter

    def _release(self, proc: _Process) -> None:
        proc.inflight = max(0, proc.inflight - 1)
        proc.last_use = self._now()
        self._poke()

    def _fail_swap(self, swap: _Swap, error: BaseException) -> None:
        if not swap.done.done():
            swap.done.set_exception(error)
        if self._swaps.get(swap.target.model.name) is swap:
            del self._swaps[swap.target.model.name]

    def _check_swap(self, swap: _Swap) -> None:
        if swap.unloaded or swap.done.done():
            raise SwapError(500, MODEL_UNLOADED_ERROR)

    async def _run_swap(self, swap: _Swap) -> None:
        proc = swap.target
        lock = self._swap_lock if self.exclusive and self._swap_lock else nullcontext()
        try:
            async with lock:
                self._check_swap(swap)
                victims = self._victims(proc)
                # A swap that would evict a busy process waits until it drains.
                await self._wait_until(
                    lambda: swap.unloaded or all(v.inflight == 0 for v in victims)
                )
                self._check_swap(swap)
                names = {v.model.name for v in victims}
                self._evicting |= names
                try:
                    await asyncio.gather(*(self._stop(v) for v in victims))
                finally:
                    self._evicting -= names
                self._check_swap(swap)
                if proc.state != READY:
                    await self._start(proc)
                self._check_swap(swap)
                proc.inflight += swap.waiters
                swap.done.set_result(None)
                if self._swaps.get(proc.model.name) is swap:
                    del self._swaps[proc.model.name]
        except SwapError as err:
            self._fail_swap(swap, err)
        except asyncio.CancelledError:
            self._fail_swap(swap, SwapError(502, "unspecific error: shutdown"))
            raise
        finally:
            self._poke()

    async def _start(self, proc: _Process) -> None:
        if proc.state == STOPPING:
            await self._stop(proc)
        if proc.state == READY:
            return
        abort = asyncio.Event()
        proc.abort = abort
        self._set_state(proc, STARTING)
        try:
            await asyncio.wait_for(abort.wait(), proc.model.load_seconds)
        except TimeoutError:
            pass
        finally:
            if proc.abort is abort:
                proc.abort = None
        if abort.is_set():
            self._set_state(proc, STOPPED)
            raise SwapError(500, MODEL_UNLOADED_ERROR)
        if proc.model.load_error is not None:
            self._set_state(proc, STOPPED)
            raise SwapError(500, f"unspecific error: {proc.model.load_error}")
        self._set_state(proc, READY)

    async def _stop(self, proc: _Process) -> None:
        """Stop ``proc`` and return once it is stopped (idempotent, joins a running stop)."""
        while proc.state not in _NOT_RUNNING:
            if proc.state == STARTING:
                if proc.abort is not None:
                    proc.abort.set()
                await self._wait_until(lambda: proc.state != STARTING)
                continue
            if proc.stop_task is None:
                proc.stop_task = asyncio.create_task(self._do_stop(proc))
            await asyncio.shield(proc.stop_task)

    async def _do_stop(self, proc: _Process) -> None:
        proc.epoch += 1
        self._set_state(proc, STOPPING)
        try:
            await asyncio.sleep(proc.model.unload_seconds)
        finally:
            proc.stop_task = None
            proc.cache.clear()
            if proc.state == STOPPING:
                self._set_state(proc, STOPPED)

    async def _ttl_loop(self) -> None:
        while True:
            await asyncio.sleep(self.ttl_check_interval)
            self._check_ttl()

    def _check_ttl(self) -> None:
        now = self._now()
        for proc in self._procs.values():
            ttl = proc.model.ttl
            if (
                ttl > 0
                and proc.state == READY
                and proc.inflight == 0
                and proc.stop_task is None
                and now - proc.last_use > ttl
            ):
                self._spawn(self._stop(proc))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---------------------------------------------------------------------- events

    def _model_status(self) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = []
        for name in sorted(self._procs):
            proc = self._procs[name]
            state = STOPPED if proc.state == SHUTDOWN else proc.state
            entry: dict[str, Any] = {
                "id": name,
                "name": proc.model.display_name,
                "description": proc.model.description,
                "state": state,
                "unlisted": False,
                "peerID": "",
            }
            if proc.model.aliases:
                entry["aliases"] = list(proc.model.aliases)
            entries.append(entry)
        # Recorded (events_peer.sse): each peer model after the local ones, with no state
        # (the front one does not know it), even while the peer runs it.
        entries += [
            {
                "id": fqn,
                "name": "",
                "description": "",
                "state": "",
                "unlisted": False,
                "peerID": peer_id,
            }
            for fqn, peer_id, _model in self._peer_models()
        ]
        return entries

    def _peer_models(self) -> list[tuple[str, str, str]]:
        """(routed name, peer id, the peer's model name) of every peer model, sorted."""
        return sorted(
            (f"{peer_id}/{model}", peer_id, model)
            for peer_id, peer in self.peers.items()
            for model in dict.fromkeys(peer.models)
        )

    def _peer_route(self, name: str) -> tuple[SwapPeer, str] | None:
        """``router.Peer``: the peer and its model name for ``name`` (local models first)."""
        bare: list[tuple[SwapPeer, str]] = []
        for fqn, peer_id, model in self._peer_models():
            if fqn == name:
                return self.peers[peer_id], model
            if model == name:
                bare.append((self.peers[peer_id], model))
        return bare[0] if len(bare) == 1 else None

    @staticmethod
    def _frame(kind: str, payload: object) -> bytes:
        envelope = go_json({"type": kind, "data": go_json(payload)})
        return f"event:message\ndata:{envelope}\n\n".encode()

    def _emit(self, kind: str, payload: object) -> None:
        if not self._event_conns or self._events_stalled:
            return
        frame = self._frame(kind, payload)
        for conn in self._event_conns:
            conn.queue.put_nowait(frame)

    def _emit_model_status(self) -> None:
        self._emit("modelStatus", self._model_status())

    def _inflight_snapshot(self) -> dict[str, Any]:
        entries = sorted(self._inflight.values(), key=lambda e: (e.timestamp, e.id))
        snapshot: dict[str, Any] = {"operation": "snapshot"}
        if entries:
            snapshot["requests"] = [entry.as_json() for entry in entries]
        return snapshot

    def _initial_frames(self) -> list[bytes]:
        return [
            self._frame("logData", {"data": "", "source": "proxy"}),
            self._frame("logData", {"data": "", "source": "upstream"}),
            self._frame("modelStatus", self._model_status()),
            self._frame("uiConfig", {"activity": {"session_id": list(SESSION_ID_HEADERS)}}),
            self._frame("profileChanged", {"active": None}),
            self._frame("inflight", self._inflight_snapshot()),
        ]

    def _inflight_add(self, request: web.Request, req_path: str, model: str) -> _Inflight:
        self._inflight_ids += 1
        headers: dict[str, str] = {}
        for key, value in request.headers.items():
            name = _canonical_header(key)
            if name == "Host" or name in headers:
                continue
            headers[name] = "[REDACTED]" if name.lower() in SENSITIVE_HEADERS else value
        entry = _Inflight(
            id=str(self._inflight_ids),
            started=time.monotonic(),
            timestamp=datetime.now(UTC),
            model=model,
            req_path=req_path,
            method=request.method,
            req_headers=headers,
            remote_ip=_client_ip(request),
            last_emitted=time.monotonic(),
        )
        self._inflight[entry.id] = entry
        self._emit("inflight", {"operation": "upsert", "request": entry.as_json()})
        return entry

    def _inflight_headers(self, entry: _Inflight, headers: dict[str, str]) -> None:
        if entry.id not in self._inflight:
            return
        entry.resp_headers = {
            _canonical_header(k): ("[REDACTED]" if k.lower() in SENSITIVE_HEADERS else v)
            for k, v in headers.items()
        }
        entry.last_emitted = time.monotonic()
        self._emit("inflight", {"operation": "upsert", "request": entry.as_json()})

    def _inflight_bytes(self, entry: _Inflight, count: int) -> None:
        if count <= 0 or entry.id not in self._inflight:
            return
        entry.resp_bytes += count
        now = time.monotonic()
        remaining = INFLIGHT_UPDATE_INTERVAL - (now - entry.last_emitted)
        if remaining <= 0 and entry.timer is None:
            entry.last_emitted = now
            self._emit("inflight", {"operation": "upsert", "request": entry.as_json()})
        elif entry.timer is None:
            loop = asyncio.get_running_loop()
            entry.timer = loop.call_later(max(0.0, remaining), self._inflight_pending, entry)

    def _inflight_pending(self, entry: _Inflight) -> None:
        entry.timer = None
        if entry.id in self._inflight:
            entry.last_emitted = time.monotonic()
            self._emit("inflight", {"operation": "upsert", "request": entry.as_json()})

    def _inflight_remove(self, entry: _Inflight) -> None:
        if self._inflight.pop(entry.id, None) is None:
            return
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None
        self._emit("inflight", {"operation": "remove", "id": entry.id})

    def _record_activity(self, ex: _Exchange) -> None:
        wall_ms = int((time.monotonic() - ex.started) * 1000)
        tokens: dict[str, Any] = {
            "cache_tokens": 0,
            "draft_tokens": 0,
            "draft_acc_tokens": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "prompt_per_second": 0,
            "tokens_per_second": 0,
        }
        duration = wall_ms
        if ex.status == 200 and (ex.timings is not None or ex.usage is not None):
            # buildMetrics: -1 means unknown for the rates, draft counts and cache_tokens.
            for key in (
                "cache_tokens",
                "draft_tokens",
                "draft_acc_tokens",
                "prompt_per_second",
                "tokens_per_second",
            ):
                tokens[key] = -1
            if ex.usage is not None:
                tokens["input_tokens"] = ex.usage.get("prompt_tokens", 0)
                tokens["output_tokens"] = ex.usage.get("completion_tokens", 0)
            timings = ex.timings
            if timings is not None:
                tokens["input_tokens"] = timings["prompt_n"]
                tokens["output_tokens"] = timings["predicted_n"]
                tokens["prompt_per_second"] = timings["prompt_per_second"] or 0
                tokens["tokens_per_second"] = timings["predicted_per_second"] or 0
                tokens["cache_tokens"] = timings["cache_n"]
                duration = max(duration, int(timings["prompt_ms"] + timings["predicted_ms"]))
        entry: dict[str, Any] = {
            "id": len(self.activity) + 1,
            # store.go keeps Unix seconds: read back, the time has no fraction.
            "timestamp": format_go_time(datetime.now(UTC).replace(microsecond=0)),
            "model": ex.model,
            "req_path": ex.req_path,
            "resp_content_type": ex.content_type,
            "resp_status_code": ex.status,
            "tokens": tokens,
            "duration_ms": duration,
            "has_capture": True,
        }
        if ex.status != 200:
            entry["error_msg"] = ex.error or _status_text(ex.status)
        elif ex.model in self.models:
            # Recorded (activity_peer.json): a peer's request has no fifo metadata.
            entry["metadata"] = {"fifo_priority": "0"}
        self.activity.append(entry)
        self._emit("activity", {"id": entry["id"]})

    # ------------------------------------------------------------------ middleware

    @web.middleware
    async def _middleware(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        self.requests[f"{request.method} {request.path}"] += 1
        self._active[id(request)] = request
        try:
            fault = self._take_fault(request.method, request.path)
            if fault is not None:
                if fault.kind == "drop":
                    _drop_connection(request)
                if fault.kind == "malformed" and request.path == "/api/events":
                    self._malformed_events.add(id(request))
                else:
                    return self._fault_response(request, fault)
            if self._unauthorized(request):
                response = self._send(request, 401, UNAUTHORIZED_ERROR)
                response.headers["WWW-Authenticate"] = 'Basic realm="llama-swap"'
                return response
            return await handler(request)
        finally:
            self._active.pop(id(request), None)

    def _fault_response(self, request: web.Request, fault: _HttpFault) -> web.Response:
        if fault.kind == "malformed":
            body: str | bytes = _MALFORMED.get(request.path, '{"error": "trunc')
        elif fault.body is not None:
            body = fault.body
        else:
            body = go_json({"error": f"injected fault: HTTP {fault.status}", "src": "llama-swap"})
        payload = body.encode() if isinstance(body, str) else body
        return web.Response(
            status=fault.status, body=payload, headers={"Content-Type": fault.content_type}
        )

    def _unauthorized(self, request: web.Request) -> bool:
        if self.api_key is None or request.path in ("/health", "/wol-health", "/", "/favicon.ico"):
            return False
        auth = request.headers.get("Authorization", "")
        keys: list[str] = []
        if auth.startswith("Basic "):
            try:
                decoded = base64.b64decode(auth[6:], validate=True).decode()
            except binascii.Error, UnicodeDecodeError:
                decoded = ""
            keys.append(decoded.partition(":")[2])
        if auth.startswith("Bearer "):
            keys.append(auth[7:])
        keys.append(request.headers.get("x-api-key", ""))
        return self.api_key not in keys

    # --------------------------------------------------------------------- routing

    async def _route(self, request: web.Request) -> web.StreamResponse:
        """Dispatch like Go's ``http.ServeMux`` (404 unknown path, 405 wrong method)."""
        methods = self._routes_for(request.path)
        if methods is None:
            return web.Response(status=404, text="404 page not found\n")
        method = "GET" if request.method == "HEAD" else request.method
        handler = methods.get(method) or methods.get("*")
        if handler is None:
            return _method_not_allowed(sorted(methods))
        return await handler(request)

    def _routes_for(self, path: str) -> dict[str, _Handler] | None:
        if path in MODEL_POST_ROUTES or path in MODEL_GET_ROUTES:
            methods: dict[str, _Handler] = {}
            if path in MODEL_POST_ROUTES:
                methods["POST"] = self._handle_model_request
            if path in MODEL_GET_ROUTES:
                methods["GET"] = self._handle_model_request
            return methods
        fixed: dict[str, dict[str, _Handler]] = {
            "/": {"GET": _redirect("/ui")},
            "/upstream": {"GET": _redirect("/ui/models")},
            "/health": {"GET": self._handle_health},
            "/wol-health": {"GET": self._handle_health},
            "/running": {"GET": self._handle_running},
            "/unload": {"GET": self._handle_unload_all_legacy},
            "/metrics": {"GET": self._handle_metrics},
            "/v1/models": {"GET": self._handle_models},
            "/models": {"GET": self._handle_models},
            "/api/version": {"GET": self._handle_version},
            "/api/events": {"GET": self._handle_events},
            "/api/metrics/activity": {"GET": self._handle_activity},
            "/api/models/unload": {"POST": self._handle_unload_all},
        }
        if path in fixed:
            return fixed[path]
        if path.startswith("/api/models/unload/"):
            return {"POST": self._handle_unload_model}
        if path.startswith("/upstream/"):
            return {"*": self._handle_upstream}
        return None

    @staticmethod
    def _send(request: web.Request, status: int, message: str) -> web.Response:
        """``swaputil.SendResponse`` of v218 to v250."""
        accept = request.headers.get("Accept", "")
        if "text/plain" in accept:
            body, content_type = f"llama-swap: {message}", "text/plain"
        elif "text/html" in accept:
            # Go's html.EscapeString: &#39; and &#34; for the quotes.
            escaped = (
                html.escape(message, quote=True)
                .replace("&#x27;", "&#39;")
                .replace("&quot;", "&#34;")
            )
            body = f"<html><body><h1>llama-swap</h1><p>{escaped}</p></body></html>"
            content_type = "text/html"
        else:
            kind, code = _error_type(status)
            envelope = {"message": message, "type": kind, "param": None, "code": code}
            body, content_type = go_json({"src": "llama-swap", "error": envelope}), JSON
        return web.Response(
            status=status, body=body.encode(), headers={"Content-Type": content_type}
        )

    @staticmethod
    def _encoded(obj: object, content_type: str = JSON) -> web.Response:
        """A ``json.NewEncoder(w).Encode(obj)`` reply (trailing newline)."""
        return web.Response(
            body=(go_json(obj) + "\n").encode(), headers={"Content-Type": content_type}
        )

    @staticmethod
    def _ok_text(text: str = "OK") -> web.Response:
        return web.Response(body=text.encode(), headers={"Content-Type": TEXT_SNIFFED})

    # ------------------------------------------------------------ plain handlers

    async def _handle_health(self, request: web.Request) -> web.StreamResponse:
        return self._ok_text("OK")

    async def _handle_version(self, request: web.Request) -> web.StreamResponse:
        return self._encoded(
            # Recorded (version.json): Go's encoding sorts a map's keys.
            {"build_date": self.build_date, "commit": self.commit, "version": self.version}
        )

    async def _handle_metrics(self, request: web.Request) -> web.StreamResponse:
        text = self.metrics_text if self.metrics_text is not None else METRICS_FIXTURE.read_text()
        return web.Response(body=text.encode(), headers={"Content-Type": PROMETHEUS})

    async def _handle_running(self, request: web.Request) -> web.StreamResponse:
        running = [
            {
                "model": name,
                "state": proc.state,
                "cmd": proc.cmd,
                "proxy": proc.proxy,
                "ttl": proc.model.ttl,
                "name": proc.model.display_name,
                "description": proc.model.description,
            }
            for name, proc in sorted(self._procs.items())
            if proc.state not in _NOT_RUNNING
        ]
        return self._encoded({"running": running})

    async def _handle_models(self, request: web.Request) -> web.StreamResponse:
        created = int(time.time())
        data: list[dict[str, Any]] = []
        for name, proc in sorted(self._procs.items()):
            record: dict[str, Any] = {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": "llama-swap",
            }
            if proc.model.display_name.strip():
                record["name"] = proc.model.display_name.strip()
            if proc.model.description.strip():
                record["description"] = proc.model.description.strip()
            meta: dict[str, Any] = {"type": "model"}
            if proc.model.aliases:
                meta["aliases"] = list(proc.model.aliases)
            record["meta"] = {"llamaswap": dict(sorted(meta.items()))}
            loaded = proc.state not in _NOT_RUNNING
            record["status"] = {"value": "loaded" if loaded else "unloaded"}
            data.append(record)
        # Recorded (models.json): a peer model is listed as such, always "unloaded".
        data += [
            {
                "id": fqn,
                "object": "model",
                "created": created,
                "owned_by": "llama-swap",
                "name": f"{peer_id}: {model}",
                "meta": {"llamaswap": {"peerID": peer_id, "type": "peer"}},
                "status": {"value": "unloaded"},
            }
            for fqn, peer_id, model in self._peer_models()
        ]
        data.sort(key=lambda record: record["id"])
        response = self._encoded({"data": data, "object": "list"})
        if origin := request.headers.get("Origin"):
            response.headers["Access-Control-Allow-Origin"] = origin
        return response

    async def _handle_unload_all(self, request: web.Request) -> web.StreamResponse:
        await self.unload()
        return self._encoded({"msg": "ok"})

    async def _handle_unload_all_legacy(self, request: web.Request) -> web.StreamResponse:
        await self.unload()
        return self._ok_text("OK")

    async def _handle_unload_model(self, request: web.Request) -> web.StreamResponse:
        requested = request.path.removeprefix("/api/models/unload/").removeprefix("/")
        proc = self._resolve(requested) if requested else None
        if proc is None:
            return self._send(request, 404, MODEL_NOT_FOUND)
        await self.unload(proc.model.name)
        return self._ok_text("OK")

    async def _handle_activity(self, request: web.Request) -> web.StreamResponse:
        query = request.query
        try:
            limit = int(query.get("limit", "25"))
            page = int(query.get("page", "1"))
            min_id = int(query.get("min_id", "0") or 0)
            max_id = int(query.get("max_id", "0") or 0)
        except ValueError:
            return self._send(request, 400, "invalid activity query")
        if not 0 < limit < 1000:
            return self._send(request, 400, "limit must be between 1 and 999")
        if page < 1:
            return self._send(request, 400, "page must be >= 1")
        models = [m.strip() for m in query.getall("model", []) if m.strip()]
        rows = [
            row
            for row in self.activity
            if (not models or row["model"] in models)
            and (not min_id or row["id"] >= min_id)
            and (not max_id or row["id"] <= max_id)
        ]
        rows.sort(key=lambda row: row["id"], reverse=query.get("order", "desc") != "asc")
        total = len(rows)
        start = (page - 1) * limit
        return self._encoded(
            {
                "data": rows[start : start + limit],
                "page": page,
                "limit": limit,
                "total": total,
                "total_pages": math.ceil(total / limit),
            }
        )

    async def _handle_events(self, request: web.Request) -> web.StreamResponse:
        self.events_connections += 1
        response = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": SSE,
                "Cache-Control": "no-cache",
                "Connection": "keep-alive",
                "X-Content-Type-Options": "nosniff",
                "X-Accel-Buffering": "no",
            },
        )
        conn = _EventConn(request=request, queue=asyncio.Queue())
        self._event_conns.append(conn)  # subscribe before the snapshot, like apigroup.go
        try:
            if not self._events_stalled:
                for initial in self._initial_frames():
                    conn.queue.put_nowait(initial)
            await response.prepare(request)
            if id(request) in self._malformed_events:
                self._malformed_events.discard(id(request))
                await response.write(
                    b'event:message\ndata:{"type":"modelStatus","data":"[{\\"i\n\n'
                )
            while True:
                frame = await conn.queue.get()
                if frame is None:
                    break
                await response.write(frame)
            if conn.abort:
                _drop_connection(request)
            await response.write_eof()
        finally:
            if conn in self._event_conns:
                self._event_conns.remove(conn)
        return response

    # ----------------------------------------------------------- model-routed

    async def _handle_model_request(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        raw = await request.read()
        payload: dict[str, Any] | None = None
        if request.method in ("GET", "HEAD"):
            model_id = request.query.get("model", "")
        elif "application/json" in request.headers.get("Content-Type", ""):
            payload = _loads_object(raw)
            model_id = _model_field(payload)
        elif "application/x-www-form-urlencoded" in request.headers.get("Content-Type", ""):
            model_id = _parse_form(raw).get("model", "")
        else:
            model_id = ""  # multipart forms are not emulated
        if not model_id:
            return self._send(request, 404, NO_MODEL_ERROR)
        path = request.path
        upstream_path = path.removeprefix("/v") if path.startswith("/v/") else path
        upstream_path = upstream_path.removeprefix("/audioapi")
        proc = self._resolve(model_id)
        real = proc.model.name if proc is not None else model_id
        ex = _Exchange(request=request, model=real, req_path=path, started=started)
        ex.inflight = self._inflight_add(request, path, real)
        route = self._peer_route(model_id) if proc is None else None
        try:
            if route is not None:
                peer, peer_model = route
                body = raw
                if payload is not None and peer_model != model_id:
                    body = go_json(payload | {"model": peer_model}).encode()
                return await self._to_peer(ex, peer, path, body)
            if proc is None:
                return await self._finish(ex, self._send(request, 404, NO_ROUTER_ERROR))
            return await self._serve(ex, proc, upstream_path, raw)
        finally:
            if request.method == "POST":
                self._record_activity(ex)
            self._inflight_remove(ex.inflight)

    async def _handle_upstream(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        found = self._find_model_in_path(request.path.removeprefix("/upstream"))
        peer = self._find_peer_in_path(request.path.removeprefix("/upstream"))
        if found is None and peer is not None:
            # Recorded (upstream_peer_health.json): /upstream/lab/tiny/health is the peer's
            # own /health ("OK"), the rest of the path sent to the peer's root.
            route, remaining = peer
            ex = _Exchange(request=request, model="", req_path=remaining, started=started)
            return await self._to_peer(ex, route, remaining, await request.read())
        if found is None:
            return self._send(request, 404, MODEL_NOT_FOUND)
        search_name, proc, remaining = found
        if remaining == "/" and not request.path.endswith("/"):
            location = f"/upstream/{search_name}/"
            if request.query_string:
                location += "?" + request.query_string
            if request.method in ("GET", "HEAD"):
                raise web.HTTPMovedPermanently(location)
            raise web.HTTPPermanentRedirect(location)
        if IGNORE_PATHS.match(remaining) and proc.state != READY:
            message = f"model {proc.model.name} is not loaded; path matches upstream.ignorePaths"
            return self._send(request, 409, message)
        raw = await request.read()
        ex = _Exchange(request=request, model=proc.model.name, req_path=remaining, started=started)
        dispatched = (request.method == "POST" and remaining in MODEL_POST_ROUTES) or (
            request.method == "GET" and remaining in MODEL_GET_ROUTES
        )
        if dispatched:
            ex.inflight = self._inflight_add(request, remaining, proc.model.name)
        try:
            return await self._serve(ex, proc, remaining, raw)
        finally:
            if dispatched and request.method == "POST":
                self._record_activity(ex)
            if ex.inflight is not None:
                self._inflight_remove(ex.inflight)

    def _find_peer_in_path(self, path: str) -> tuple[SwapPeer, str] | None:
        parts = path.split("/")[1:]
        for end in range(len(parts), 0, -1):
            route = self._peer_route("/".join(parts[:end]))
            if route is not None:
                return route[0], "/" + "/".join(parts[end:])
        return None

    async def _to_peer(
        self, ex: _Exchange, peer: SwapPeer, path: str, body: bytes
    ) -> web.StreamResponse:
        """``httputil.ReverseProxy`` to the peer; 502 in words when it cannot be reached."""
        request = ex.request
        assert self._peer_session is not None
        headers = {
            key: value
            for key, value in request.headers.items()
            if key.lower() not in ("host", "content-length", "transfer-encoding", "connection")
        }
        url = peer.proxy.rstrip("/") + path
        try:
            async with self._peer_session.request(
                request.method, url, data=body or None, headers=headers
            ) as upstream:
                response = web.StreamResponse(status=upstream.status)
                for key in ("Content-Type", "Content-Encoding", "X-Accel-Buffering"):
                    if key in upstream.headers:
                        response.headers[key] = upstream.headers[key]
                ex.status = upstream.status
                ex.content_type = upstream.headers.get("Content-Type", "")
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
                return response
        except aiohttp.ClientConnectionError:
            split = urlsplit(url)
            message = (
                f"peer proxy error: dial tcp {split.hostname}:{split.port}: connect: "
                "connection refused"
            )
            return await self._finish(ex, self._send(request, 502, message))

    def _find_model_in_path(self, path: str) -> tuple[str, _Process, str] | None:
        """``swaputil.FindModelInPath``: the longest leading segment run naming a model."""
        parts = path.split("/")[1:]
        for end in range(len(parts), 0, -1):
            candidate = "/".join(parts[:end])
            proc = self._resolve(candidate) if candidate else None
            if proc is not None:
                return candidate, proc, "/" + "/".join(parts[end:])
        return None

    async def _finish(self, ex: _Exchange, response: web.Response) -> web.Response:
        """Write a complete response now, keeping the inflight/metrics view in step."""
        body = response.body if isinstance(response.body, bytes) else b""
        ex.status = response.status
        ex.content_type = response.headers.get("Content-Type", "")
        if ex.status != 200:
            ex.error = _error_message(body) or _status_text(ex.status)
        if ex.inflight is not None:
            self._inflight_headers(ex.inflight, dict(response.headers))
        await response.prepare(ex.request)
        await response.write_eof()
        if ex.inflight is not None:
            self._inflight_bytes(ex.inflight, len(body))
        return response

    async def _serve(
        self, ex: _Exchange, proc: _Process, upstream_path: str, raw: bytes
    ) -> web.StreamResponse:
        try:
            await self._acquire(proc)
        except SwapError as err:
            return await self._finish(ex, self._send(ex.request, err.status, err.message))
        try:
            return await self._llama_server(ex, proc, upstream_path, raw)
        except _UpstreamGone:
            # httputil.ReverseProxy: 502 with an empty body before headers were written.
            return await self._finish(ex, web.Response(status=502))
        finally:
            self._release(proc)

    # ------------------------------------------------------ emulated llama-server

    async def _llama_server(
        self, ex: _Exchange, proc: _Process, path: str, raw: bytes
    ) -> web.StreamResponse:
        method = ex.request.method
        if method in ("GET", "HEAD") and path == "/health":
            return await self._finish(ex, _cpp_response({"status": "ok"}))
        if method in ("GET", "HEAD") and path == "/props":
            props = {
                "default_generation_settings": {"n_ctx": 4096, "params": {"n_predict": -1}},
                "total_slots": 1,
                "model_alias": proc.model.name,
                "model_path": f"/models/{proc.model.name}.gguf",
                "build_info": self.llama_server_build,
            }
            return await self._finish(ex, _cpp_response(props))
        if method in ("GET", "HEAD") and path == "/":
            html = "<!doctype html><html><head><title>llama.cpp</title></head></html>"
            return await self._finish(ex, web.Response(text=html, content_type="text/html"))
        chat = path in ("/v1/chat/completions", "/chat/completions")
        completion = path in ("/v1/completions", "/completions")
        if method == "POST" and (chat or completion):
            payload = _loads_object(raw)
            if payload is None:
                error = {"code": 500, "message": "invalid JSON body", "type": "server_error"}
                return await self._finish(ex, _cpp_response({"error": error}, status=500))
            return await self._generate(ex, proc, payload, chat=chat)
        error = {"code": 404, "message": "File Not Found", "type": "not_found_error"}
        return await self._finish(ex, _cpp_response({"error": error}, status=404))

    def _prompt_tokens(self, payload: dict[str, Any], *, chat: bool) -> list[str]:
        tokens = ["<s>"]
        if chat:
            messages = payload.get("messages")
            for message in messages if isinstance(messages, list) else []:
                if not isinstance(message, dict):
                    continue
                tokens.append(f"<|{message.get('role', 'user')}|>")
                tokens.extend(_content_text(message.get("content")).split())
            tokens.append("<|assistant|>")
            return tokens
        prompt = payload.get("prompt")
        if isinstance(prompt, list):
            prompt = " ".join(str(part) for part in prompt)
        tokens.extend(str(prompt or "").split())
        return tokens

    @staticmethod
    async def _work(proc: _Process, epoch: int, seconds: float) -> None:
        """Spend ``seconds`` of upstream compute; fail if the process went away meanwhile."""
        if seconds > 0:
            await asyncio.sleep(seconds)
        if proc.epoch != epoch or proc.state != READY:
            raise _UpstreamGone

    def _plan(self, proc: _Process, payload: dict[str, Any], *, chat: bool) -> _Plan:
        """Tokenise the prompt, apply the slot cache and fix the reply and its timings."""
        model = proc.model
        prompt = self._prompt_tokens(payload, chat=chat)
        limit = payload.get("max_tokens", payload.get("max_completion_tokens"))
        if limit is None:
            limit = payload.get("n_predict")
        reply = _reply_tokens(model.reply)
        count = len(reply) if not isinstance(limit, int) or limit < 0 else min(limit, len(reply))
        # One slot: reuse the longest common prefix, but always evaluate at least one token.
        common = 0
        for cached, token in zip(proc.cache, prompt, strict=False):
            if cached != token:
                break
            common += 1
        cache_n = min(common, len(prompt) - 1)
        prompt_n = len(prompt) - cache_n
        prompt_ms = prompt_n * model.prompt_ms_per_token
        self._completion_ids += 1
        digest = hashlib.sha256(str(self._completion_ids).encode()).hexdigest()
        name = payload.get("model")
        return _Plan(
            prompt=prompt,
            tokens=reply[:count],
            finish="length" if count < len(reply) else "stop",
            timings=_timings(cache_n, prompt_n, prompt_ms, count, count * model.token_ms),
            usage={
                "completion_tokens": count,
                "prompt_tokens": len(prompt),
                "total_tokens": len(prompt) + count,
                "prompt_tokens_details": {"cached_tokens": cache_n},
            },
            cmpl_id=f"chatcmpl-{digest[:32]}",
            created=int(time.time()),
            model=name if isinstance(name, str) else model.name,
            fingerprint=self.llama_server_build,
        )

    async def _generate(
        self, ex: _Exchange, proc: _Process, payload: dict[str, Any], *, chat: bool
    ) -> web.StreamResponse:
        epoch = proc.epoch
        plan = self._plan(proc, payload, chat=chat)
        ex.timings = plan.timings
        ex.usage = plan.usage
        await self._work(proc, epoch, plan.timings["prompt_ms"] / 1000)
        proc.cache = list(plan.prompt)
        if not payload.get("stream"):
            for token in plan.tokens:
                await self._work(proc, epoch, proc.model.token_ms / 1000)
                proc.cache.append(token.strip())
            return await self._finish(ex, _cpp_response(plan.reply(chat=chat)))
        out = _SseOut(self, ex)
        try:
            for index, token in enumerate(plan.tokens):
                await self._work(proc, epoch, proc.model.token_ms / 1000)
                proc.cache.append(token.strip())
                if chat and index == 0:
                    await out.data(plan.chat_chunk({"role": "assistant", "content": None}))
                if chat:
                    await out.data(plan.chat_chunk({"content": token}))
                else:
                    await out.data(plan.text_chunk(token))
            if chat and not plan.tokens:
                await out.data(plan.chat_chunk({"role": "assistant", "content": None}))
            options = payload.get("stream_options")
            include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
            await out.data(plan.final_chunk(chat=chat, include_usage=include_usage))
            await out.write(b"data: [DONE]\n\n")
            return await out.finish()
        except _UpstreamGone:
            if out.response.prepared:
                ex.timings = None
                ex.usage = None
                _drop_connection(ex.request)  # ReverseProxy aborts a started response
            raise


@dataclass
class _Plan:
    """What the emulated llama-server will answer, with llama.cpp's key order."""

    prompt: list[str]
    tokens: list[str]
    finish: str
    timings: dict[str, Any]
    usage: dict[str, Any]
    cmpl_id: str
    created: int
    model: str
    fingerprint: str

    def _tail(self, obj: str) -> dict[str, Any]:
        return {"model": self.model, "system_fingerprint": self.fingerprint, "object": obj}

    def chat_chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        """``chat.completion.chunk``: choices, created, id, model, system_fingerprint, object."""
        choice = {"finish_reason": finish, "index": 0, "delta": delta}
        return {"choices": [choice], "created": self.created, "id": self.cmpl_id} | self._tail(
            "chat.completion.chunk"
        )

    def text_chunk(self, text: str, finish: str | None = None) -> dict[str, Any]:
        """``text_completion`` chunk: choices, created, model, system_fingerprint, object, id."""
        choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": finish}
        return (
            {"choices": [choice], "created": self.created}
            | self._tail("text_completion")
            | {"id": self.cmpl_id}
        )

    def final_chunk(self, *, chat: bool, include_usage: bool) -> dict[str, Any]:
        """The last data chunk: ``finish_reason`` and ``timings`` (completions: ``usage`` too)."""
        if chat:
            final = self.chat_chunk({}, self.finish)
            if include_usage:
                final["usage"] = self.usage
        else:
            final = self.text_chunk("", self.finish)
            final = {k: v for k, v in final.items() if k != "id"} | {
                "usage": self.usage,
                "id": self.cmpl_id,
            }
        final["timings"] = self.timings
        return final

    def reply(self, *, chat: bool) -> dict[str, Any]:
        """The non-streamed reply (``usage`` and ``timings`` included)."""
        text = "".join(self.tokens)
        choice: dict[str, Any]
        if chat:
            message = {"role": "assistant", "content": text}
            choice = {"finish_reason": self.finish, "index": 0, "message": message}
            obj = "chat.completion"
        else:
            choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": self.finish}
            obj = "text_completion"
        return (
            {"choices": [choice], "created": self.created}
            | self._tail(obj)
            | {"usage": self.usage, "id": self.cmpl_id, "timings": self.timings}
        )


class _SseOut:
    """Writes llama-server's SSE reply; headers go out with the first chunk."""

    def __init__(self, emulator: LlamaSwapEmulator, ex: _Exchange) -> None:
        self._emulator = emulator
        self._ex = ex
        self.response = web.StreamResponse(status=200)
        self.response.headers["Content-Type"] = SSE
        self.response.headers["Server"] = "llama.cpp"
        self.response.headers["X-Accel-Buffering"] = "no"  # added by llama-swap for SSE

    async def write(self, data: bytes) -> None:
        ex = self._ex
        if not self.response.prepared:
            ex.status = 200
            ex.content_type = SSE
            if ex.inflight is not None:
                self._emulator._inflight_headers(ex.inflight, dict(self.response.headers))
            await self.response.prepare(ex.request)
        await self.response.write(data)
        if ex.inflight is not None:
            self._emulator._inflight_bytes(ex.inflight, len(data))

    async def data(self, chunk: dict[str, Any]) -> None:
        await self.write(f"data: {_cpp_json(chunk)}\n\n".encode())

    async def finish(self) -> web.StreamResponse:
        await self.response.write_eof()
        return self.response


_MALFORMED: Final = {
    "/running": '{"running":[{"model":"tiny","state":',
    "/v1/models": '{"data":[{"id":"tiny","object":"model"',
    "/api/version": '{"version":"v250","commit":',
}


def _retrieve(future: asyncio.Future[None]) -> None:
    """Mark a swap future's exception as retrieved (no 'never retrieved' warnings)."""
    if not future.cancelled():
        future.exception()


def _client_ip(request: web.Request) -> str:
    if xff := request.headers.get("X-Forwarded-For"):
        return xff.split(",", 1)[0].strip()
    if real := request.headers.get("X-Real-IP"):
        return real.strip()
    return request.remote or ""


def _loads_object(raw: bytes) -> dict[str, Any] | None:
    try:
        payload = json.loads(raw)
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def _model_field(payload: dict[str, Any] | None) -> str:
    """``gjson.GetBytes(body, "model").String()`` for the common cases."""
    if payload is None:
        return ""
    value = payload.get("model")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return ""


def _parse_form(raw: bytes) -> dict[str, str]:
    try:
        parsed = parse_qs(raw.decode(), keep_blank_values=True)
    except UnicodeDecodeError:
        return {}
    return {key: values[0] for key, values in parsed.items() if values}


def _error_message(body: bytes) -> str:
    """Pull the message out of an error body (like metrics.go ``extractErrorMessage``)."""
    try:
        decoded = json.loads(body)
    except ValueError:
        return body.decode(errors="replace").strip()
    if isinstance(decoded, dict):
        error = decoded.get("error")
        if isinstance(error, str):
            return error
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return ""


def _status_text(status: int) -> str:
    """``fmt.Sprintf("%d %s", status, http.StatusText(status))``."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def _cpp_response(body: dict[str, Any], *, status: int = 200) -> web.Response:
    return web.Response(
        status=status,
        body=_cpp_json(body).encode(),
        headers={"Content-Type": CPP_JSON, "Server": "llama.cpp"},
    )


def _method_not_allowed(methods: list[str]) -> web.Response:
    return web.Response(
        status=405,
        body=b"Method Not Allowed\n",
        headers={
            "Allow": ", ".join(methods),
            "Content-Type": TEXT_SNIFFED,
            "X-Content-Type-Options": "nosniff",
        },
    )
