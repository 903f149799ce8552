"""Async client for the Ollama HTTP API (no Home Assistant imports).

Works with Ollama 0.9.x and current releases. See ``shared/docs/llm-servers.md`` for the
API facts this client relies on.
"""

from collections.abc import Mapping
from dataclasses import replace
import math
import re
import time
from typing import Any, Final, Literal

import aiohttp

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
)
from .http import HttpClient, status_error
from .replies import (
    MAX_BYTES,
    MAX_DURATION_NS,
    MAX_TOKENS,
    bounded_int,
    decode_object,
    iter_lines,
    optional_bounded_int,
    optional_str,
    parse_timestamp,
    required_str,
)
from .types import InstalledModel, ModelInfo, ResidencyState, ResidentModel, TimedReply

DEFAULT_PORT: Final = 11434
# What Ollama reports and accepts (shared/docs/llm-servers.md section 1).
OLLAMA_CAPABILITIES: Final = Capabilities(
    reports_load_duration=True,
    reports_queue=False,  # load_duration includes the queue wait; nothing tells it apart
    can_load=True,
    can_unload=True,
    keep_alive=KeepAlive.IDLE_TIMER,
    pushes_events=False,
    # prompt_eval_count includes the cached tokens; 0.30 and newer say how many
    reports_prompt_cache=False,
    reports_context_length=True,  # since 0.10 (0.9 leaves it out)
    reports_model_make=True,  # /api/tags and /api/ps: "details"
    reports_memory=True,
    reports_expiry=True,
    # No loading state: 0.9.3 lists a loading model with a moving expiry, 0.34.4 does not
    # list it until loaded (recorded: tests/fixtures/ollama_current/README.md); both then
    # report "now + keep_alive" while any request runs.
    reports_loading=False,
    expiry_moves_while_busy=True,
    lists_while_loading=True,  # 0.9: from the start of a load (newer: see below)
)
# From 0.30 Ollama runs llama.cpp's llama-server: it adds a model to the list /api/ps reads
# only once that runner is up (server/sched.go at v0.34.4: llama.Load, then s.loaded), and
# its replies carry the runner's cached prompt tokens (prompt_eval_cached_count).
LISTED_ONCE_LOADED_SINCE: Final = (0, 30)
_RELEASE = re.compile(r"(\d+)\.(\d+)")
# The final chunk's metrics: the reply's key, TimedReply's field, the largest sane value.
_FINAL_METRICS: Final = (
    ("load_duration", "load_duration_ns", MAX_DURATION_NS),
    ("prompt_eval_count", "prompt_eval_count", MAX_TOKENS),
    # 0.30 and newer: the part of prompt_eval_count served from the prompt cache
    ("prompt_eval_cached_count", "prompt_cached_count", MAX_TOKENS),
    ("prompt_eval_duration", "prompt_eval_duration_ns", MAX_DURATION_NS),
    ("eval_count", "eval_count", MAX_TOKENS),
    ("eval_duration", "eval_duration_ns", MAX_DURATION_NS),
    ("total_duration", "total_duration_ns", MAX_DURATION_NS),
)


def ollama_capabilities(version: str) -> Capabilities:
    """Return what an Ollama release reports (a version that does not parse: as 0.9)."""
    if (found := _RELEASE.match(version)) is None:
        return OLLAMA_CAPABILITIES
    if (int(found[1]), int(found[2])) >= LISTED_ONCE_LOADED_SINCE:
        return replace(OLLAMA_CAPABILITIES, lists_while_loading=False, reports_prompt_cache=True)
    return OLLAMA_CAPABILITIES


def error_for_status(status: int, message: str, path: str) -> LlmServerError:
    """Map an HTTP error status (and Ollama's error text) to the client's error classes."""
    missing = status == 404 and "not found" in message.lower() and path != "/api/version"
    return status_error(status, message, path, model_missing=missing, busy=status == 503)


