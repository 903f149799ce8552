"""Each kind of server's capability flags say what that server does, over HTTP on loopback.

Sensors and actions follow the flags (a memory sensor where the server reports memory, an
expiry where it reports one, a keep refused where the server's configuration sets it), so
a flag that says more or less than the server does shows a figure that is not there, or
hides one that is. Each flag is checked against what the client reads from the server's
emulator: a load, the model resident, a generation, an unload.
"""

from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest

from custom_components.llm_warmth.core.backends.base import Capabilities, LlmBackend
from custom_components.llm_warmth.core.backends.errors import LlmServerError
from custom_components.llm_warmth.core.backends.llama_server import LlamaServerClient
from custom_components.llm_warmth.core.backends.llama_swap import LlamaSwapClient
from custom_components.llm_warmth.core.backends.ollama import OllamaClient

from .conftest import LLAMA, make_models
from .llama_server_emulator import EmulatedLlamaModel, LlamaServerEmulator
from .llama_swap_emulator import LlamaSwapEmulator, SwapModel
from .ollama_emulator import OllamaEmulator

MODEL = "tiny"


@dataclass
class Server:
    """A client, the model it loads, and how to break the server's event stream."""

    client: LlmBackend
    model: str
    break_events: object  # a callable, or None where the server pushes none


@pytest.fixture(params=["ollama", "llama_server", "llama_swap"])
async def server(request: pytest.FixtureRequest, socket_enabled: None) -> AsyncIterator[Server]:
    async with aiohttp.ClientSession() as session:
        if request.param == "ollama":
            ollama = OllamaEmulator()
            for model in make_models():
                ollama.add_model(model)
            await ollama.start()
            try:
                yield Server(OllamaClient(session, ollama.url, request_timeout=5), LLAMA, None)
            finally:
                await ollama.stop()
        elif request.param == "llama_server":
            llama = LlamaServerEmulator([EmulatedLlamaModel(MODEL, load_seconds=0.05)])
            await llama.start()
            try:
                yield Server(
                    LlamaServerClient(session, llama.url, request_timeout=5),
                    MODEL,
                    lambda: llama.inject("/models/sse", status=404, body='{"error":"nope"}'),
                )
            finally:
                await llama.stop()
        else:
            swap = LlamaSwapEmulator([SwapModel(MODEL, load_seconds=0.05)])
            await swap.start()
            try:
                yield Server(
                    LlamaSwapClient(session, swap.url, request_timeout=5),
                    MODEL,
                    lambda: swap.fail_next("/api/events", 404, "nope", "text/plain"),
                )
            finally:
                await swap.stop()


async def test_each_flag_says_what_the_server_reports(server: Server) -> None:
    client, caps = server.client, server.client.capabilities
    installed = {m.name: m for m in await client.installed_models()}
    assert (installed[server.model].family is not None) is caps.reports_model_make

    assert caps.can_load
    await client.load(server.model)
    resident = {m.name: m for m in await client.running_models()}[server.model]
    assert bool(resident.size) is caps.reports_memory
    assert (resident.expires_at is not None) is caps.reports_expiry
    assert (resident.context_length is not None) is caps.reports_context_length
    # An expiry that moves while the model is busy is an expiry the server reports.
    assert caps.reports_expiry or not caps.expiry_moves_while_busy

    warm = await client.timed_generation("chat", server.model, "hi")
    assert (warm.queue_ns is not None) is caps.reports_queue

    assert caps.can_unload
    await client.unload(server.model)
    assert server.model not in {m.name for m in await client.running_models()}


async def test_a_load_is_timed_without_an_event_stream_only_where_the_server_tells_it(
    server: Server,
) -> None:
    """Where the server reports no load duration, the client times its event stream's
    "loaded": with that stream broken, a cold reply's load is not known."""
    client, caps = server.client, server.client.capabilities
    assert (server.break_events is not None) is caps.pushes_events
    assert callable(getattr(client, "residency_events", None)) is caps.pushes_events
    if server.break_events is not None:
        server.break_events()  # type: ignore[operator]
    cold = await client.timed_generation("chat", server.model, "hi")
    assert (cold.load_duration_ns is not None) is caps.reports_load_duration


def test_a_keep_is_asked_of_a_request_only_where_the_server_takes_one() -> None:
    """Ollama takes keep_alive and num_ctx with each request; the others' configuration
    sets them."""
    kinds: dict[type[LlmBackend], bool] = {
        OllamaClient: True,
        LlamaServerClient: False,
        LlamaSwapClient: False,
    }
    for kind, per_request in kinds.items():
        caps: Capabilities = kind.capabilities
        assert caps.requests_set_keep_and_context is per_request


async def test_a_keep_is_refused_where_the_server_sets_it(server: Server) -> None:
    client = server.client
    if client.capabilities.requests_set_keep_and_context:
        await client.load(server.model, keep_seconds=60)
        return
    with pytest.raises(LlmServerError):
        await client.load(server.model, keep_seconds=60)
