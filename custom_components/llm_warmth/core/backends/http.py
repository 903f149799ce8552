"""The HTTP side every client shares: one session, credentials, timeouts, error mapping.

Each client gives its own ``error_for_status`` (servers word their errors differently);
everything else about talking to a server, and about what leaves a client when the
network or the server misbehaves, is the same for all and lives here.
"""

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
import time
from typing import Any

import aiohttp
from yarl import URL

from .errors import (
    LlmModelNotFoundError,
    LlmServerAuthenticationError,
    LlmServerBusyError,
    LlmServerConnectionError,
    LlmServerError,
    LlmServerOutOfMemoryError,
    LlmServerResponseError,
    LlmServerTimeoutError,
    LlmServerTlsError,
    LlmServerUnreachableError,
)
from .replies import decode_json, decode_object, read_body

# Seconds a request other than a generation may take.
DEFAULT_TIMEOUT = 10.0

type ErrorForStatus = Callable[[int, str, str], LlmServerError]


class HttpTransport:
    """Sends requests to one server over an injected ``aiohttp.ClientSession``."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        *,
        api_key: str | None,
        timeout: float,
        error_for_status: ErrorForStatus,
    ) -> None:
        """Talk to ``base_url``; an API key is sent as a bearer token."""
        self.session = session
        self.base_url = URL(base_url)
        # Error messages end up in logs and the UI: never with the URL's credentials.
        self.shown_url = str(self.base_url.with_user(None))
        if api_key and self.base_url.user is not None:
            raise ValueError("give either credentials in the URL or an API key, not both")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = timeout
        self.error_for_status = error_for_status

    def url(self, path: str) -> URL:
        """Return the URL of ``path`` below the base URL (which may have a path itself).

        A query after ``?`` (its values already quoted) is the URL's query.
        """
        path, _, query = path.partition("?")
        url = self.base_url.with_path(self.base_url.path.rstrip("/") + path)
        return url.with_query(query) if query else url

    async def request_body(
        self,
        method: str,
        path: str,
        *,
        json: Mapping[str, object] | None = None,
        timeout: float | None = None,
    ) -> bytes:
        """Send one request and return its body; every failure becomes one of our errors."""
        try:
            async with asyncio.timeout(timeout or self.timeout):
                async with self.session.request(
                    method, self.url(path), json=json, headers=self.headers
                ) as response:
                    body = await read_body(response, path)
                    status = response.status
        except TimeoutError as err:
            raise LlmServerTimeoutError(f"Timeout talking to {self.shown_url}{path}") from err
        except aiohttp.ClientSSLError as err:
            raise _tls_error(self.shown_url, err) from err
        except aiohttp.ClientConnectorError as err:
            raise LlmServerUnreachableError(
                f"Cannot reach {self.shown_url}{path}: {str(err) or type(err).__name__}"
            ) from err
        except aiohttp.ClientError as err:
            raise LlmServerConnectionError(
                f"Cannot reach {self.shown_url}{path}: {str(err) or type(err).__name__}"
            ) from err
        if status >= 400:
            raise self.error_for_status(status, error_message(body), path)
        return body

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Mapping[str, object] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send one request and return its JSON object."""
        body = await self.request_body(method, path, json=json, timeout=timeout)
        return decode_object(body, path)

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        *,
        json: Mapping[str, object] | None,
        timeout: float,
        what: str = "complete reply",
    ) -> AsyncIterator[tuple[aiohttp.ClientResponse, int, int]]:
        """Open a streamed reply; yield it with when it was sent and its headers came (ns).

        The whole block runs under ``timeout``; an HTTP error status raises before the
        block runs, and the network's errors inside it become ours.
        """
        try:
            async with asyncio.timeout(timeout):
                sent = time.monotonic_ns()
                async with self.session.request(
                    method, self.url(path), json=json, headers=self.headers
                ) as response:
                    headers = time.monotonic_ns()
                    if response.status >= 400:
                        body = await read_body(response, path)
                        raise self.error_for_status(response.status, error_message(body), path)
                    yield response, sent, headers
        except TimeoutError as err:
            raise LlmServerTimeoutError(
                f"{path}: no {what} from {self.shown_url} within {timeout:g} s"
            ) from err
        except aiohttp.ClientSSLError as err:
            raise _tls_error(self.shown_url, err) from err
        except aiohttp.ClientConnectorError as err:
            raise LlmServerUnreachableError(
                f"Cannot connect to {self.shown_url}{path}: {str(err) or type(err).__name__}"
            ) from err
        except aiohttp.ClientError as err:
            raise LlmServerConnectionError(
                f"Connection to {self.shown_url}{path} failed: {str(err) or type(err).__name__}"
            ) from err


# Words of an out-of-memory failure: Ollama's llm.IsOutOfMemory, its pre-0.30 wording, and
# llama.cpp's allocation errors.
OUT_OF_MEMORY_MARKERS = (
    "out of memory",
    "cudamalloc failed",
    "failed to allocate",
    "insufficient memory",
    "vk_error_out_of_device_memory",
    "requires more system memory",
)


def status_error(
    status: int, message: str, path: str, *, model_missing: bool, busy: bool
) -> LlmServerError:
    """Return the error for an HTTP error status; the server's kind says what is which.

    ``model_missing``: the server says the requested model does not exist; ``busy``: its
    queue is full. Otherwise 401/403 refuse the credentials, an out-of-memory text is
    that, and the rest is an unexpected reply.
    """
    if status in (401, 403):
        return LlmServerAuthenticationError(f"{path}: HTTP {status} {message}")
    if model_missing:
        return LlmModelNotFoundError(message)
    if busy:
        return LlmServerBusyError(message or "server busy")
    if any(marker in message.lower() for marker in OUT_OF_MEMORY_MARKERS):
        return LlmServerOutOfMemoryError(message)
    return LlmServerResponseError(f"{path}: HTTP {status} {message}".rstrip())


class HttpClient:
    """The part every client shares: its transport, and how it words errors."""

    @staticmethod
    def error_for_status(status: int, message: str, path: str) -> LlmServerError:
        """Map an HTTP error status and the server's error text to the client's errors."""
        raise NotImplementedError

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        *,
        api_key: str | None = None,
        request_timeout: float | None = None,
    ) -> None:
        """Create a client for ``base_url``; an API key is sent as a bearer token."""
        self._http = HttpTransport(
            session,
            base_url,
            api_key=api_key,
            timeout=request_timeout or DEFAULT_TIMEOUT,
            error_for_status=self.error_for_status,
        )

    @property
    def base_url(self) -> str:
        """Return the server's base URL."""
        return str(self._http.base_url)


def _tls_error(url: str, err: aiohttp.ClientSSLError) -> LlmServerTlsError:
    return LlmServerTlsError(f"TLS with {url} failed: {str(err) or type(err).__name__}")


def error_message(body: bytes) -> str:
    """Return a server's error text: ``{"error": "..."}``, ``{"error": {"message": ...}}``.

    Otherwise a short excerpt of the body.
    """
    text = body.decode("utf-8", "replace")
    try:
        payload = decode_json(text)
    except ValueError:
        return text.strip()[:200]
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict):
            error = error.get("message")
        if isinstance(error, str):
            return error[:500]
    return text.strip()[:200]


def unexpected(path: str, err: ValueError) -> LlmServerResponseError:
    """Return the error for a reply whose content broke a rule."""
    return LlmServerResponseError(f"{path}: unexpected reply: {err}")
