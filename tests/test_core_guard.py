"""The household guard without Home Assistant: refusals, releases, re-applies (pure)."""

from datetime import UTC, datetime, timedelta

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.guard import (
    MAX_TICK,
    RELEASES_BEFORE_REPAIR,
    GpuNeed,
    Guard,
    GuardRecord,
    Household,
    Reapply,
    Refusal,
    Release,
    admit,
    admit_hold,
    release_data,
    releases_repair,
    stored_record,
)
from custom_components.llm_warmth.core.pins import Pin

GIB = 1024**3
T0 = datetime(2026, 11, 30, 20, 0, tzinfo=UTC)
CALM = Household(lowest_headroom=10 * GIB, best_headroom=12 * GIB, reserve=2 * GIB)
SHORT = Household(lowest_headroom=-GIB, best_headroom=-GIB, reserve=2 * GIB)
TRANSCODING = Household(
    lowest_headroom=10 * GIB, reserve=2 * GIB, protected_on=("binary_sensor.plex_transcoding",)
)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def pins(**priorities: int) -> dict[str, Pin]:
    return {m: Pin(model=m, priority=p, since=T0) for m, p in priorities.items()}


def test_what_the_household_needs() -> None:
    assert CALM.need is None
    assert Household().need is None  # no GPU source, nothing protected
    assert SHORT.need is GpuNeed.HEADROOM_LOW
    assert TRANSCODING.need is GpuNeed.PROTECTED_ENTITY


def test_a_load_that_would_starve_the_household_is_refused_with_the_numbers() -> None:
    assert admit("a", 8 * GIB, CALM, resident=False) is None
    assert admit("a", 13 * GIB, CALM, resident=False) == Refusal(
        "a", GpuNeed.HEADROOM_LOW, size=13 * GIB, headroom=12 * GIB
    )
    # Resident already: costs nothing more. Unknown size or no GPU source: let it load.
    assert admit("a", 13 * GIB, CALM, resident=True) is None
    assert admit("a", None, CALM, resident=False) is None
    assert admit("a", 13 * GIB, Household(), resident=False) is None
    # A protected entity on: the GPU is needed now, whatever the size.
    assert admit("a", None, TRANSCODING, resident=False) == Refusal(
        "a", GpuNeed.PROTECTED_ENTITY, entity="binary_sensor.plex_transcoding"
    )


def test_releases_lowest_priority_first_one_at_a_time_then_reapplies() -> None:
    guard = Guard(timedelta(minutes=10))
    book = pins(assistant=10, coder=0, vision=-5)
    held = {"assistant", "coder", "vision"}
    assert guard.decide(book, held, CALM, at(0)) == []
    assert guard.decide(book, held, TRANSCODING, at(1)) == [
        Release("vision", GpuNeed.PROTECTED_ENTITY)
    ]
    book["vision"] = Pin(model="vision", priority=-5, since=T0, released="protected_entity")
    held.discard("vision")
    # Still on at the next poll: answered already, the higher priority pins stay.
    assert guard.decide(book, held, TRANSCODING, at(1.5)) == []
    # Short of memory: the next lowest, then none until the GPU's reading can show it.
    assert guard.decide(book, held, SHORT, at(2)) == [Release("coder", GpuNeed.HEADROOM_LOW)]
    book["coder"] = Pin(model="coder", since=T0, released="headroom_low")
    held.discard("coder")
    assert guard.decide(book, held, SHORT, at(2.2)) == []
    # Clear, but not for long enough yet; needed again restarts the wait.
    assert guard.decide(book, held, CALM, at(3)) == []
    assert guard.decide(book, held, CALM, at(12)) == []
    # The transcode starts again: a new turn on, the next lowest (the assistant now).
    assert guard.decide(book, held, TRANSCODING, at(12.5)) == [
        Release("assistant", GpuNeed.PROTECTED_ENTITY)
    ]
    book["assistant"] = Pin(model="assistant", priority=10, since=T0, released="x")
    assert guard.decide(book, held, CALM, at(13)) == []
    assert guard.decide(book, held, CALM, at(22.9)) == []
    # Clear for 10 minutes: every released pin, highest priority first.
    assert guard.decide(book, held, CALM, at(23)) == [
        Reapply("assistant"),
        Reapply("coder"),
        Reapply("vision"),
    ]
    assert guard.releases_within_a_day(at(23)) == 3
    # Short of memory and a protected entity answered already: the memory decides.
    fresh = pins(assistant=10, coder=20)
    assert guard.decide(fresh, {"assistant", "coder"}, TRANSCODING, at(30)) == [
        Release("assistant", GpuNeed.PROTECTED_ENTITY)
    ]
    both = Household(lowest_headroom=-GIB, protected_on=TRANSCODING.protected_on)
    assert guard.decide(fresh, {"coder"}, both, at(31)) == [Release("coder", GpuNeed.HEADROOM_LOW)]
    assert guard.decide(fresh, {"coder"}, both, at(31.1)) == []
    assert guard.releases_within_a_day(at(60 * 24 + 2)) == 3  # the two at 30-31 min, one at 12.5
    assert guard.releases_within_a_day(at(60 * 24 + 31.5)) == 0


