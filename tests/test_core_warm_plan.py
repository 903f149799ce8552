"""The learned-warming planner (pure, the clock passed in): rhythm, sessions, habits, store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from hypothesis import given
import pytest

from custom_components.llm_warmth.core.signal_edges import Edge
from custom_components.llm_warmth.core.signal_learning import EdgeStats, SignalBook
from custom_components.llm_warmth.core.usage_rhythm import (
    COLD_START_WORTH,
    DEFAULT_KEEP,
    EXPECT,
    HIT_WEIGHT,
    IDLE_KEEP_MARGIN,
    IDLE_RANGE,
    MAX_GAPS,
    MAX_KEEP,
    MIN_DAYS,
    MIN_FORECASTS,
    MIN_GAPS,
    MIN_HIT_RATE,
    MIN_KEEP,
    SESSION_GAP,
    still_pays,
)
from custom_components.llm_warmth.core.warm_hold import Hold, HoldAction, HoldReason, decide
from custom_components.llm_warmth.core.warm_plan import (
    ASSUMED_LOAD,
    MOST_SECONDS,
    PatternClass,
    UsagePlanner,
)

from . import malformed

ZONE = ZoneInfo("Europe/Amsterdam")
MONDAY = datetime(2026, 9, 7, tzinfo=ZONE)
LEAD = timedelta(seconds=90)
# A model the server does not hold, never warmed: what auto-warm decides on.
COLD_MODEL: dict[str, bool | None] = {
    "warmed_for": None,
    "held": False,
    "loading": False,
    "expires_at": None,
    "asked_until": None,
}


def day(index: int) -> datetime:
    """Return the start of the trace's ``index``-th day (local midnight)."""
    when = MONDAY + timedelta(days=index)
    return datetime(when.year, when.month, when.day, tzinfo=ZONE)


def at(index: int, hour: int, minute: int, second: int = 0) -> datetime:
    return day(index).replace(hour=hour, minute=minute, second=second)


def mornings(planner: UsagePlanner, days: range, hour: int, minute: int) -> None:
    """Weekday mornings: a use at the time, and two more a few minutes later."""
    for index in days:
        if day(index).weekday() < 5:
            for offset in (0, 3, 5):
                planner.observe(at(index, hour, minute) + timedelta(minutes=offset))
        planner.advance(day(index + 1))


def test_a_new_model_is_kept_through_its_sessions_only() -> None:
    planner = UsagePlanner()
    planner.observe(at(0, 7, 0))
    plan = planner.plan(at(0, 7, 3), LEAD)
    assert plan.pattern is PatternClass.NEW
    assert plan.warm_until == at(0, 7, 0) + DEFAULT_KEEP
    assert not planner.plan(at(0, 7, 6), LEAD).warm
    assert planner.plan(at(0, 7, 6), LEAD).next_use is None


def test_a_morning_routine_is_warmed_ahead_and_let_go_once_it_happened() -> None:
    planner = UsagePlanner()
    mornings(planner, range(14), 6, 45)
    monday = 14
    # Before the stretch (06:40-07:00) less the lead: cold, and the next use is told.
    early = planner.plan(at(monday, 6, 30), LEAD)
    assert early.pattern is PatternClass.RHYTHMIC
    assert not early.warm
    assert early.next_use == at(monday, 6, 40)
    # From the lead before it, warm until its end.
    ahead = planner.plan(at(monday, 6, 38, 30), LEAD)
    assert ahead.warm
    assert (ahead.window_start, ahead.warm_until) == (at(monday, 6, 40), at(monday, 7, 0))
    # The routine happened: kept through the session's keep only, not to the stretch's end.
    planner.observe(at(monday, 6, 42))
    assert planner.plan(at(monday, 6, 45), LEAD).warm_until == at(monday, 6, 42) + planner.keep
    after = planner.plan(at(monday, 6, 50), LEAD)
    assert not after.warm
    assert after.used
    assert after.next_use == at(monday + 1, 6, 40)  # tomorrow's
    # Not at that time on a weekend.
    saturday = planner.plan(at(19, 6, 38, 30), LEAD)
    assert not saturday.warm


def test_a_changed_habit_is_learnt_within_two_weeks() -> None:
    planner = UsagePlanner()
    mornings(planner, range(21), 6, 45)  # three weeks at 06:45
    mornings(planner, range(21, 35), 5, 50)  # a new job: two weeks at 05:50
    monday = 35
    assert planner.plan(at(monday, 5, 48, 40), LEAD).warm
    assert not planner.plan(at(monday, 6, 38, 40), LEAD).warm
    assert planner.share(at(monday, 6, 45)) < EXPECT < planner.share(at(monday, 5, 55))


def test_the_keep_follows_the_sessions_gaps() -> None:
    planner = UsagePlanner()
    assert planner.keep == DEFAULT_KEEP
    start = at(0, 18, 0)
    for index in range(20):
        planner.observe(start + timedelta(minutes=2 * index))
    assert planner.keep == timedelta(minutes=2.2)
    # Gaps of a session's length or more are between sessions, not within one.
    for index in range(20):
        planner.observe(at(1, 8, 0) + timedelta(hours=index))
    assert planner.keep == timedelta(minutes=2.2)
    long = UsagePlanner()
    for index in range(20):
        long.observe(start + timedelta(minutes=29 * index))
    assert long.keep == MAX_KEEP


