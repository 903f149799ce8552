"""What a model's usage entities show (pure, fixed clock): values, attributes, reasons."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.core.signal_learning import SignalLead
from custom_components.llm_warmth.core.usage import UsageRecord
from custom_components.llm_warmth.core.usage_readings import (
    RHYTHMS,
    NoSignalActs,
    NoUseExpected,
    auto_warm_attributes,
    in_usage_window,
    next_use,
    next_use_attributes,
    no_use_expected,
    score_shown,
    signal_row,
    signals_reading,
    usage_rhythm,
)
from custom_components.llm_warmth.core.warm_contest import WarmMode
from custom_components.llm_warmth.core.warm_hold import Hold, HoldAction, HoldReason
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
    mode=WarmMode.CLOCK,
)


def test_the_usage_rhythm_says_the_reason_or_that_a_use_is_expected() -> None:
    assert usage_rhythm(None) is None  # never used: no sensor reads it yet
    assert usage_rhythm(replace(PLAN, pattern=PatternClass.NEW)) == "learning"
    assert usage_rhythm(PLAN) == "none_within_a_day"
    assert usage_rhythm(replace(PLAN, next_use=T)) == "use_expected"
    assert usage_rhythm(replace(PLAN, mode=WarmMode.SIGNALS)) == "warmed_by_signals"
    assert ("use_expected", *(r.value for r in NoUseExpected)) == RHYTHMS


def test_why_no_use_is_expected() -> None:
    assert no_use_expected(replace(PLAN, pattern=PatternClass.NEW)) is NoUseExpected.LEARNING
    assert no_use_expected(replace(PLAN, pattern=PatternClass.SPORADIC)) is (
        NoUseExpected.NO_RHYTHM
    )
    assert no_use_expected(PLAN) is NoUseExpected.NONE_WITHIN_A_DAY
    assert no_use_expected(replace(PLAN, next_use=T)) is None
    assert no_use_expected(replace(PLAN, next_use=T, pattern=PatternClass.NEW)) is None
    # Warmed by the signals instead of the clock: no expected stretch, and why.
    signals = replace(PLAN, mode=WarmMode.SIGNALS)
    assert no_use_expected(signals) is NoUseExpected.WARMED_BY_SIGNALS
    assert no_use_expected(replace(PLAN, mode=WarmMode.IDLE_AND_SIGNALS)) is (
        NoUseExpected.WARMED_BY_SIGNALS
    )
    # With the clock, a rhythm without a stretch ahead is none within a day.
    assert no_use_expected(replace(PLAN, mode=WarmMode.CLOCK_AND_SIGNALS)) is (
        NoUseExpected.NONE_WITHIN_A_DAY
    )
    assert no_use_expected(replace(signals, pattern=PatternClass.NEW)) is NoUseExpected.LEARNING
    assert [r.value for r in NoUseExpected] == [
        "learning",
        "no_rhythm",
        "none_within_a_day",
        "warmed_by_signals",
    ]


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
        "signal": None,
        "warm_ups": 0,
        "refused_by_the_guard": 0,
        "pattern": None,
        "warmed_by": None,
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
        "signal": None,
        "pattern": "rhythmic",
        "warmed_by": "clock",
        "session_keep_minutes": 7.5,
        "uses_seen_within_seconds": 30,
    }
    over = auto_warm_attributes(record, PLAN, T + MIN, uses_seen_within=30)
    assert (over["kept_for"], over["kept_until"]) == (None, None)
    record.kept_for = None
    assert auto_warm_attributes(record, PLAN, T, uses_seen_within=30)["kept_until"] is None


LEAD_ON = SignalLead("binary_sensor.hall", "on", timedelta(minutes=12), 0.64, 9, 5, 3.24, True)
LEAD_OFF = SignalLead("binary_sensor.hall", "off", timedelta(seconds=20), 0.2, 2, 8, 1.1, False)
LEAD_GONE = SignalLead("person.gone", "home", timedelta(minutes=5), 0.9, 9, 1, 4.0, True)


def test_a_signal_as_an_attributes_row() -> None:
    assert signal_row(LEAD_ON, "Hall motion") == {
        "entity_id": "binary_sensor.hall",
        "name": "Hall motion",
        "edge": "on",
        "within_minutes": 12,
        "share_percent": 64,
        "led": 9,
        "wrong": 5,
        "lift": 3.2,
        "acts": True,
    }
    # No name known: none shown; a hold under a minute reads as 1 minute, never 0.
    assert signal_row(LEAD_OFF) == {
        "entity_id": "binary_sensor.hall",
        "edge": "off",
        "within_minutes": 1,
        "share_percent": 20,
        "led": 2,
        "wrong": 8,
        "lift": 1.1,
        "acts": False,
    }


def test_the_signals_sensor_counts_those_that_warm_and_says_why_none_does() -> None:
    leads = [LEAD_ON, LEAD_GONE, LEAD_OFF]
    by_signals = replace(PLAN, mode=WarmMode.CLOCK_AND_SIGNALS)
    value, attributes = signals_reading(by_signals, leads, ["binary_sensor.hall"], {})
    # Only the entities still chosen: a forgotten one's lead is not shown.
    assert value == 1
    assert attributes == {
        "chosen": 1,
        "warmed_by": "clock_and_signals",
        "signals": [signal_row(LEAD_ON), signal_row(LEAD_OFF)],
    }
    # A signal that acts while the contest kept the clock alone: none warms it, and why.
    value, attributes = signals_reading(PLAN, leads, ["binary_sensor.hall"], {})
    assert (value, attributes["reason"], attributes["warmed_by"]) == (
        0,
        "time_only_cheaper",
        "clock",
    )
    # Chosen, none acts yet: still learning; none chosen: say so.
    assert signals_reading(by_signals, [LEAD_OFF], ["binary_sensor.hall"], {})[1]["reason"] == (
        "learning"
    )
    assert signals_reading(by_signals, [], ["binary_sensor.hall"], {})[1]["reason"] == "learning"
    assert signals_reading(None, [], [], {}) == (
        0,
        {"chosen": 0, "warmed_by": None, "signals": [], "reason": "none_chosen"},
    )
    assert [r.value for r in NoSignalActs] == ["none_chosen", "learning", "time_only_cheaper"]
    # Its names, where the shell knows them.
    named = signals_reading(
        by_signals, [LEAD_ON], ["binary_sensor.hall"], {"binary_sensor.hall": "Hall"}
    )
    assert named[1]["signals"] == [signal_row(LEAD_ON, "Hall")]


def test_auto_warms_attributes_name_the_signal_while_its_hold_lasts() -> None:
    record = UsageRecord()
    hold = Hold(HoldAction.LOAD, T + MIN, HoldReason.SIGNAL)
    record.signal_warm_up_sent(T, hold, LEAD_ON)
    held = auto_warm_attributes(record, PLAN, T, uses_seen_within=None)
    assert (held["kept_for"], held["signal"]) == ("signal", signal_row(LEAD_ON))
    assert auto_warm_attributes(record, PLAN, T + MIN, uses_seen_within=None)["signal"] is None
    # Kept for a session since: the signal is no longer why.
    record.kept(Hold(HoldAction.KEEP, T + 2 * MIN, HoldReason.SESSION_KEEP))
    assert auto_warm_attributes(record, PLAN, T, uses_seen_within=None)["signal"] is None


def test_only_the_chosen_entities_signals_count_and_an_hours_hold_reads_as_sixty() -> None:
    by_signals = replace(PLAN, mode=WarmMode.SIGNALS)
    # Acting, but no longer chosen: not counted, no reason that says it acts.
    value, attributes = signals_reading(
        by_signals, [LEAD_GONE, LEAD_OFF], ["binary_sensor.hall"], {}
    )
    assert (value, attributes["reason"]) == (0, "learning")
    value, attributes = signals_reading(PLAN, [LEAD_GONE], ["binary_sensor.hall"], {})
    assert attributes["reason"] == "learning"
    hour = SignalLead("binary_sensor.hall", "on", timedelta(hours=1), 0.5, 5, 5, 2.0, True)
    assert signal_row(hour)["within_minutes"] == 60
