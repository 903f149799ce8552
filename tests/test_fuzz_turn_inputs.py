"""Property tests of the inputs the last turn brought: any value in, sane figures out.

Four inputs, each drawn in every shape a server or Home Assistant could send it:

* llama-swap's activity log (``/api/metrics/activity``), read into ``ServedRequest``;
* Ollama 0.30+ replies: ``/api/ps`` (a model is listed once loaded: no loading entry) and
  the final chunk of ``/api/generate`` and ``/api/chat`` (``prompt_eval_cached_count``);
* an Assist pipeline run's events, read into a ``VoiceTurn``, joined with the server's
  record of the agent's request and explained;
* the learned-warming planner's histories, its plans and its stored state.

The rules: no exception but the project's own (and ``ValueError`` where the code says
so), no duration that is negative or not finite, no time before its cause, and the stored
form reads back as written. Every time is built from fixed instants or drawn: nothing
depends on today, the hour or the machine's zone.

The replies reach the clients through a canned session (no sockets): the same bytes and
the same parsing as over HTTP, where ``test_fuzz_replies.py`` sends them over loopback.
"""

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from itertools import pairwise
import json
import math
from typing import Any, cast
from unittest.mock import patch
from zoneinfo import ZoneInfo

import aiohttp
from hypothesis import HealthCheck, assume, example, given, settings, strategies as st
import pytest

from custom_components.llm_warmth.core import usage_rhythm
from custom_components.llm_warmth.core.backends.errors import LlmServerError
from custom_components.llm_warmth.core.backends.http import HttpClient
from custom_components.llm_warmth.core.backends.llama_swap import LlamaSwapClient
from custom_components.llm_warmth.core.backends.ollama import OllamaClient
from custom_components.llm_warmth.core.backends.replies import (
    MAX_DURATION_NS,
    MAX_TEXT,
    MAX_TOKENS,
)
from custom_components.llm_warmth.core.backends.types import ResidencyState, ServedRequest
from custom_components.llm_warmth.core.ttft import breakdown
from custom_components.llm_warmth.core.usage_rhythm import (
    DEFAULT_KEEP,
    HISTORY,
    IDLE_RANGE,
    KEEPS,
    MAX_GAPS,
    MAX_KEEP,
    MIN_DAYS,
    MIN_KEEP,
    SESSION_GAP,
)
from custom_components.llm_warmth.core.voice import (
    INTENT_END,
    INTENT_PROGRESS,
    INTENT_START,
    RUN_END,
    RUN_START,
    STT_END,
    STT_START,
    STT_VAD_END,
    TTS_END,
    WAKE_WORD_END,
    VoiceStage,
    VoiceTurn,
    prefix_warm_fits,
    run_events,
    wake_outcome,
)
from custom_components.llm_warmth.core.voice_stages import (
    JOIN_TOLERANCE,
    RECORD_STEP,
    ServerSide,
    explain,
    join_request,
)
from custom_components.llm_warmth.core.warm_plan import PatternClass, Plan, UsagePlanner

from . import malformed
from .test_fuzz_replies import assert_sane_resident

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# Heavier examples (a planner folds days, plans over a day of bins): fewer of them.
FEW = settings(FUZZ, max_examples=120)

DENORMAL = 5e-324
# Rounding of llama-swap's figures: its duration is whole milliseconds (truncated), and
# each figure read from it is rounded to the millisecond.
MS_ROUNDING = 0.003


# ---------------------------------------------------------------------- a canned server


class _Body:
    """A reply body read as aiohttp's ``StreamReader`` gives it: in pieces."""

    def __init__(self, body: bytes, piece: int) -> None:
        self._body, self._piece = body, piece

    async def iter_chunked(self, size: int) -> AsyncIterator[bytes]:
        for start in range(0, len(self._body), size):
            yield self._body[start : start + size]

    async def iter_any(self) -> AsyncIterator[bytes]:
        async for piece in self.iter_chunked(self._piece):
            yield piece


@dataclass
class _Response:
    status: int
    content: _Body


class CannedSession:
    """Stands in for an ``aiohttp.ClientSession``: every request gets the drawn reply."""

    def __init__(self, reply: tuple[int, bytes], piece: int) -> None:
        self.status, self.body = reply
        self.piece = piece

    @asynccontextmanager
    async def request(self, method: str, url: object, **_: object) -> AsyncIterator[_Response]:
        yield _Response(self.status, _Body(self.body, self.piece))


def answering[C: HttpClient](kind: type[C], reply: tuple[int, bytes], piece: int) -> C:
    """Return a client whose server answers ``reply``, its body in ``piece``-byte pieces."""
    session = cast(aiohttp.ClientSession, CannedSession(reply, piece))
    return kind(session, "http://server.test:8080", request_timeout=5)


pieces = st.sampled_from([1, 7, 64, 1 << 16])


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# ---------------------------------------------------------------------- llama-swap activity

RATE_EDGES = (
    -1,
    0,
    -0.0,
    DENORMAL,
    1e-310,
    0.000999,
    1e-3,
    1e9 - 1,
    1e9,
    float("nan"),
    float("inf"),
    True,
    malformed.HUGE,
    "12.5",
)
COUNT_EDGES = (*malformed.NUMBER_EDGES, 0, 10**9, 10**9 + 1, 1.0, 1e308, "5", None)
ACTIVITY_TIMES = (
    *malformed.TIME_EDGES,
    "1970-01-01T00:00:00Z",
    "1970-01-01T00:00:00+01:00",  # 1969 in UTC
    "9000-12-31T23:59:59Z",
    "9000-12-31T23:59:59-01:00",  # 9001 in UTC
    "0001-01-01T00:00:00Z",  # Go's zero time
    "2026-12-02T07:30:00.123456789+14:00",
)
DURATION_MS_EDGES = (
    *malformed.NUMBER_EDGES,
    0,
    86_400_000,
    86_400_001,
    0.5,
    DENORMAL,
    float("nan"),
    "12",
)
activity_tokens = malformed.shaped(
    {
        "cache_tokens": (st.integers(min_value=-1, max_value=4096), COUNT_EDGES),
        "input_tokens": (st.integers(min_value=0, max_value=4096), COUNT_EDGES),
        "output_tokens": (st.integers(min_value=0, max_value=4096), COUNT_EDGES),
        "prompt_per_second": (st.one_of(st.just(-1), st.floats(1, 1e5)), RATE_EDGES),
        "tokens_per_second": (st.one_of(st.just(-1), st.floats(1, 1e5)), RATE_EDGES),
    }
)


