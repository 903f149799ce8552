"""The contract every server client fulfils, what each kind can do, and how to pick one.

The Home Assistant shell holds an ``LlmBackend`` and reads its ``capabilities``; it never
names a client class. ``create_client`` builds the client of a kind; ``detect`` finds out
which kind answers at a URL.
"""

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, Protocol, runtime_checkable

from .types import InstalledModel, ResidentModel, ServedRequest, TimedReply

# A generation that loads a model must not be cut short: a client timeout aborts the load
# (Ollama answers 499 and drops the half-loaded model). Ollama's own load timeout is 5 min.
GENERATION_TIMEOUT = 300.0


class ServerKind(StrEnum):
    """The servers LLM Warmth speaks to."""

    OLLAMA = "ollama"
    LLAMA_SERVER = "llama_server"
    LLAMA_SWAP = "llama_swap"


class KeepAlive(StrEnum):
    """How a server decides to let a model go.

    ``idle_timer``: each request sets the model's idle time (Ollama's ``keep_alive``; the
    last writer wins). ``lru``: resident until a newer model needs its place
    (llama-server's ``--models-max``). ``ttl``: a per-model idle time in the server's
    configuration (llama-swap).
    """

    IDLE_TIMER = "idle_timer"
    LRU = "lru"
    TTL = "ttl"


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """What a kind of server reports and accepts; sensors and actions follow these flags.

    ``expiry_moves_while_busy``: Ollama 0.9 reports "now + keep_alive" as the expiry of a
    model while any request to it runs, so a moving expiry means "in use".
    ``reports_loading``: the server names a loading state, so the end of a load is seen;
    without it polling sees only the end of the request that loaded the model.
    ``lists_while_loading``: the server lists a model from the start of its load (Ollama
    before 0.30). Ollama 0.30 and newer lists it only once it is loaded: a first sighting
    is the end of a load, whose start polling never sees.
    """

    reports_load_duration: bool
    reports_queue: bool
    can_load: bool
    can_unload: bool
    keep_alive: KeepAlive
    pushes_events: bool
    reports_prompt_cache: bool
    reports_context_length: bool
    reports_memory: bool
    reports_expiry: bool
    reports_loading: bool
    expiry_moves_while_busy: bool
    lists_while_loading: bool
    # The server tells a model's make: its family, parameter size and quantization.
    reports_model_make: bool

    @property
    def requests_set_keep_and_context(self) -> bool:
        """Return True when a request sets the model's idle time and context.

        Ollama's ``keep_alive`` and ``num_ctx``; elsewhere the server's configuration sets
        both (llama-server's ``--models-max`` and ``--ctx-size``, llama-swap's ``ttl``).
        """
        return self.keep_alive is KeepAlive.IDLE_TIMER


class LlmBackend(Protocol):
    """One LLM server, as every part of LLM Warmth talks to it.

    Every method raises only ``LlmServerError`` subclasses (see ``errors``).
    """

    kind: ServerKind
    capabilities: Capabilities

    @property
    def base_url(self) -> str:
        """Return the server's base URL."""
        ...

    async def version(self, *, timeout: float | None = None) -> str:
        """Return the server's version; ``LlmServerNotSupportedError`` for another kind."""
        ...

    async def running_models(self, *, timeout: float | None = None) -> tuple[ResidentModel, ...]:
        """Return the models the server holds now."""
        ...

    async def installed_models(self, *, timeout: float | None = None) -> tuple[InstalledModel, ...]:
        """Return the models the server can load."""
        ...

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
        """Stream one generation and time it; the server loads the model if it must.

        ``system``: a system prompt before the user's (a chat's system message; for a
        completion, Ollama's ``system`` field or the prompt's beginning). ``think``: ask a
        thinking model to think or not (Ollama's ``think``; llama.cpp's chat template
        ``enable_thinking``); None: the model's default.
        """
        ...

    async def load(
        self,
        model: str,
        *,
        keep_seconds: float | None = None,
        num_ctx: int | None = None,
        timeout: float = GENERATION_TIMEOUT,
    ) -> None:
        """Make ``model`` resident (returns once it is).

        ``keep_seconds`` (negative: for ever) and ``num_ctx`` are for servers whose
        ``keep_alive`` is ``idle_timer`` (Ollama); the others decide both by themselves
        (their configuration) and must be given None.
        """
        ...

    async def unload(self, model: str, *, timeout: float | None = None) -> None:
        """Let ``model`` go now."""
        ...


@runtime_checkable
class PushesResidency(Protocol):
    """A server that announces residency changes (``Capabilities.pushes_events``)."""

    def residency_events(self) -> AsyncGenerator[tuple[ResidentModel, ...]]:
        """Yield the resident models now and after each change; raise when the stream ends."""
        ...


@runtime_checkable
class ReportsRequests(Protocol):
    """A server that records each request it served, any client's (llama-swap)."""

    async def served_requests(
        self, model: str | None = None, *, limit: int = 10, timeout: float | None = None
    ) -> tuple[ServedRequest, ...]:
        """Return the latest requests served (for ``model``: its), newest first."""
        ...