def test_days_fold_across_a_change_of_summer_time() -> None:
    """2026-10-25 has 25 hours in Amsterdam: the fold still takes each day once."""
    planner = UsagePlanner()
    planner.observe(datetime(2026, 10, 24, 7, 0, tzinfo=ZONE))
    planner.observe(datetime(2026, 10, 25, 7, 0, tzinfo=ZONE))
    planner.observe(datetime(2026, 10, 26, 7, 0, tzinfo=ZONE))
    planner.advance(datetime(2026, 10, 27, 1, 0, tzinfo=ZONE))
    assert planner.days == 3
    assert planner.folded_until == datetime(2026, 10, 27, tzinfo=ZONE)
    # A use on a day already folded is kept, and that day learnt again with it.
    planner.observe(datetime(2026, 10, 25, 9, 0, tzinfo=ZONE))
    assert len(planner.uses) == 4
    planner.advance(datetime(2026, 10, 27, 1, 0, tzinfo=ZONE))
    assert planner.days == 3
    sunday_nine = datetime(2026, 10, 25, 9, 0, tzinfo=ZONE)
    assert planner.by_weekday[6][planner_bin(sunday_nine)] > 0


def planner_bin(when: datetime) -> int:
    return (when.hour * 60 + when.minute) // 10


def test_history_older_than_the_first_recorded_day_is_kept_and_learnt() -> None:
    """A use today first, then two weeks of mornings before it (a late or imported record).

    Every use counts: the mornings are expected on the Monday after, as when they were
    recorded in order (until 2026-12 the earlier days were dropped: 8 of 32 kept).
    """
    in_order, late = UsagePlanner(), UsagePlanner()
    mornings(in_order, range(14), 6, 45)
    late.observe(at(13, 12, 0))  # first: a Sunday, the last day of the history
    late.advance(day(13))
    for index in range(14):
        if day(index).weekday() < 5:
            for offset in (0, 3, 5):
                late.observe(at(index, 6, 45) + timedelta(minutes=offset))
    assert len(late.uses) == 31
    plan = late.plan(at(14, 6, 30), LEAD)
    assert plan.pattern is PatternClass.RHYTHMIC
    assert plan.next_use == in_order.plan(at(14, 6, 30), LEAD).next_use == at(14, 6, 40)
    assert late.days == in_order.days == 14


def test_a_gap_of_a_whole_session_is_between_sessions() -> None:
    """SESSION_GAP itself separates two sessions; a second less is within one."""
    within, between = UsagePlanner(), UsagePlanner()
    for index in range(MIN_GAPS):
        within.observe(at(0, 8, 0) + index * (SESSION_GAP - timedelta(seconds=1)))
        between.observe(at(0, 8, 0) + index * SESSION_GAP)
    assert len(within.gaps) == MIN_GAPS - 1
    assert between.gaps == []
    assert within.keep == DEFAULT_KEEP  # one gap short of MIN_GAPS
    within.observe(at(0, 8, 0) + MIN_GAPS * (SESSION_GAP - timedelta(seconds=1)))
    assert within.keep == MAX_KEEP


def test_the_keep_is_the_95th_percentile_of_the_gaps() -> None:
    """20 gaps: the 19th smallest (index ceil(0.95 * 20) - 1 = 18), not the largest."""
    planner = UsagePlanner()
    planner.gaps = [200.0] * 18 + [300.0, 1000.0]
    assert planner.keep == timedelta(seconds=330)
    planner.gaps = [200.0] * 19 + [1000.0]
    assert planner.keep == timedelta(seconds=220)
    planner.gaps = [10.0] * 20
    assert planner.keep == MIN_KEEP


def test_saturday_and_sunday_are_the_weekend() -> None:
    planner = UsagePlanner()
    mornings(planner, range(14), 6, 45)  # weekday mornings only
    friday, saturday, sunday = at(18, 6, 50), at(19, 6, 50), at(20, 6, 50)
    assert (friday.weekday(), saturday.weekday(), sunday.weekday()) == (4, 5, 6)
    assert planner.share(friday) >= EXPECT
    assert planner.share(saturday) == planner.share(sunday) == 0.0


def test_the_rhythm_is_trusted_from_min_days_on() -> None:
    planner = UsagePlanner()
    for index in range(MIN_DAYS):
        planner.observe(at(index, 7, 0))
        planner.advance(day(index + 1))
        expected = PatternClass.NEW if index + 1 < MIN_DAYS else PatternClass.RHYTHMIC
        assert (planner.days, planner.pattern()) == (index + 1, expected)


def test_old_uses_are_forgotten_after_eight_weeks() -> None:
    planner = UsagePlanner()
    planner.observe(at(0, 7, 0))
    planner.observe(at(50, 7, 0))
    planner.advance(at(60, 0, 0))
    assert planner.uses == [at(50, 7, 0)]


def test_the_state_round_trips_and_damage_is_refused() -> None:
    planner = UsagePlanner()
    mornings(planner, range(10), 6, 45)
    stored = planner.as_dict()
    read = UsagePlanner.from_dict(stored)
    assert read.plan(at(14, 6, 38, 40), LEAD) == planner.plan(at(14, 6, 38, 40), LEAD)
    for damage in (
        {**stored, "days": -1},
        {**stored, "uses": ["2026-09-07T07:00:00"]},  # no zone
        {**stored, "by_weekday": stored["by_weekday"][:6]},
        {**stored, "by_kind": {"weekday": [2.0] * 144, "weekend": [0.0] * 144}},
        {**stored, "gaps": [float("nan")]},
        {**stored, "hit_rate": 1.5},
        {**stored, "hit_rate": "high"},
        {**stored, "forecasts": -1},
        {**stored, "forecasts": True},
        {**stored, "idles": "long"},
        "junk",
    ):
        with pytest.raises(ValueError, match=r"\w"):
            UsagePlanner.from_dict(damage)


