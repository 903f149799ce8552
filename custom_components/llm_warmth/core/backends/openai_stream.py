"""The OpenAI-compatible streaming both llama.cpp servers speak (no Home Assistant imports).

llama-server answers ``/v1/chat/completions`` and ``/v1/completions`` with ``data:`` chunks;
the last one before ``data: [DONE]`` carries llama.cpp's ``timings`` (``cache_n``,
``prompt_n``, ``prompt_ms``, ``predicted_n``, ``predicted_ms``). llama-swap passes them
through. A timed request follows the server's event stream beside it, so that the load
can be dated on the client's clock.
"""

from collections.abc import Mapping
from dataclasses import dataclass
import time
from typing import Any, Final, Literal

import aiohttp

from .errors import LlmServerConnectionError, LlmServerResponseError
from .events import FrameParser, StateWatch
from .http import HttpTransport, unexpected
from .replies import MAX_TEXT, MAX_TOKENS, bounded_int, decode_object, iter_lines
from .types import TimedReply

# Request options a probe may give (Ollama's names on the left) and their OpenAI names.
OPENAI_OPTIONS: Final = {
    "num_predict": "max_tokens",
    "temperature": "temperature",
    "seed": "seed",
    "top_k": "top_k",
    "top_p": "top_p",
    "min_p": "min_p",
    "stop": "stop",
    "cache_prompt": "cache_prompt",
}
_MAX_MS: Final = 86_400_000.0


@dataclass(frozen=True, slots=True)
class WatchedStream:
    """Where a timed request's event stream is and how to read it."""

    path: str
    ready_state: str
    parse: FrameParser
    # With a stream that opens with the current state: read up to where this holds.
    until: Any = None


async def timed_openai_generation(
    http: HttpTransport,
    api: Literal["chat", "generate"],
    model: str,
    prompt: str,
    *,
    options: Mapping[str, object] | None,
    timeout: float,
    events: WatchedStream,
    system: str | None = None,
    think: bool | None = None,
) -> tuple[TimedReply, StateWatch]:
    """Stream one generation, timed on ``time.monotonic_ns``, with the event stream followed.

    Return the reply (no load figure yet) and the watch, for the caller to read its load
    (``timed_load_ns``) and whatever else the stream told.
    """
    payload: dict[str, object] = {"model": model, "stream": True}
    if api == "chat":
        system_message = [{"role": "system", "content": system}] if system else []
        payload["messages"] = [*system_message, {"role": "user", "content": prompt}]
        path = "/v1/chat/completions"
    else:
        payload["prompt"] = f"{system}\n\n{prompt}" if system else prompt
        path = "/v1/completions"
    for key, value in (options or {}).items():
        if key in OPENAI_OPTIONS:
            payload[OPENAI_OPTIONS[key]] = value
    if think is not None:
        payload["chat_template_kwargs"] = {"enable_thinking": think}
    watch = StateWatch(model, events.ready_state, events.parse)
    try:
        await watch.start(http, events.path, events.until, timeout=timeout)
        async with http.stream("POST", path, json=payload, timeout=timeout) as (
            response,
            sent,
            headers,
        ):
            reply = await read_openai_stream(response, path, sent, headers, http.error_for_status)
    finally:
        await watch.stop()
    return reply, watch


def timed_load_ns(watch: StateWatch, reply: TimedReply) -> int | None:
    """Return the load stage of a timed request from what its event stream told.

    The event arrives a little after the model is up; the load cannot have ended after the
    prefill began, so it is bounded by the time to first token less the prefill.
    """
    if watch.ready_ns is None:
        return 0 if watch.trustworthy else None
    load = max(watch.ready_ns - reply.sent_ns, 0)
    if reply.prompt_eval_duration_ns is not None:
        before_prefill = reply.first_token_ns - reply.sent_ns - reply.prompt_eval_duration_ns
        load = min(load, max(before_prefill, 0))
    return load


async def read_openai_stream(
    response: aiohttp.ClientResponse,
    path: str,
    sent: int,
    headers: int,
    error_for_status: Any,
) -> TimedReply:
    """Read an OpenAI-style SSE stream to ``[DONE]``, timing the chunks."""
    first: int | None = None
    final: dict[str, Any] | None = None
    finish: str | None = None
    async for raw in iter_lines(response, path):
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        data = line.removeprefix(b"data:").strip()
        now = time.monotonic_ns()
        if data == b"[DONE]":
            if final is None:
                raise LlmServerResponseError(f"{path}: the stream carried no timings")
            return _timed(
                final,
                finish,
                sent=sent,
                headers=headers,
                first=now if first is None else first,
                end=now,
            )
        chunk = decode_object(data, path)
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise error_for_status(500, str(message)[:500], path)
        choice = _first_choice(chunk)
        if first is None and _has_content(choice):
            first = now
        if isinstance(reason := choice.get("finish_reason"), str):
            finish = reason[:MAX_TEXT]
        if isinstance(chunk.get("timings"), dict):
            final = chunk["timings"]
    raise LlmServerConnectionError(f"{path}: the stream ended before [DONE]")


def _first_choice(chunk: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = chunk.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return {}


def _has_content(choice: Mapping[str, Any]) -> bool:
    """Return True for a chunk that carries generated text or reasoning."""
    delta = choice.get("delta")
    parts = [choice.get("text")]
    if isinstance(delta, dict):
        parts += [delta.get("content"), delta.get("reasoning_content")]
    return any(isinstance(part, str) and part for part in parts)


def _timed(
    timings: Mapping[str, Any],
    finish: str | None,
    *,
    sent: int,
    headers: int,
    first: int,
    end: int,
) -> TimedReply:
    try:
        cached = bounded_int(timings.get("cache_n", 0), "cache_n", MAX_TOKENS)
        evaluated = bounded_int(timings.get("prompt_n"), "prompt_n", MAX_TOKENS)
        predicted = bounded_int(timings.get("predicted_n"), "predicted_n", MAX_TOKENS)
        return TimedReply(
            sent_ns=sent,
            headers_ns=headers,
            first_token_ns=first,
            final_ns=end,
            prompt_eval_count=min(evaluated + cached, MAX_TOKENS),
            prompt_cached_count=cached,
            prompt_eval_duration_ns=_ms_to_ns(timings.get("prompt_ms"), "prompt_ms"),
            eval_count=predicted,
            eval_duration_ns=_ms_to_ns(timings.get("predicted_ms"), "predicted_ms"),
            done_reason=finish,
        )
    except ValueError as err:
        raise unexpected("timings", err) from err


def _ms_to_ns(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} is not a number: {value!r}")
    if not 0 <= value <= _MAX_MS:  # NaN fails this too
        raise ValueError(f"{name} out of range: {value!r}")
    return round(value * 1_000_000)
