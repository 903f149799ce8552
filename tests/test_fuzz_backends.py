"""Property tests for llama-server and llama-swap: any reply gives sane values or our error.

As in ``test_fuzz_replies.py``, each drawn reply goes over real HTTP on loopback: the
emulators answer the next request with it.
"""

import contextlib
import json
import math

import aiohttp
from hypothesis import given
import pytest

from custom_components.llm_warmth.core.backends.errors import LlmServerError
from custom_components.llm_warmth.core.backends.llama_server import (
    LlamaServerClient,
    _status_events as llama_server_events,
)
from custom_components.llm_warmth.core.backends.llama_swap import LlamaSwapClient
from custom_components.llm_warmth.core.backends.llama_swap_events import (
    ready_events as llama_swap_events,
)
from custom_components.llm_warmth.core.backends.replies import (
    MAX_DURATION_NS,
    MAX_TEXT,
    MAX_TOKENS,
)
from custom_components.llm_warmth.core.backends.types import ResidencyState, ResidentModel
from custom_components.llm_warmth.core.ttft import breakdown

from . import malformed
from .llama_server_emulator import EmulatedLlamaModel, LlamaServerEmulator
from .llama_swap_emulator import LlamaSwapEmulator, SwapModel
from .test_fuzz_replies import FUZZ

SSE = "text/event-stream"


@pytest.fixture
async def llama(socket_enabled: None) -> LlamaServerEmulator:
    emulator = LlamaServerEmulator([EmulatedLlamaModel("tiny", load_seconds=0.01)])
    await emulator.start()
    yield emulator
    await emulator.stop()


@pytest.fixture
async def llama_client(llama: LlamaServerEmulator) -> LlamaServerClient:
    session = aiohttp.ClientSession()
    yield LlamaServerClient(session, llama.url, request_timeout=5)
    await session.close()


@pytest.fixture
async def swap(socket_enabled: None) -> LlamaSwapEmulator:
    emulator = LlamaSwapEmulator([SwapModel("tiny", load_seconds=0.01)])
    await emulator.start()
    yield emulator
    await emulator.stop()


@pytest.fixture
async def swap_client(swap: LlamaSwapEmulator) -> LlamaSwapClient:
    session = aiohttp.ClientSession()
    yield LlamaSwapClient(session, swap.url, request_timeout=5)
    await session.close()


def assert_sane(models: tuple[ResidentModel, ...]) -> None:
    assert len({m.name for m in models}) == len(models)
    for model in models:
        assert 0 < len(model.name) <= MAX_TEXT
        model.name.encode()  # valid text: it goes into JSON
        assert model.state in ResidencyState
        assert model.context_length is None or 1 <= model.context_length <= MAX_TOKENS


@FUZZ
@given(reply=malformed.replies(malformed.llama_models_reply))
async def test_llama_server_models(
    llama_client: LlamaServerClient, llama: LlamaServerEmulator, reply: tuple[int, bytes]
) -> None:
    llama.inject("/models", status=reply[0], body=reply[1], times=2)
    try:
        assert_sane(await llama_client.running_models())
        installed = await llama_client.installed_models()
    except LlmServerError:
        return
    assert all(0 < len(m.name) <= MAX_TEXT for m in installed)


@FUZZ
@given(reply=malformed.replies(malformed.llama_props_reply))
async def test_llama_server_version(
    llama_client: LlamaServerClient, llama: LlamaServerEmulator, reply: tuple[int, bytes]
) -> None:
    llama.inject("/props", status=reply[0], body=reply[1])
    try:
        version = await llama_client.version()
    except LlmServerError:
        return
    assert 0 < len(version) <= MAX_TEXT


@FUZZ
@given(reply=malformed.openai_streams())
async def test_llama_server_generation(
    llama_client: LlamaServerClient, llama: LlamaServerEmulator, reply: tuple[int, bytes]
) -> None:
    llama.inject("/v1/chat/completions", status=reply[0], body=reply[1], content_type=SSE)
    try:
        timed = await llama_client.timed_generation("chat", "tiny", "hi", timeout=5)
    except LlmServerError:
        return
    assert timed.sent_ns <= timed.headers_ns <= timed.first_token_ns <= timed.final_ns
    for value in (timed.prompt_eval_duration_ns, timed.eval_duration_ns, timed.load_duration_ns):
        assert value is None or 0 <= value <= MAX_DURATION_NS
    for count in (timed.prompt_eval_count, timed.prompt_cached_count, timed.eval_count):
        assert count is None or 0 <= count <= MAX_TOKENS
    stages = breakdown(timed)
    assert stages.prompt_cache_reuse is None or 0 <= stages.prompt_cache_reuse <= 100
    assert all(math.isfinite(v) for v in stages.as_dict().values() if isinstance(v, float))


