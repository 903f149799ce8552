"""llama-swap's activity log entries read one by one: every field checked for its range.

Entries as llama-swap's ``/api/metrics`` writes them (``ActivityLogEntry``): the boundary
values a server may send are read, one past them refused, and the prefill and generation
figures come from the tokens and rates it reports.
"""

from datetime import UTC, datetime
from typing import Any

import pytest

from custom_components.llm_warmth.core.backends.llama_swap import _served, _tokens_seconds
from custom_components.llm_warmth.core.backends.types import ServedRequest

ENDED = "2026-12-07T07:30:00.123456789Z"


def entry(**changes: Any) -> dict[str, Any]:
    tokens = {
        "input_tokens": 120,
        "cache_tokens": 30,
        "output_tokens": 40,
        "prompt_per_second": 400.0,
        "tokens_per_second": 80.0,
    }
    base: dict[str, Any] = {
        "id": 7,
        "model": "qwen",
        "timestamp": ENDED,
        "duration_ms": 1250,
        "resp_status_code": 200,
        "tokens": tokens | changes.pop("tokens", {}),
    }
    return base | changes


def test_an_entry_reads_whole() -> None:
    assert _served(entry()) == ServedRequest(
        id=7,
        model="qwen",
        ended_at=datetime(2026, 12, 7, 7, 30, 0, 123456, tzinfo=UTC),
        seconds=1.25,
        status=200,
        prompt_tokens=120,
        cached_tokens=30,
        prefill_seconds=0.3,
        generation_seconds=0.5,
    )


@pytest.mark.parametrize(
    ("field", "largest"),
    [("duration_ms", 86_400_000), ("id", 2**62), ("resp_status_code", 999)],
)
def test_each_bound_is_read_and_one_past_it_refused(field: str, largest: int) -> None:
    # A day of a request takes no rates (its work would be checked against the day).
    read = _served(entry(**{field: largest}, tokens={"prompt_per_second": 0}))
    assert read is not None
    assert _served(entry(**{field: largest + 1})) is None
    assert _served(entry(**{field: -1})) is None


@pytest.mark.parametrize("key", ["input_tokens", "cache_tokens", "output_tokens"])
def test_token_counts_to_a_billion_and_minus_one_for_none(key: str) -> None:
    assert _served(entry(tokens={key: 1_000_000_000, "prompt_per_second": 0})) is not None
    assert _served(entry(tokens={key: 1_000_000_001})) is None
    assert _served(entry(tokens={key: -2})) is None
    none_told = _served(entry(tokens={key: -1}))
    assert none_told is not None
    field = {"input_tokens": "prompt_tokens", "cache_tokens": "cached_tokens"}.get(key)
    if field is not None:
        assert getattr(none_told, field) is None
        assert getattr(_served(entry(tokens={key: 0})), field) == 0


def test_more_work_than_the_requests_time_is_not_this_requests() -> None:
    """0.3 s of prefill and 0.5 s of generation: 0.8 s, within 3 ms of the duration."""
    kept = _served(entry(duration_ms=797))
    assert kept is not None
    assert (kept.prefill_seconds, kept.generation_seconds) == (0.3, 0.5)
    dropped = _served(entry(duration_ms=796))
    assert dropped is not None
    assert (dropped.prefill_seconds, dropped.generation_seconds) == (None, None)


def test_an_entry_that_is_not_one_reads_as_none() -> None:
    assert _served("junk") is None
    assert _served(entry(timestamp="0001-01-01T00:00:00Z")) is None  # Go's zero time
    assert _served(entry(model=3)) is None
    tokens_not_told = _served(entry() | {"tokens": "junk"})
    assert tokens_not_told is not None
    assert tokens_not_told.prompt_tokens is None


@pytest.mark.parametrize(
    ("count", "per_second", "seconds"),
    [
        (100, 400.0, 0.25),
        (1, 3.0, 0.333),  # to the millisecond
        (0, 0, 0.0),  # no tokens: no time, whatever the rate
        (5, 0, None),  # tokens at no rate: not told
        (5, 1e-3, 5000.0),  # the slowest rate read
        (5, 0.9e-3, None),
        (5, 1e9, None),  # past the fastest
        (86_400, 1.0, 86_400.0),  # a day of work
        (86_401, 1.0, None),
        (None, 10.0, None),
        (-1, 10.0, None),
        (5, True, None),
        (5, "fast", None),
    ],
)
def test_tokens_seconds(count: int | None, per_second: object, seconds: float | None) -> None:
    assert _tokens_seconds(count, per_second) == seconds


def test_a_rate_not_told_adds_no_work_to_the_one_told() -> None:
    """No prompt rate: the generation's 0.5 s alone is checked against the 0.501 s."""
    only_generation = _served(entry(duration_ms=501, tokens={"prompt_per_second": -1}))
    assert only_generation is not None
    assert (only_generation.prefill_seconds, only_generation.generation_seconds) == (None, 0.5)
    only_prefill = _served(entry(duration_ms=301, tokens={"tokens_per_second": -1}))
    assert only_prefill is not None
    assert (only_prefill.prefill_seconds, only_prefill.generation_seconds) == (0.3, None)
