"""Async client for llama-swap, the model-swapping proxy (no Home Assistant imports).

Endpoints (mostlygeek/llama-swap v218+; facts and sources in ``tests/llama_swap_emulator.py``):

* ``GET /running`` -> ``{"running": [{"model", "state", "ttl", ...}]}``: every process not
  ``stopped``/``shutdown`` (``starting``, ``ready``, ``stopping``); it is what tells
  llama-swap from the servers behind it. ``GET /api/version`` -> ``{"version", "commit",
  "build_date"}``.
* ``GET /v1/models`` -> ``{"data": [{"id", "owned_by": "llama-swap", "meta": {"llamaswap":
  {"type": "model|alias|peer|..."}}}]}``: the models it can start.
* ``GET /upstream/<model>/health`` starts the model (and stops what its swap group must
  stop) and answers once it is ready; ``POST /api/models/unload/<model>`` stops it
  (``OK`` as text; 404 for an unknown model).
* ``GET /api/events``: ``event:message`` frames whose ``data`` is ``{"type", "data": "<JSON
  as a string>"}``; on connect the current ``modelStatus`` (every model with its state)
  and the ``inflight`` requests, then each change.
* Generations go to ``/v1/chat/completions`` / ``/v1/completions``, passed through to the
  upstream server verbatim (llama-server's ``timings`` included).
"""

from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any, Final, Literal
from urllib.parse import quote

from .base import GENERATION_TIMEOUT, Capabilities, KeepAlive, ServerKind
from .errors import (
    LlmModelNotFoundError,
    LlmModelOnPeerError,
    LlmModelStartError,
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerResponseError,
    refuse_keep,
)
from .events import sse_payloads
from .http import HttpClient, status_error, unexpected
from .llama_swap_events import EVENTS, event_data, inflight_ids, queue_wait_ns
from .openai_stream import timed_load_ns, timed_openai_generation
from .replies import (
    MAX_TEXT,
    bounded_int,
    optional_bounded_int,
    optional_str,
    parse_timestamp,
    required_str,
)
from .types import InstalledModel, ResidencyState, ResidentModel, ServedRequest, TimedReply

LLAMA_SWAP_CAPABILITIES: Final = Capabilities(
    reports_load_duration=False,  # the client times the "ready" state change itself
    reports_queue=True,  # the inflight requests on /api/events
    can_load=True,
    can_unload=True,
    keep_alive=KeepAlive.TTL,
    pushes_events=True,
    reports_prompt_cache=True,  # passed through from llama-server upstreams
    reports_context_length=False,
    reports_memory=False,
    reports_expiry=False,
    reports_loading=True,
    expiry_moves_while_busy=False,
    lists_while_loading=True,  # "starting" in /running from the start of the load
    reports_model_make=False,
)
_STATES: Final = {
    "starting": ResidencyState.LOADING,
    "ready": ResidencyState.LOADED,
    "stopping": ResidencyState.UNLOADING,
}
# /v1/models lists aliases, peers and profiles beside the models themselves.
_OWN_MODEL_TYPES: Final = (None, "model")
_PEER_MODEL_TYPE: Final = "peer"
# The smallest request that makes a peer start a model: llama-swap forwards /upstream of a
# peer's model to the peer's root (recorded: /upstream/lab/tiny/health answered the peer's
# own "OK" and started nothing), so a preload through it is a one-token chat.
PEER_LOAD_BODY: Final = {"messages": [{"role": "user", "content": "."}], "max_tokens": 1}
# An event stream that says nothing for this long is gone (llama-swap sends no pings, but
# re-sends modelStatus on every change; a quiet server is reconnected to, which is cheap).
EVENT_SILENCE_SECONDS: Final = 600.0
# What llama-swap says when a model's process did not come up (process_command.go).
START_FAILURES: Final = (
    "upstream command exited prematurely",
    "health check timed out",
    "failed to start command",
)