@given(values=malformed.json_values)
def test_any_stored_state_is_read_or_refused_with_value_error(values: object) -> None:
    try:
        planner = UsagePlanner.from_dict(values)
    except ValueError:
        return
    planner.plan(at(3, 7, 0), LEAD)


def test_a_state_stored_in_summer_folds_at_local_midnights_after_the_change() -> None:
    """Stored times keep their offset only: read back, the days are still local days."""
    planner = UsagePlanner()
    planner.observe(datetime(2026, 10, 20, 7, 0, tzinfo=ZONE))
    planner.advance(datetime(2026, 10, 21, 1, 0, tzinfo=ZONE))
    read = UsagePlanner.from_dict(planner.as_dict())  # "+02:00", no zone
    read.advance(datetime(2026, 10, 28, 9, 0, tzinfo=ZONE))  # past the change (+01:00)
    assert read.folded_until == datetime(2026, 10, 28, tzinfo=ZONE)
    read.observe(datetime(2026, 10, 28, 8, 0, tzinfo=ZONE))  # a use of today counts
    assert read.uses[-1] == datetime(2026, 10, 28, 8, 0, tzinfo=ZONE)
    # A fold mark in the future (a clock that was wrong) starts again today.
    ahead = UsagePlanner(folded_until=datetime(2027, 1, 1, tzinfo=ZONE))
    ahead.advance(datetime(2026, 10, 28, 9, 0, tzinfo=ZONE))
    assert ahead.folded_until == datetime(2026, 10, 28, tzinfo=ZONE)


def test_a_fold_mark_years_back_folds_only_the_days_of_the_uses_kept() -> None:
    """A first use stamped 2000 (a clock before its first sync): no 9,000 days folded."""
    planner = UsagePlanner()
    planner.observe(datetime(2000, 1, 3, 7, 0, tzinfo=ZONE))
    planner.by_kind["weekday"][42] = 1.0  # a share the years would have faded
    mornings(planner, range(14), 6, 45)
    assert planner.days > 9000  # every day counted
    assert planner.by_kind["weekday"][42] < EXPECT
    assert planner.plan(at(14, 6, 30), LEAD).next_use == at(14, 6, 40)


# The planner's figures, written out: a change of any of them is a change of behaviour.


def rhythm(planner: UsagePlanner, bins: dict[int, float], *, weekday: bool = True) -> None:
    """Give the planner a learnt rhythm: these bins' shares, on every day of the kind."""
    for index, share in bins.items():
        planner.by_kind["weekday" if weekday else "weekend"][index] = share
        for day_index in range(5) if weekday else range(5, 7):
            planner.by_weekday[day_index][index] = share
    planner.days = 14


def test_the_planners_figures() -> None:
    planner = UsagePlanner()
    assert len(planner.as_dict()["by_kind"]["weekday"]) == 144  # 10-minute bins
    assert len(planner.by_weekday) == 7
    planner.observe(at(0, 7, 0))
    planner.advance(day(1))  # one day folded: a quarter per kind, 0.6 per weekday
    assert planner.by_kind["weekday"][42] == 0.25
    assert planner.by_weekday[0][42] == 0.6
    assert planner.share(at(7, 7, 5)) == (0.25 + 0.6) / 2
    assert planner.plan(at(1, 7, 0)).keep == timedelta(minutes=5)
    fresh = UsagePlanner()
    fresh.observe(at(0, 7, 0))
    assert fresh.plan(at(0, 7, 4, 59)).warm
    assert not fresh.plan(at(0, 7, 5)).warm  # its keep ended at 07:05 exactly
    assert not fresh.plan(at(0, 7, 5)).used


def test_gaps_count_from_ten_within_half_an_hour_and_the_latest_500_are_kept() -> None:
    planner = UsagePlanner()
    for index in range(10):  # 9 gaps of 3 minutes
        planner.observe(at(0, 8, 0) + timedelta(minutes=3 * index))
    assert planner.keep == timedelta(minutes=5)
    planner.observe(at(0, 8, 30))  # the tenth
    assert planner.keep == timedelta(minutes=3.3)
    planner.observe(at(0, 8, 30))  # the same instant again: no gap of nothing
    assert len(planner.gaps) == 10
    later = UsagePlanner()
    later.observe(at(0, 9, 0))
    later.observe(at(0, 9, 30) - timedelta(seconds=1))
    later.observe(at(0, 10, 0) + timedelta(seconds=1))  # 30 min 2 s: another session
    assert later.gaps == [1799.0]
    many = UsagePlanner()
    for index in range(502):
        many.observe(at(0, 0, 0) + timedelta(seconds=10 * index))
    assert len(many.gaps) == 500


def test_the_latest_20000_uses_are_kept() -> None:
    planner = UsagePlanner()
    first = at(0, 0, 0)
    for index in range(20_001):
        planner.observe(first + timedelta(seconds=index))
    assert len(planner.uses) == 20_000
    assert planner.uses[0] == first + timedelta(seconds=1)


def test_a_rhythm_of_one_weekday_is_rhythmic_and_none_is_sporadic() -> None:
    planner = UsagePlanner()
    planner.days = 5
    assert planner.pattern() is PatternClass.SPORADIC
    planner.by_weekday[2][42] = 0.15  # Wednesdays at 07:00, exactly expected
    assert planner.pattern() is PatternClass.RHYTHMIC
    planner.by_weekday[2][42] = 0.1499
    assert planner.pattern() is PatternClass.SPORADIC
    planner.by_kind["weekend"][42] = 0.15
    assert planner.pattern() is PatternClass.RHYTHMIC