def _as_llama_swap_records(entry: dict[str, Any]) -> dict[str, Any]:
    """Make a plausible entry's duration hold its prompt and generation, as llama-swap's does.

    llama-swap records the larger of the wall time and the upstream's ``prompt_ms +
    predicted_ms`` (truncated to the millisecond).
    """
    tokens, duration = entry["tokens"], entry["duration_ms"]
    if not isinstance(tokens, dict) or not _number(duration):
        return entry
    work = 0.0
    for count, rate in (
        ("input_tokens", "prompt_per_second"),
        ("output_tokens", "tokens_per_second"),
    ):
        told, per_second = tokens.get(count), tokens.get(rate)
        if _number(told) and _number(per_second) and 1 <= per_second <= 1e5 and 0 <= told <= 4096:
            work += told / per_second
    return entry | {"duration_ms": max(duration, int(work * 1000))}


ACTIVITY_FIELDS: dict[str, malformed.Field] = {
    # Few ids: the same one twice, and ids going down, are common.
    "id": (
        st.one_of(st.integers(1, 6), st.integers(1, 10**6)),
        (*malformed.NUMBER_EDGES, 0, 2**62, 2**62 + 1),
    ),
    "timestamp": (st.one_of(malformed.recent, st.sampled_from(ACTIVITY_TIMES)), ACTIVITY_TIMES),
    "model": (st.sampled_from(["tiny", "tiny", "big"]), ("", 7, None, "x" * 300)),
    "req_path": st.just("/v1/chat/completions"),
    "resp_status_code": (
        st.sampled_from([200, 200, 404, 502]),
        (*malformed.NUMBER_EDGES, 0, 999, 1000),
    ),
    "tokens": (activity_tokens, ([], "x", None)),
    "duration_ms": (st.integers(min_value=0, max_value=600_000), DURATION_MS_EDGES),
}
# Mostly as llama-swap writes them; some with a duration that does not hold the work (an
# older release, another proxy, a clock that jumped).
activity_entry = st.one_of(
    malformed.shaped(ACTIVITY_FIELDS, coherent=_as_llama_swap_records),
    malformed.shaped(ACTIVITY_FIELDS, coherent=_as_llama_swap_records),
    malformed.shaped(ACTIVITY_FIELDS),
)
activity_page = malformed.shaped(
    {"data": st.lists(activity_entry, max_size=6), "total": st.integers(-1, 10**6)}
)


def assert_sane_request(request: ServedRequest) -> None:
    """A request as the server recorded it: it ends after it starts, its work fits in it."""
    assert 0 < len(request.model) <= MAX_TEXT
    assert 0 <= request.id <= 2**62
    assert 0 <= request.status <= 999
    assert math.isfinite(request.seconds)
    assert 0 <= request.seconds <= 86_400
    assert request.ended_at.tzinfo is UTC
    assert 1970 <= request.ended_at.year <= 9000
    assert request.started_at <= request.ended_at
    figures = [f for f in (request.prefill_seconds, request.generation_seconds) if f is not None]
    for figure in figures:
        assert math.isfinite(figure)
        assert 0 <= figure <= 86_400
    # The upstream's prompt and generation ran within the request: no prefill began
    # before the request arrived.
    assert sum(figures) <= request.seconds + MS_ROUNDING
    waited = request.waited_seconds
    assert waited is None or 0 <= waited <= request.seconds
    for count in (request.prompt_tokens, request.cached_tokens):
        assert count is None or 0 <= count <= 10**9


@FUZZ
@example(
    reply=(
        200,
        malformed.dumps(
            {
                "data": [
                    {
                        "id": 1,
                        "timestamp": "2026-12-02T07:30:00Z",
                        "model": "tiny",
                        "resp_status_code": 200,
                        "tokens": {"input_tokens": 100, "prompt_per_second": 10.0},
                        "duration_ms": 0,
                    }
                ]
            }
        ),
    ),
    model=None,
    limit=10,
    piece=1 << 16,
)
@given(
    reply=malformed.replies(activity_page),
    model=st.sampled_from([None, "tiny"]),
    limit=st.integers(1, 10),
    piece=pieces,
)
async def test_any_activity_page_gives_requests_that_end_after_they_start(
    reply: tuple[int, bytes], model: str | None, limit: int, piece: int
) -> None:
    client = answering(LlamaSwapClient, reply, piece)
    try:
        served = await client.served_requests(model, limit=limit)
    except LlmServerError:
        return
    assert len(served) <= limit
    for request in served:
        assert_sane_request(request)
        assert model in (None, request.model)


# ---------------------------------------------------------------------- Ollama 0.30+

SIZE_EDGES = (*malformed.NUMBER_EDGES, 0, 2**53, 2**53 + 1, 1e300, DENORMAL, -0.0, "1", None)
EXPIRY_EDGES = (
    *malformed.TIME_EDGES,
    "0001-01-01T00:00:00Z",
    "1970-01-01T00:00:00Z",
    "9000-12-31T23:59:59Z",
    "2318-09-10T08:00:00.123456789Z",
    "",
    7,
    None,
)
CONTEXT_EDGES = (*malformed.NUMBER_EDGES, 0, MAX_TOKENS, MAX_TOKENS + 1, 512.0, "2048", None)
ps_030_entry = malformed.shaped(
    {
        "name": (malformed.names, ("", "x" * 300, 7)),
        "model": malformed.names,
        "size": (st.integers(min_value=1, max_value=64 * 1024**3), SIZE_EDGES),
        "size_vram": (st.integers(min_value=0, max_value=64 * 1024**3), SIZE_EDGES),
        "digest": malformed.texts,
        "details": malformed.details,
        # 0.30+ lists a model once it is loaded: every entry has its expiry.
        "expires_at": (malformed.recent, EXPIRY_EDGES),
        "context_length": (st.integers(min_value=1, max_value=131072), CONTEXT_EDGES),
    },
    coherent=lambda entry: entry | {"size_vram": min(entry["size_vram"], entry["size"])},
)
ps_030_reply = malformed.shaped({"models": st.lists(ps_030_entry, max_size=3)})


