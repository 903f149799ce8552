"""What the config flow makes of what a user typed for a server (pure).

Which addresses to try for a URL typed with or without a port, which credentials cannot go
together, which of several failed tries explains most, the entry's title, and the
household settings of the options as they are kept. The flow's forms, the tries
themselves and the entries stay in Home Assistant's shell.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from .backends.base import ServerKind
from .backends.detection import DEFAULT_PORTS
from .server_url import normalize_url, unique_id_for

# Entry titles: "<kind> <host:port>".
KIND_TITLES: Final[Mapping[ServerKind, str]] = {
    ServerKind.OLLAMA: "Ollama",
    ServerKind.LLAMA_SERVER: "llama-server",
    ServerKind.LLAMA_SWAP: "llama-swap",
}
# Which failure to show when each default port failed (lowest first).
FAILURE_RANK: Final[Mapping[str, int]] = {
    "invalid_auth": 0,
    "openai_compatible": 1,
    "not_supported": 1,
    "tls_error": 2,
    "server_busy": 2,
    "unexpected_response": 2,
    "timeout": 3,
    "cannot_connect": 3,
    "unknown": 4,
}
# Without a port, each server's default is tried in turn.
TRIED_PORTS: Final = tuple(sorted(set(DEFAULT_PORTS.values()), reverse=True))


class InputRefused(ValueError):
    """What a user typed cannot work; ``key`` is the translated error to show."""

    def __init__(self, key: str) -> None:
        """Keep the error key."""
        super().__init__(key)
        self.key = key


def candidate_urls(entered: str, api_key: str) -> tuple[str, ...]:
    """Return the addresses to try for the URL a user typed, in turn.

    Without a port in it, the URL with each server kind's default port; with one, that
    URL alone. Raise ``InputRefused`` with ``invalid_url`` for no http(s) host, and with
    ``auth_conflict`` for credentials in the URL and an API key both (aiohttp cannot send
    basic-auth credentials from the URL and a bearer token).
    """
    candidates: list[str] = []
    try:
        for port in TRIED_PORTS:
            url = normalize_url(entered, port)
            if url not in candidates:
                candidates.append(url)
    except ValueError as err:
        raise InputRefused("invalid_url") from err
    if api_key and unique_id_for(candidates[0]) != candidates[0]:
        raise InputRefused("auth_conflict")
    return tuple(candidates)


def most_telling[F](failures: Sequence[F], key: Callable[[F], str]) -> F:
    """Return the failure that explains most, by its error key (``FAILURE_RANK``).

    A server that answers explains more than a port where nothing listens, and one that
    asks for a key more than one of another kind (the first of equals).
    """
    return min(failures, key=lambda failure: FAILURE_RANK[key(failure)])


def entry_title(kind: ServerKind, url: str) -> str:
    """Return a server entry's title: its kind and its host and port (no credentials)."""
    host = unique_id_for(url).split("://", 1)[1]
    return f"{KIND_TITLES[kind]} {host}"


def guard_host(entered: object, default: str) -> str:
    """Return the host whose GPU the server uses, as kept: lower case, else ``default``."""
    return str(entered or "").strip().lower() or default


def exporter_url(entered: object) -> str:
    """Return the GPU exporter's URL as kept ("" when none was typed: it is required)."""
    return (entered if isinstance(entered, str) else "").strip()