@FUZZ
@given(
    running=malformed.replies(malformed.running_reply),
    models=malformed.replies(malformed.swap_models_reply),
)
async def test_llama_swap_lists(
    swap_client: LlamaSwapClient,
    swap: LlamaSwapEmulator,
    running: tuple[int, bytes],
    models: tuple[int, bytes],
) -> None:
    swap.fail_next("/running", running[0], running[1].decode("utf-8", "replace"))
    swap.fail_next("/v1/models", models[0], models[1].decode("utf-8", "replace"))
    with contextlib.suppress(LlmServerError):
        assert_sane(await swap_client.running_models())
    try:
        installed = await swap_client.installed_models()
    except LlmServerError:
        return
    assert len({m.name for m in installed}) == len(installed)


@FUZZ
@given(body=malformed.swap_event_streams())
async def test_llama_swap_events(
    swap_client: LlamaSwapClient, swap: LlamaSwapEmulator, body: bytes
) -> None:
    swap.fail_next("/api/events", 200, body.decode("utf-8", "replace"), SSE)
    seen: list[tuple[ResidentModel, ...]] = []

    async def follow() -> None:
        async for resident in swap_client.residency_events():
            seen.append(resident)

    with pytest.raises(LlmServerError):  # the stream ends after the drawn frames
        await follow()
    for resident in seen:
        assert_sane(resident)


LONE_SURROGATE = '"\\ud800"'  # JSON for a lone surrogate: a str in Python, no text for JSON


async def test_a_lone_surrogate_fails_the_reply_of_llama_server_and_llama_swap(
    llama_client: LlamaServerClient,
    llama: LlamaServerEmulator,
    swap_client: LlamaSwapClient,
    swap: LlamaSwapEmulator,
) -> None:
    """A name that is not valid text fails its reply, as any malformed reply does."""
    llama.inject(
        "/models",
        status=200,
        body='{"data":[{"id":' + LONE_SURROGATE + ',"status":{"value":"loaded"}}]}',
    )
    with pytest.raises(LlmServerError, match="not valid Unicode"):
        await llama_client.running_models()
    swap.fail_next(
        "/running", 200, '{"running":[{"model":' + LONE_SURROGATE + ',"state":"ready"}]}'
    )
    with pytest.raises(LlmServerError, match="not valid Unicode"):
        await swap_client.running_models()
    # Valid text, escaped or not, passes.
    assert [m.name for m in await llama_client.running_models()] == []


@pytest.mark.parametrize("name", ["", "x" * 300_000, 7, None])
def test_an_event_names_a_model_as_a_reply_must(name: object) -> None:
    """One check of a model name, wherever it is read: the event streams' too."""
    assert llama_server_events({"model": name, "data": {"status": "loaded"}}) == []
    envelope = {"type": "modelStatus", "data": json.dumps([{"id": name, "state": "ready"}])}
    assert llama_swap_events(envelope) == []
    assert llama_server_events({"model": "tiny", "data": {"status": "loaded"}}) == [
        ("tiny", "loaded")
    ]
    envelope = {"type": "modelStatus", "data": json.dumps([{"id": "tiny", "state": "ready"}])}
    assert llama_swap_events(envelope) == [("tiny", "ready")]


@FUZZ
@given(reply=malformed.replies(malformed.activity_reply))
async def test_llama_swap_activity(
    swap_client: LlamaSwapClient, swap: LlamaSwapEmulator, reply: tuple[int, bytes]
) -> None:
    """Any activity page gives requests with sane figures, or our error."""
    swap.fail_next("/api/metrics/activity", reply[0], reply[1].decode("utf-8", "replace"))
    try:
        served = await swap_client.served_requests("tiny")
    except LlmServerError:
        return
    for request in served:
        assert request.model == "tiny"
        assert 0 <= request.seconds <= 86_400
        assert request.ended_at.tzinfo is not None
        for figure in (request.prefill_seconds, request.generation_seconds):
            assert figure is None or (math.isfinite(figure) and figure >= 0)
        assert request.waited_seconds is None or 0 <= request.waited_seconds <= request.seconds
        for count in (request.prompt_tokens, request.cached_tokens):
            assert count is None or count >= 0