@FUZZ
@given(reply=malformed.replies(ps_030_reply), piece=pieces)
async def test_any_ps_reply_of_a_current_ollama_lists_sane_models(
    reply: tuple[int, bytes], piece: int
) -> None:
    client = answering(OllamaClient, reply, piece)
    try:
        models = await client.running_models()
    except LlmServerError:
        return
    assert len({m.name for m in models}) == len(models)
    for model in models:
        assert_sane_resident(model)
        # A model with its expiry is loaded; only the zero time says "loading".
        expected = ResidencyState.LOADING if model.expires_at is None else ResidencyState.LOADED
        assert model.state is expected
        if model.ram_spill is not None:
            assert model.size is not None
            assert model.size_vram is not None
            assert model.ram_spill + model.size_vram == model.size


DURATION_NS_EDGES = (
    *malformed.NUMBER_EDGES,
    0,
    MAX_DURATION_NS,
    MAX_DURATION_NS + 1,
    1.0,
    DENORMAL,
    1e308,
    -0.0,
    "12",
    None,
)
durations_ns = (st.integers(min_value=0, max_value=60 * 10**9), DURATION_NS_EDGES)
token_counts = (st.integers(min_value=0, max_value=100_000), COUNT_EDGES)


def _as_ollama_reports(chunk: dict[str, Any]) -> dict[str, Any]:
    """Make a plausible final chunk agree with itself, as Ollama 0.30+ writes it.

    The cached tokens are a part of the prompt's; the total holds the load, prefill, decode.
    """
    prompt, cached = chunk["prompt_eval_count"], chunk["prompt_eval_cached_count"]
    total = chunk["load_duration"] + chunk["prompt_eval_duration"] + chunk["eval_duration"]
    return chunk | {
        "prompt_eval_cached_count": min(cached, prompt),
        "total_duration": max(chunk["total_duration"], total),
    }


FINAL_030_FIELDS: dict[str, malformed.Field] = {
    "model": st.just("tiny:latest"),
    "created_at": malformed.recent,
    "response": st.just(""),
    "message": st.just({"role": "assistant", "content": ""}),
    "done": st.just(True),
    "done_reason": (st.sampled_from(["stop", "length", "load"]), ("", 7, None)),
    "total_duration": durations_ns,
    "load_duration": durations_ns,
    "prompt_eval_count": token_counts,
    "prompt_eval_cached_count": token_counts,
    "prompt_eval_duration": durations_ns,
    "eval_count": token_counts,
    "eval_duration": durations_ns,
}
# Mostly as Ollama writes it; some whose figures do not agree (another server's, a bug's).
final_030 = st.one_of(
    malformed.shaped(FINAL_030_FIELDS, coherent=_as_ollama_reports),
    malformed.shaped(FINAL_030_FIELDS, coherent=_as_ollama_reports),
    malformed.shaped(FINAL_030_FIELDS),
)


@st.composite
def ollama_030_streams(draw: st.DrawFn) -> tuple[int, bytes]:
    """An NDJSON generation: content chunks, then (mostly) a 0.30+ final chunk."""
    lines = [malformed.dumps(c) for c in draw(st.lists(malformed.content_chunk, max_size=3))]
    ending = draw(st.sampled_from(["final"] * 5 + ["two finals", "error", "junk", "none"]))
    if ending in ("final", "two finals"):
        lines.append(malformed.dumps(draw(final_030)))
    if ending == "two finals":
        lines.append(malformed.dumps(draw(final_030)))
    elif ending == "error":
        lines.append(malformed.dumps({"error": draw(malformed.json_values)}))
    elif ending == "junk":
        lines.append(draw(st.binary(max_size=32)).replace(b"\n", b""))
    body = b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b"\r\n"]))
    return draw(st.sampled_from([200] * 6 + [404, 500, 503])), body


@FUZZ
@example(
    reply=(
        200,
        malformed.dumps(
            {"done": True, "response": "", "prompt_eval_count": 1, "prompt_eval_cached_count": 2}
        ),
    ),
    api="generate",
    piece=1 << 16,
)
@given(reply=ollama_030_streams(), api=st.sampled_from(["chat", "generate"]), piece=pieces)
async def test_any_final_reply_of_a_current_ollama_gives_sane_figures(
    reply: tuple[int, bytes], api: str, piece: int
) -> None:
    client = answering(OllamaClient, reply, piece)
    try:
        timed = await client.timed_generation(
            "chat" if api == "chat" else "generate", "tiny:latest", "hi", timeout=5
        )
    except LlmServerError:
        return
    assert timed.sent_ns <= timed.headers_ns <= timed.first_token_ns <= timed.final_ns
    durations = (
        timed.load_duration_ns,
        timed.prompt_eval_duration_ns,
        timed.eval_duration_ns,
        timed.total_duration_ns,
    )
    for value in durations:
        assert value is None or 0 <= value <= MAX_DURATION_NS
    for count in (timed.prompt_eval_count, timed.prompt_cached_count, timed.eval_count):
        assert count is None or 0 <= count <= MAX_TOKENS
    # The cached tokens are a part of the prompt's: never more of them than of it.
    if timed.prompt_cached_count is not None and timed.prompt_eval_count is not None:
        assert timed.prompt_cached_count <= timed.prompt_eval_count
    stages = breakdown(timed)
    for value in stages.as_dict().values():
        assert not isinstance(value, float) or math.isfinite(value)
    for value in (stages.queue_and_load_ms, stages.prefill_ms, stages.first_decode_ms):
        assert value is None or value >= 0
    assert stages.prompt_cache_reuse is None or 0 <= stages.prompt_cache_reuse <= 100


# ---------------------------------------------------------------------- Assist pipeline runs