class OllamaClient(HttpClient):
    """Talks to one Ollama server over an injected ``aiohttp.ClientSession``."""

    kind = ServerKind.OLLAMA
    error_for_status = staticmethod(error_for_status)
    capabilities = OLLAMA_CAPABILITIES

    async def version(self, *, timeout: float | None = None) -> str:
        """Return the server's version; raise ``LlmServerNotSupportedError`` if not Ollama.

        The capabilities follow the version (what a release lists while it loads).
        """
        try:
            payload = await self._http.request("GET", "/api/version", timeout=timeout)
        except (LlmServerResponseError, LlmModelNotFoundError) as err:
            raise LlmServerNotSupportedError(
                f"{self._http.shown_url} did not answer like an Ollama server: {err}"
            ) from err
        version = optional_str(payload, "version")
        if version is None:
            raise LlmServerNotSupportedError(
                f"{self._http.shown_url} did not answer like an Ollama server: no version"
            )
        self.capabilities = ollama_capabilities(version)
        return version

    async def running_models(self, *, timeout: float | None = None) -> tuple[ResidentModel, ...]:
        """Return the models resident in memory (``/api/ps``)."""
        payload = await self._http.request("GET", "/api/ps", timeout=timeout)
        return _unique(
            tuple(_parse_resident(i) for i in _model_list(payload, "/api/ps")), "/api/ps"
        )

    async def installed_models(self, *, timeout: float | None = None) -> tuple[InstalledModel, ...]:
        """Return the models installed on the server (``/api/tags``)."""
        payload = await self._http.request("GET", "/api/tags", timeout=timeout)
        models = tuple(_parse_installed(item) for item in _model_list(payload, "/api/tags"))
        return _unique(models, "/api/tags")

    async def show(self, model: str, *, timeout: float | None = None) -> ModelInfo:
        """Return details of one installed model (``/api/show``)."""
        payload = await self._http.request(
            "POST", "/api/show", json={"model": model}, timeout=timeout
        )
        return _parse_show(model, payload)

    async def load(
        self,
        model: str,
        *,
        keep_seconds: float | None = None,
        num_ctx: int | None = None,
        timeout: float = GENERATION_TIMEOUT,
    ) -> None:
        """Load ``model`` with an empty prompt; ``keep_seconds`` sets its ``keep_alive``.

        Without it the model keeps the keep_alive it has (or the server's default).
        ``num_ctx``: the context to load it with (a resident model with another is reloaded).
        """
        request: dict[str, object] = {"model": model}
        if num_ctx is not None:
            request["options"] = {"num_ctx": num_ctx}
        if keep_seconds is not None:
            # Whole seconds, never 0 (that would unload it at once).
            request["keep_alive"] = -1 if keep_seconds < 0 else max(1, math.ceil(keep_seconds))
        await self._http.request("POST", "/api/generate", json=request, timeout=timeout)

    async def unload(self, model: str, *, timeout: float | None = None) -> None:
        """Unload ``model`` now (an empty prompt with ``keep_alive: 0``)."""
        await self._http.request(
            "POST", "/api/generate", json={"model": model, "keep_alive": 0}, timeout=timeout
        )

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
        """Stream one generation and time it on ``time.monotonic_ns``.

        The request carries no ``keep_alive``, so the model's current one is kept (Ollama
        resets the idle timer all the same). Raise ``LlmServerTimeoutError`` when no final
        chunk came within ``timeout`` seconds, and the usual errors otherwise, including an
        ``{"error": ...}`` line in the middle of the stream.
        """
        payload: dict[str, object] = {"model": model, "stream": True}
        if api == "chat":
            system_message = [{"role": "system", "content": system}] if system else []
            payload["messages"] = [*system_message, {"role": "user", "content": prompt}]
        else:
            payload["prompt"] = prompt
            if system:
                payload["system"] = system
        if options:
            payload["options"] = dict(options)
        if think is not None:
            payload["think"] = think
        path = f"/api/{api}"
        async with self._http.stream("POST", path, json=payload, timeout=timeout) as (
            response,
            sent,
            headers,
        ):
            return await _read_stream(response, path, sent, headers)


async def _read_stream(
    response: aiohttp.ClientResponse, path: str, sent: int, headers: int
) -> TimedReply:
    """Read an NDJSON generation stream up to its final chunk, timing the chunks."""
    first: int | None = None
    async for raw in iter_lines(response, path):
        line = raw.strip()
        if not line:
            continue
        now = time.monotonic_ns()
        chunk = decode_object(line, path)
        if isinstance(chunk.get("error"), str):
            raise error_for_status(500, chunk["error"], path)
        if first is None and (_has_content(chunk) or chunk.get("done") is True):
            first = now
        if chunk.get("done") is True:
            try:
                metrics = {
                    field: value
                    for key, field, maximum in _FINAL_METRICS
                    if (value := optional_bounded_int(chunk, key, maximum)) is not None
                }
            except ValueError as err:
                raise LlmServerResponseError(f"{path}: unexpected final chunk: {err}") from err
            if metrics.get("prompt_cached_count", 0) > metrics.get("prompt_eval_count", MAX_TOKENS):
                # The cached tokens are a part of the prompt's: more of them is no figure.
                del metrics["prompt_cached_count"]
            return TimedReply(
                sent_ns=sent,
                headers_ns=headers,
                first_token_ns=now if first is None else first,
                final_ns=now,
                done_reason=optional_str(chunk, "done_reason"),
                **metrics,
            )
    raise LlmServerConnectionError(f"{path}: the stream ended without a final chunk")


