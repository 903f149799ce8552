"""The idle profile without Home Assistant: when each probe is due, and the verdict."""

from datetime import UTC, datetime, timedelta

import pytest

from custom_components.llm_warmth.core.idle_profile import (
    INTERVALS_MINUTES,
    IdleProfile,
    IdleResult,
    verdict,
)

from .english import english

T0 = datetime(2026, 11, 30, 22, 0, tzinfo=UTC)
GIB = 1024**3


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def result(
    minutes: int, when: datetime, *, resident: bool, ttft: float, load: float | None = None
) -> IdleResult:
    return IdleResult(minutes, when, resident, ttft, load, 40.0)


def test_each_probe_is_due_that_long_after_the_last_use() -> None:
    profile = IdleProfile(model="big", last_use=T0)
    assert (profile.next_minutes, profile.due_at()) == (0, T0)
    profile = profile.measured(result(0, at(0), resident=True, ttft=90.0))
    assert profile.due_at() == at(1)
    # A use in between restarts the wait; an older use does not move it back.
    profile = profile.used(at(0.5))
    assert profile.due_at() == at(1.5)
    assert profile.used(at(0.2)).due_at() == at(1.5)
    for minutes in INTERVALS_MINUTES[1:]:
        due = profile.due_at()
        assert due is not None
        profile = profile.measured(result(minutes, due, resident=minutes < 10, ttft=100.0))
    assert profile.done
    assert (profile.next_minutes, profile.due_at()) == (None, None)
    assert IdleProfile.from_dict(profile.as_dict()) == profile


def stored_result() -> dict[str, object]:
    return dict(result(1, at(1), resident=True, ttft=90.0, load=1.0).as_dict())


def test_a_stored_result_reads_back() -> None:
    """The damaged ones below differ from this one in one field each."""
    good = IdleProfile(model="big", last_use=T0).as_dict()
    read = IdleProfile.from_dict({**good, "results": [stored_result()]})
    assert read.results == (result(1, at(1), resident=True, ttft=90.0, load=1.0),)


def test_damaged_profiles_are_refused() -> None:
    good = IdleProfile(model="big", last_use=T0).as_dict()
    for damage in (
        [],
        {**good, "model": 3},
        {**good, "last_use": "2026-11-30T22:00:00"},
        {**good, "results": [{"minutes": 7, "at": T0.isoformat()}]},
        {**good, "results": [{"minutes": 1}]},
        {"model": "big"},
        # Each figure checked for its type where it is read: an interval that is a bool
        # (True would be 1 minute) or text, a time that is no text, figures that are none.
        {**good, "results": [{**stored_result(), "minutes": True}]},
        {**good, "results": [{**stored_result(), "minutes": "1"}]},
        {**good, "results": [{**stored_result(), "at": 1764576000}]},
        {**good, "results": [{**stored_result(), "at": "2026-11-30T22:00:00"}]},
        {**good, "results": [{**stored_result(), "ttft_ms": True}]},
        {**good, "results": [{**stored_result(), "load_ms": [1.0]}]},
        {**good, "results": [{**stored_result(), "prefill_ms": "slow"}]},
    ):
        with pytest.raises(ValueError, match=r"."):
            IdleProfile.from_dict(damage)


def test_the_verdict_names_where_each_layer_went_cold() -> None:
    results = (
        result(0, at(0), resident=True, ttft=90.0, load=1.0),
        result(1, at(1), resident=True, ttft=95.0, load=1.0),
        result(10, at(11), resident=False, ttft=8300.0, load=8100.0),
        result(60, at(71), resident=False, ttft=8400.0, load=8200.0),
        result(480, at(551), resident=False, ttft=31300.0, load=31000.0),
    )
    assert english(*verdict(results)) == (
        "resident through 1 min; evicted by 10 min: load 8.1 s; after 480 min the load grew: "
        "31.0 s against 8.1 s at 10 min (read from disk again)"
    )
    assert english(*verdict(results, target_ms=1500.0, size=5 * GIB)).endswith(
        "the 1.5 s target breaks after 10 min idle (8.3 s); keeping it resident that long "
        "costs 0.8 GiB-hours"
    )
    assert english(*verdict(results[:2], target_ms=1500.0)) == (
        "resident through 1 min; within the 1.5 s target at every interval"
    )
    assert english(*verdict(())) == "no results yet"
    # Begun cold: the 0-minute probe loaded it, which is no eviction; equal loads did not grow.
    began_cold = (
        result(0, at(0), resident=False, ttft=500.0, load=400.0),
        result(1, at(1), resident=True, ttft=90.0, load=1.0),
        result(10, at(11), resident=False, ttft=500.0, load=400.0),
        result(60, at(71), resident=False, ttft=520.0, load=420.0),
    )
    assert english(*verdict(began_cold)) == "resident through 1 min; evicted by 10 min: load 400 ms"