def test_nothing_to_release_when_no_pin_holds_memory() -> None:
    guard = Guard(timedelta(minutes=10))
    assert guard.decide(pins(a=0), set(), SHORT, at(0)) == []
    assert guard.decide({}, {"a"}, SHORT, at(1)) == []
    assert guard.releases_within_a_day(at(1)) == 0


def test_contended_time_counts_only_while_a_pin_holds_memory_the_house_needs() -> None:
    guard = Guard(timedelta(minutes=10))
    book = pins(a=0)
    guard.decide(book, {"a"}, CALM, at(0))
    guard.decide(book, {"a"}, SHORT, at(1))  # the first minute of need: counted
    guard.decide(book, {"a"}, SHORT, at(2))
    guard.decide(book, set(), SHORT, at(3))  # released: no longer counted
    guard.decide(book, {"a"}, CALM, at(4))
    assert guard.contended_minutes == pytest.approx(2)
    # A gap longer than MAX_TICK (Home Assistant was down) is not counted.
    gap = MAX_TICK.total_seconds() / 60 + 1
    guard.decide(book, {"a"}, SHORT, at(4 + gap))
    assert guard.contended_minutes == pytest.approx(2)


def test_the_record_round_trips_and_damage_is_refused() -> None:
    record = GuardRecord(contended_seconds=90.5, releases=[at(1), at(2)])
    assert GuardRecord.from_dict(record.as_dict()) == record
    assert Guard(timedelta(0), GuardRecord.from_dict(record.as_dict())).contended_minutes == (
        pytest.approx(90.5 / 60)
    )
    for damage in (
        [],
        {"contended_seconds": -1},
        {"contended_seconds": True},
        {"contended_seconds": "3"},
        {"releases": "x"},
        {"releases": [3]},
        {"releases": ["2026-11-30T20:00:00"]},
        {"releases": ["yesterday"]},
    ):
        with pytest.raises(ValueError, match=r"."):
            GuardRecord.from_dict(damage)


@given(
    values=st.dictionaries(
        st.sampled_from(["contended_seconds", "releases"]),
        st.none()
        | st.booleans()
        | st.floats()
        | st.integers()
        | st.text(max_size=20)
        | st.lists(st.text(max_size=30), max_size=3),
    )
)
def test_any_stored_record_is_read_or_refused_with_value_error(values: dict[str, object]) -> None:
    try:
        record = GuardRecord.from_dict(values)
    except ValueError:
        return
    assert record.contended_seconds >= 0
    assert all(when.tzinfo is not None for when in record.releases)


def test_a_longer_keep_is_refused_whenever_the_household_needs_the_gpu() -> None:
    assert admit_hold("m", Household(lowest_headroom=0, best_headroom=10)) is None
    assert admit_hold("m", Household()) is None  # no GPU source, nothing protected on
    refused = admit_hold("m", Household(protected_on=("binary_sensor.plex",)))
    assert refused == Refusal("m", GpuNeed.PROTECTED_ENTITY, entity="binary_sensor.plex")
    short = admit_hold("m", Household(lowest_headroom=-1, best_headroom=2**30))
    assert short == Refusal("m", GpuNeed.HEADROOM_LOW, headroom=-1)


def test_the_stored_record() -> None:
    """Nothing stored: a fresh record; a damaged one set aside with why; a good one read."""
    assert stored_record(None) == (GuardRecord(), None)
    record, damaged = stored_record({"contended_seconds": 90, "releases": [T0.isoformat()]})
    assert (record, damaged) == (GuardRecord(90.0, [T0]), None)
    for bad, why in (
        ("x", "not a mapping"),
        ({"contended_seconds": -1}, "bad contended time -1"),
        ({"releases": ["2026-11-30T20:00:00"]}, "release time without zone"),
        ({"releases": ["not a time"]}, "Invalid isoformat string"),
    ):
        record, damaged = stored_record(bad)
        assert record == GuardRecord()
        assert damaged is not None
        assert why in damaged