T0 = datetime(2026, 12, 2, 7, 30, tzinfo=UTC)
ZONE = ZoneInfo("Europe/Amsterdam")
OFFSETS: tuple[tzinfo, ...] = (
    UTC,
    ZONE,
    timezone(timedelta(hours=14)),
    timezone(timedelta(hours=-12)),
    timezone(timedelta(hours=5, minutes=45)),
)
FAR_STAMPS = (
    "0001-01-01T00:00:00+00:00",
    "0001-01-01T00:00:00+14:00",  # before the first instant Python has in UTC
    "0001-01-01T00:00:01-12:00",
    "9999-12-31T23:59:59.999999+00:00",
    "9999-12-31T23:59:59-12:00",  # after the last one
    "9999-12-31T23:59:59+14:00",
    "2026-12-02T07:30:00.123456789Z",
    "2026-12-02T07:30:00Z",
    "2026-12-02T07:30:00",  # no zone
)


def _stamp(seconds: float, zone: tzinfo) -> str:
    return (T0 + timedelta(seconds=seconds)).astimezone(zone).isoformat()


zones = st.sampled_from(OFFSETS)
turn_stamps = st.builds(_stamp, st.floats(-2, 30), zones)  # a turn's seconds, in any order
far_stamps = st.one_of(
    st.builds(_stamp, st.floats(-1e10, 1e10), zones),  # centuries apart
    st.sampled_from(FAR_STAMPS[:6]),  # next to the ends of Python's time
)
# Mostly a turn's own seconds; one time in eight far away.
good_stamps = st.integers(0, 7).flatmap(lambda pick: far_stamps if pick == 0 else turn_stamps)
bad_stamps = st.one_of(st.sampled_from(FAR_STAMPS[6:]), malformed.timestamps, malformed.json_values)
KINDS = (
    RUN_START,
    RUN_END,
    WAKE_WORD_END,
    STT_START,
    STT_VAD_END,
    STT_END,
    INTENT_START,
    INTENT_PROGRESS,
    INTENT_PROGRESS,
    INTENT_PROGRESS,
    INTENT_END,
    TTS_END,
    "tts-start",
    "stt-vad-start",
    "error",
)
deltas = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant"),
        "content": st.one_of(st.text(max_size=4), malformed.json_values),
    },
)
DATA_KEYS = (
    "pipeline",
    "satellite_id",
    "conversation_id",
    "engine",
    "chat_log_delta",
    "chat_log_delta",
    "tts_start_streaming",
    "tts_start_streaming",
    "code",
    "timestamp",
)
good_data = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(DATA_KEYS),
        st.one_of(
            malformed.json_values, deltas, deltas, st.just(True), st.text(min_size=1, max_size=8)
        ),
        max_size=4,
    ),
)
good_events = st.tuples(st.sampled_from(KINDS), good_stamps, good_data)
# An event of a changed format: its type, its time or its data not what the reader knows.
bad_events = st.one_of(
    st.tuples(malformed.json_values, good_stamps, good_data),
    st.tuples(st.sampled_from(KINDS), bad_stamps, good_data),
    st.tuples(st.sampled_from(KINDS), good_stamps, malformed.json_values),
)


# A run's events as the pipeline stamps them, in order (each may be missing).
CANONICAL = (
    RUN_START,
    WAKE_WORD_END,
    STT_START,
    STT_VAD_END,
    STT_END,
    INTENT_START,
    INTENT_PROGRESS,
    INTENT_PROGRESS,
    INTENT_PROGRESS,
    INTENT_END,
    "tts-start",
    TTS_END,
    RUN_END,
)
PLAUSIBLE_DATA: dict[str, tuple[object, ...]] = {
    RUN_START: ({"pipeline": "p1", "satellite_id": "assist_satellite.kitchen"},),
    INTENT_START: ({"engine": "conversation.ollama"},),
    INTENT_PROGRESS: (
        {"chat_log_delta": {"role": "assistant"}},
        {"chat_log_delta": {"content": "It"}},
        {"chat_log_delta": {"content": " is"}},
        {"tts_start_streaming": True},
    ),
    "error": ({"code": "stt-no-text-recognized"},),
}


def data_of(kind: object) -> st.SearchStrategy[object]:
    plausible = PLAUSIBLE_DATA.get(kind, ()) if isinstance(kind, str) else ()
    return st.one_of(st.sampled_from(plausible), good_data) if plausible else good_data


@st.composite
def ordered_runs(draw: st.DrawFn) -> list[tuple[object, object, object]]:
    """A run's events in order, then put out of order: times swapped, events repeated,
    moved, far away, added, and now and then one of a changed format."""
    kept = [kind for kind in CANONICAL if draw(st.integers(0, 5))]
    seconds = sorted(draw(st.lists(st.floats(0, 30), min_size=len(kept), max_size=len(kept))))
    stamps = st.sampled_from([UTC, UTC, UTC, *OFFSETS])
    raw: list[tuple[object, object, object]] = [
        (kind, _stamp(at, draw(stamps)), draw(data_of(kind)))
        for kind, at in zip(kept, seconds, strict=True)
    ]
    for _ in range(draw(st.integers(0, 4))):
        change = draw(st.sampled_from(["swap", "repeat", "move", "far", "extra"]))
        if change == "extra" or not raw:
            kind = draw(st.sampled_from(KINDS))
            event = (kind, draw(good_stamps), draw(data_of(kind)))
            raw.insert(draw(st.integers(0, len(raw))), event)
            continue
        one, other = (draw(st.integers(0, len(raw) - 1)) for _ in range(2))
        if change == "swap":  # times that go back
            (k1, t1, d1), (k2, t2, d2) = raw[one], raw[other]
            raw[one], raw[other] = (k1, t2, d1), (k2, t1, d2)
        elif change == "repeat":
            raw.insert(other, raw[one])
        elif change == "move":
            raw.insert(other, raw.pop(one))
        else:
            kind, _, data = raw[one]
            raw[one] = (kind, draw(far_stamps), data)
    if not draw(st.integers(0, 4)):
        raw.insert(draw(st.integers(0, len(raw))), draw(bad_events))
    return raw


@st.composite
def any_runs(draw: st.DrawFn) -> list[tuple[object, object, object]]:
    """Any events, in any order; mostly from a start."""
    raw: list[tuple[object, object, object]] = draw(st.lists(good_events, max_size=14))
    if draw(st.integers(0, 3)):
        raw.insert(0, (RUN_START, draw(good_stamps), draw(good_data)))
    if not draw(st.integers(0, 4)):
        raw.insert(draw(st.integers(0, len(raw))), draw(bad_events))
    return raw