def error_for_status(status: int, message: str, path: str) -> LlmServerError:
    """Map an HTTP error status (and llama-swap's error text) to the client's errors.

    An unknown model is 404 ("model not found", "no router for requested model") on the
    paths that name one; 429 is its concurrency limit; a model whose process exited or
    never turned healthy is 500 with one of ``START_FAILURES`` (recorded from the real
    one: "unspecific error: upstream command exited prematurely").
    """
    lowered = message.lower()
    if status == 500 and any(marker in lowered for marker in START_FAILURES):
        return LlmModelStartError(message[:MAX_TEXT])
    missing = (
        status == 404
        and ("not found" in lowered or "no router" in lowered)
        and path.startswith(("/upstream/", "/api/models/unload/", "/v1/"))
    )
    return status_error(
        status, message[:MAX_TEXT], path, model_missing=missing, busy=status in (429, 503)
    )


class LlamaSwapClient(HttpClient):
    """Talks to one llama-swap over an injected ``aiohttp.ClientSession``."""

    kind = ServerKind.LLAMA_SWAP
    error_for_status = staticmethod(error_for_status)
    capabilities = LLAMA_SWAP_CAPABILITIES
    # The peers' models, by name, as the last /v1/models listed them.
    _peers: Mapping[str, str] = MappingProxyType({})

    async def version(self, *, timeout: float | None = None) -> str:
        """Return the version; ``LlmServerNotSupportedError`` unless llama-swap answers."""
        shown = self._http.shown_url
        try:
            await self._running(timeout)
        except (LlmServerResponseError, LlmModelNotFoundError) as err:
            raise LlmServerNotSupportedError(
                f"{shown} did not answer like llama-swap: {err}"
            ) from err
        try:
            payload = await self._http.request("GET", "/api/version", timeout=timeout)
        except LlmServerResponseError, LlmModelNotFoundError:
            return "unknown"  # before v173
        return optional_str(payload, "version") or "unknown"

    async def _running(self, timeout: float | None) -> list[Mapping[str, Any]]:
        payload = await self._http.request("GET", "/running", timeout=timeout)
        if "running" not in payload:  # some servers answer any path with 200 and JSON
            raise LlmServerResponseError("/running: no 'running' list")
        running = payload["running"]
        if running is None:
            running = []
        if not isinstance(running, list) or not all(isinstance(m, dict) for m in running):
            raise LlmServerResponseError("/running: 'running' is not a list of objects")
        return running

    async def running_models(self, *, timeout: float | None = None) -> tuple[ResidentModel, ...]:
        """Return the processes llama-swap runs (starting, ready or stopping)."""
        try:
            return _residents(await self._running(timeout), "model", "state", "/running")
        except ValueError as err:
            raise unexpected("/running", err) from err

    async def installed_models(self, *, timeout: float | None = None) -> tuple[InstalledModel, ...]:
        """Return the models llama-swap can start and those of its peers (no aliases).

        A peer's model (``<peer>/<model>``, recorded with ``meta.llamaswap.type`` "peer"
        and its ``peerID``) runs on the peer: its ``peer`` names it. The client keeps them,
        so that a preload reaches the peer and an unload is refused in words.
        """
        payload = await self._http.request("GET", "/v1/models", timeout=timeout)
        data = payload.get("data")
        if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
            raise LlmServerResponseError("/v1/models: 'data' is not a list of objects")
        try:
            models = [
                InstalledModel(name=required_str(m, "id"), peer=_peer_id(m))
                for m in data
                if _model_type(m) in (*_OWN_MODEL_TYPES, _PEER_MODEL_TYPE)
            ]
        except ValueError as err:
            raise unexpected("/v1/models", err) from err
        if len({m.name for m in models}) != len(models):
            raise LlmServerResponseError("/v1/models: a model is listed twice")
        self._peers = {m.name: m.peer for m in models if m.peer is not None}
        return tuple(models)

    async def load(
        self,
        model: str,
        *,
        keep_seconds: float | None = None,
        num_ctx: int | None = None,
        timeout: float = GENERATION_TIMEOUT,
    ) -> None:
        """Start ``model`` (through its upstream's health check) and wait until it is ready.

        A peer's model is started by a one-token chat sent through this llama-swap.
        """
        refuse_keep(self.kind.value, model, keep_seconds, num_ctx)
        if model in self._peers:
            body = {"model": model, **PEER_LOAD_BODY}
            await self._http.request_body(
                "POST", "/v1/chat/completions", json=body, timeout=timeout
            )
            return
        await self._http.request_body(
            "GET", f"/upstream/{quote(model, safe='')}/health", timeout=timeout
        )

    async def unload(self, model: str, *, timeout: float | None = None) -> None:
        """Stop ``model``; llama-swap answers once it has stopped.

        A peer's model cannot be stopped through llama-swap (recorded: 404 "model not
        found"): ``LlmModelOnPeerError`` says where it runs.
        """
        if (peer := self._peers.get(model)) is not None:
            raise LlmModelOnPeerError(f"it runs on llama-swap's peer {peer}")
        await self._http.request_body(
            "POST", f"/api/models/unload/{quote(model, safe='')}", timeout=timeout
        )

    async def residency_events(self) -> AsyncGenerator[tuple[ResidentModel, ...]]:
        """Yield the resident models each time llama-swap reports a state change.

        The first item comes at once (the stream starts with the current state). Raise
        ``LlmServerError`` when the stream cannot be had, ends, or stays silent for
        ``EVENT_SILENCE_SECONDS``.
        """
        async for payload in sse_payloads(self._http, "/api/events", EVENT_SILENCE_SECONDS):
            statuses = event_data(payload, "modelStatus")  # CONNECTED and others: None
            if statuses is None:
                continue
            if not isinstance(statuses, list):
                raise LlmServerResponseError("/api/events: modelStatus is not a list")
            local = [s for s in statuses if isinstance(s, dict) and not s.get("peerID")]
            try:
                resident = _residents(local, "id", "state", "/api/events")
            except ValueError as err:
                raise unexpected("/api/events", err) from err
            yield resident

    async def served_requests(
        self, model: str | None = None, *, limit: int = 10, timeout: float | None = None
    ) -> tuple[ServedRequest, ...]:
        """Return the latest requests llama-swap served (for ``model``: its), newest first.

        ``GET /api/metrics/activity?model=<model>&limit=<limit>`` (its activity log, kept in
        memory). An entry that does not read is left out; a reply that is not a page of
        entries raises ``LlmServerResponseError``.
        """
        query = f"model={quote(model, safe='')}&" if model is not None else ""
        path = f"/api/metrics/activity?{query}limit={limit}"
        payload = await self._http.request("GET", path, timeout=timeout)
        data = payload.get("data")
        if not isinstance(data, list):
            raise LlmServerResponseError("/api/metrics/activity: 'data' is not a list")
        served = (_served(item) for item in data[:limit])
        return tuple(r for r in served if r is not None and model in (None, r.model))

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
        """Stream one generation, timed on ``time.monotonic_ns``; time its load and queue.

        ``/api/events`` is followed while the request runs: the model turning ``ready``
        ends the load; the requests to the model already in flight when ours was sent
        are the queue, which ends when the last of them does (at the latest when our
        prefill starts: with parallel slots they may run beside ours). The load figure
        includes the queue, as Ollama's does; ``queue_ns`` is that part.
        """
        reply, watch = await timed_openai_generation(
            self._http,
            api,
            model,
            prompt,
            options=options,
            timeout=timeout,
            events=EVENTS,
            system=system,
            think=think,
        )
        load_ns = queue_ns = None
        if watch.trustworthy:
            ahead = inflight_ids(
                [
                    f
                    for f, at in zip(watch.frames, watch.frame_times, strict=True)
                    if at < reply.sent_ns
                ],
                model,
            )
            load = timed_load_ns(watch, reply) or 0
            # Requests ahead may run beside ours (parallel slots): what they overlap is
            # bounded by the time before our prefill that the load does not explain.
            before_prefill = (
                reply.first_token_ns - reply.sent_ns - (reply.prompt_eval_duration_ns or 0)
            )
            queue_ns = min(
                queue_wait_ns(watch, ahead, reply.sent_ns, reply.first_token_ns),
                max(before_prefill - load, 0),
            )
            load_ns = load + queue_ns
        return replace(reply, load_duration_ns=load_ns, queue_ns=queue_ns)


