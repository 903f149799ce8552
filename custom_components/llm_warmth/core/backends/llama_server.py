"""Async client for llama.cpp's llama-server in router mode (no Home Assistant imports).

Endpoints of the router (``tools/server/README.md``; checked against build b11669, whose
raw replies are recorded under ``tests/fixtures/llama_server/``):

* ``GET /props`` -> ``{"role": "router", "build_info": "b11669-...", ...}``. Without
  ``?model=``: with it the router starts the model (as ``/metrics?model=`` and
  ``/slots?model=`` do), so a poll must never send it.
* ``GET /models`` -> ``{"data": [{"id", "status": {"value": "unloaded|loading|loaded|
  sleeping|failed|downloading", "args": [...]}}, ...]}``. ``context_length`` there is the
  training context; the context a model was started with is its ``--ctx-size`` argument.
* ``POST /models/load|unload {"model": id}`` -> ``{"success": true}`` at once; the load
  goes on in the background. Unloading a model that is not running is HTTP 400.
* ``GET /models/sse``: ``data: {"model", "event": "model_status|status_change",
  "data": {"status": ...}}`` lines as models change state; nothing on connect.
* ``POST /v1/chat/completions`` / ``/v1/completions`` with ``"stream": true``: OpenAI
  chunks; the last one carries ``timings`` (``cache_n``, ``prompt_n``, ``prompt_ms``,
  ``predicted_n``, ``predicted_ms``), then ``data: [DONE]``. A model that is not running
  is started first (``--models-autoload``, the default), with ``--models-max`` evicting
  the least recently used one.

The server reports no load duration: while a probe runs, the client follows
``/models/sse`` and times the model's ``loaded`` event itself.
"""

import asyncio
from collections.abc import AsyncIterator, Mapping
import contextlib
import itertools
import time
from typing import Any, Final, Literal

import aiohttp

from .base import (
    DEFAULT_TIMEOUT,
    GENERATION_TIMEOUT,
    Capabilities,
    KeepAlive,
    ServerKind,
)
from .errors import (
    LlmModelNotFoundError,
    LlmServerAuthenticationError,
    LlmServerBusyError,
    LlmServerConnectionError,
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerOutOfMemoryError,
    LlmServerResponseError,
    LlmServerSetupNotSupportedError,
    LlmServerTimeoutError,
)
from .events import StateWatch, sse_payloads
from .http import HttpTransport, unexpected
from .replies import (
    MAX_TEXT,
    MAX_TOKENS,
    bounded_int,
    decode_object,
    iter_lines,
    optional_str,
    required_str,
)
from .types import InstalledModel, ResidencyState, ResidentModel, TimedReply

DEFAULT_PORT: Final = 8080
LLAMA_SERVER_CAPABILITIES: Final = Capabilities(
    reports_load_duration=False,  # the client times the "loaded" event instead
    reports_queue=False,
    can_load=True,
    can_unload=True,
    keep_alive=KeepAlive.LRU,
    pushes_events=True,  # /models/sse
    reports_prompt_cache=True,
    reports_context_length=True,
    reports_memory=False,
    reports_expiry=False,
    reports_loading=True,
)
_STATES: Final = {
    "loading": ResidencyState.LOADING,
    "loaded": ResidencyState.LOADED,
    "sleeping": ResidencyState.SLEEPING,
}
# Request options a probe may give (Ollama's names on the left) and their OpenAI names.
OPENAI_OPTIONS: Final = {
    "num_predict": "max_tokens",
    "temperature": "temperature",
    "seed": "seed",
    "top_k": "top_k",
    "top_p": "top_p",
    "min_p": "min_p",
    "stop": "stop",
    "cache_prompt": "cache_prompt",
}
# How often load() looks whether the model is up, and how long an SSE watch may wait.
_LOAD_POLL_SECONDS: Final = 0.25
# The router sends nothing while nothing changes: a quiet stream is renewed this often.
EVENT_SILENCE_SECONDS: Final = 600.0
_MAX_MS: Final = 86_400_000.0
_OUT_OF_MEMORY_MARKERS: Final = ("out of memory", "failed to allocate", "cudamalloc failed")