runs = st.one_of(ordered_runs(), ordered_runs(), any_runs())


recorded_ends = st.one_of(
    st.floats(-5, 40).map(lambda s: T0 + timedelta(seconds=s)),
    st.sampled_from([datetime(1970, 1, 1, tzinfo=UTC), datetime(9000, 12, 31, 23, 59, tzinfo=UTC)]),
)
figures = st.one_of(st.none(), st.floats(0, 30), st.floats(0, 86_400))
served_requests = st.builds(
    ServedRequest,
    id=st.integers(0, 2**62),
    model=st.just("qwen3:8b"),
    ended_at=recorded_ends,
    seconds=st.one_of(st.floats(0, 30), st.floats(0, 86_400)).map(lambda s: round(s, 3)),
    status=st.sampled_from([200, 200, 404, 502]),
    prompt_tokens=st.one_of(st.none(), st.integers(0, 10**9)),
    cached_tokens=st.one_of(st.none(), st.integers(0, 10**9)),
    prefill_seconds=figures,
    generation_seconds=figures,
)
servers = st.builds(
    ServerSide,
    model=st.just("qwen3:8b"),
    resident=st.sampled_from([None, True, False]),
    loading=st.booleans(),
    load_seconds=figures,
    load_source=st.sampled_from([None, "server", "client", "events", "polling", "residency"]),
)


def assert_sane_turn(turn: VoiceTurn) -> None:
    """Each figure of a turn is a time after its cause, or none."""
    for figure in (
        turn.wake_to_speech_end,
        turn.stt,
        turn.agent_first_text,
        turn.agent_rest,
        turn.tts_start,
        turn.silence,
    ):
        assert figure is None or (math.isfinite(figure) and figure >= 0)
    if turn.stt is not None:
        begin = turn.speech_end_at or turn.stt_start_at
        assert begin is not None
        assert turn.stt_end_at is not None
        assert turn.stt_end_at >= begin
    if turn.agent_first_text is not None:
        assert turn.intent_start_at is not None
        assert turn.first_text_at is not None
        assert turn.first_text_at >= turn.intent_start_at
    assert turn.streamed <= turn.spoken


def assert_joined(turn: VoiceTurn, request: ServedRequest, requests: list[ServedRequest]) -> None:
    """The joined request is the agent's: successful, and where the turn's agent ran."""
    start = turn.intent_start_at
    assert start is not None
    assert request in requests
    assert request.status == 200
    tolerance = timedelta(seconds=JOIN_TOLERANCE)
    assert request.started_at - start >= -tolerance
    # A record ends after the agent started, read to within the server's step (llama-swap
    # stores whole seconds: an end floored to the second before the start still counts).
    assert request.ended_at + RECORD_STEP > start
    latest = turn.first_text_at or turn.intent_end_at or turn.ended_at
    assert latest is None or request.started_at - latest <= tolerance


@FUZZ
@example(
    raw=[
        (RUN_START, "0001-01-01T00:00:00+00:00", None),
        (INTENT_START, "0001-01-01T00:00:00+00:00", None),
    ],
    requests=[ServedRequest(1, "qwen3:8b", T0, 1.0, 200)],
    server=None,
)
@example(
    raw=[
        (RUN_START, "9999-12-31T23:59:59+00:00", None),
        (INTENT_START, "9999-12-31T23:59:58+00:00", None),
        (INTENT_END, "9999-12-31T23:59:59+00:00", None),
    ],
    requests=[ServedRequest(1, "qwen3:8b", T0, 1.0, 200)],
    server=None,
)
@given(
    raw=runs,
    requests=st.lists(served_requests, max_size=4),
    server=st.one_of(st.none(), servers),
)
def test_any_run_gives_a_turn_whose_stages_are_never_negative(
    raw: list[tuple[object, object, object]],
    requests: list[ServedRequest],
    server: ServerSide | None,
) -> None:
    read = run_events(raw)
    if read is None:
        return
    assert len(read) == len(raw)
    assert all(event.at.tzinfo is not None for event in read)
    turn = VoiceTurn.from_events(read)
    assert (turn is None) == (not read or read[0].type != RUN_START)
    if turn is None:
        return
    assert_sane_turn(turn)
    request = join_request(turn, requests)
    if request is not None:
        assert_joined(turn, request, requests)
    if server is not None and request is not None:
        server = replace(server, request=request)
        if server.resident is False and request.waited_seconds is not None:
            server = replace(server, load_seconds=request.waited_seconds, load_source="server")
    explained = explain(turn, server)
    stages = explained.stages
    for seconds in stages.values():
        assert math.isfinite(seconds)
        assert seconds >= 0
    if stages:
        assert explained.dominant is not None
        assert stages[explained.dominant] == max(stages.values())
    else:
        assert explained.dominant is None
    assert_agent_split(turn, stages, joined=request is not None)


def assert_agent_split(
    turn: VoiceTurn, stages: Mapping[VoiceStage, float], *, joined: bool
) -> None:
    """The agent's stages hold no more than its wait; the writing only where it was waited for."""
    agent = [stages.get(s, 0.0) for s in (VoiceStage.LOAD, VoiceStage.QUEUE, VoiceStage.PREFILL)]
    words = turn.first_text_at is not None
    # The agent's wait: to its first words, else (none streamed) to its reply's end.
    wait = turn.agent_first_text if words else turn.agent_reply
    if wait is None:
        assert agent == [0.0, 0.0, 0.0]
    elif words:
        # The agent's wait for its first words, split: the parts hold no more than it.
        assert sum(agent) <= wait + 0.002
    else:
        # No words: its whole turn, split, the writing with it, and nothing more.
        assert sum(agent) + stages.get(VoiceStage.GENERATION, 0.0) <= wait + 0.003
    if VoiceStage.GENERATION in stages and words:
        # After words: the rest of the reply, only when the household waited for it.
        assert turn.spoken
        assert not turn.streamed
    if not words:
        assert VoiceStage.PREFILL not in stages or joined


# One monotonic clock's seconds (since boot: up to decades), in any order.
clock = st.floats(0, 1e9)