def test_a_stretch_of_an_hour_is_held_through_a_shorter_one_let_go() -> None:
    hour, short = UsagePlanner(), UsagePlanner()
    rhythm(hour, dict.fromkeys(range(36, 42), 0.5))  # 06:00-07:00
    rhythm(short, dict.fromkeys(range(36, 41), 0.5))  # 06:00-06:50
    for planner in (hour, short):
        planner.observe(at(14, 6, 0))  # a use at the stretch's very start
    held = hour.plan(at(14, 6, 20), LEAD)
    assert (held.used, held.warm_until) == (False, at(14, 7, 0))
    let_go = short.plan(at(14, 6, 20), LEAD)
    assert let_go.used
    assert not let_go.warm


def test_a_long_stretch_no_use_came_in_is_let_go_after_its_first_hour() -> None:
    """Working hours learnt (09:00-17:00); on a day off the model is held an hour, not eight."""
    planner = UsagePlanner()
    rhythm(planner, dict.fromkeys(range(54, 102), 0.5))  # 09:00-17:00
    ahead = planner.plan(at(14, 8, 59), LEAD)
    assert (ahead.warm_until, ahead.expected_until) == (at(14, 10, 0), at(14, 10, 0))
    load = decide(ahead, at(14, 8, 59), lead=LEAD, **COLD_MODEL)
    # Asked a piece at a time: 30 minutes, renewed while the stretch holds it.
    assert load == Hold(HoldAction.LOAD, at(14, 10, 0), HoldReason.EXPECTED_USE, at(14, 9, 29))
    assert planner.plan(at(14, 9, 59, 59), LEAD).warm_until == at(14, 10, 0)
    off = planner.plan(at(14, 10, 0), LEAD)
    assert (off.warm, off.expected_until, off.window_start) == (False, None, at(14, 9, 0))
    assert decide(off, at(14, 10, 0), lead=LEAD, **COLD_MODEL) is None  # not loaded again
    # A use later that day: from then on the stretch is held through to its end.
    planner.observe(at(14, 11, 30))
    began = planner.plan(at(14, 11, 31), LEAD)
    assert (began.used, began.warm_until) == (False, at(14, 17, 0))
    assert began.expected_until == at(14, 17, 0)


def test_the_keep_after_a_late_use_outlasts_the_stretch() -> None:
    planner = UsagePlanner()
    rhythm(planner, dict.fromkeys(range(36, 42), 0.5))  # 06:00-07:00, held through
    planner.observe(at(14, 6, 58))
    plan = planner.plan(at(14, 6, 59), LEAD)
    assert plan.warm_until == at(14, 6, 58) + DEFAULT_KEEP  # past 07:00
    # At the stretch's end itself, no longer in it: the next one is tomorrow's.
    after = planner.plan(at(14, 7, 0), LEAD)
    assert after.window_start == at(15, 6, 0)


def test_stored_figures_keep_four_decimals_and_the_gaps_a_millisecond() -> None:
    planner = UsagePlanner()
    planner.by_kind["weekday"][0] = 0.123456
    planner.by_weekday[0][0] = 0.654321
    planner.gaps = [1.23456]
    stored = planner.as_dict()
    assert stored["by_kind"]["weekday"][0] == 0.1235
    assert stored["by_weekday"][0][0] == 0.6543
    assert stored["gaps"] == [1.235]


def test_stored_states_at_the_edges_of_what_reads() -> None:
    base = UsagePlanner().as_dict()
    assert UsagePlanner.from_dict(base | {"days": 0}).days == 0
    gaps = UsagePlanner.from_dict(base | {"gaps": [0, 86399.9, 86400, -1]}).gaps
    assert gaps == [0.0, 86399.9]
    for year, reads in ((1999, False), (2000, True), (9000, True), (9001, False)):
        mark = datetime(year, 6, 1, tzinfo=ZONE).isoformat()
        try:
            UsagePlanner.from_dict(base | {"folded_until": mark})
        except ValueError:
            assert not reads, year
        else:
            assert reads, year
    # Judged in UTC, as stored: the first hour of 2000 at +01:00 is 1999 there, the last
    # of 9000 at -01:00 is 9001 (kept once and dropped on the next read before).
    for use, kept in (
        ("2000-01-01T00:00:00+01:00", False),
        ("2000-01-01T01:00:00+01:00", True),
        ("9000-12-31T23:00:00-01:00", False),
        ("9000-12-31T22:00:00-01:00", True),
        ("0001-01-01T00:00:00+14:00", False),
        ("1999-12-31T23:00:00-01:00", True),
        ("9001-01-01T00:30:00+01:00", True),
    ):
        assert len(UsagePlanner.from_dict(base | {"uses": [use]}).uses) == kept, use
    # The fold mark is a local day's start: for the era's first use, 2000-01-01 05:00 UTC,
    # that is 1999-12-31 12:00 UTC twelve hours behind, and it reads back (it did not).
    behind = timezone(timedelta(hours=-12))
    first = datetime(2000, 1, 1, 5, tzinfo=UTC)
    planner = UsagePlanner.from_dict(base | {"uses": [first.isoformat()]})
    planner.observe(first.astimezone(behind))
    planner._relearn(datetime(2000, 1, 2, tzinfo=behind))
    assert planner.folded_until == datetime(1999, 12, 31, tzinfo=behind)
    again = UsagePlanner.from_dict(planner.as_dict())
    assert again.folded_until == datetime(1999, 12, 31, tzinfo=behind)
    for mark, reads in (
        ("1999-12-29T23:59:59+00:00", False),
        ("1999-12-30T00:00:00+00:00", True),
        ("9000-12-31T23:59:59+00:00", True),
        ("9001-01-01T00:00:00+00:00", False),
        ("9001-01-01T00:30:00+01:00", True),
        ("0001-01-01T00:00:00+14:00", False),
    ):
        try:
            UsagePlanner.from_dict(base | {"folded_until": mark})
        except ValueError:
            assert not reads, mark
        else:
            assert reads, mark
    row = [0.0] * 144
    for edge, reads in ((0.0, True), (1.0, True), (1.0001, False), (-0.0001, False)):
        try:
            UsagePlanner.from_dict(base | {"by_weekday": [[*row[:-1], edge]] * 7})
        except ValueError:
            assert not reads, edge
        else:
            assert reads, edge
    with pytest.raises(ValueError, match="number"):
        UsagePlanner.from_dict(base | {"gaps": [True]})


