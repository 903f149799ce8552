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
from collections.abc import AsyncGenerator, Mapping
import contextlib
from dataclasses import replace
import itertools
from typing import Any, Final, Literal

from .base import (
    GENERATION_TIMEOUT,
    Capabilities,
    KeepAlive,
    ServerKind,
)
from .errors import (
    LlmModelNotFoundError,
    LlmServerConnectionError,
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerResponseError,
    LlmServerSetupNotSupportedError,
    LlmServerTimeoutError,
    refuse_keep,
)
from .events import CONNECTED, sse_payloads
from .http import HttpClient, status_error, unexpected
from .openai_stream import WatchedStream, timed_load_ns, timed_openai_generation
from .replies import (
    MAX_TOKENS,
    bounded_int,
    optional_str,
    required_str,
    valid_name,
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
    expiry_moves_while_busy=False,
    lists_while_loading=True,  # "loading" in /models from the start of the load
    reports_model_make=False,
)
_STATES: Final = {
    "loading": ResidencyState.LOADING,
    "loaded": ResidencyState.LOADED,
    "sleeping": ResidencyState.SLEEPING,
}
_LOAD_POLL_SECONDS: Final = 0.25
# The router sends nothing while nothing changes: a quiet stream is renewed this often.
EVENT_SILENCE_SECONDS: Final = 600.0


def error_for_status(status: int, message: str, path: str) -> LlmServerError:
    """Map an HTTP error status (and llama-server's error text) to the client's errors.

    An unknown model is 400 on a generation and 404 on a load; /props and /models name
    no model.
    """
    missing = (
        status in (400, 404)
        and "not found" in message.lower()
        and path not in ("/props", "/models")
    )
    return status_error(status, message, path, model_missing=missing, busy=status == 503)


class LlamaServerClient(HttpClient):
    """Talks to one llama-server router over an injected ``aiohttp.ClientSession``."""

    kind = ServerKind.LLAMA_SERVER
    error_for_status = staticmethod(error_for_status)
    capabilities = LLAMA_SERVER_CAPABILITIES

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
        return tuple(_resident_of(await self._models(timeout)).values())

    async def residency_events(self) -> AsyncGenerator[tuple[ResidentModel, ...]]:
        """Yield the resident models now, then after each ``/models/sse`` status change.

        The stream sends nothing on connect: the list is read once the stream is open (so
        that no change falls in between), then kept up to date from the events. Raise
        ``LlmServerError`` when the stream cannot be had or ends.
        """
        async with contextlib.aclosing(
            sse_payloads(self._http, "/models/sse", EVENT_SILENCE_SECONDS)
        ) as stream:
            async for payload in stream:
                if payload is CONNECTED:
                    # Nothing comes on connect: read the list now that no change can be
                    # missed, with the context each model is started with.
                    items = await self._models(None)
                    resident = _resident_of(items)
                    try:
                        contexts = {str(i.get("id")): _context_length(i) for i in items}
                    except ValueError as err:
                        raise unexpected("/models", err) from err
                    yield tuple(resident.values())
                    continue
                for model, status in _status_events(payload):
                    if (state := _STATES.get(status)) is not None:
                        resident[model] = ResidentModel(
                            model, state, context_length=contexts.get(model)
                        )
                    elif status in ("unloaded", "failed"):
                        resident.pop(model, None)
                    else:
                        continue
                    yield tuple(resident.values())
        raise LlmServerConnectionError("/models/sse: the event stream ended")

    async def installed_models(self, *, timeout: float | None = None) -> tuple[InstalledModel, ...]:
        """Return every model the router can start."""
        try:
            return tuple(
                InstalledModel(name=required_str(item, "id"))
                for item in await self._models(timeout)
            )
        except ValueError as err:
            raise unexpected("/models", err) from err

    async def load(
        self,
        model: str,
        *,
        keep_seconds: float | None = None,
        num_ctx: int | None = None,
        timeout: float = GENERATION_TIMEOUT,
    ) -> None:
        """Start ``model`` and wait until the router reports it loaded."""
        refuse_keep(self.kind.value, model, keep_seconds, num_ctx)
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
        options: Mapping[str, object] | None = None,
        timeout: float = GENERATION_TIMEOUT,
        system: str | None = None,
        think: bool | None = None,
    ) -> TimedReply:
        """Stream one generation, timed on ``time.monotonic_ns``, and time its load.

        ``/models/sse`` is followed while the request runs: the model's ``loaded`` event,
        if one comes, ends the load stage. With the stream connected and no such event,
        the request loaded nothing (load 0); without the stream the load is unknown.
        """
        reply, watch = await timed_openai_generation(
            self._http,
            api,
            model,
            prompt,
            options=options,
            timeout=timeout,
            events=_EVENTS,
            system=system,
            think=think,
        )
        return replace(reply, load_duration_ns=timed_load_ns(watch, reply))


def _resident_of(items: list[Mapping[str, Any]]) -> dict[str, ResidentModel]:
    """Return the models of a ``/models`` reply that the router holds, by name."""
    resident: dict[str, ResidentModel] = {}
    for item in items:
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


def _status_events(payload: object) -> list[tuple[str, str]]:
    """Return the (model, status) of one ``/models/sse`` event."""
    if not isinstance(payload, dict):
        return []
    data, model = payload.get("data"), valid_name(payload.get("model"))
    status = data.get("status") if isinstance(data, dict) else None
    return [(model, status)] if model is not None and isinstance(status, str) else []


_EVENTS: Final = WatchedStream("/models/sse", "loaded", _status_events)


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