@FUZZ
@given(load_started=clock, load_ended=st.one_of(st.none(), clock), intent_started=clock)
def test_a_warm_up_at_the_wake_hides_no_more_than_the_time_before_the_agent(
    load_started: float, load_ended: float | None, intent_started: float
) -> None:
    outcome = wake_outcome(
        load_started=load_started, load_ended=load_ended, intent_started=intent_started
    )
    assert outcome.helped is not outcome.too_late
    assert math.isfinite(outcome.hidden_seconds)
    assert outcome.hidden_seconds >= 0
    assert outcome.hidden_seconds <= round(max(intent_started - load_started, 0.0), 3)
    if outcome.helped:
        assert load_ended is not None
        assert load_ended <= intent_started


seconds_ahead = st.floats(0, 1e6)


@FUZZ
@given(
    prefix=st.one_of(st.none(), seconds_ahead),
    turns=st.lists(seconds_ahead, max_size=8),
    elapsed=seconds_ahead,
    earlier=seconds_ahead,
    quicker=seconds_ahead,
)
def test_a_prompt_warm_up_fits_less_the_later_it_would_start(
    prefix: float | None, turns: list[float], elapsed: float, earlier: float, quicker: float
) -> None:
    fits = prefix_warm_fits(prefix_seconds=prefix, wake_to_intent=turns, elapsed=elapsed)
    assert isinstance(fits, bool)
    if not turns:
        assert fits
    if fits:
        # Sooner, or a shorter warm-up: it fits too.
        sooner = min(earlier, elapsed)
        assert prefix_warm_fits(prefix_seconds=prefix, wake_to_intent=turns, elapsed=sooner)
        if prefix is not None:
            shorter = min(earlier, prefix)
            assert prefix_warm_fits(prefix_seconds=shorter, wake_to_intent=turns, elapsed=elapsed)
    else:
        # A quicker turn more does not make room for it.
        more = [*turns, quicker]
        assert not prefix_warm_fits(prefix_seconds=prefix, wake_to_intent=more, elapsed=elapsed)


# ---------------------------------------------------------------------- the planner

DAY = 86_400
# The instants the histories are built around: two stretches of the year far from a change
# of summer time, and Amsterdam's two changes of 2026 (at 01:00 UTC both).
SUMMER = datetime(2026, 7, 1, 10, 0, tzinfo=UTC)
WINTER = datetime(2027, 1, 15, 10, 0, tzinfo=UTC)
SPRING_FORWARD = datetime(2026, 3, 29, 1, 0, tzinfo=UTC)  # 02:00 CET is 03:00 CEST
FALL_BACK = datetime(2026, 10, 25, 1, 0, tzinfo=UTC)  # 03:00 CEST is 02:00 CET again

type Op = tuple[Any, ...]

leads = st.one_of(
    st.sampled_from(
        [
            timedelta(0),
            timedelta(seconds=90),
            timedelta(minutes=10),
            timedelta(hours=1),
            timedelta(days=1),
            timedelta(days=3),
            timedelta(minutes=-10),
        ]
    ),
    st.floats(0, 3 * DAY).map(lambda s: timedelta(seconds=s)),
)


# Local times of day a household's routine keeps: a morning, an evening, one that crosses
# midnight, and one in the hour a change of summer time skips or repeats.
ROUTINE_MINUTES = (6 * 60 + 45, 18 * 60, 23 * 60 + 55, 2 * 60 + 30)
type Moment = int | tuple[int, int, int]


def moments(days: int, minute: int) -> st.SearchStrategy[Moment]:
    """A moment near the base: seconds from it, or about the household's ``minute`` of a day."""
    return st.one_of(
        st.integers(-days * DAY, days * DAY),
        st.sampled_from([0, 60, 3600, -DAY, DAY]),
        st.tuples(st.integers(-days, days), st.just(minute), st.integers(-2700, 2700)),
        st.tuples(st.integers(-1, 1), st.just(minute), st.integers(-300, 900)),
        st.tuples(st.just(0), st.just(minute), st.integers(-60, 240)),  # in its stretch
    )


@st.composite
def operations(draw: st.DrawFn, days: int) -> list[Op]:
    """What a planner is told, in any order: uses (within ``days`` of the base, or years
    away), floods of uses, a routine of days, and the clock asking for a plan.

    Whole seconds: a use's gap is stored to 0.1 s (sub-second gaps have their own test).
    """
    minute = draw(st.one_of(st.sampled_from(ROUTINE_MINUTES), st.integers(0, 24 * 60 - 1)))
    at = moments(days, minute)
    far = st.integers(-3 * 365 * DAY, 3 * 365 * DAY)
    routine = st.one_of(st.just(minute), st.integers(0, 24 * 60 - 1))
    return draw(
        st.lists(
            st.one_of(
                st.tuples(st.just("observe"), at),
                st.tuples(st.just("observe"), at),
                st.tuples(st.just("observe"), far),
                st.tuples(st.just("burst"), at, st.integers(1, 600), st.integers(1, 3 * 60)),
                st.tuples(st.just("routine"), at, st.integers(1, 21), routine),
                st.tuples(st.just("advance"), at),
                st.tuples(st.just("plan"), at, leads),
                st.tuples(st.just("plan"), at, leads),
            ),
            max_size=24,
        )
    )


def local(instant: datetime) -> datetime:
    """Return an instant as Home Assistant gives it (``as_local``): in the household's zone."""
    return instant.astimezone(UTC).astimezone(ZONE)