class LlamaServerClient:
    """Talks to one llama-server router over an injected ``aiohttp.ClientSession``."""

    kind = ServerKind.LLAMA_SERVER
    capabilities = LLAMA_SERVER_CAPABILITIES

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        *,
        api_key: str | None = None,
        request_timeout: float | None = None,
    ) -> None:
        """Create a client for ``base_url`` (e.g. ``http://127.0.0.1:8080``)."""
        self._http = HttpTransport(
            session,
            base_url,
            api_key=api_key,
            timeout=request_timeout or DEFAULT_TIMEOUT,
            error_for_status=error_for_status,
        )

    @property
    def base_url(self) -> str:
        """Return the server's base URL."""
        return str(self._http.base_url)

    async def version(self, *, timeout: float | None = None) -> str:
        """Return the build; ``LlmServerNotSupportedError`` unless a router answers."""
        shown = self._http.shown_url
        try:
            props = await self._http.request("GET", "/props", timeout=timeout)
        except (LlmServerResponseError, LlmModelNotFoundError) as err:
            raise LlmServerNotSupportedError(
                f"{shown} did not answer like llama-server: {err}"
            ) from err
        build = optional_str(props, "build_info")
        if build is None:
            raise LlmServerNotSupportedError(f"{shown} did not answer like llama-server")
        if props.get("role") != "router":
            raise LlmServerSetupNotSupportedError(
                f"{shown} is llama-server with one fixed model; start it in router mode "
                "(without -m) so that models can be loaded and unloaded"
            )
        return build

    async def _models(self, timeout: float | None) -> list[Mapping[str, Any]]:
        payload = await self._http.request("GET", "/models", timeout=timeout)
        models = payload.get("data")
        if not isinstance(models, list) or not all(isinstance(m, dict) for m in models):
            raise LlmServerResponseError("/models: 'data' is not a list of objects")
        names = [m.get("id") for m in models]
        if len(set(map(str, names))) != len(names):
            raise LlmServerResponseError("/models: a model is listed twice")
        return models

    async def running_models(self, *, timeout: float | None = None) -> tuple[ResidentModel, ...]:
        """Return the models the router holds (loading, loaded or asleep)."""
        return tuple((await self._statuses(timeout)).values())

    async def _statuses(self, timeout: float | None) -> dict[str, ResidentModel]:
        resident: dict[str, ResidentModel] = {}
        for item in await self._models(timeout):
            try:
                state = _STATES.get(_status(item) or "")
                if state is not None:
                    name = required_str(item, "id")
                    resident[name] = ResidentModel(
                        name=name, state=state, context_length=_context_length(item)
                    )
            except ValueError as err:
                raise unexpected("/models", err) from err
        return resident

    async def residency_events(self) -> AsyncIterator[tuple[ResidentModel, ...]]:
        """Yield the resident models now, then after each ``/models/sse`` status change.

        The stream sends nothing on connect: the list is read once the stream is open (so
        that no change falls in between), then kept up to date from the events. Raise
        ``LlmServerError`` when the stream cannot be had or ends.
        """
        stream = sse_payloads(self._http, "/models/sse", EVENT_SILENCE_SECONDS)
        first = asyncio.ensure_future(anext(stream))
        try:
            # The stream answers at once (its headers), then stays quiet until a change.
            await asyncio.wait({first}, timeout=StateWatch.CONNECT_SECONDS)
            resident = await self._statuses(None)
            yield tuple(resident.values())
            payload = await first
            while True:
                for model, status in _status_events(payload):
                    if (state := _STATES.get(status)) is not None:
                        known = resident.get(model)
                        context = known.context_length if known else None
                        resident[model] = ResidentModel(model, state, context_length=context)
                    elif status in ("unloaded", "failed"):
                        resident.pop(model, None)
                    else:
                        continue
                    yield tuple(resident.values())
                payload = await anext(stream)
        except StopAsyncIteration as err:
            raise LlmServerConnectionError("/models/sse: the event stream ended") from err
        finally:
            first.cancel()
            with contextlib.suppress(BaseException):
                await first  # done, or cancelled just now: either way no longer running
            await stream.aclose()

    async def installed_models(self, *, timeout: float | None = None) -> tuple[InstalledModel, ...]:
        """Return every model the router can start."""
        try:
            return tuple(
                InstalledModel(name=required_str(item, "id"))
                for item in await self._models(timeout)
            )
        except ValueError as err:
            raise unexpected("/models", err) from err

    async def load(self, model: str, *, timeout: float = GENERATION_TIMEOUT) -> None:
        """Start ``model`` and wait until the router reports it loaded."""
        try:
            async with asyncio.timeout(timeout):
                try:
                    await self._http.request("POST", "/models/load", json={"model": model})
                except LlmServerResponseError as err:
                    if "already running" not in str(err):
                        raise
                while True:
                    items = {str(item.get("id")): item for item in await self._models(None)}
                    if model not in items:
                        raise LlmModelNotFoundError(f"llama-server has no model {model}")
                    if _status(items[model]) == "loaded":
                        return
                    if _failed(items[model]):
                        raise LlmServerResponseError(f"llama-server could not load {model}")
                    await asyncio.sleep(_LOAD_POLL_SECONDS)
        except TimeoutError as err:
            raise LlmServerTimeoutError(f"{model} was not loaded within {timeout:g} s") from err

    async def unload(self, model: str, *, timeout: float | None = None) -> None:
        """Stop ``model``; one that is not running is fine."""
        try:
            await self._http.request(
                "POST", "/models/unload", json={"model": model}, timeout=timeout
            )
        except LlmServerResponseError as err:
            if "not running" not in str(err):
                raise

    async def timed_generation(
        self,
        api: Literal["chat", "generate"],
        model: str,
        prompt: str,
        *,
        options: Mapping[str, Any] | None = None,
        timeout: float = GENERATION_TIMEOUT,
    ) -> TimedReply:
        """Stream one generation, timed on ``time.monotonic_ns``, and time its load.

        ``/models/sse`` is followed while the request runs: the model's ``loaded`` event,
        if one comes, ends the load stage. With the stream connected and no such event,
        the request loaded nothing (load 0); without the stream the load is unknown.
        """
        payload: dict[str, Any] = {"model": model, "stream": True}
        if api == "chat":
            payload["messages"] = [{"role": "user", "content": prompt}]
            path = "/v1/chat/completions"
        else:
            payload["prompt"] = prompt
            path = "/v1/completions"
        for key, value in (options or {}).items():
            if key in OPENAI_OPTIONS:
                payload[OPENAI_OPTIONS[key]] = value
        watch = StateWatch(model, "loaded", _status_events)
        try:
            await watch.start(self._http, "/models/sse")
            async with self._http.stream("POST", path, json=payload, timeout=timeout) as (
                response,
                sent,
                headers,
            ):
                reply = await read_openai_stream(response, path, sent, headers)
        finally:
            await watch.stop()
        load_ns = timed_load_ns(watch, reply)
        return TimedReply(
            sent_ns=reply.sent_ns,
            headers_ns=reply.headers_ns,
            first_token_ns=reply.first_token_ns,
            final_ns=reply.final_ns,
            load_duration_ns=load_ns,
            prompt_eval_count=reply.prompt_eval_count,
            prompt_cached_count=reply.prompt_cached_count,
            prompt_eval_duration_ns=reply.prompt_eval_duration_ns,
            eval_count=reply.eval_count,
            eval_duration_ns=reply.eval_duration_ns,
            done_reason=reply.done_reason,
        )


