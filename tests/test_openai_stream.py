"""The OpenAI-compatible stream read at its edges (llama-server's and llama-swap's replies).

The pure readers: what counts as the first token, a timings block's figures and their
bounds; and what a generation sends (its options renamed, the unknown left out), against
the llama-server emulator on loopback.
"""

from collections.abc import AsyncIterator
import json

import aiohttp
import pytest

from custom_components.llm_warmth.core.backends.errors import LlmServerError
from custom_components.llm_warmth.core.backends.llama_server import LlamaServerClient
from custom_components.llm_warmth.core.backends.openai_stream import (
    _has_content,
    _ms_to_ns,
    _timed,
)
from custom_components.llm_warmth.core.backends.replies import MAX_TOKENS

from .llama_server_emulator import EmulatedLlamaModel, LlamaServerEmulator

TINY = "tiny"


@pytest.mark.parametrize(
    ("choice", "content"),
    [
        ({"text": "a"}, True),
        ({"delta": {"content": "a"}}, True),
        ({"delta": {"reasoning_content": "thinking"}}, True),
        ({"delta": {"content": ""}}, False),
        ({"delta": {"role": "assistant"}}, False),
        ({"text": 5}, False),  # a number is no text
        ({"delta": "junk"}, False),
        ({}, False),
    ],
)
def test_what_counts_as_generated_text(choice: dict[str, object], content: bool) -> None:
    assert _has_content(choice) is content


def test_milliseconds_read_to_the_nanosecond_within_a_day() -> None:
    assert _ms_to_ns(1.5, "prompt_ms") == 1_500_000
    assert _ms_to_ns(0, "prompt_ms") == 0
    assert _ms_to_ns(86_400_000.0, "prompt_ms") == 86_400_000_000_000
    for wrong in (86_400_000.5, -0.1, float("nan"), True, "1", None):
        with pytest.raises(ValueError, match="prompt_ms"):
            _ms_to_ns(wrong, "prompt_ms")


def test_a_timings_block_without_a_cache_count_has_none_cached() -> None:
    timings = {"prompt_n": 10, "predicted_n": 4, "prompt_ms": 2.0, "predicted_ms": 8.0}
    reply = _timed(timings, "stop", sent=1, headers=2, first=3, end=4)
    assert (reply.prompt_eval_count, reply.prompt_cached_count) == (10, 0)
    capped = _timed(
        {**timings, "prompt_n": MAX_TOKENS, "cache_n": 5}, None, sent=1, headers=2, first=3, end=4
    )
    assert (capped.prompt_eval_count, capped.prompt_cached_count) == (MAX_TOKENS, 5)


@pytest.fixture
async def client(
    socket_enabled: None,
) -> AsyncIterator[tuple[LlamaServerClient, LlamaServerEmulator]]:
    server = LlamaServerEmulator([EmulatedLlamaModel(TINY, load_seconds=0.1)], models_max=1)
    await server.start()
    async with aiohttp.ClientSession() as session:
        yield LlamaServerClient(session, server.url, request_timeout=5), server
    await server.stop()


async def test_a_generation_sends_the_options_the_server_knows_by_their_openai_names(
    client: tuple[LlamaServerClient, LlamaServerEmulator],
) -> None:
    llama, server = client
    options = {"num_predict": 8, "temperature": 0.0, "num_ctx": 4096, "mirostat": 1}
    await llama.timed_generation("generate", TINY, "hi", options=options, system="Be brief.")
    (request,) = [r for r in server.requests if r.path == "/v1/completions"]
    sent = request.json
    assert (sent["max_tokens"], sent["temperature"]) == (8, 0.0)
    # Ollama's own options have no OpenAI name: not sent.
    assert not {"num_ctx", "mirostat", "num_predict"} & set(sent)
    assert sent["prompt"] == "Be brief.\n\nhi"


async def test_an_error_in_the_stream_is_said_in_at_most_500_characters(
    client: tuple[LlamaServerClient, LlamaServerEmulator],
) -> None:
    llama, server = client
    body = f"data: {json.dumps({'error': {'message': 'x' * 600}})}\n\n"
    server.inject("/v1/chat/completions", status=200, body=body, content_type="text/event-stream")
    with pytest.raises(LlmServerError, match=r"x{500}") as raised:
        await llama.timed_generation("chat", TINY, "hi")
    assert "x" * 501 not in str(raised.value)


async def test_the_first_token_is_the_first_chunk_with_text_not_a_later_one(
    socket_enabled: None,
) -> None:
    """Seven tokens 100 ms apart: the first arrives 600 ms before the last."""
    server = LlamaServerEmulator([EmulatedLlamaModel(TINY, load_seconds=0.0, token_ms=100.0)])
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            llama = LlamaServerClient(session, server.url, request_timeout=5)
            await llama.load(TINY)
            reply = await llama.timed_generation("chat", TINY, "hi")
    finally:
        await server.stop()
    assert reply.eval_count == 7
    assert reply.final_ns - reply.first_token_ns >= 500_000_000