def test_the_keep_of_ten_gaps_is_the_largest() -> None:
    """10 gaps: ceil(0.95 * 10) - 1 = 9, the largest one."""
    planner = UsagePlanner()
    planner.gaps = [200.0] * 9 + [1000.0]
    assert planner.keep == timedelta(seconds=1100)


def test_a_use_recorded_late_is_learnt_as_if_it_came_in_order() -> None:
    """A late use makes the planner learn again: nothing of the old shares is left over."""
    in_order, late = UsagePlanner(), UsagePlanner()
    for index in range(10):
        in_order.observe(at(index, 7, 0))
        if index != 3:
            late.observe(at(index, 7, 0))
        in_order.advance(day(index + 1))
        late.advance(day(index + 1))
    late.observe(at(3, 7, 0))  # day 3 was folded without it
    late.advance(day(10))
    assert late.as_dict() == in_order.as_dict()
    assert len(late.by_weekday) == 7


@pytest.mark.parametrize(("back", "faded"), [(56, True), (57, True), (58, False)])
def test_a_fold_mark_past_the_history_starts_from_nothing(back: int, faded: bool) -> None:
    """Up to 57 days back every day folds (the shares fade); further, they start at zero."""
    today = day(100)
    planner = UsagePlanner(folded_until=day(100 - back))
    planner.by_kind["weekday"][42] = planner.by_kind["weekend"][42] = 1.0
    for row in planner.by_weekday:
        row[42] = 1.0
    planner.advance(today)
    assert planner.days == back
    assert planner.folded_until == today
    shares = [
        *planner.by_kind["weekday"],
        *planner.by_kind["weekend"],
        *(share for row in planner.by_weekday for share in row),
    ]
    assert len(shares) == 9 * 144
    if faded:
        assert 0.0 < planner.by_kind["weekday"][42] < EXPECT
        assert all(0.0 < row[42] < EXPECT for row in planner.by_weekday)
    else:
        assert set(shares) == {0.0}


def test_a_stretch_is_looked_for_over_the_next_day_only() -> None:
    """Wednesdays at 07:00 only: from Tuesday 07:00 it is a day away, not yet in sight."""
    planner = UsagePlanner(days=14)
    planner.by_weekday[2][42] = 0.5  # blended with its kind's nothing: 0.25, expected
    tuesday, wednesday = at(15, 7, 0), at(16, 7, 0)
    assert (tuesday.weekday(), wednesday.weekday()) == (1, 2)
    assert planner.plan(tuesday).next_use is None
    assert planner.plan(tuesday + timedelta(minutes=10)).next_use == wednesday
    assert planner.plan(tuesday + timedelta(minutes=10)).window_end == wednesday + timedelta(
        minutes=10
    )


def test_a_share_of_exactly_expect_is_expected_and_bridges_a_dip() -> None:
    planner = UsagePlanner()
    rhythm(planner, {42: EXPECT, 44: EXPECT})  # 07:00 and 07:20, a dip of 10 minutes
    assert planner.share(at(14, 7, 0)) == EXPECT
    before = planner.plan(at(14, 6, 30))
    assert (before.window_start, before.window_end) == (at(14, 7, 0), at(14, 7, 30))
    during = planner.plan(at(14, 7, 25))  # in the second bin: the stretch began at 07:00
    assert (during.window_start, during.window_end) == (at(14, 7, 0), at(14, 7, 30))
    below = UsagePlanner()
    rhythm(below, {42: EXPECT - 0.0001})
    assert below.plan(at(14, 6, 30)).window_start is None


def test_a_stretch_is_traced_back_six_hours_and_ahead_twelve() -> None:
    morning = UsagePlanner()
    rhythm(morning, dict.fromkeys(range(72), 0.5))  # 00:00-12:00
    plan = morning.plan(at(14, 8, 0))
    assert (plan.window_start, plan.window_end) == (at(14, 2, 0), at(14, 12, 0))
    always = UsagePlanner()
    rhythm(always, dict.fromkeys(range(144), 0.5))
    # From 08:00's bin, half-hour steps of the bridge up to 12 h: 20:10 is asked again then.
    assert always.plan(at(14, 8, 0)).window_end == at(14, 20, 10)


def test_without_a_lead_nothing_is_warmed_ahead_of_its_stretch() -> None:
    planner = UsagePlanner()
    rhythm(planner, {42: 0.5})
    early = planner.plan(at(14, 6, 59))
    assert (early.warm, early.next_use) == (False, at(14, 7, 0))
    assert planner.plan(at(14, 7, 0)).warm_until == at(14, 7, 10)