def timed_load_ns(watch: StateWatch, reply: TimedReply) -> int | None:
    """Return the load stage of a timed request from what its event stream told.

    The event arrives a little after the model is up; the load cannot have ended after the
    prefill began, so it is bounded by the time to first token less the prefill.
    """
    if watch.ready_ns is None:
        return 0 if watch.trustworthy else None
    load = max(watch.ready_ns - reply.sent_ns, 0)
    if reply.prompt_eval_duration_ns is not None:
        before_prefill = reply.first_token_ns - reply.sent_ns - reply.prompt_eval_duration_ns
        load = min(load, max(before_prefill, 0))
    return load


def _status_events(payload: object) -> list[tuple[str, str]]:
    """Return the (model, status) of one ``/models/sse`` event."""
    if not isinstance(payload, dict):
        return []
    data, model = payload.get("data"), payload.get("model")
    status = data.get("status") if isinstance(data, dict) else None
    return [(model, status)] if isinstance(model, str) and isinstance(status, str) else []


async def read_openai_stream(
    response: aiohttp.ClientResponse, path: str, sent: int, headers: int
) -> TimedReply:
    """Read an OpenAI-style SSE stream to ``[DONE]``, timing the chunks."""
    first: int | None = None
    final: dict[str, Any] | None = None
    finish: str | None = None
    async for raw in iter_lines(response, path):
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        data = line.removeprefix(b"data:").strip()
        now = time.monotonic_ns()
        if data == b"[DONE]":
            if final is None:
                raise LlmServerResponseError(f"{path}: the stream carried no timings")
            return _timed(
                final,
                finish,
                sent=sent,
                headers=headers,
                first=now if first is None else first,
                end=now,
            )
        chunk = decode_object(data, path)
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise error_for_status(500, str(message)[:500], path)
        choice = _first_choice(chunk)
        if first is None and _has_content(choice):
            first = now
        if isinstance(reason := choice.get("finish_reason"), str):
            finish = reason[:MAX_TEXT]
        if isinstance(chunk.get("timings"), dict):
            final = chunk["timings"]
    raise LlmServerConnectionError(f"{path}: the stream ended before [DONE]")


