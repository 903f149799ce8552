"""How the transport words a server's errors: an excerpt, never the whole body, and a
busy server or a failed connection said even when the server or the error says nothing."""

import asyncio
from collections.abc import Callable
import json

import aiohttp
import pytest

from custom_components.llm_warmth.core.backends.errors import (
    LlmServerBusyError,
    LlmServerConnectionError,
    LlmServerTlsError,
    LlmServerUnreachableError,
)
from custom_components.llm_warmth.core.backends.http import (
    HttpTransport,
    _tls_error,
    error_message,
    status_error,
)
from custom_components.llm_warmth.core.backends.ollama import OllamaClient


def test_the_servers_error_is_an_excerpt() -> None:
    assert error_message(json.dumps({"error": "x" * 600}).encode()) == "x" * 500
    assert error_message(json.dumps({"error": {"message": "y" * 600}}).encode()) == "y" * 500
    assert error_message(("<html>" + "z" * 600).encode()) == ("<html>" + "z" * 600)[:200]
    # JSON without an error text: the body's start, as it is.
    assert (
        error_message(json.dumps({"detail": "w" * 300}).encode())
        == (json.dumps({"detail": "w" * 300})[:200])
    )
    assert error_message(b"  short  ") == "short"


def test_a_busy_server_that_says_nothing_is_said_busy() -> None:
    err = status_error(503, "", "/v1/chat", model_missing=False, busy=True)
    assert isinstance(err, LlmServerBusyError)
    assert str(err) == "server busy"
    assert str(status_error(503, "queue full", "/v1/chat", model_missing=False, busy=True)) == (
        "queue full"
    )


def test_a_tls_failure_without_words_names_its_kind() -> None:
    class Quiet(aiohttp.ClientSSLError):
        def __str__(self) -> str:
            return ""

    quiet = Quiet.__new__(Quiet)
    err = _tls_error("https://gpu-box", quiet)
    assert isinstance(err, LlmServerTlsError)
    assert str(err) == "TLS with https://gpu-box failed: Quiet"


async def test_a_refused_connection_says_what_refused_it(
    socket_enabled: None, unused_tcp_port_factory: Callable[[], int]
) -> None:
    """The error's own words, after where: not only its kind."""
    port = unused_tcp_port_factory()
    async with aiohttp.ClientSession() as session:
        client = OllamaClient(session, f"http://127.0.0.1:{port}", request_timeout=5)
        with pytest.raises(LlmServerConnectionError) as raised:
            await client.version()
    where = f"Cannot reach http://127.0.0.1:{port}/api/version: "
    said = str(raised.value)
    assert said.startswith(where)
    assert "Connect call failed" in said.removeprefix(where)


async def _closing_server() -> tuple[asyncio.Server, str]:
    """A server that takes the connection and closes it unanswered (a reset, a crash)."""

    def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}"


def _transport(session: aiohttp.ClientSession, url: str) -> HttpTransport:
    return HttpTransport(
        session,
        url,
        api_key=None,
        timeout=5,
        error_for_status=lambda status, message, path: LlmServerConnectionError(message),
    )


async def test_a_connection_closed_unanswered_says_the_errors_own_words(
    socket_enabled: None,
) -> None:
    """A request's and a stream's: where, then what aiohttp said (not only its kind)."""
    server, url = await _closing_server()
    try:
        async with aiohttp.ClientSession() as session:
            http = _transport(session, url)
            with pytest.raises(LlmServerConnectionError) as asked:
                await http.request_body("GET", "/api/ps")
            with pytest.raises(LlmServerConnectionError) as streamed:
                async with http.stream("POST", "/api/chat", json={}, timeout=5):
                    pass
    finally:
        server.close()
        await server.wait_closed()
    assert str(asked.value) == f"Cannot reach {url}/api/ps: Server disconnected"
    assert str(streamed.value) == f"Connection to {url}/api/chat failed: Server disconnected"


async def test_a_refused_stream_says_what_refused_it(
    socket_enabled: None, unused_tcp_port_factory: Callable[[], int]
) -> None:
    url = f"http://127.0.0.1:{unused_tcp_port_factory()}"
    async with aiohttp.ClientSession() as session:
        with pytest.raises(LlmServerUnreachableError) as raised:
            async with _transport(session, url).stream("POST", "/api/chat", json={}, timeout=5):
                pass
    where = f"Cannot connect to {url}/api/chat: "
    assert str(raised.value).startswith(where)
    assert "Connect call failed" in str(raised.value).removeprefix(where)
