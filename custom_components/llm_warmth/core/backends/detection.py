"""Which server answers at a URL, and the client that speaks to it."""

from dataclasses import dataclass
from typing import Final

import aiohttp

from .base import LlmBackend, ServerKind
from .errors import (
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerSetupNotSupportedError,
)
from .http import HttpTransport
from .llama_server import LlamaServerClient
from .llama_swap import LlamaSwapClient
from .ollama import OllamaClient
from .replies import optional_str

DEFAULT_PORTS: Final = {
    ServerKind.OLLAMA: 11434,
    ServerKind.LLAMA_SERVER: 8080,
    ServerKind.LLAMA_SWAP: 8080,
}
_CLIENTS: Final[dict[ServerKind, type[OllamaClient | LlamaServerClient | LlamaSwapClient]]] = {
    ServerKind.OLLAMA: OllamaClient,
    ServerKind.LLAMA_SERVER: LlamaServerClient,
    ServerKind.LLAMA_SWAP: LlamaSwapClient,
}


def create_client(
    kind: ServerKind,
    session: aiohttp.ClientSession,
    base_url: str,
    *,
    api_key: str | None = None,
) -> LlmBackend:
    """Return the client of a kind of server."""
    return _CLIENTS[kind](session, base_url, api_key=api_key)


@dataclass(frozen=True, slots=True)
class Detected:
    """The server found at a URL: its kind, its version, and the client for it."""

    kind: ServerKind
    version: str
    client: LlmBackend


class OpenAiCompatibleError(LlmServerNotSupportedError):
    """Something OpenAI-compatible answers, but it tells nothing about residency."""


async def detect(
    session: aiohttp.ClientSession, base_url: str, *, api_key: str | None = None
) -> Detected:
    """Find out which server answers at ``base_url``.

    llama-swap is asked first: in front of a llama-server it answers for it. Then
    llama-server (a router), then Ollama. An authentication failure is raised at once; a
    server that answers but is none of them gives ``LlmServerNotSupportedError`` (or
    ``OpenAiCompatibleError`` when it speaks the OpenAI API), naming what it found.
    """
    findings: list[str] = []
    for kind in (ServerKind.LLAMA_SWAP, ServerKind.LLAMA_SERVER, ServerKind.OLLAMA):
        client = create_client(kind, session, base_url, api_key=api_key)
        try:
            version = await client.version()
        except LlmServerSetupNotSupportedError:
            raise  # it is that kind: what it says is the most useful answer
        except LlmServerNotSupportedError as err:
            findings.append(str(err))
            continue
        return Detected(kind, version, client)
    if await _speaks_openai(session, base_url, api_key):
        raise OpenAiCompatibleError(
            f"{base_url} is an OpenAI-compatible server, but not one whose residency "
            "LLM Warmth can read"
        )
    raise LlmServerNotSupportedError("; ".join(findings))


async def _speaks_openai(
    session: aiohttp.ClientSession, base_url: str, api_key: str | None
) -> bool:
    http = HttpTransport(
        session,
        base_url,
        api_key=api_key,
        timeout=10.0,
        error_for_status=lambda status, message, path: LlmServerError(message),
    )
    try:
        payload = await http.request("GET", "/v1/models")
    except LlmServerError:
        return False
    return isinstance(payload.get("data"), list) and optional_str(payload, "object") == "list"