def test_a_keep_across_the_change_back_from_summer_time_is_real_time() -> None:
    """2026-10-25: 02:00-03:00 is shown twice; a 5-minute keep lasts 5 minutes."""
    used = datetime(2026, 10, 25, 2, 58, tzinfo=ZONE)  # the first 02:58 (CEST)
    planner = UsagePlanner()
    planner.observe(used)
    real = used.astimezone(UTC)
    during = planner.plan((real + timedelta(minutes=2)).astimezone(ZONE))  # 02:00 CET
    assert not planner.plan(datetime(2026, 10, 25, 3, 1, tzinfo=ZONE)).warm  # 63 min on
    assert during.warm_until is not None
    assert during.warm_until.astimezone(UTC) == real + DEFAULT_KEEP  # 02:03 CET
    # The second 02:10 (CET) comes after the first 02:50 (CEST): in that order.
    later = datetime(2026, 10, 25, 2, 10, fold=1, tzinfo=ZONE)
    planner.observe(later)
    assert planner.uses == sorted(planner.uses)
    assert planner.uses[-1] == later.astimezone(UTC)  # an instant in a fold equals no other zone


def test_a_routine_in_the_hour_a_change_of_summer_time_skips_or_repeats() -> None:
    """Sundays at 02:50: skipped the day the clock jumps 02:00 -> 03:00, the first 02:50
    the day it goes back 03:00 -> 02:00."""
    spring = UsagePlanner()
    rhythm(spring, {17: 0.5}, weekday=False)  # 02:50-03:00 on weekend days
    plan = spring.plan(datetime(2027, 3, 28, 1, 30, tzinfo=ZONE))
    assert plan.window_start is None  # none that day; Saturday's is more than a day away
    # A week on, the clock as usual: 02:50 CEST.
    later = spring.plan(datetime(2027, 4, 4, 1, 30, tzinfo=ZONE))
    assert later.window_start is not None
    assert later.window_start.astimezone(UTC) == datetime(2027, 4, 4, 0, 50, tzinfo=UTC)
    autumn = UsagePlanner()
    rhythm(autumn, {17: 0.5}, weekday=False)
    plan = autumn.plan(datetime(2026, 10, 25, 1, 30, tzinfo=ZONE))
    assert plan.window_start is not None
    assert plan.window_end is not None
    assert plan.window_start.astimezone(UTC) == datetime(2026, 10, 25, 0, 50, tzinfo=UTC)
    # To 03:00 on the clock, which comes after the repeated hour: 70 minutes.
    length = plan.window_end.astimezone(UTC) - plan.window_start.astimezone(UTC)
    assert length == timedelta(minutes=70)


def test_the_idle_keep_is_the_keep_that_pays_best_over_the_idle_times() -> None:
    """A keep pays when the idle times it covers beyond 5 minutes are worth its time.

    Ten idle times of 14 minutes: a 15-minute keep saves 10 cold starts for 10 x 9
    minutes held beyond the 5: worth it at 2 hours a cold start (gain 10 - 90/120).
    A longer keep holds no more (every idle time ends by 14 min) and saves none more.
    """
    assert timedelta(hours=2) == COLD_START_WORTH
    planner = UsagePlanner()
    assert planner.idle_keep == DEFAULT_KEEP  # no idle time yet
    planner.idles = [14 * 60.0] * (MIN_GAPS - 1)
    assert planner.idle_keep == DEFAULT_KEEP  # one short of MIN_GAPS
    planner.idles.append(14 * 60.0)
    assert planner.idle_keep == timedelta(minutes=15)
    # Idle times past every keep cost each keep its whole length: no keep pays.
    planner.idles = [IDLE_RANGE.total_seconds()] * 20
    assert planner.idle_keep == DEFAULT_KEEP
    # Half 3 hours, half 4 hours and more: the 3-hour keep saves 10 for 10 x 175 + 10 x
    # 175 minutes: 10 - 3500/120 < 0; none pays.
    planner.idles = [3 * 3600.0] * 10 + [IDLE_RANGE.total_seconds()] * 10
    assert planner.idle_keep == DEFAULT_KEEP
    # Idle times of 40 minutes, one in three of 4 hours: the 45-minute keep pays
    # (20 saved for 20 x 35 + 10 x 40 minutes: 20 - 1100/120 > 0).
    planner.idles = [40 * 60.0] * 20 + [IDLE_RANGE.total_seconds()] * 10
    assert planner.idle_keep == timedelta(minutes=45)


def test_the_idle_keep_settled_at_a_fold_stays_while_it_pays_about_as_well() -> None:
    """Keeps that pay about the same are far apart: the one settled on stays within 5 %."""
    planner = UsagePlanner()
    planner.settle_idle_keep()
    assert planner.settled_idle_keep is None  # too few idle times
    planner.idles = [40 * 60.0] * 20 + [IDLE_RANGE.total_seconds()] * 10
    planner.settle_idle_keep()
    assert planner.settled_idle_keep == 45 * 60.0
    assert planner.idle_keep == timedelta(minutes=45)
    # Two idle times of 50 minutes, two more of 4 hours: the hour pays a little more
    # (9.92 against 9.5), within 5 %: kept.
    planner.idles = [40 * 60.0] * 20 + [50 * 60.0] * 2 + [IDLE_RANGE.total_seconds()] * 12
    assert planner._idle_keeps()[0] == timedelta(minutes=60)
    planner.settle_idle_keep()
    assert planner.idle_keep == timedelta(minutes=45)
    # Many of them: the hour pays clearly more: settled on it.
    planner.idles = [40 * 60.0] * 20 + [50 * 60.0] * 20 + [IDLE_RANGE.total_seconds()] * 10
    planner.settle_idle_keep()
    assert planner.idle_keep == timedelta(minutes=60)
    # The gains: the server's default keep gains nothing; the margin is 5 % of the best,
    # or a twentieth of a cold start where the best gains less than one.
    assert planner._idle_keeps()[1][DEFAULT_KEEP.total_seconds()] == 0.0
    assert IDLE_KEEP_MARGIN == 0.05
    for gain, best, pays in (
        (9.5, 10.0, True),
        (9.49, 10.0, False),
        (0.45, 0.5, True),
        (0.44, 0.5, False),
        (-0.05, 0.0, True),
        (-0.06, 0.0, False),
    ):
        assert still_pays(gain, best) is pays, (gain, best)
    # Settled from MIN_GAPS idle times on.
    few = UsagePlanner(idles=[40 * 60.0] * (MIN_GAPS - 1))
    few.settle_idle_keep()
    assert few.settled_idle_keep is None
    few.idles.append(40 * 60.0)
    few.settle_idle_keep()
    assert few.settled_idle_keep == 45 * 60.0
    # Settled each day as it folds; stored; a value that is no keep reads as none.
    stored = planner.as_dict()
    assert stored["settled_idle_keep"] == 3600.0
    assert UsagePlanner.from_dict(stored).settled_idle_keep == 3600.0
    for odd in (1234.0, True, "3600", None, [3600.0]):
        assert (
            UsagePlanner.from_dict({**stored, "settled_idle_keep": odd}).settled_idle_keep is None
        )
    folding = UsagePlanner()
    for index in range(12):
        folding.observe(at(index, 8, 0))
        folding.observe(at(index, 8, 40))
    folding.advance(at(13, 0, 0))
    assert folding.settled_idle_keep == 45 * 60.0