@given(
    st.dictionaries(
        st.sampled_from(["contended_seconds", "releases"]),
        st.none() | st.floats() | st.text(max_size=8) | st.lists(st.text(max_size=30), max_size=2),
    )
    | st.none()
    | st.integers()
)
def test_any_stored_record_is_read_or_set_aside(stored: object) -> None:
    """Whatever the store holds, the guard gets a record, and a reason when it was damaged."""
    record, damaged = stored_record(stored)
    assert isinstance(record, GuardRecord)
    if damaged is not None:
        assert record == GuardRecord()


def test_what_a_release_event_says() -> None:
    """The entity that is on, or none for low headroom; GiB to two decimals."""
    assert release_data(GpuNeed.PROTECTED_ENTITY, TRANSCODING) == {
        "reason": "protected_entity",
        "entity": "binary_sensor.plex_transcoding",
        "headroom_gib": 10.0,
        "reserve_gib": 2.0,
        "processes": [],
    }
    short = Household(
        lowest_headroom=-GIB // 3, reserve=GIB + GIB // 8, other_processes=("plex", "frigate")
    )
    assert release_data(GpuNeed.HEADROOM_LOW, short) == {
        "reason": "headroom_low",
        "entity": None,
        "headroom_gib": -0.33,
        "reserve_gib": 1.12,
        "processes": ["plex", "frigate"],
    }
    assert release_data(GpuNeed.PROTECTED_ENTITY, Household())["headroom_gib"] is None


def test_the_repair_from_the_third_release_of_a_day() -> None:
    """Below three releases no issue; from three on, the count and whole minutes."""
    assert RELEASES_BEFORE_REPAIR == 3
    assert releases_repair(2, 500.0, "S") is None
    assert releases_repair(0, 0.0, "S") is None
    assert releases_repair(3, 12.6, "S") == {"server": "S", "count": "3", "minutes": "13"}
    assert releases_repair(7, 0.4, "S") == {"server": "S", "count": "7", "minutes": "0"}


# ---------------------------------------------------------------- each rule at its edge


def test_a_model_exactly_the_size_of_the_headroom_is_admitted() -> None:
    assert admit("a", 12 * GIB, CALM, resident=False) is None
    assert admit("a", 12 * GIB + 1, CALM, resident=False) is not None


def test_a_step_of_five_minutes_is_counted_and_a_longer_one_is_not() -> None:
    guard = Guard(timedelta(minutes=10))
    book = pins(a=0)
    guard.decide(book, {"a"}, SHORT, at(0))
    guard.decide(book, {"a"}, SHORT, at(5))  # Home Assistant was away exactly 5 minutes
    assert guard.contended_minutes == 5
    guard.decide(book, {"a"}, SHORT, at(10) + timedelta(seconds=1))
    assert guard.contended_minutes == 5


def test_the_next_release_for_headroom_waits_20_seconds() -> None:
    """The GPU's reading needs that long to show what the first release freed."""
    guard = Guard(timedelta(minutes=10))
    book = pins(a=0, b=1, c=2)
    held = {"a", "b", "c"}
    assert guard.decide(book, held, SHORT, T0) == [Release("a", GpuNeed.HEADROOM_LOW)]
    held.discard("a")
    assert guard.decide(book, held, SHORT, T0 + timedelta(seconds=19.9)) == []
    assert guard.decide(book, held, SHORT, T0 + timedelta(seconds=20)) == [
        Release("b", GpuNeed.HEADROOM_LOW)
    ]


def test_a_release_a_day_old_is_no_longer_kept() -> None:
    guard = Guard(timedelta(minutes=10), GuardRecord(releases=[T0 - timedelta(days=1)]))
    guard.decide(pins(a=0), {"a"}, SHORT, T0)
    assert guard.record.releases == [T0]


def test_the_contended_time_is_stored_to_the_millisecond_and_read_within_its_range() -> None:
    assert GuardRecord(contended_seconds=1.23456).as_dict()["contended_seconds"] == 1.235
    assert GuardRecord.from_dict({}).contended_seconds == 0.0
    assert GuardRecord.from_dict({"contended_seconds": 999_999_999_999.0}).contended_seconds == (
        999_999_999_999.0
    )
    with pytest.raises(ValueError, match="contended"):
        GuardRecord.from_dict({"contended_seconds": 1e12})
