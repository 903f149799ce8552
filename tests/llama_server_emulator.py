"""Deterministic loopback emulator of llama.cpp's ``llama-server`` in router mode (b11669).

The emulator is a small :mod:`aiohttp.web` application on 127.0.0.1 that speaks the router's
wire formats, byte for byte where the raw replies recorded from the real server under
``tests/fixtures/llama_server/`` show them (compact JSON in insertion order, raw UTF-8,
``application/json; charset=utf-8``, ``data: {...}\\n\\n`` SSE frames, ``Server: llama.cpp``).

Sources (llama.cpp ``tools/server/server-models.cpp``, ``server-models.h``, ``server-http.cpp``,
``server-task.cpp``) and the real b11669 server, probed once:

* ``GET /props`` (no ``?model=``): the router's own reply. With ``?model=X`` (and
  ``GET /slots|/metrics?model=X``) the router starts X first (``--models-autoload``) and
  proxies to the child; those child replies are minimal here (not recorded).
* ``GET /models`` (and ``/v1/models``): every model sorted by id, ``created`` is *now*,
  ``status`` = ``{value, args, preset}`` plus ``exit_code``/``failed: true`` after a failed
  load (the value stays ``unloaded``), ``context_length`` is the training context, and a running
  model that reported its load also carries ``meta``. ``--port`` in ``args`` is ``0`` until the
  first load and a new port on every load.
* ``POST /models/load``: 404 (rendered by httplib as ``File Not Found``) for an unknown model,
  400 ``model is already running``; otherwise ``server_models::load``: evict the least
  recently used running model while ``--models-max`` is reached (waiting until it exited),
  then ``{"success":true}`` while the child loads in the background.
* ``POST /models/unload``: 400 ``model is not found`` / ``model is not running``; a loading
  child is killed (exit code -9, so it shows as failed), a loaded one exits with 0 after
  ``unload_seconds``.
* ``GET /models/sse``: headers at once, nothing on connect, then ``model_status`` (loading),
  ``status_change`` loading with ``progress`` 0.0 and 1.0, ``status_change`` loaded with
  ``info`` (incl. ``meta``) and ``status_change`` unloaded with ``exit_code``.
* ``POST /v1/chat/completions`` / ``/v1/completions``: the model is started if needed (the
  request blocks, no headers, while it loads); 400 ``model 'X' not found``; 500
  ``model name=X failed to load``. Stream chunks and non-stream replies have the fields of the
  real ones (chat: role chunk first; final chunk with ``finish_reason`` and ``timings``;
  ``stream_options.include_usage`` adds the ``choices: []`` usage chunk; completions carry
  ``usage`` with ``prompt_tokens_details``), then ``data: [DONE]``.

Emulated model behaviour: tokens are words (a prompt starts with a BOS token, a chat template
adds one role marker per message and an assistant marker); the reply is ``model.reply`` cut at
``max_tokens``/``n_predict`` (``finish_reason`` ``length``) or complete (``stop``). One slot per
model: requests run one at a time, and its prompt cache is the previous prompt plus the tokens
generated, so ``cache_n`` is the common prefix with it, at most ``prompt tokens - 1``; it is
empty after every (re)load. The handler really sleeps ``prompt_n * prompt_ms_per_token`` before
the first token and ``token_ms`` before each further one, so TTFT is measurable; the reported
``timings`` are those planned values, with b11669's rates (``predicted_per_token_ms`` divides by
``predicted_n - 1``: the first token comes out of the prompt pass).
"""

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
import json
import math
import random
import re
import string
import time
from typing import Any, Final, NoReturn

from aiohttp import web

from .held_answer import HeldAnswer

__all__ = [
    "BIN_PATH",
    "BUILD_INFO",
    "JSON_CT",
    "KILLED_EXIT_CODE",
    "MODELS_DIR",
    "SSE_CT",
    "EmulatedLlamaModel",
    "HeldAnswer",
    "LlamaServerEmulator",
    "RecordedRequest",
    "cpp_json",
    "split_tokens",
]

BUILD_INFO: Final = "b11669-Debian"
BIN_PATH: Final = "/opt/llm-test-servers/llama/root/usr/bin/llama-server"
MODELS_DIR: Final = "/opt/llm-test-servers/models"
CHILD_HOST: Final = "127.0.0.1"
JSON_CT: Final = "application/json; charset=utf-8"
SSE_CT: Final = "text/event-stream"
# Unloading a loading child SIGKILLs it; llama.cpp's vendored sheredom/subprocess.h reports a
# death by signal as -signal (older upstream versions: EXIT_FAILURE, 1).
KILLED_EXIT_CODE: Final = -9

UNLOADED: Final = "unloaded"
LOADING: Final = "loading"
LOADED: Final = "loaded"

# Paths the API key does not guard (server-http.cpp get_public_endpoints, without the UI).
PUBLIC_PATHS: Final = frozenset({"/health", "/v1/health", "/models", "/v1/models", "/"})
_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    500: "server_error",
    501: "not_supported_error",
    503: "unavailable_error",
}
_ID_CHARS: Final = string.ascii_letters + string.digits


