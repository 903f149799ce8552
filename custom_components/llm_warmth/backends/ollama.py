"""Async client for the Ollama HTTP API (no Home Assistant imports).

Works with Ollama 0.9.x and current releases. See ``shared/docs/llm-servers.md`` for the
API facts this client relies on.
"""

import asyncio
from collections.abc import Mapping
from datetime import datetime
import json
import time
from typing import Any, Final, Literal

import aiohttp
from yarl import URL

from .errors import (
    LlmModelNotFoundError,
    LlmServerAuthenticationError,
    LlmServerBusyError,
    LlmServerConnectionError,
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerOutOfMemoryError,
    LlmServerResponseError,
    LlmServerTimeoutError,
)
from .types import InstalledModel, ModelInfo, ResidentModel, TimedReply

DEFAULT_PORT: Final = 11434
DEFAULT_TIMEOUT: Final = 10.0
# A generation that loads a model must not be cut short: a client timeout aborts the load
# (Ollama answers 499 and drops the half-loaded model). Ollama's own load timeout is 5 min.
GENERATION_TIMEOUT: Final = 300.0
_FINAL_METRICS: Final = {
    "load_duration": "load_duration_ns",
    "prompt_eval_count": "prompt_eval_count",
    "prompt_eval_duration": "prompt_eval_duration_ns",
    "eval_count": "eval_count",
    "eval_duration": "eval_duration_ns",
    "total_duration": "total_duration_ns",
}

# Substrings Ollama's llm.IsOutOfMemory matches, plus the pre-0.30 wording.
_OUT_OF_MEMORY_MARKERS: Final = (
    "out of memory",
    "cudamalloc failed",
    "failed to allocate",
    "insufficient memory",
    "vk_error_out_of_device_memory",
    "requires more system memory",
)