def test_idle_times_are_counted_up_to_four_hours_and_the_latest_500_kept() -> None:
    planner = UsagePlanner()
    planner.observe(at(0, 8, 0))
    planner.observe(at(0, 8, 20))
    planner.observe(at(1, 8, 20))  # a day later: counts as 4 hours
    assert planner.idles == [1200.0, IDLE_RANGE.total_seconds()]
    for index in range(MAX_GAPS + 5):
        planner.observe(at(2, 8, 0) + timedelta(minutes=index))
    assert len(planner.idles) == MAX_GAPS
    assert planner.idles[-1] == 60.0
    read = UsagePlanner.from_dict(planner.as_dict() | {"idles": [0, 60.0, 14400.0, 14400.5]})
    assert read.idles == [60.0, 14400.0]  # none, and none past the range
    assert (
        UsagePlanner.from_dict({k: v for k, v in planner.as_dict().items() if k != "idles"}).idles
        == []
    )


def test_a_sporadic_model_is_kept_by_its_idle_times_a_rhythmic_one_by_its_sessions() -> None:
    planner = UsagePlanner()
    planner.days = MIN_DAYS
    planner.idles = [40 * 60.0] * 20 + [IDLE_RANGE.total_seconds()] * 10
    assert planner.pattern() is PatternClass.SPORADIC
    assert planner.plan(at(9, 3, 0)).keep == timedelta(minutes=45)
    planner.by_kind["weekday"][42] = 0.5
    assert planner.pattern() is PatternClass.RHYTHMIC
    assert planner.plan(at(9, 3, 0)).keep == DEFAULT_KEEP  # its sessions' gaps: none yet


def test_forecasts_that_miss_make_a_rhythm_sporadic() -> None:
    """Each run of expected bins of a day is checked against its uses as the day folds."""
    planner = UsagePlanner()
    mornings(planner, range(9), 6, 45)  # weekday mornings at 06:45 (checked from day 5)
    assert planner.pattern() is PatternClass.RHYTHMIC
    assert (planner.forecasts, planner.hit_rate) == (2, 1.0)  # days 7 and 8 came
    # Then a rhythm that the days never follow (held expected each day, no use comes).
    misses = 0
    for index in range(9, 9 + 70):
        planner.by_kind["weekday"][42] = 0.5
        planner.by_weekday[day(index).weekday()][42] = 0.5
        planner.advance(day(index + 1))
        misses += 1  # a weekend day too: its weekday share alone reaches EXPECT
        rhythmic = planner.pattern() is PatternClass.RHYTHMIC
        assert rhythmic == (planner.hit_rate >= MIN_HIT_RATE), index
    assert planner.forecasts == 2 + misses
    assert planner.hit_rate == pytest.approx((1 - HIT_WEIGHT) ** misses)
    assert planner.hit_rate < MIN_HIT_RATE
    planner.by_kind["weekday"][42] = 0.5
    assert planner.pattern() is PatternClass.SPORADIC
    planner.hit_rate = MIN_HIT_RATE
    assert planner.pattern() is PatternClass.RHYTHMIC
    planner.hit_rate, planner.forecasts = 0.0, MIN_FORECASTS - 1
    assert planner.pattern() is PatternClass.RHYTHMIC  # too few checked to judge


def test_a_forecast_is_a_hit_when_the_use_comes_a_bin_early() -> None:
    early, late = UsagePlanner(), UsagePlanner()
    for planner in (early, late):
        planner.days = MIN_DAYS
        planner.folded_until = day(0)
        planner.by_kind["weekday"][42] = planner.by_weekday[0][42] = 0.5  # 07:00-07:10
    early.observe(at(0, 6, 55))  # the bin before
    late.observe(at(0, 7, 10))  # the bin after
    early.advance(day(1))
    late.advance(day(1))
    assert (early.forecasts, early.hit_rate) == (1, 1.0)
    assert (late.forecasts, late.hit_rate) == (1, 1.0 - HIT_WEIGHT)