# Sanity bounds of an activity entry: a request of a day or more, or a billion tokens, is
# a broken entry, not a request.
_MAX_REQUEST_MS: Final = 86_400_000
_MAX_TOKENS: Final = 1_000_000_000
# llama-swap's duration holds the upstream's prompt and generation times, truncated to the
# millisecond; each figure read from its rates is rounded to the millisecond.
_WORK_ROUNDING_SECONDS: Final = 0.003


def _served(item: object) -> ServedRequest | None:
    """Read one llama-swap activity entry (``ActivityLogEntry``); None when it does not read.

    ``tokens``: ``input_tokens`` (llama-server's ``prompt_n``: the prompt tokens evaluated),
    ``cache_tokens`` (``cache_n``), ``output_tokens``, ``prompt_per_second`` and
    ``tokens_per_second`` (-1 or 0 where the upstream told none).
    """
    if not isinstance(item, dict):
        return None
    raw_tokens = item.get("tokens")
    tokens: dict[str, Any] = raw_tokens if isinstance(raw_tokens, dict) else {}
    try:
        ended = parse_timestamp(item.get("timestamp"))
        if ended is None:
            return None
        prompt = optional_bounded_int(tokens, "input_tokens", _MAX_TOKENS, -1)
        cached = optional_bounded_int(tokens, "cache_tokens", _MAX_TOKENS, -1)
        output = optional_bounded_int(tokens, "output_tokens", _MAX_TOKENS, -1)
        seconds = bounded_int(item.get("duration_ms"), "duration_ms", _MAX_REQUEST_MS) / 1000
        prefill = _tokens_seconds(prompt, tokens.get("prompt_per_second"))
        generation = _tokens_seconds(output, tokens.get("tokens_per_second"))
        if (prefill or 0.0) + (generation or 0.0) > seconds + _WORK_ROUNDING_SECONDS:
            # More work than the request's time: its rates are not this request's.
            prefill = generation = None
        return ServedRequest(
            id=bounded_int(item.get("id"), "id", 2**62),
            model=required_str(item, "model"),
            ended_at=ended,
            seconds=seconds,
            status=bounded_int(item.get("resp_status_code"), "resp_status_code", 999),
            prompt_tokens=prompt if prompt is not None and prompt >= 0 else None,
            cached_tokens=cached if cached is not None and cached >= 0 else None,
            prefill_seconds=prefill,
            generation_seconds=generation,
        )
    except ValueError:
        return None