def at_minute(on: date, minute: int) -> datetime:
    """Return the instant a local clock shows ``minute`` on ``on`` (its first, if twice)."""
    return local(datetime.combine(on, time(minute // 60, minute % 60), tzinfo=ZONE))


def resolve(base: datetime, moment: Moment) -> datetime:
    """Return a moment as the household's local time."""
    if isinstance(moment, int):
        return local(base + timedelta(seconds=moment))
    day, minute, jitter = moment
    on = local(base).date() + timedelta(days=day)
    return local(at_minute(on, minute).astimezone(UTC) + timedelta(seconds=jitter))


def routine_days(when: datetime, days: int, minute: int) -> list[datetime]:
    """Return a use at ``minute`` of each of the ``days`` local days up to ``when``'s."""
    return [at_minute(when.date() - timedelta(days=back), minute) for back in reversed(range(days))]


# A time read on a clock: how long after the clock's epoch (no overflow near year 1 or 9999).
type Key = Callable[[datetime], timedelta]
EPOCH = datetime(2000, 1, 1)


def real(when: datetime) -> timedelta:
    """Return the instant (what a household lives through)."""
    return when - EPOCH.replace(tzinfo=UTC)


def assert_sane_state(planner: UsagePlanner) -> None:
    assert len(planner.uses) <= usage_rhythm.MAX_USES
    assert all(a <= b for a, b in pairwise(planner.uses))
    assert len(planner.gaps) <= MAX_GAPS
    assert all(0 < gap < SESSION_GAP.total_seconds() for gap in planner.gaps)
    rows = [*planner.by_kind.values(), *planner.by_weekday]
    assert all(0.0 <= share <= 1.0 for row in rows for share in row)
    assert planner.days >= 0
    folded = planner.folded_until
    assert folded is None or (folded.hour, folded.minute, folded.second) == (0, 0, 0)
    stored = planner.as_dict()
    json.dumps(stored, allow_nan=False)  # what the store writes


def assert_sane_plan(planner: UsagePlanner, plan: Plan, now: datetime, *, key: Key = real) -> None:
    """A plan's times follow their causes, on the clock ``key`` reads them by."""
    assert plan.warm == (plan.warm_until is not None)
    if plan.warm_until is not None:
        assert key(plan.warm_until) > key(now)  # warm until a time to come
    assert (plan.window_start is None) == (plan.window_end is None)
    if plan.window_start is not None and plan.window_end is not None:
        assert key(plan.window_start) < key(plan.window_end)
        assert key(plan.window_end) > key(now)  # a stretch that has ended is passed over
    elif plan.used:
        pytest.fail("a use in a stretch that is not there")
    if plan.next_use is not None and key(plan.next_use) < key(now):
        # Past only as the start of the stretch now is in, while no use came in it.
        assert not plan.used
        assert plan.next_use == plan.window_start
        assert plan.window_end is not None
        assert key(now) < key(plan.window_end)
    # A rhythm's keep is its sessions' (up to MAX_KEEP); any other's may be longer, the
    # keep its idle times pay for (one of KEEPS), never shorter than its sessions'.
    if plan.pattern is PatternClass.RHYTHMIC:
        assert plan.keep == DEFAULT_KEEP or MIN_KEEP <= plan.keep <= MAX_KEEP
    else:
        assert plan.keep == max(planner.keep, planner.idle_keep)
        assert planner.idle_keep in KEEPS
    assert all(0 < idle <= IDLE_RANGE.total_seconds() for idle in planner.idles)
    assert len(planner.idles) <= MAX_GAPS
    assert 0.0 <= planner.hit_rate <= 1.0
    if planner.days < MIN_DAYS:
        assert plan.pattern is PatternClass.NEW
    if plan.warm_until is not None:
        # Warm through the session of the last use, or to the end of an expected stretch.
        before = [key(u) for u in planner.uses if key(u) <= key(now)]
        ends = [max(before) + plan.keep] if before else []
        if plan.window_end is not None:
            ends.append(key(plan.window_end))
        assert ends
        assert key(plan.warm_until) <= max(ends)


def run_history(
    planner: UsagePlanner, base: datetime, ops: list[Op], *, key: Key = real
) -> tuple[datetime, timedelta]:
    """Tell the planner ``ops`` around ``base``; check it after each; return the last plan's."""
    asked = (local(base), timedelta(seconds=90))
    for op in ops:
        when = resolve(base, op[1])
        match op[0]:
            case "observe":
                planner.observe(when)
            case "burst":
                for index in range(op[2]):
                    planner.observe(local(when.astimezone(UTC) + timedelta(seconds=op[3] * index)))
            case "routine":
                for use in routine_days(when, op[2], op[3]):
                    planner.observe(use)
            case "advance":
                planner.advance(when)
            case "plan":
                asked = (when, op[2])
                assert_sane_plan(planner, planner.plan(when, op[2]), when, key=key)
                # Uses older than the history kept are forgotten.
                assert all(key(use) >= key(when) - HISTORY for use in planner.uses)
        assert_sane_state(planner)
    return asked


@FEW
@given(base=st.sampled_from([SUMMER, WINTER]), ops=operations(20))
@example(  # the clock went back half a day: the days fold again
    base=SUMMER,
    ops=[("routine", 0, 6, 1435), ("advance", 43200), ("advance", -43201), ("advance", 0)],
)
def test_any_history_gives_plans_whose_times_follow_their_causes(
    base: datetime, ops: list[Op]
) -> None:
    """Uses in any order, repeated, years away, in floods: every plan keeps the rules.

    Far from a change of summer time, the household's clock and the instants agree.
    """
    with patch.object(usage_rhythm, "MAX_USES", 300):  # a flood that fills it, quickly
        planner = UsagePlanner()
        now, lead = run_history(planner, base, ops)
        stored = planner.as_dict()
        read = UsagePlanner.from_dict(stored)
        assert read.as_dict() == stored
        later = now + timedelta(hours=1)
        assert read.plan(later, lead) == planner.plan(later, lead)


@FEW
# 02:58 CEST (00:58 UTC), then 03:01 CET (02:01 UTC, 63 minutes later): no longer warm (a
# keep reckoned on the clock would have held it until 03:03 CET, 65 minutes).
@example(base=FALL_BACK, ops=[("observe", -120), ("plan", 3660, timedelta(0))])
# 02:50 CEST (00:50 UTC) and 02:10 CET (01:10 UTC): kept in the instants' order, as they
# read back (the clock's order would put them the other way round).
@example(base=FALL_BACK, ops=[("observe", -600), ("observe", 600)])
# A routine at 02:50 on the days before 2026-03-29, asked at 01:59:59 CET: the stretch
# 02:50-03:00 of a clock that skips 02:00-03:00 starts at 01:50 UTC and ends at 01:00 UTC.
@example(base=SPRING_FORWARD, ops=[("routine", 0, 8, 170), ("plan", -1, timedelta(0))])
@given(base=st.sampled_from([SPRING_FORWARD, FALL_BACK]), ops=operations(2))
def test_days_of_a_change_of_summer_time_keep_the_rules_in_real_time(
    base: datetime, ops: list[Op]
) -> None:
    """Across a 23-hour and a 25-hour day: keeps, gaps and stretches hold in real time.

    The planner reads the household's clock for its bins only; a keep of 5 minutes is 5
    minutes across the change, and a state read back from the store plans the same.
    """
    planner = UsagePlanner()
    now, lead = run_history(planner, base, ops, key=real)
    stored = planner.as_dict()
    read = UsagePlanner.from_dict(stored)
    assert read.as_dict() == stored
    assert read.plan(now, lead) == planner.plan(now, lead)


@FUZZ
@example(spacing=0.04, count=2)
@given(spacing=st.floats(0.001, 120), count=st.integers(2, 12))
def test_sub_second_gaps_read_back_as_stored(spacing: float, count: int) -> None:
    planner = UsagePlanner()
    start = local(SUMMER)
    for index in range(count):
        planner.observe(start + timedelta(seconds=spacing * index))
    stored = planner.as_dict()
    assert UsagePlanner.from_dict(stored).as_dict() == stored


# Stored states: what the store holds after a crash, an edit, an older release.
def _stored_time(instant: datetime, zone: tzinfo) -> str:
    return instant.astimezone(zone).isoformat()


def _row(fill: object, edits: list[tuple[int, object]]) -> list[object]:
    row = [fill] * 144
    for index, value in edits:
        row[index] = value
    return row


shares = st.one_of(st.floats(0, 1), st.sampled_from([0.0, -0.0, 1.0, DENORMAL, 0.15, 0.1499]))
rows = st.builds(_row, shares, st.lists(st.tuples(st.integers(0, 143), shares), max_size=3))
ROW_EDGES: tuple[object, ...] = (
    [0.0] * 143,
    [0.0] * 145,
    [1.0000001] * 144,
    [float("nan")] * 144,
    [float("inf")] * 144,
    [True] * 144,
    ["0.5"] * 144,
    [-1e-9] * 144,
    None,
    "x",
)
stored_times = st.one_of(
    st.builds(
        _stored_time,
        st.datetimes(datetime(1970, 1, 2), datetime(9000, 1, 1), timezones=st.just(UTC)),
        zones,
    ),
    st.builds(
        _stored_time,
        st.datetimes(datetime(2026, 5, 1), datetime(2026, 8, 1), timezones=st.just(UTC)),
        zones,
    ),
    st.sampled_from(FAR_STAMPS),
)
# Fold marks that read: none, or from a year before the plans on (older ones are slow to
# fold, and those next to the ends of Python's time have their own test).
fold_marks = st.one_of(
    st.none(),
    st.builds(
        _stored_time,
        st.datetimes(datetime(2025, 7, 1), datetime(9000, 1, 1), timezones=st.just(UTC)),
        zones,
    ),
)
# Gaps that keep their meaning at 0.1 s (sub-second ones have their own test).
gaps = st.one_of(
    st.floats(0.06, 86_399.9),
    st.integers(-5, 10**5),
    st.sampled_from([0, 0.0, -0.0, 86_400, float("inf")]),
)
stored_states = malformed.shaped(
    {
        "uses": (
            st.lists(stored_times, max_size=12),
            (["2026-09-07T07:00:00"], ["yesterday"], [7], None, "x"),
        ),
        "by_kind": (
            malformed.shaped({"weekday": (rows, ROW_EDGES), "weekend": (rows, ROW_EDGES)}),
            ([], None, "x"),
        ),
        "by_weekday": (
            st.lists(rows, min_size=7, max_size=7),
            ([[0.0] * 144] * 6, [[0.0] * 144] * 8, None, "x"),
        ),
        "folded_until": (fold_marks, ("yesterday", 7, "2026-09-07T00:00:00", "")),
        "days": (st.integers(0, 10**6), (-1, True, 1.5, None, "3")),
        "gaps": (st.lists(gaps, max_size=12), ("x", [float("nan")], [True], None)),
    }
)


def beyond_floats(value: object) -> bool:
    """Return True when ``value`` holds an integer no float can hold (10**400)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > 2**1023:
            return True
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


@FUZZ
@given(
    state=st.one_of(stored_states, stored_states, malformed.json_values),
    base=st.sampled_from([SUMMER, WINTER]),
    lead=leads,
)
def test_any_stored_state_is_refused_or_plans_and_reads_back_as_written(
    state: object, base: datetime, lead: timedelta
) -> None:
    assume(not beyond_floats(state))  # their own test, below
    try:
        planner = UsagePlanner.from_dict(state)
    except ValueError:
        return
    stored = planner.as_dict()
    json.dumps(stored, allow_nan=False)
    assert UsagePlanner.from_dict(stored).as_dict() == stored
    now = local(base)
    plan = planner.plan(now, lead)
    assert_sane_plan(planner, plan, now)
    assert UsagePlanner.from_dict(planner.as_dict()).plan(now, lead) == plan


# A fold mark at the ends of Python's time: read, but out of range in the household's zone.
EXTREME_FOLD_MARKS = ("9999-12-31T23:00:00-01:00", "0001-01-01T00:00:00+01:00")


@given(folded=st.sampled_from(EXTREME_FOLD_MARKS))
def test_a_fold_mark_at_the_ends_of_time_is_refused_or_plans(folded: str) -> None:
    state = UsagePlanner().as_dict() | {"folded_until": folded}
    try:
        planner = UsagePlanner.from_dict(state)
    except ValueError:
        return
    now = local(SUMMER)
    assert_sane_plan(planner, planner.plan(now), now)


@given(
    state=st.sampled_from(
        [
            UsagePlanner().as_dict() | {"gaps": [malformed.HUGE]},
            UsagePlanner().as_dict() | {"by_kind": {"weekday": [malformed.HUGE], "weekend": []}},
            UsagePlanner().as_dict() | {"by_weekday": [[malformed.HUGE]] * 7},
        ]
    )
)
def test_a_stored_number_no_float_holds_is_refused(state: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"\w"):
        UsagePlanner.from_dict(state)