def test_the_days_stretches_are_those_warmed_in_it() -> None:
    """What the contest replays: each expected stretch whose warm-up starts in the day."""
    planner = UsagePlanner()
    # 06:00-07:00 (six bins: an hour, long), 12:00-12:20 (short), 23:50-24:00 (its warm-up
    # starts in the day), 00:00-00:10 (its warm-up starts the day before: not this day's).
    rhythm(planner, dict.fromkeys([*range(36, 42), 72, 73, 143, 0], 0.5))
    lead = timedelta(minutes=5)
    stretches = planner._stretches(day(1), day(2), lead)
    assert [(s.start, s.end, s.long) for s in stretches] == [
        (at(1, 6, 0).timestamp(), at(1, 7, 0).timestamp(), True),
        (at(1, 12, 0).timestamp(), at(1, 12, 20).timestamp(), False),
        (at(1, 23, 50).timestamp(), (at(1, 23, 50) + timedelta(minutes=20)).timestamp(), False),
    ]
    assert all(s.unused_hold == 3600 for s in stretches)
    # A stretch at midnight is warmed the evening before: that day's, not its own.
    midnight = UsagePlanner()
    rhythm(midnight, {0: 0.5})
    assert [s.start for s in midnight._stretches(day(0), day(1), lead)] == [day(1).timestamp()]
    assert [s.start for s in midnight._stretches(day(1), day(2), lead)] == [day(2).timestamp()]
    # With no lead, it is warmed at its start: its own day's.
    assert [s.start for s in midnight._stretches(day(1), day(2), timedelta(0))] == [
        day(1).timestamp()
    ]
    # A day no stretch is expected in: none.
    assert UsagePlanner()._stretches(day(1), day(2), lead) == []


def test_the_contest_starts_replaying_once_the_rhythm_is_trusted() -> None:
    planner = UsagePlanner()
    for index in range(MIN_DAYS + 2):
        planner.observe(at(index, 8, 0))
        planner.observe(at(index, 8, 20))
        planner.advance(day(index + 1))
        # The day that folds with MIN_DAYS learnt already is the first replayed.
        assert planner.contest.days == max(index + 1 - MIN_DAYS, 0)


def test_an_edge_at_the_fold_mark_is_learnt_in_order_and_leads_sort_acting_first() -> None:
    planner = UsagePlanner()
    planner.observe(at(0, 8, 0))
    planner.advance(day(2))
    assert planner.folded_until == day(2)
    days = planner.days
    # An edge exactly at the mark is of a day not folded yet: nothing learnt again.
    planner.observe_edges([Edge(day(2), "binary_sensor.hall", "on")])
    assert planner.days == days
    planner.observe_edges([Edge(day(2) - timedelta(seconds=1), "binary_sensor.hall", "off")])
    assert planner.days == 0  # an edge of a folded day: learnt again from the first use
    moment = int(day(2).timestamp())
    planner.signals = SignalBook(
        {
            ("binary_sensor.b", "on"): EdgeStats([(moment, 300)] * 20, 20, 2),
            ("binary_sensor.a", "on"): EdgeStats([(moment, 300)] * 10 + [(moment, -1)] * 10, 20, 2),
            ("binary_sensor.c", "on"): EdgeStats([(moment, 300)] * 3, 20, 2),
        },
        folded=moment,
    )
    assert [(lead.entity, lead.acts) for lead in planner.leads()] == [
        ("binary_sensor.b", True),
        ("binary_sensor.a", True),
        ("binary_sensor.c", False),
    ]
    # Forgetting one learns again; forgetting none changes nothing (folded again first).
    planner.advance(day(2))
    folded, days, contest = planner.folded_until, planner.days, planner.contest.days
    assert days == 2
    assert (
        planner.keep_signals(
            {"binary_sensor.hall", "binary_sensor.a", "binary_sensor.b", "binary_sensor.c"}
        )
        is False
    )
    assert (planner.folded_until, planner.days, planner.contest.days) == (folded, days, contest)
    assert planner.keep_signals({"binary_sensor.a"}) is True
    assert (planner.days, planner.contest.days) == (0, 0)  # learnt again from the uses
    assert planner.edges.entities() == frozenset()
    fresh = UsagePlanner()
    assert fresh.keep_signals(set()) is False  # nothing to forget, nothing folded


def test_the_load_and_lead_are_stored_to_the_millisecond() -> None:
    assert MOST_SECONDS == 86400.0
    planner = UsagePlanner()
    planner.plan(at(0, 8, 0), timedelta(seconds=61.23456), load=timedelta(seconds=1.23456))
    stored = planner.as_dict()
    assert (stored["load"], stored["lead"]) == (1.235, 61.235)
    # What reads back: a number of seconds from none to a day; else the assumed one.
    for value, read in (
        (0, 0.0),
        (0.5, 0.5),
        (MOST_SECONDS, MOST_SECONDS),
        (MOST_SECONDS + 0.001, ASSUMED_LOAD.total_seconds()),
        (-0.001, ASSUMED_LOAD.total_seconds()),
        (float("inf"), ASSUMED_LOAD.total_seconds()),
        (True, ASSUMED_LOAD.total_seconds()),
    ):
        assert UsagePlanner.from_dict({**stored, "load": value}).load == read, value


def test_until_told_a_model_loads_in_30_seconds_and_is_warmed_90_seconds_ahead() -> None:
    fresh = UsagePlanner()
    assert (fresh.load, fresh.lead) == (30.0, 90.0)
    stored = fresh.as_dict()
    del stored["load"], stored["lead"]
    older = UsagePlanner.from_dict(stored)
    assert (older.load, older.lead) == (30.0, 90.0)


def test_ten_forecasts_that_mostly_missed_make_a_rhythm_sporadic() -> None:
    """A rhythm that expects a use, checked ten times, held one in a fifth of them."""
    planner = UsagePlanner(days=7, forecasts=10, hit_rate=0.2)
    planner.by_kind["weekday"][50] = 0.5
    assert planner.pattern() is PatternClass.SPORADIC
    planner.forecasts = 9
    assert planner.pattern() is PatternClass.RHYTHMIC
