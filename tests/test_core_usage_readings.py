"""What a model's usage entities show (pure, fixed clock): values, attributes, reasons."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.core.usage import UsageRecord
from custom_components.llm_warmth.core.usage_readings import (
    NoUseExpected,
    auto_warm_attributes,
    in_usage_window,
    next_use,
    next_use_attributes,
    no_use_expected,
    score_shown,
)
from custom_components.llm_warmth.core.warm_hold import HoldReason
from custom_components.llm_warmth.core.warm_plan import PatternClass, Plan, UsagePlanner

T = datetime(2026, 11, 2, 7, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
PLAN = Plan(
    pattern=PatternClass.RHYTHMIC,
    warm=False,
    warm_until=None,
    window_start=T,
    window_end=T + 30 * MIN,
    next_use=None,
    keep=timedelta(minutes=7, seconds=33),
    used=False,
)


def test_why_no_use_is_expected() -> None:
    assert no_use_expected(replace(PLAN, pattern=PatternClass.NEW)) is NoUseExpected.LEARNING
    assert no_use_expected(replace(PLAN, pattern=PatternClass.SPORADIC)) is (
        NoUseExpected.NO_RHYTHM
    )
    assert no_use_expected(PLAN) is NoUseExpected.NONE_WITHIN_A_DAY
    assert no_use_expected(replace(PLAN, next_use=T)) is None
    assert no_use_expected(replace(PLAN, next_use=T, pattern=PatternClass.NEW)) is None
    assert [r.value for r in NoUseExpected] == ["learning", "no_rhythm", "none_within_a_day"]


def test_the_next_use_and_its_attributes() -> None:
    assert next_use(None) is None
    assert next_use(replace(PLAN, next_use=T)) == T
    record = UsageRecord(planner=UsagePlanner(days=6))
    assert next_use_attributes(PLAN, record) == {"days_learnt": 6, "reason": "none_within_a_day"}
    assert next_use_attributes(replace(PLAN, next_use=T), record) == {"days_learnt": 6}
    # No plan yet: learning, from no day.
    assert next_use_attributes(None, None) == {"days_learnt": 0, "reason": "learning"}
    # The description's own reasons are asked.
    assert next_use_attributes(PLAN, record, lambda _plan: NoUseExpected.NO_RHYTHM) == {
        "days_learnt": 6,
        "reason": "no_rhythm",
    }


def test_a_scoreboard_figure_as_shown() -> None:
    assert score_shown(2.6, 0) == 3
    assert isinstance(score_shown(2.6, 0), int)
    assert score_shown(1.23456, 2) == 1.23
    assert score_shown(1.23456, 1) == 1.2


def test_in_the_usage_window_from_its_start_until_before_its_end() -> None:
    assert in_usage_window(None, T) is False
    assert not in_usage_window(PLAN, T - timedelta(microseconds=1))
    assert in_usage_window(PLAN, T)
    assert in_usage_window(PLAN, T + 30 * MIN - timedelta(microseconds=1))
    assert not in_usage_window(PLAN, T + 30 * MIN)
    assert in_usage_window(replace(PLAN, window_start=None), T) is False
    assert in_usage_window(replace(PLAN, window_end=None), T) is False


def test_auto_warms_attributes_before_any_record() -> None:
    assert auto_warm_attributes(None, None, T, uses_seen_within=None) == {
        "kept_for": None,
        "kept_until": None,
        "warm_ups": 0,
        "refused_by_the_guard": 0,
        "pattern": None,
        "session_keep_minutes": None,
        "uses_seen_within_seconds": None,
    }


def test_auto_warms_attributes_show_its_hold_while_it_lasts() -> None:
    record = UsageRecord(warmed=3, refused=2)
    record.kept_until, record.kept_for = T + MIN, HoldReason.SESSION_KEEP
    holding = auto_warm_attributes(record, PLAN, T, uses_seen_within=30)
    assert holding == {
        "warm_ups": 3,
        "refused_by_the_guard": 2,
        "kept_for": "session_keep",
        "kept_until": (T + MIN).isoformat(),
        "pattern": "rhythmic",
        "session_keep_minutes": 7.5,
        "uses_seen_within_seconds": 30,
    }
    over = auto_warm_attributes(record, PLAN, T + MIN, uses_seen_within=30)
    assert (over["kept_for"], over["kept_until"]) == (None, None)
    record.kept_for = None
    assert auto_warm_attributes(record, PLAN, T, uses_seen_within=30)["kept_until"] is None