class OllamaClient:
    """Talks to one Ollama server over an injected ``aiohttp.ClientSession``."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        *,
        api_key: str | None = None,
        request_timeout: float | None = None,
    ) -> None:
        """Create a client for ``base_url`` (e.g. ``http://127.0.0.1:11434``)."""
        self._session = session
        self._base_url = URL(base_url)
        # Error messages end up in logs and the UI: never with the URL's credentials.
        self._shown_url = str(self._base_url.with_user(None))
        if api_key and self._base_url.user is not None:
            raise ValueError("give either credentials in the URL or an API key, not both")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = request_timeout or DEFAULT_TIMEOUT

    @property
    def base_url(self) -> str:
        """Return the server's base URL."""
        return str(self._base_url)

    async def version(self, *, timeout: float | None = None) -> str:
        """Return the server's version; raise ``LlmServerNotSupportedError`` if not Ollama."""
        try:
            payload = await self._request("GET", "/api/version", timeout=timeout)
        except (LlmServerResponseError, LlmModelNotFoundError) as err:
            raise LlmServerNotSupportedError(
                f"{self._shown_url} did not answer like an Ollama server: {err}"
            ) from err
        version = payload.get("version")
        if not isinstance(version, str) or not version:
            raise LlmServerNotSupportedError(
                f"{self._shown_url} did not answer like an Ollama server: no version"
            )
        return version

    async def running_models(self, *, timeout: float | None = None) -> tuple[ResidentModel, ...]:
        """Return the models resident in memory (``/api/ps``)."""
        payload = await self._request("GET", "/api/ps", timeout=timeout)
        return tuple(_parse_resident(item) for item in _model_list(payload, "/api/ps"))

    async def installed_models(self, *, timeout: float | None = None) -> tuple[InstalledModel, ...]:
        """Return the models installed on the server (``/api/tags``)."""
        payload = await self._request("GET", "/api/tags", timeout=timeout)
        return tuple(_parse_installed(item) for item in _model_list(payload, "/api/tags"))

    async def show(self, model: str, *, timeout: float | None = None) -> ModelInfo:
        """Return details of one installed model (``/api/show``)."""
        payload = await self._request("POST", "/api/show", json={"model": model}, timeout=timeout)
        return _parse_show(model, payload)

    async def timed_generation(
        self,
        api: Literal["chat", "generate"],
        model: str,
        prompt: str,
        *,
        options: Mapping[str, Any] | None = None,
        timeout: float = GENERATION_TIMEOUT,
    ) -> TimedReply:
        """Stream one generation and time it on ``time.monotonic_ns``.

        The request carries no ``keep_alive``, so the model's current one is kept (Ollama
        resets the idle timer all the same). Raise ``LlmServerTimeoutError`` when no final
        chunk came within ``timeout`` seconds, and the usual errors otherwise, including an
        ``{"error": ...}`` line in the middle of the stream.
        """
        payload: dict[str, Any] = {"model": model, "stream": True}
        if api == "chat":
            payload["messages"] = [{"role": "user", "content": prompt}]
        else:
            payload["prompt"] = prompt
        if options:
            payload["options"] = dict(options)
        path = f"/api/{api}"
        url = self._base_url.with_path(self._base_url.path.rstrip("/") + path)
        try:
            async with asyncio.timeout(timeout):
                sent = time.monotonic_ns()
                async with self._session.post(url, json=payload, headers=self._headers) as response:
                    headers = time.monotonic_ns()
                    if response.status >= 400:
                        body = await response.read()
                        raise error_for_status(response.status, _error_message(body), path)
                    return await _read_stream(response, path, sent, headers)
        except TimeoutError as err:
            raise LlmServerTimeoutError(
                f"{path}: no complete reply from {self._shown_url} within {timeout:g} s"
            ) from err
        except aiohttp.ClientError as err:
            raise LlmServerConnectionError(
                f"Connection to {self._shown_url}{path} failed: {err or type(err).__name__}"
            ) from err

    async def _request(
        self,
        method: str,
        path: str,
        *,
        json: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send one request and return its JSON object, mapping every failure to our errors."""
        url = self._base_url.with_path(self._base_url.path.rstrip("/") + path)
        try:
            async with asyncio.timeout(timeout or self._timeout):
                async with self._session.request(
                    method, url, json=json, headers=self._headers
                ) as response:
                    body = await response.read()
                    status = response.status
        except TimeoutError as err:
            raise LlmServerTimeoutError(f"Timeout talking to {self._shown_url}{path}") from err
        except aiohttp.ClientError as err:
            raise LlmServerConnectionError(
                f"Cannot reach {self._shown_url}{path}: {err or type(err).__name__}"
            ) from err
        if status >= 400:
            raise error_for_status(status, _error_message(body), path)
        return _decode_object(body, path)


async def _read_stream(
    response: aiohttp.ClientResponse, path: str, sent: int, headers: int
) -> TimedReply:
    """Read an NDJSON generation stream up to its final chunk, timing the chunks."""
    first: int | None = None
    async for raw in response.content:
        line = raw.strip()
        if not line:
            continue
        now = time.monotonic_ns()
        chunk = _decode_object(line, path)
        if isinstance(chunk.get("error"), str):
            raise error_for_status(500, chunk["error"], path)
        if first is None and (_has_content(chunk) or chunk.get("done") is True):
            first = now
        if chunk.get("done") is True:
            metrics = {
                field: value
                for key, field in _FINAL_METRICS.items()
                if isinstance(value := chunk.get(key), int) and not isinstance(value, bool)
            }
            reason = chunk.get("done_reason")
            return TimedReply(
                sent_ns=sent,
                headers_ns=headers,
                first_token_ns=now if first is None else first,
                final_ns=now,
                done_reason=reason if isinstance(reason, str) else None,
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


def error_for_status(status: int, message: str, path: str) -> LlmServerError:
    """Map an HTTP error status (and Ollama's error text) to the client's error classes."""
    lowered = message.lower()
    if status in (401, 403):
        return LlmServerAuthenticationError(f"{path}: HTTP {status} {message}")
    if status == 404 and "not found" in lowered and path != "/api/version":
        return LlmModelNotFoundError(message)
    if status == 503:
        return LlmServerBusyError(message or "server busy")
    if any(marker in lowered for marker in _OUT_OF_MEMORY_MARKERS):
        return LlmServerOutOfMemoryError(message)
    return LlmServerResponseError(f"{path}: HTTP {status} {message}".rstrip())


def _error_message(body: bytes) -> str:
    """Return Ollama's ``{"error": ...}`` text, or a short excerpt of a non-JSON body."""
    text = body.decode("utf-8", "replace")
    try:
        payload = json.loads(text)
    except ValueError:
        return text.strip()[:200]
    if isinstance(payload, dict) and isinstance(payload.get("error"), str):
        return str(payload["error"])
    return text.strip()[:200]


def _decode_object(body: bytes, path: str) -> dict[str, Any]:
    """Decode a JSON object or raise ``LlmServerResponseError``."""
    try:
        payload = json.loads(body)
    except ValueError as err:
        raise LlmServerResponseError(f"{path}: reply is not JSON") from err
    if not isinstance(payload, dict):
        raise LlmServerResponseError(f"{path}: reply is not a JSON object")
    return payload


def _model_list(payload: Mapping[str, Any], path: str) -> list[Mapping[str, Any]]:
    """Return the ``models`` array of a reply, checking its shape."""
    models = payload.get("models")
    if models is None:
        # Ollama writes "models": null when nothing is there in some releases.
        return []
    if not isinstance(models, list) or not all(isinstance(item, dict) for item in models):
        raise LlmServerResponseError(f"{path}: 'models' is not a list of objects")
    return models


def parse_timestamp(value: object) -> datetime | None:
    """Parse an RFC 3339 timestamp with nanoseconds; the Go zero time means "no time yet"."""
    if not isinstance(value, str):
        raise ValueError(f"not a timestamp: {value!r}")
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp without a timezone: {value!r}")
    if parsed.year <= 1:
        return None
    return parsed


def _str(item: Mapping[str, Any], key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"'{key}' is missing or not a string")
    return value


def _int(item: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = item.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"'{key}' is missing or not a non-negative integer")
    return value


def _optional_str(item: Mapping[str, Any], key: str) -> str | None:
    value = item.get(key)
    return value if isinstance(value, str) and value else None


def _details(item: Mapping[str, Any]) -> Mapping[str, Any]:
    details = item.get("details")
    return details if isinstance(details, dict) else {}


def _parse_resident(item: Mapping[str, Any]) -> ResidentModel:
    try:
        details = _details(item)
        context_length = item.get("context_length")
        return ResidentModel(
            name=_str(item, "name"),
            size=_int(item, "size"),
            size_vram=_int(item, "size_vram", 0),
            expires_at=parse_timestamp(item.get("expires_at")),
            digest=_optional_str(item, "digest") or "",
            context_length=_int(item, "context_length") if context_length else None,
            family=_optional_str(details, "family"),
            parameter_size=_optional_str(details, "parameter_size"),
            quantization_level=_optional_str(details, "quantization_level"),
        )
    except ValueError as err:
        raise LlmServerResponseError(f"/api/ps: unexpected model entry: {err}") from err


def _parse_installed(item: Mapping[str, Any]) -> InstalledModel:
    try:
        details = _details(item)
        modified = item.get("modified_at")
        return InstalledModel(
            name=_str(item, "name"),
            size=_int(item, "size", 0),
            digest=_optional_str(item, "digest") or "",
            family=_optional_str(details, "family"),
            parameter_size=_optional_str(details, "parameter_size"),
            quantization_level=_optional_str(details, "quantization_level"),
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
        family=_optional_str(details, "family"),
        parameter_size=_optional_str(details, "parameter_size"),
        quantization_level=_optional_str(details, "quantization_level"),
        context_length=context_length if isinstance(context_length, int) else None,
        model_file=model_file,
        capabilities=tuple(c for c in capabilities if isinstance(c, str))
        if isinstance(capabilities, list)
        else (),
    )