def _first_choice(chunk: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = chunk.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return {}


def _has_content(choice: Mapping[str, Any]) -> bool:
    """Return True for a chunk that carries generated text or reasoning."""
    delta = choice.get("delta")
    parts = [choice.get("text")]
    if isinstance(delta, dict):
        parts += [delta.get("content"), delta.get("reasoning_content")]
    return any(isinstance(part, str) and part for part in parts)


def _timed(
    timings: Mapping[str, Any],
    finish: str | None,
    *,
    sent: int,
    headers: int,
    first: int,
    end: int,
) -> TimedReply:
    try:
        cached = bounded_int(timings.get("cache_n", 0), "cache_n", MAX_TOKENS)
        evaluated = bounded_int(timings.get("prompt_n"), "prompt_n", MAX_TOKENS)
        predicted = bounded_int(timings.get("predicted_n"), "predicted_n", MAX_TOKENS)
        return TimedReply(
            sent_ns=sent,
            headers_ns=headers,
            first_token_ns=first,
            final_ns=end,
            prompt_eval_count=min(evaluated + cached, MAX_TOKENS),
            prompt_cached_count=cached,
            prompt_eval_duration_ns=_ms_to_ns(timings.get("prompt_ms"), "prompt_ms"),
            eval_count=predicted,
            eval_duration_ns=_ms_to_ns(timings.get("predicted_ms"), "predicted_ms"),
            done_reason=finish,
        )
    except ValueError as err:
        raise unexpected("timings", err) from err


def _ms_to_ns(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} is not a number: {value!r}")
    if not 0 <= value <= _MAX_MS:  # NaN fails this too
        raise ValueError(f"{name} out of range: {value!r}")
    return round(value * 1_000_000)


def _status(item: Mapping[str, Any]) -> str | None:
    status = item.get("status")
    value = status.get("value") if isinstance(status, dict) else status
    return value if isinstance(value, str) else None


def _failed(item: Mapping[str, Any]) -> bool:
    """Return True when the router says the model's last start failed."""
    status = item.get("status")
    return isinstance(status, dict) and (
        status.get("value") == "failed" or status.get("failed") is True
    )


def _context_length(item: Mapping[str, Any]) -> int | None:
    """Return the ``--ctx-size`` (``-c``) the router starts the model with, if given."""
    status = item.get("status")
    args = status.get("args") if isinstance(status, dict) else None
    if not isinstance(args, list):
        return None
    for flag, value in itertools.pairwise(args):
        if flag in ("--ctx-size", "-c") and isinstance(value, str) and value.isdigit():
            return bounded_int(int(value), "ctx-size", MAX_TOKENS) or None
    return None


def error_for_status(status: int, message: str, path: str) -> LlmServerError:
    """Map an HTTP error status (and llama-server's error text) to the client's errors."""
    lowered = message.lower()
    if status in (401, 403):
        return LlmServerAuthenticationError(f"{path}: HTTP {status} {message}")
    if status in (400, 404) and "not found" in lowered and path not in ("/props", "/models"):
        return LlmModelNotFoundError(message)
    if status == 503:
        return LlmServerBusyError(message or "server busy")
    if any(marker in lowered for marker in _OUT_OF_MEMORY_MARKERS):
        return LlmServerOutOfMemoryError(message)
    return LlmServerResponseError(f"{path}: HTTP {status} {message}".rstrip())