def _has_content(chunk: Mapping[str, Any]) -> bool:
    """Return True for a chunk that carries generated text or thinking."""
    message = chunk.get("message")
    parts = [chunk.get("response"), chunk.get("thinking")]
    if isinstance(message, dict):
        parts += [message.get("content"), message.get("thinking")]
    return any(isinstance(part, str) and part for part in parts)


def _model_list(payload: Mapping[str, Any], path: str) -> list[Mapping[str, Any]]:
    """Return the ``models`` array of a reply, checking its shape."""
    models = payload.get("models")
    if models is None:
        # Ollama writes "models": null when nothing is there in some releases.
        return []
    if not isinstance(models, list) or not all(isinstance(item, dict) for item in models):
        raise LlmServerResponseError(f"{path}: 'models' is not a list of objects")
    return models


def _unique[M: (ResidentModel, InstalledModel)](models: tuple[M, ...], path: str) -> tuple[M, ...]:
    """Return ``models``; a name listed twice is not a list a server means."""
    if len({model.name for model in models}) != len(models):
        raise LlmServerResponseError(f"{path}: a model is listed twice")
    return models


def _details(item: Mapping[str, Any]) -> Mapping[str, Any]:
    details = item.get("details")
    return details if isinstance(details, dict) else {}


def _parse_resident(item: Mapping[str, Any]) -> ResidentModel:
    try:
        details = _details(item)
        size = bounded_int(item.get("size"), "size", MAX_BYTES)
        # Every release sends it; one that does not says nothing of the GPU (not 0 bytes).
        size_vram = optional_bounded_int(item, "size_vram", size)
        expires_at = parse_timestamp(item.get("expires_at"))
        return ResidentModel(
            name=required_str(item, "name"),
            # Current releases list a model being loaded with the zero expiry.
            state=ResidencyState.LOADING if expires_at is None else ResidencyState.LOADED,
            size=size,
            size_vram=size_vram,
            expires_at=expires_at,
            digest=optional_str(item, "digest") or "",
            # 0.9 leaves it out; a zero means "not reported" too.
            context_length=optional_bounded_int(item, "context_length", MAX_TOKENS) or None,
            family=optional_str(details, "family"),
            parameter_size=optional_str(details, "parameter_size"),
            quantization_level=optional_str(details, "quantization_level"),
        )
    except ValueError as err:
        raise LlmServerResponseError(f"/api/ps: unexpected model entry: {err}") from err


def _parse_installed(item: Mapping[str, Any]) -> InstalledModel:
    try:
        details = _details(item)
        modified = item.get("modified_at")
        return InstalledModel(
            name=required_str(item, "name"),
            size=bounded_int(item.get("size", 0), "size", MAX_BYTES),
            digest=optional_str(item, "digest") or "",
            family=optional_str(details, "family"),
            parameter_size=optional_str(details, "parameter_size"),
            quantization_level=optional_str(details, "quantization_level"),
            modified_at=parse_timestamp(modified) if modified is not None else None,
        )
    except ValueError as err:
        raise LlmServerResponseError(f"/api/tags: unexpected model entry: {err}") from err


def _parse_show(model: str, payload: Mapping[str, Any]) -> ModelInfo:
    details = _details(payload)
    model_info = payload.get("model_info")
    if not isinstance(model_info, dict):
        model_info = {}
    architecture = model_info.get("general.architecture")
    context_length = (
        model_info.get(f"{architecture}.context_length") if isinstance(architecture, str) else None
    )
    try:
        context_length = bounded_int(context_length, "context_length", MAX_TOKENS, minimum=1)
    except ValueError:
        context_length = None  # free-form model metadata: an odd value is no value
    model_file = None
    modelfile = payload.get("modelfile")
    if isinstance(modelfile, str):
        for line in modelfile.splitlines():
            if line.startswith("FROM "):
                model_file = line.removeprefix("FROM ").strip()
                break
    capabilities = payload.get("capabilities")
    return ModelInfo(
        name=model,
        family=optional_str(details, "family"),
        parameter_size=optional_str(details, "parameter_size"),
        quantization_level=optional_str(details, "quantization_level"),
        context_length=context_length,
        model_file=model_file,
        capabilities=tuple(c for c in capabilities if isinstance(c, str))
        if isinstance(capabilities, list)
        else (),
    )