def _tokens_seconds(count: int | None, per_second: object) -> float | None:
    """Return ``count`` tokens' seconds at ``per_second``; None where either is not told."""
    if count is None or count < 0 or isinstance(per_second, bool):
        return None
    if not isinstance(per_second, int | float) or not 1e-3 <= per_second < 1e9:
        return 0.0 if count == 0 else None
    seconds = count / per_second
    return round(seconds, 3) if seconds <= _MAX_REQUEST_MS / 1000 else None


def _peer_id(item: Mapping[str, Any]) -> str | None:
    """Return the peer that runs a /v1/models entry of type "peer" (None: its own)."""
    if _model_type(item) != _PEER_MODEL_TYPE:
        return None
    own = item["meta"]["llamaswap"]
    peer = own.get("peerID")
    if not isinstance(peer, str) or not peer.strip():
        raise ValueError("a peer model without its peerID")
    return peer[:MAX_TEXT]


def _model_type(item: Mapping[str, Any]) -> object:
    meta = item.get("meta")
    own = meta.get("llamaswap") if isinstance(meta, dict) else None
    return own.get("type") if isinstance(own, dict) else None


def _residents(
    items: Sequence[Mapping[str, Any]], name_key: str, state_key: str, path: str
) -> tuple[ResidentModel, ...]:
    resident = [
        ResidentModel(name=required_str(item, name_key), state=state)
        for item in items
        if (state := _STATES.get(str(item.get(state_key)))) is not None
    ]
    if len({m.name for m in resident}) != len(resident):
        raise LlmServerResponseError(f"{path}: a model is listed twice")
    return tuple(resident)