def cpp_json(obj: object) -> str:
    """Encode like llama-server's ``ordered_json::dump()``: compact, insertion order, raw UTF-8."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def split_tokens(text: str) -> list[str]:
    """Split a reply into word tokens that keep their leading whitespace."""
    tokens: list[str] = re.findall(r"\s*\S+", text)
    return tokens or ([text] if text else [])


def _cpp_response(obj: object, *, status: int = 200) -> web.Response:
    response = web.Response(status=status, body=cpp_json(obj).encode())
    response.headers["Content-Type"] = JSON_CT
    return response


def _error_body(status: int, message: str, kind: str | None = None) -> dict[str, Any]:
    """``format_error_response``: ``{"error": {"code", "message", "type"}}``."""
    return {
        "error": {
            "code": status,
            "message": message,
            "type": kind or _ERROR_TYPES.get(status, "server_error"),
        }
    }


# httplib's error handler replaces the body of every 404 (key order message, type, code).
_NOT_FOUND: Final = {"error": {"message": "File Not Found", "type": "not_found_error", "code": 404}}
_UNAUTHORIZED: Final = {
    "error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}
}
# A child that is still loading answers every request with this (server-http.cpp).
_CHILD_LOADING: Final = {
    "error": {"message": "Loading model", "type": "unavailable_error", "code": 503}
}


class _ApiError(Exception):
    """Raised inside handlers to answer llama-server's error JSON with ``status``."""

    def __init__(
        self, status: int, message: str, kind: str | None = None, body: object = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body if body is not None else _error_body(status, message, kind)


class _Gone(Exception):
    """The model's child process went away while a request was using it."""


def _parse_error(raw: bytes, err: ValueError) -> _ApiError:
    """Shape a body that is not JSON like nlohmann's ``parse_error.101`` (400 in b11669)."""
    prefix = "[json.exception.parse_error.101] parse error at line"
    if not raw.strip():
        message = (
            f"{prefix} 1, column 1: attempting to parse an empty input; "
            "check that your input string or stream contains the expected JSON"
        )
    else:
        line = getattr(err, "lineno", 1)
        column = getattr(err, "colno", 1)
        pos = getattr(err, "pos", 0)
        last = raw.decode(errors="replace")[pos : pos + 1]
        message = (
            f"{prefix} {line}, column {column}: syntax error while parsing value - "
            f"invalid literal; last read: '{last}'"
        )
    return _ApiError(400, message)


def _rate(ms: float, n: int) -> float | None:
    """``1e3 / ms * n`` as C++ computes it; inf/nan print as null (nlohmann)."""
    if ms == 0:
        return None if n else 0.0
    value = 1e3 / ms * n
    return value if math.isfinite(value) else None


def _timings(
    cache_n: int, prompt_n: int, prompt_ms: float, predicted_n: int, predicted_ms: float
) -> dict[str, Any]:
    """``result_timings::to_json`` with b11669's rates (decode rates over ``predicted_n - 1``)."""
    decoded = predicted_n - 1
    return {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / prompt_n if prompt_n else None,
        "prompt_per_second": _rate(prompt_ms, prompt_n),
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / decoded if decoded > 0 else 0.0,
        "predicted_per_second": _rate(predicted_ms, decoded) if decoded > 0 else 0.0,
    }


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


# ------------------------------------------------------------------------------ models


@dataclass
class EmulatedLlamaModel:
    """One model of the router's ``--models-dir`` (a GGUF the router can start a child for).

    The defaults describe the recorded ``tiny`` model (166K parameters, F32). ``ctx_size`` is
    the ``--ctx-size`` the child is started with, ``ctx_train`` the training context that
    ``/models`` reports as ``context_length``. ``load_seconds`` is the time from spawn to
    ``loaded`` (progress 1.0 comes at half of it), ``unload_seconds`` the time a loaded child
    takes to exit after ``/models/unload``. ``fail_exit_code`` (see
    :meth:`LlamaServerEmulator.set_failing`) makes every load exit with that code halfway.
    """

    name: str
    load_seconds: float = 0.5
    ctx_size: int = 512
    prompt_ms_per_token: float = 1.0
    token_ms: float = 5.0
    n_params: int = 165696
    size: int = 662784
    ctx_train: int = 2048
    n_vocab: int = 652
    n_embd: int = 64
    vocab_type: int = 1
    ftype: str = "all F32"
    threads: int = 2
    unload_seconds: float = 0.0
    reply: str = "Warm and ready to help you today."
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    path: str = ""
    fail_exit_code: int | None = None

    def __post_init__(self) -> None:
        if not self.path:
            self.path = f"{MODELS_DIR}/{self.name}.gguf"

    def meta(self) -> dict[str, Any]:
        """The ``meta`` object the child reports once loaded (GGUF facts)."""
        return {
            "vocab_type": self.vocab_type,
            "n_vocab": self.n_vocab,
            "n_ctx": self.ctx_size,
            "n_ctx_train": self.ctx_train,
            "n_embd": self.n_embd,
            "n_params": self.n_params,
            "size": self.size,
            "ftype": self.ftype,
        }


@dataclass(eq=False)
class _Instance:
    """``server_models::instance_t``: a model's child process slot in the router."""

    model: EmulatedLlamaModel
    status: str = UNLOADED
    port: int = 0
    exit_code: int = 0
    last_used: int = 0
    created: int = 0
    loaded_info: dict[str, Any] | None = None
    cache: list[str] = field(default_factory=list)
    epoch: int = 0  # bumped whenever the child changes; in-flight work notices
    stopping: bool = False
    task: asyncio.Task[None] | None = None
    slot: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def running(self) -> bool:
        return self.status in (LOADING, LOADED)

    @property
    def failed(self) -> bool:
        return self.status == UNLOADED and self.exit_code != 0


@dataclass
class RecordedRequest:
    """One HTTP request the emulator received."""

    method: str
    path: str
    query: dict[str, str]
    json: Any
    headers: dict[str, str]
    body: bytes = b""
    at: float = field(default_factory=time.monotonic)


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


@dataclass(eq=False)
class _SseConn:
    queue: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    abort: bool = False


@dataclass
class _Plan:
    """A generation fixed before it runs: prompt, reply tokens and reported figures."""

    prompt: list[str]
    tokens: list[str]
    finish: str
    cache_n: int
    prompt_n: int
    prompt_ms: float
    predicted_ms: float
    cmpl_id: str
    created: int
    model: str
    fingerprint: str

    def timings(self) -> dict[str, Any]:
        return _timings(
            self.cache_n, self.prompt_n, self.prompt_ms, len(self.tokens), self.predicted_ms
        )

    def usage(self) -> dict[str, Any]:
        return {
            "completion_tokens": len(self.tokens),
            "prompt_tokens": len(self.prompt),
            "total_tokens": len(self.prompt) + len(self.tokens),
            "prompt_tokens_details": {"cached_tokens": self.cache_n},
        }

    def chat_chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
            "created": self.created,
            "id": self.cmpl_id,
            "model": self.model,
            "system_fingerprint": self.fingerprint,
            "object": "chat.completion.chunk",
        }

    def chat_final_chunks(self, *, include_usage: bool) -> list[dict[str, Any]]:
        chunks = [self.chat_chunk({}, self.finish)]
        if include_usage:
            usage_chunk = self.chat_chunk({})
            usage_chunk["choices"] = []
            usage_chunk["usage"] = self.usage()
            chunks.append(usage_chunk)
        chunks[-1]["timings"] = self.timings()
        return chunks

    def text_chunk(self, text: str, finish: str | None = None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}],
            "created": self.created,
            "model": self.model,
            "system_fingerprint": self.fingerprint,
            "object": "text_completion",
        }
        if finish is not None:
            chunk["usage"] = self.usage()
        chunk["id"] = self.cmpl_id
        if finish is not None:
            chunk["timings"] = self.timings()
        return chunk

    def reply(self, *, chat: bool) -> dict[str, Any]:
        text = "".join(self.tokens)
        if not chat:
            return self.text_chunk(text, self.finish)
        return {
            "choices": [
                {
                    "finish_reason": self.finish,
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "created": self.created,
            "model": self.model,
            "system_fingerprint": self.fingerprint,
            "object": "chat.completion",
            "usage": self.usage(),
            "id": self.cmpl_id,
            "timings": self.timings(),
        }


class _SseOut:
    """A ``text/event-stream`` reply whose headers go out with the first frame."""

    def __init__(self, request: web.Request, server: LlamaServerEmulator) -> None:
        self._request = request
        self.response = web.StreamResponse(status=200)
        server.decorate(request, self.response)
        self.response.headers["Content-Type"] = SSE_CT

    async def data(self, obj: object) -> None:
        await self.write(f"data: {cpp_json(obj)}\n\n".encode())

    async def write(self, payload: bytes) -> None:
        if not self.response.prepared:
            await self.response.prepare(self._request)
        await self.response.write(payload)

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


# ---------------------------------------------------------------------------- emulator

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class LlamaServerEmulator:
    """Loopback llama-server router (b11669 wire formats) with LRU eviction and fault injection."""

    def __init__(
        self,
        models: Iterable[EmulatedLlamaModel] = (),
        *,
        models_max: int = 1,
        autoload: bool = True,
        build_info: str = BUILD_INFO,
        api_key: str | None = None,
        bin_path: str = BIN_PATH,
        clock: Callable[[], float] = time.time,
        seed: int = 11669,
    ) -> None:
        self.models_max = models_max
        self.autoload = autoload
        self.build_info = build_info
        self.api_key = api_key
        self.bin_path = bin_path
        self.clock = clock
        self.models: dict[str, EmulatedLlamaModel] = {}
        self.requests: list[RecordedRequest] = []
        self.counts: Counter[str] = Counter()
        self.sse_events: list[dict[str, Any]] = []
        self._instances: dict[str, _Instance] = {}
        self._faults: list[_HttpFault] = []
        self._sse_conns: list[_SseConn] = []
        self._sse_stalled = False
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._active: dict[int, web.BaseRequest] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._tick: asyncio.Future[None] | None = None
        self._use_seq = 0
        self._rng = random.Random(seed)
        self._routes: dict[tuple[str, str], _Handler] = {
            ("GET", "/health"): self._handle_health,
            ("GET", "/v1/health"): self._handle_health,
            ("GET", "/props"): self._handle_props,
            ("GET", "/slots"): self._handle_slots,
            ("GET", "/metrics"): self._handle_metrics,
            ("GET", "/models"): self._handle_models,
            ("GET", "/v1/models"): self._handle_models,
            ("GET", "/models/sse"): self._handle_models_sse,
            ("POST", "/models/load"): self._handle_load,
            ("POST", "/models/unload"): self._handle_unload,
            ("POST", "/v1/chat/completions"): self._handle_chat,
            ("POST", "/chat/completions"): self._handle_chat,
            ("POST", "/v1/completions"): self._handle_completion,
            ("POST", "/completions"): self._handle_completion,
        }
        for model in models:
            self.add_model(model)

    # ---------------------------------------------------------------------- models

    def add_model(self, model: EmulatedLlamaModel) -> EmulatedLlamaModel:
        """Add a model (or replace the description of one with the same name)."""
        self.models[model.name] = model
        inst = self._instances.get(model.name)
        if inst is None:
            self._instances[model.name] = _Instance(model)
        else:
            inst.model = model
        return model

    def state(self, model: str) -> str:
        """Return ``status.value`` as ``/models`` shows it: ``unloaded|loading|loaded``."""
        return self._instances[model].status

    def exit_code(self, model: str) -> int:
        """Return the exit code of ``model``'s last child (non-zero: ``failed`` in /models)."""
        return self._instances[model].exit_code

    def loaded_models(self) -> list[str]:
        """Names of the models whose child is loaded (ready), sorted."""
        return sorted(n for n, i in self._instances.items() if i.status == LOADED)

    def running_models(self) -> list[str]:
        """Names of the models whose child is loading or loaded, sorted."""
        return sorted(n for n, i in self._instances.items() if i.running)

    def port_of(self, model: str) -> int:
        """The ``--port`` of ``model``'s current (or last) child; 0 before its first load."""
        return self._instances[model].port

    def prompt_cache(self, model: str) -> list[str]:
        """A copy of ``model``'s slot cache (prompt + generated tokens)."""
        return list(self._instances[model].cache)

    def set_failing(self, model: str, failing: bool = True, *, exit_code: int = 1) -> None:
        """Make every load of ``model`` exit with ``exit_code`` halfway (or load fine again)."""
        self.models[model].fail_exit_code = exit_code if failing else None

    def crash(self, model: str, exit_code: int = 1) -> None:
        """Make ``model``'s child exit on its own now (``status_change`` unloaded)."""
        inst = self._instances[model]
        if inst.running:
            self._exit(inst, exit_code)

    async def load_by_other_client(self, model: str) -> None:
        """Load ``model`` as another client's ``POST /models/load`` would; wait until loaded.

        The least recently used model is evicted when ``models_max`` is reached. Raises
        ``RuntimeError`` when the load fails. A model that is running already is left alone.
        """
        inst = self._instances[model]
        if not inst.running:
            await self._load(inst)
        await self._wait_until(lambda: inst.status != LOADING)
        if inst.status != LOADED:
            raise RuntimeError(f"model name={model} failed to load")

    async def unload(self, model: str | None = None) -> None:
        """Unload ``model`` (or every model) like ``POST /models/unload``; wait until done."""
        targets = [self._instances[model]] if model else list(self._instances.values())
        for inst in targets:
            self._stop(inst)
        await self._wait_until(lambda: not any(i.running for i in targets))

    def _resolve(self, name: str) -> _Instance | None:
        if name in self._instances:
            return self._instances[name]
        for inst in self._instances.values():
            if name in inst.model.aliases:
                return inst
        return None

    # ------------------------------------------------------------------- lifecycle

    async def start(self) -> str:
        """Bind 127.0.0.1 (a free port, or the one used before) and return the base URL."""
        if self._runner is None:
            await self._listen()
        return self.url

    async def stop(self) -> None:
        """Stop serving (connections refused, open ones dropped); every child is gone."""
        await self.stop_serving()
        await self._kill_all()

    async def restart(self, *, build_info: str | None = None) -> None:
        """Restart the router on the same port, optionally reporting a new ``build_info``.

        Every connection (``/models/sse`` included) is closed and every model is unloaded at
        once, as in a fresh router (``--port 0``, no exit codes, empty caches, no events).
        Request logs, config and faults are kept.
        """
        await self.stop_serving()
        await self._kill_all()
        if build_info is not None:
            self.build_info = build_info
        await self.start_serving()

    async def stop_serving(self) -> None:
        """Take the server off its port (connections refused, open ones dropped).

        The children keep their state, like a network outage between client and router.
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
        self._sse_conns.clear()

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
        if self._tick is None:
            self._tick = asyncio.get_running_loop().create_future()

    async def _kill_all(self) -> None:
        tasks = [task for task in self._background if not task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for inst in self._instances.values():
            inst.status = UNLOADED
            inst.port = 0
            inst.exit_code = 0
            inst.last_used = 0
            inst.loaded_info = None
            inst.stopping = False
            inst.task = None
            inst.epoch += 1
            inst.cache.clear()
        self._poke()

    # ---------------------------------------------------------------------- faults

    def inject(
        self,
        path: str,
        *,
        status: int | None = None,
        body: str | bytes | None = None,
        content_type: str = JSON_CT,
        delay: float | None = None,
        drop: bool = False,
        times: int | None = 1,
        method: str | None = None,
        hold: HeldAnswer | None = None,
    ) -> None:
        """Make the next ``times`` requests to ``path`` (``"*"``: any) misbehave.

        ``hold`` waits until the test releases it, ``delay`` sleeps (either then answers
        normally unless something else is given);
        ``status``/``body`` replace the answer (``body`` defaults to llama-server's error JSON
        for ``status``); ``drop`` closes the connection without a response. Paths are matched
        without the query string; ``times=None`` applies until :meth:`clear_faults`.
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

    def clear_faults(self) -> None:
        """Remove every pending fault."""
        self._faults.clear()

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
            body = cpp_json(_error_body(status, f"injected fault: HTTP {status}"))
        response = web.Response(
            status=status, body=body.encode() if isinstance(body, str) else body
        )
        response.headers["Content-Type"] = fault.content_type
        self.decorate(request, response)
        return response

    # ---------------------------------------------------------------- SSE controls

    def cut_sse(self, *, abort: bool = False) -> int:
        """Close every open ``/models/sse`` stream now; return how many were open.

        By default the response ends cleanly (chunked EOF); ``abort=True`` resets the TCP
        connection instead.
        """
        conns = list(self._sse_conns)
        for conn in conns:
            conn.abort = abort
            conn.queue.put_nowait(None)
        return len(conns)

    def stall_sse(self, stalled: bool = True) -> None:
        """Stall every ``/models/sse`` stream: connections stay open but get no more frames.

        Events emitted while stalled are dropped for the streams (``sse_events`` still logs
        them); after ``stall_sse(False)`` new events flow again.
        """
        self._sse_stalled = stalled

    @property
    def sse_open(self) -> int:
        """Number of ``/models/sse`` streams currently open."""
        return len(self._sse_conns)

    def _emit(self, model: str, event: str, data: dict[str, Any] | None) -> None:
        """``server_models::notify_sse``: broadcast ``{"model", "event"[, "data"]}``."""
        payload: dict[str, Any] = {"model": model, "event": event}
        if data is not None:
            payload["data"] = data
        self.sse_events.append(payload)
        if self._sse_stalled:
            return
        frame = f"data: {cpp_json(payload)}\n\n".encode()
        for conn in self._sse_conns:
            conn.queue.put_nowait(frame)

    # ------------------------------------------------------------------ scheduler

    def _poke(self) -> None:
        """Wake every ``_wait_until`` (some child changed state)."""
        tick = self._tick
        if tick is None:
            return
        self._tick = tick.get_loop().create_future()
        if not tick.done():
            tick.set_result(None)

    async def _wait_until(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            if self._tick is None:
                self._tick = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._tick)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _touch(self, inst: _Instance) -> None:
        self._use_seq += 1
        inst.last_used = self._use_seq

    def _running_count(self) -> int:
        return sum(1 for inst in self._instances.values() if inst.running)

    async def _unload_lru(self) -> None:
        """``server_models::unload_lru``: stop the LRU running model while the limit is reached."""
        if self.models_max <= 0:
            return
        running = [inst for inst in self._instances.values() if inst.running]
        if len(running) < self.models_max:
            return
        victim = min(running, key=lambda inst: inst.last_used)
        self._stop(victim)
        await self._wait_until(lambda: victim.status == UNLOADED)

    async def _load(self, inst: _Instance) -> None:
        """``server_models::load``: evict by LRU, then spawn the child (returns at once)."""
        await self._unload_lru()
        if inst.status != UNLOADED:
            return
        if self.models_max > 0 and self._running_count() >= self.models_max:
            raise _ApiError(500, "model limit reached, try again later")
        inst.port = self._rng.randint(32768, 60999)
        inst.status = LOADING
        inst.exit_code = 0
        inst.loaded_info = None
        inst.stopping = False
        inst.epoch += 1
        inst.cache.clear()
        inst.created = int(self.clock())
        self._touch(inst)
        self._emit(inst.model.name, "model_status", {"status": LOADING})
        inst.task = self._spawn(self._run_child(inst, inst.epoch))
        self._poke()

    async def _run_child(self, inst: _Instance, epoch: int) -> None:
        """The child's start-up: progress 0.0, progress 1.0, then loaded (or a failed exit)."""
        model = inst.model
        progress = {"stages": ["text_model"], "current": "text_model", "value": 0.0}
        await asyncio.sleep(0)
        self._emit(model.name, "status_change", {"status": LOADING, "progress": progress})
        await asyncio.sleep(model.load_seconds / 2)
        if inst.epoch != epoch:
            return
        if model.fail_exit_code is not None:
            self._exit(inst, model.fail_exit_code)
            return
        progress = {**progress, "value": 1.0}
        self._emit(model.name, "status_change", {"status": LOADING, "progress": progress})
        await asyncio.sleep(model.load_seconds - model.load_seconds / 2)
        if inst.epoch != epoch:
            return
        inst.status = LOADED
        inst.loaded_info = {
            "id": model.name,
            "aliases": [model.name],
            "tags": [],
            "object": "model",
            "architecture": {"input_modalities": ["text"], "output_modalities": ["text"]},
            "created": inst.created,
            "owned_by": "llamacpp",
            "meta": model.meta(),
        }
        self._emit(model.name, "status_change", {"status": LOADED, "info": inst.loaded_info})
        self._poke()

    def _stop(self, inst: _Instance) -> None:
        """``server_models::unload``: kill a loading child, ask a loaded one to exit."""
        if not inst.running or inst.stopping:
            return
        inst.stopping = True
        if inst.status == LOADING:
            self._exit(inst, KILLED_EXIT_CODE)
            return
        self._spawn(self._exit_later(inst, inst.epoch))

    async def _exit_later(self, inst: _Instance, epoch: int) -> None:
        await asyncio.sleep(inst.model.unload_seconds)
        if inst.epoch == epoch and inst.running:
            self._exit(inst, 0)

    def _exit(self, inst: _Instance, exit_code: int) -> None:
        """The child process ended: ``update_status(UNLOADED, exit_code)``."""
        task, inst.task = inst.task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        inst.status = UNLOADED
        inst.exit_code = exit_code
        inst.stopping = False
        inst.epoch += 1
        inst.cache.clear()
        self._emit(inst.model.name, "status_change", {"status": UNLOADED, "exit_code": exit_code})
        self._poke()

    async def _ensure_ready(self, inst: _Instance) -> None:
        """``ensure_model_ready``: load if unloaded, wait while loading, fail if it failed."""
        if inst.status == LOADED:
            return
        if inst.status == UNLOADED:
            await self._load(inst)
        await self._wait_until(lambda: inst.status != LOADING)
        if inst.failed:
            raise _ApiError(500, f"model name={inst.model.name} failed to load")

    async def _routed_instance(self, request: web.Request, name: str) -> _Instance:
        """``router_validate_model`` + the checks of ``proxy_request``."""
        if not name:
            raise _ApiError(400, "model name is missing from the request")
        inst = self._resolve(name)
        if inst is None:
            raise _ApiError(400, f"model '{name}' not found")
        query = request.query.get("autoload")
        autoload = self.autoload if query is None else query in ("true", "1")
        if autoload:
            await self._ensure_ready(inst)
        elif not inst.running:
            raise _ApiError(400, "model is not loaded")
        if not inst.running:
            raise _ApiError(400, f"model name={inst.model.name} is not running")
        if inst.status == LOADING:
            raise _ApiError(503, "Loading model", body=_CHILD_LOADING)
        return inst

    # ------------------------------------------------------------------ middleware

    def decorate(self, request: web.BaseRequest, response: web.StreamResponse) -> None:
        """Add the headers every llama-server reply has."""
        response.headers["Server"] = "llama.cpp"
        response.headers["Access-Control-Allow-Origin"] = request.headers.get("Origin", "")

    @web.middleware
    async def _middleware(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
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
                query=dict(request.query),
                json=parsed,
                headers=dict(request.headers),
                body=raw,
            )
        )
        self.counts[f"{request.method} {request.path}"] += 1
        self._active[id(request)] = request
        try:
            fault = self._take_fault(request.method, request.path)
            if fault is not None:
                injected = await self._apply_fault(request, fault)
                if injected is not None:
                    return injected
            if self._unauthorized(request):
                return self._error_response(request, 401, _UNAUTHORIZED)
            try:
                return await handler(request)
            except _ApiError as err:
                return self._error_response(request, err.status, err.body)
        finally:
            self._active.pop(id(request), None)

    def _error_response(self, request: web.Request, status: int, body: object) -> web.Response:
        response = _cpp_response(_NOT_FOUND if status == 404 else body, status=status)
        self.decorate(request, response)
        response.force_close()
        return response

    def _unauthorized(self, request: web.Request) -> bool:
        if self.api_key is None or request.path in PUBLIC_PATHS or request.method == "OPTIONS":
            return False
        key = request.headers.get("Authorization") or request.headers.get("X-Api-Key") or ""
        return key.removeprefix("Bearer ") != self.api_key

    async def _route(self, request: web.Request) -> web.StreamResponse:
        handler = self._routes.get((request.method, request.path))
        if handler is None:
            raise _ApiError(404, "File Not Found")
        response = await handler(request)
        if isinstance(response, web.Response):
            self.decorate(request, response)
        return response

    @staticmethod
    async def _json_object(request: web.Request) -> dict[str, Any]:
        """``json::parse(req.body)``; a non-object reads as one without the wanted keys."""
        raw = await request.read()
        try:
            payload = json.loads(raw)
        except ValueError as err:
            raise _parse_error(raw, err) from err
        return payload if isinstance(payload, dict) else {}

    # -------------------------------------------------------------------- handlers

    async def _handle_health(self, request: web.Request) -> web.Response:
        return _cpp_response({"status": "ok"})

    async def _handle_props(self, request: web.Request) -> web.Response:
        name = request.query.get("model", "")
        if not name:
            return _cpp_response(
                {
                    "role": "router",
                    "max_instances": self.models_max,
                    "models_autoload": self.autoload,
                    "model_alias": "llama-server",
                    "model_path": "none",
                    "default_generation_settings": {"params": None, "n_ctx": 0},
                    "ui_settings": {},
                    "build_info": self.build_info,
                    "cors_proxy_enabled": False,
                }
            )
        inst = await self._routed_instance(request, name)
        model = inst.model
        return _cpp_response(
            {
                "default_generation_settings": {"n_ctx": model.ctx_size},
                "total_slots": 1,
                "model_alias": model.name,
                "model_path": model.path,
                "modalities": {"vision": False, "audio": False},
                "build_info": self.build_info,
                "is_sleeping": False,
            }
        )

    async def _handle_slots(self, request: web.Request) -> web.Response:
        inst = await self._routed_instance(request, request.query.get("model", ""))
        busy = inst.slot.locked()
        return _cpp_response([{"id": 0, "n_ctx": inst.model.ctx_size, "is_processing": busy}])

    async def _handle_metrics(self, request: web.Request) -> web.Response:
        inst = await self._routed_instance(request, request.query.get("model", ""))
        busy = 1 if inst.slot.locked() else 0
        text = (
            "# HELP llamacpp:requests_processing Number of requests processing.\n"
            "# TYPE llamacpp:requests_processing gauge\n"
            f"llamacpp:requests_processing {busy}\n"
        )
        response = web.Response(text=text)
        response.headers["Content-Type"] = "text/plain; version=0.0.4"
        return response

    def _model_entry(self, inst: _Instance, now: int) -> dict[str, Any]:
        model = inst.model
        status: dict[str, Any] = {
            "value": inst.status,
            "args": [
                self.bin_path,
                "--host",
                CHILD_HOST,
                "--log-colors",
                "off",
                "--metrics",
                "--port",
                str(inst.port),
                "--slots",
                "--alias",
                model.name,
                "--ctx-size",
                str(model.ctx_size),
                "--model",
                model.path,
                "--threads",
                str(model.threads),
            ],
            "preset": (
                f"[{model.name}]\nlog-colors = off\nmetrics = 1\nslots = 1\n"
                f"ctx-size = {model.ctx_size}\nmodel = {model.path}\n"
                f"threads = {model.threads}\n\n"
            ),
        }
        if inst.failed:
            status["exit_code"] = inst.exit_code
            status["failed"] = True
        entry: dict[str, Any] = {
            "id": model.name,
            "aliases": sorted(model.aliases),
            "tags": sorted(model.tags),
            "object": "model",
            "owned_by": "llamacpp",
            "created": now,
            "status": status,
            "architecture": {"input_modalities": ["text"], "output_modalities": ["text"]},
            "source": "models_dir",
            "can_remove": False,
            "context_length": model.ctx_train,
        }
        if inst.running and inst.loaded_info:
            for key, value in inst.loaded_info.items():
                entry.setdefault(key, value)
        return entry

    async def _handle_models(self, request: web.Request) -> web.Response:
        now = int(self.clock())
        data = [self._model_entry(self._instances[n], now) for n in sorted(self._instances)]
        return _cpp_response({"data": data, "object": "list"})

    async def _handle_load(self, request: web.Request) -> web.Response:
        name = (await self._json_object(request)).get("model")
        inst = self._resolve(name) if isinstance(name, str) else None
        if inst is None:
            raise _ApiError(404, "model is not found")
        if inst.running:
            raise _ApiError(400, "model is already running")
        await self._load(inst)
        return _cpp_response({"success": True})

    async def _handle_unload(self, request: web.Request) -> web.Response:
        name = (await self._json_object(request)).get("model")
        inst = self._resolve(name) if isinstance(name, str) else None
        if inst is None:
            raise _ApiError(400, "model is not found")
        if not inst.running:
            raise _ApiError(400, "model is not running")
        self._stop(inst)
        return _cpp_response({"success": True})

    async def _handle_models_sse(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=200)
        self.decorate(request, response)
        response.headers["X-Accel-Buffering"] = "no"
        response.headers["Content-Type"] = SSE_CT
        await response.prepare(request)
        conn = _SseConn()
        self._sse_conns.append(conn)
        try:
            while (frame := await conn.queue.get()) is not None:
                await response.write(frame)
        finally:
            if conn in self._sse_conns:
                self._sse_conns.remove(conn)
        if conn.abort and request.transport is not None:
            request.transport.abort()
            raise asyncio.CancelledError
        await response.write_eof()
        return response

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        return await self._handle_generation(request, chat=True)

    async def _handle_completion(self, request: web.Request) -> web.StreamResponse:
        return await self._handle_generation(request, chat=False)

    # ------------------------------------------------------------------ generation

    @staticmethod
    def _prompt_tokens(payload: dict[str, Any], *, chat: bool) -> list[str]:
        tokens = ["<s>"]
        if chat:
            messages = payload.get("messages")
            if not isinstance(messages, list):
                raise _ApiError(400, "'messages' is required")
            for message in messages:
                if isinstance(message, dict):
                    tokens.append(f"<|{message.get('role', 'user')}|>")
                    tokens.extend(_content_text(message.get("content")).split())
            tokens.append("<|assistant|>")
            return tokens
        prompt = payload.get("prompt")
        if prompt is None:
            raise _ApiError(400, '"prompt" must be provided')
        if isinstance(prompt, list):
            prompt = " ".join(str(part) for part in prompt)
        tokens.extend(str(prompt).split())
        return tokens

    def _plan(self, inst: _Instance, payload: dict[str, Any], *, chat: bool) -> _Plan:
        """Tokenise, apply the slot's prompt cache and fix the reply and its figures."""
        model = inst.model
        prompt = self._prompt_tokens(payload, chat=chat)
        if len(prompt) > model.ctx_size:
            raise _ApiError(
                400,
                f"request ({len(prompt)} tokens) exceeds the available context size "
                f"({model.ctx_size} tokens), try increasing it",
                "exceed_context_size_error",
            )
        limit = payload.get("n_predict", payload.get("max_completion_tokens"))
        if limit is None:
            limit = payload.get("max_tokens", -1)
        reply = split_tokens(model.reply)
        unlimited = not isinstance(limit, int) or limit < 0
        count = len(reply) if unlimited else min(limit, len(reply))
        # Cut by n_predict (or by the context) -> "length"; the reply's end (EOS) -> "stop".
        cut = not unlimited and count >= limit
        room = model.ctx_size - len(prompt)
        if count > room:
            count, cut = room, True
        tokens = reply[:count]
        common = 0
        if payload.get("cache_prompt", True) is not False:
            for cached, token in zip(inst.cache, prompt, strict=False):
                if cached != token:
                    break
                common += 1
        cache_n = min(common, len(prompt) - 1)
        prompt_n = len(prompt) - cache_n
        name = payload.get("model")
        return _Plan(
            prompt=prompt,
            tokens=tokens,
            finish="length" if cut else "stop",
            cache_n=cache_n,
            prompt_n=prompt_n,
            prompt_ms=prompt_n * model.prompt_ms_per_token,
            predicted_ms=max(len(tokens) - 1, 0) * model.token_ms,
            cmpl_id="chatcmpl-" + "".join(self._rng.choices(_ID_CHARS, k=32)),
            created=int(self.clock()),
            model=name if isinstance(name, str) else model.name,
            fingerprint=self.build_info,
        )

    @staticmethod
    async def _work(inst: _Instance, epoch: int, milliseconds: float) -> None:
        """Spend ``milliseconds`` in the child; fail if it went away meanwhile."""
        if milliseconds > 0:
            await asyncio.sleep(milliseconds / 1000)
        if inst.epoch != epoch or inst.status != LOADED:
            raise _Gone

    async def _handle_generation(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        payload = await self._json_object(request)
        name = payload.get("model")
        inst = await self._routed_instance(request, name if isinstance(name, str) else "")
        self._touch(inst)  # POST requests update last_used (proxy_request)
        epoch = inst.epoch
        async with inst.slot:
            try:
                await self._work(inst, epoch, 0)
                plan = self._plan(inst, payload, chat=chat)
                await self._work(inst, epoch, plan.prompt_ms)
                inst.cache = list(plan.prompt)
                if payload.get("stream"):
                    return await self._stream(request, inst, epoch, plan, payload, chat=chat)
                for index, token in enumerate(plan.tokens):
                    if index:
                        await self._work(inst, epoch, inst.model.token_ms)
                    inst.cache.append(token.strip())
                return _cpp_response(plan.reply(chat=chat))
            except _Gone:
                # The router's proxy lost the child before any byte came back.
                response = web.Response(status=500, text="proxy error: Failed to read connection")
                response.headers["Content-Type"] = JSON_CT
                return response

    async def _stream(
        self,
        request: web.Request,
        inst: _Instance,
        epoch: int,
        plan: _Plan,
        payload: dict[str, Any],
        *,
        chat: bool,
    ) -> web.StreamResponse:
        out = _SseOut(request, self)
        try:
            if chat:
                await out.data(plan.chat_chunk({"role": "assistant", "content": None}))
            for index, token in enumerate(plan.tokens):
                if index:
                    await self._work(inst, epoch, inst.model.token_ms)
                inst.cache.append(token.strip())
                if chat:
                    await out.data(plan.chat_chunk({"content": token}))
                else:
                    await out.data(plan.text_chunk(token))
            if chat:
                options = payload.get("stream_options")
                usage = isinstance(options, dict) and options.get("include_usage") is True
                for chunk in plan.chat_final_chunks(include_usage=usage):
                    await out.data(chunk)
            else:
                await out.data(plan.text_chunk("", plan.finish))
            await out.write(b"data: [DONE]\n\n")
        except _Gone:
            pass  # the child went away: the proxied stream just ends (no [DONE])
        return await out.finish()
