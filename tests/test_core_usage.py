"""Usage's decisions (pure): what counts as a use, the scoreboard, the stored record."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from custom_components.llm_warmth.core.backends.types import ServedRequest
from custom_components.llm_warmth.core.signal_learning import EdgeStats, SignalBook, SignalLead
from custom_components.llm_warmth.core.usage import (
    AGENT_TURN,
    COLD,
    GIB_HOURS,
    HELPED,
    SLACK,
    UsageRecord,
    agent_heard,
    expiry_shows_a_use,
    held_gib_hours,
    local_day,
    local_midnight,
    new_activity,
    on_this_clock,
)
from custom_components.llm_warmth.core.warm_hold import (
    Hold,
    HoldAction,
    HoldReason,
    auto_warm_stretch,
)
from custom_components.llm_warmth.core.warm_plan import PatternClass, Plan

T0 = datetime(2026, 11, 2, 7, 0, tzinfo=UTC)
US = timedelta(microseconds=1)
GIB = 1024**3


def test_the_scoreboard_keeps_the_last_eight_days_and_sums_today_and_the_week() -> None:
    record = UsageRecord()
    first = date(2026, 11, 1)
    for index in range(10):
        record.tally(first + timedelta(days=index), HELPED, 1)
    assert sorted(record.days) == [(first + timedelta(days=i)).isoformat() for i in range(2, 10)]
    record.tally(first + timedelta(days=9), COLD, 2)
    today = first + timedelta(days=9)
    assert record.score(HELPED, today) == (1, 7)  # today, and the 7 days up to it
    assert record.score(COLD, today) == (2, 2)
    # Asked for an earlier day (a clock set back): the days after it are not in its week.
    assert record.score(HELPED, first + timedelta(days=5)) == (1, 4)
    assert UsageRecord().score(GIB_HOURS, today) == (0, 0)


def test_a_warm_up_held_scores_its_gib_hours_once() -> None:
    record = UsageRecord(holding_since=T0, holding_until=T0 + timedelta(hours=2))
    record.holding_bytes, record.holding_loaded = 2 * GIB, True
    record.close_holding(T0 + timedelta(minutes=30), date(2026, 11, 2))
    assert record.days == {"2026-11-02": [0.0, 0.0, 1.0, 0.0]}  # 2 GiB for half an hour
    assert (record.holding_since, record.holding_until, record.holding_loaded) == (
        None,
        None,
        False,
    )
    record.close_holding(T0 + timedelta(hours=1), date(2026, 11, 2))  # nothing held any more
    assert record.days == {"2026-11-02": [0.0, 0.0, 1.0, 0.0]}
    # An end at (or before) its start holds nothing: no row of nothing either.
    empty = UsageRecord(holding_since=T0, holding_bytes=GIB)
    empty.close_holding(T0, date(2026, 11, 2))
    assert (empty.days, empty.holding_since) == ({}, None)
    assert held_gib_hours(T0, T0 + timedelta(hours=3), GIB // 2) == 1.5
    assert held_gib_hours(T0, T0 - timedelta(hours=1), GIB) == 0.0


def test_the_record_round_trips_and_what_does_not_read_is_refused() -> None:
    record = UsageRecord(auto_warm=True, warmed=2, refused=1, warmed_for=T0)
    record.holding_since, record.holding_until = T0, T0 + timedelta(minutes=40)
    record.days = {"2026-11-02": [1.0, 0.0, 0.123456, 2.0]}
    record.holding_reason = HoldReason.SIGNAL
    stored = record.as_dict()
    assert stored["days"] == {"2026-11-02": [1.0, 0.0, 0.1235, 2.0]}
    assert stored["holding_reason"] == "signal"
    assert stored["warmed_for"] == "2026-11-02T07:00:00+00:00"
    read = UsageRecord.from_dict(stored)
    assert (read.auto_warm, read.warmed, read.refused) == (True, 2, 1)
    assert (read.warmed_for, read.holding_since) == (T0, T0)
    assert read.holding_until == T0 + timedelta(minutes=40)
    assert read.days == {"2026-11-02": [1.0, 0.0, 0.1235, 2.0]}
    assert read.holding_reason is HoldReason.SIGNAL
    # A row stored before the signal column (store 1.7) reads with it at 0; a reason
    # that does not read is none.
    older = UsageRecord.from_dict(
        {**stored, "days": {"2026-11-02": [1, 0, 0.5]}, "holding_reason": "weather"}
    )
    assert older.days == {"2026-11-02": [1.0, 0.0, 0.5, 0.0]}
    assert older.holding_reason is None
    assert UsageRecord.from_dict({**stored, "holding_reason": 3}).holding_reason is None
    fresh = UsageRecord()
    assert (fresh.holding_bytes, fresh.holding_loaded, fresh.holding_since) == (0, False, None)
    assert (fresh.auto_warm, fresh.warmed, fresh.refused, fresh.days) == (False, 0, 0, {})
    bare = UsageRecord.from_dict({"planner": stored["planner"]})
    assert (bare.warmed, bare.refused, bare.days, bare.auto_warm) == (0, 0, {}, False)
    assert UsageRecord.from_dict({**stored, "auto_warm": 1}).auto_warm is False
    for row, reads in (
        ([0, 0, 999_999_999.9], True),
        ([0, 0, 1, 999_999_999.9], True),
        ([0, 0, 1e9], False),
        ([0, 0, 1, 1e9], False),
        ([0, 0, -0.1], False),
        ([0, 0, 0, -0.1], False),
        ([0, True, 0], False),
        ([0, 0], False),
        ([0, 0, 0, 0, 0], False),
        ("0,0,0", False),
    ):
        values = {**stored, "days": {"2026-11-02": row}}
        if reads:
            # Four columns: one stored before the signal column reads it as 0.
            padded = [*row, 0.0][:4]
            assert UsageRecord.from_dict(values).days["2026-11-02"] == padded
        else:
            with pytest.raises(ValueError, match="scoreboard"):
                UsageRecord.from_dict(values)
    for damage, message in (
        ({**stored, "warmed": -1}, "count"),
        ({**stored, "refused": 1.5}, "count"),
        ({**stored, "warmed": True}, "count"),
        ({**stored, "days": {"yesterday": [0, 0, 0]}}, "scoreboard"),
        ({**stored, "days": {3: [0, 0, 0]}}, "scoreboard"),
        ({**stored, "days": []}, "scoreboard"),
        ([], "usage record"),
    ):
        with pytest.raises(ValueError, match=message):
            UsageRecord.from_dict(damage)
    # A time without its zone, or not a time, is no time.
    for value in ("2026-11-02T07:00:00", "soon", 7, None):
        assert UsageRecord.from_dict({**stored, "warmed_for": value}).warmed_for is None


def test_an_expiry_that_moved_or_a_model_new_since_the_last_poll_is_a_use() -> None:
    previous = {"a": T0, "unknown": None}
    assert expiry_shows_a_use(previous, "new", T0)  # loaded since the last poll
    assert not expiry_shows_a_use(previous, "a", T0)
    assert not expiry_shows_a_use(previous, "a", T0 + timedelta(seconds=2))  # the clock's jitter
    assert expiry_shows_a_use(previous, "a", T0 + timedelta(seconds=2) + US)
    assert expiry_shows_a_use(previous, "a", T0 - timedelta(seconds=3))  # a shorter keep
    assert expiry_shows_a_use(previous, "a", None) is False
    assert expiry_shows_a_use(previous, "unknown", T0) is False


def test_an_agents_turn_is_heard_from_two_minutes_before_a_span_to_its_end() -> None:
    begin, end = T0, T0 + timedelta(seconds=10)
    assert agent_heard([begin - AGENT_TURN], begin, end)
    assert not agent_heard([begin - AGENT_TURN - US], begin, end)
    assert agent_heard([end + SLACK], begin, end)
    assert not agent_heard([end + SLACK + US], begin, end)
    assert not agent_heard([], begin, end)
    assert agent_heard([T0 - timedelta(hours=1), begin + timedelta(seconds=5)], begin, end)
    assert (timedelta(minutes=2), timedelta(seconds=2)) == (AGENT_TURN, SLACK)


def test_a_message_is_on_this_clock_within_the_slack() -> None:
    assert on_this_clock(T0 - SLACK, T0)
    assert on_this_clock(T0 + SLACK, T0)
    assert not on_this_clock(T0 - SLACK - US, T0)
    assert not on_this_clock(T0 + SLACK + US, T0)


def served(id_: int, status: int = 200) -> ServedRequest:
    return ServedRequest(
        id=id_, model="m", ended_at=T0 + timedelta(seconds=id_), seconds=0.5, status=status
    )


def test_llama_swaps_activity_counts_what_is_new_and_served() -> None:
    first = new_activity([served(3), served(1), served(2)], None)
    assert (first.newest, first.new) == (3, ())  # the baseline
    page = [served(5), served(2), served(4, 400), served(6, 399), served(3)]
    read = new_activity(page, first.newest)
    assert read.newest == 6
    assert [r.id for r in read.new] == [5, 6]  # in order; failed (400) and seen ones not
    assert new_activity(page, 6).new == ()
    # Ids that began again: llama-swap restarted while we looked; its log is in memory, so
    # all of it came after the restart (the served ones are uses).
    restarted = new_activity([served(1), served(2, 500), served(3)], 6)
    assert restarted.newest == 3
    assert [r.id for r in restarted.new] == [1, 3]
    assert new_activity([served(6)], 6).new == ()  # the same newest: nothing began again
    # An empty page: nothing new, the mark stays.
    assert new_activity([], 6) == new_activity([], 6)
    assert new_activity([], 6).newest == 6
    # An empty first page (a llama-swap that served nothing yet): what comes next is new.
    empty = new_activity([], None)
    assert (empty.newest, empty.new) == (0, ())
    assert [r.id for r in new_activity([served(1), served(2)], empty.newest).new] == [1, 2]


def plan(start: datetime | None, end: datetime | None, *, used: bool = False) -> Plan:
    return Plan(
        pattern=PatternClass.RHYTHMIC,
        warm=False,
        warm_until=None,
        window_start=start,
        window_end=end,
        next_use=start,
        keep=timedelta(minutes=5),
        used=used,
        expected_until=None if end is None or used else end,
    )


def test_auto_warm_is_due_from_its_lead_until_the_stretch_ends_once() -> None:
    start, end = T0, T0 + timedelta(minutes=30)
    lead = timedelta(seconds=90)
    stretch = plan(start, end)
    assert auto_warm_stretch(stretch, start - lead, lead, None) == (start, end)
    assert auto_warm_stretch(stretch, start - lead - US, lead, None) is None
    assert auto_warm_stretch(stretch, end - US, lead, None) == (start, end)
    assert auto_warm_stretch(stretch, end, lead, None) is None
    assert auto_warm_stretch(stretch, start, lead, start) is None  # warmed for it already
    assert auto_warm_stretch(stretch, start, lead, start - timedelta(days=1)) == (start, end)
    assert auto_warm_stretch(plan(start, end, used=True), start, lead, None) is None
    assert auto_warm_stretch(plan(None, None), start, lead, None) is None
    assert auto_warm_stretch(plan(start, None), start, lead, None) is None
    assert auto_warm_stretch(plan(None, end), start, lead, None) is None
    assert auto_warm_stretch(None, start, lead, None) is None


def test_the_diagnostics_summary_counts_and_the_weeks_scores() -> None:
    record = UsageRecord(auto_warm=True, warmed=3, refused=1)
    today = date(2026, 11, 9)
    record.tally(today, HELPED, 2)
    record.tally(today - timedelta(days=6), COLD, 1)
    record.tally(today - timedelta(days=7), COLD, 5)  # a week ago: not in it
    record.tally(today, GIB_HOURS, 1.23456)
    for day in range(3):
        record.planner.observe(T0 + timedelta(days=day))
    assert record.summary(today) == {
        "uses": 3,
        "days_learnt": record.planner.days,
        "pattern": record.planner.pattern().value,
        "auto_warm": True,
        "warmed": 3,
        "refused": 1,
        "scoreboard_7_days": [2, 1, 1.235, 0],
        "signals": 0,
        "signals_acting": 0,
        "edges": 0,
        "warmed_by": "idle",
    }


def test_the_uses_since_a_moment_count_that_moment() -> None:
    record = UsageRecord()
    for minutes in (0, 30, 60):
        record.planner.observe(T0 + timedelta(minutes=minutes))
    assert record.uses_since(T0 + timedelta(minutes=30)) == 2
    assert record.uses_since(T0 + timedelta(minutes=30) + US) == 1
    assert record.uses_since(T0 + timedelta(hours=2)) == 0


BERLIN = ZoneInfo("Europe/Berlin")


def test_the_households_day_and_midnight_are_read_in_its_zone() -> None:
    late = datetime(2026, 11, 2, 23, 30, tzinfo=UTC)  # 00:30 on the 3rd in Berlin
    assert local_day(late, UTC) == date(2026, 11, 2)
    assert local_day(late, BERLIN) == date(2026, 11, 3)
    assert local_midnight(late, BERLIN) == datetime(2026, 11, 3, tzinfo=BERLIN)
    assert local_midnight(late, UTC) == datetime(2026, 11, 2, tzinfo=UTC)


def test_uses_today_count_from_the_local_midnight() -> None:
    record = UsageRecord()
    hour = timedelta(hours=1)
    for at in (T0 - 8 * hour - US, T0 - 8 * hour, T0 - 7 * hour, T0):
        record.planner.uses.append(at)
    # 07:00 UTC is 08:00 in Berlin: its midnight is 23:00 UTC the day before.
    assert record.uses_today(T0, UTC) == 2
    assert record.uses_today(T0, BERLIN) == 3
    assert record.plan(T0, BERLIN, timedelta(0)).pattern is PatternClass.NEW


def test_a_use_while_a_warm_up_holds_the_model_scores_it_once() -> None:
    record = UsageRecord(holding_since=T0, holding_until=T0 + timedelta(hours=1))
    record.holding_bytes = GIB
    record.use(T0 - US, UTC, held=True)  # before the warm-up: not thanks to it
    assert record.days == {}
    assert record.holding_since == T0
    record.use(T0 + timedelta(hours=1), UTC, held=True)
    assert record.days == {"2026-11-02": [1.0, 0.0, 1.0, 0.0]}
    assert record.holding_since is None
    assert len(record.planner.uses) == 2
    # Not held at the use (evicted): no warm use, the hold still ends there.
    gone = UsageRecord(holding_since=T0, holding_bytes=GIB)
    gone.use(T0 + timedelta(hours=2), BERLIN, held=False)
    assert gone.days == {"2026-11-02": [0.0, 0.0, 2.0, 0.0]}
    assert gone.holding_since is None


def test_a_use_a_signal_warmed_the_model_for_is_scored_apart_from_the_clocks() -> None:
    lead = SignalLead("binary_sensor.hall", "on", timedelta(minutes=10), 0.7, 7, 3, 3.0, True)
    record = UsageRecord()
    load = Hold(HoldAction.LOAD, T0 + timedelta(minutes=10), HoldReason.SIGNAL)
    record.signal_warm_up_sent(T0, load, lead)
    assert (record.holding_since, record.holding_until) == (T0, load.until)
    assert record.holding_reason is HoldReason.SIGNAL
    assert (record.kept_until, record.kept_for) == (load.until, HoldReason.SIGNAL)
    assert (record.signal, record.signal_at) == (lead, T0)
    record.warm_up_loaded(GIB)
    record.use(T0 + timedelta(minutes=6), UTC, held=True)
    # Warm thanks to a signal, not to the clock: its own column; the hold ended at the use.
    assert record.days == {"2026-11-02": [0.0, 0.0, 0.1, 1.0]}
    assert (record.holding_since, record.holding_reason) == (None, None)
    # The clock's warm-up scores in its own column.
    clock = UsageRecord()
    clock.warm_up_sent(
        T0, T0, Hold(HoldAction.LOAD, T0 + timedelta(hours=1), HoldReason.EXPECTED_USE)
    )
    assert clock.holding_reason is HoldReason.EXPECTED_USE
    clock.use(T0 + timedelta(minutes=6), UTC, held=True)
    assert clock.days["2026-11-02"][0] == 1.0
    assert clock.days["2026-11-02"][3] == 0.0
    # A keep of a resident model on a signal is no warm-up of its own: nothing held anew.
    kept = UsageRecord()
    keep = Hold(HoldAction.KEEP, T0 + timedelta(minutes=10), HoldReason.SIGNAL)
    kept.signal_warm_up_sent(T0, keep, lead)
    assert (kept.holding_since, kept.holding_reason, kept.kept_for) == (
        None,
        None,
        HoldReason.SIGNAL,
    )


def test_the_diagnostics_count_the_signals_that_act_and_name_none() -> None:
    record = UsageRecord()
    moment = int(T0.timestamp())
    record.planner.signals = SignalBook(
        {
            ("binary_sensor.hall", "on"): EdgeStats([(moment, 300)] * 20, 20, 2),
            ("binary_sensor.door", "on"): EdgeStats([(moment, 300)] * 20, 20, 2),
            ("binary_sensor.tv", "on"): EdgeStats([(moment, 300)] * 2, 20, 2),
        },
        folded=moment,
    )
    summary = record.summary(T0.date())
    assert (summary["signals_acting"], summary["signals"], summary["edges"]) == (2, 0, 0)
    assert "binary_sensor.hall" not in str(summary)


def test_a_household_cold_start_ends_the_hold_without_a_warm_use() -> None:
    record = UsageRecord(holding_since=T0, holding_bytes=GIB)
    late = datetime(2026, 11, 2, 23, 30, tzinfo=UTC)
    record.cold_start(late, BERLIN)
    assert record.days == {"2026-11-03": [0.0, 1.0, 16.5, 0.0]}
    assert record.holding_since is None


def test_a_hold_is_over_at_its_stretchs_end_and_let_go_once_loaded() -> None:
    until = T0 + timedelta(hours=1)
    record = UsageRecord(holding_since=T0, holding_until=until, holding_bytes=GIB)
    record.hold_over(until - US, UTC)
    assert record.holding_until == until
    record.hold_over(until, UTC)  # spent until its end
    assert record.days == {"2026-11-02": [0.0, 0.0, 1.0, 0.0]}
    assert record.holding_until is None
    record.hold_over(until, UTC)  # nothing held: nothing
    # Let go by the server: only a warm-up whose load answered.
    loading = UsageRecord(holding_since=T0, holding_bytes=GIB)
    loading.let_go(until, UTC)
    assert loading.holding_since == T0
    loading.holding_loaded = True
    loading.let_go(until, UTC)
    assert (loading.holding_since, loading.days) == (None, {"2026-11-02": [0.0, 0.0, 1.0, 0.0]})


def test_a_warm_ups_course_sent_refused_loaded_failed_and_kept() -> None:
    record = UsageRecord()
    assert record.warm_up_refused(T0)
    assert record.warm_up_refused(T0) is False  # counted once per stretch
    assert record.warm_up_refused(T0 + timedelta(days=1))
    assert record.refused == 2
    hold = Hold(HoldAction.LOAD, T0 + timedelta(hours=1), HoldReason.EXPECTED_USE)
    record.warm_up_sent(T0, T0 - timedelta(minutes=2), hold)
    assert (record.warmed_for, record.holding_since, record.holding_until) == (
        T0,
        T0 - timedelta(minutes=2),
        T0 + timedelta(hours=1),
    )
    assert (record.kept_until, record.kept_for) == (hold.until, HoldReason.EXPECTED_USE)
    record.warm_up_loaded(3 * GIB)
    assert (record.warmed, record.holding_loaded, record.holding_bytes) == (1, True, 3 * GIB)
    record.warm_up_failed()
    assert (record.holding_since, record.holding_until) == (None, None)
    record.warm_up_loaded(GIB)  # answered after its hold ended: holds nothing
    assert (record.warmed, record.holding_loaded) == (2, False)
    keep = Hold(HoldAction.KEEP, T0 + timedelta(minutes=20), HoldReason.SESSION_KEEP)
    record.kept(keep)
    assert (record.kept_until, record.kept_for) == (keep.until, HoldReason.SESSION_KEEP)


def test_what_is_not_stored_is_no_part_of_the_record() -> None:
    """A record read back from the store is the same record as the live one, whatever the
    live one shows for now (a load answered, a refusal, a keep, the signal that warmed)."""
    live = UsageRecord(auto_warm=True, warmed=1)
    live.holding_loaded = True
    live.refused_for = T0
    live.kept_until, live.kept_for = T0 + timedelta(minutes=10), HoldReason.SIGNAL
    live.signal = SignalLead(
        "binary_sensor.motion", "on", timedelta(minutes=5), 0.5, 6, 4, 3.0, True
    )
    live.signal_at = T0
    assert UsageRecord.from_dict(live.as_dict()) == live


def test_a_use_in_the_very_moment_the_warm_up_was_sent_found_it_warm_by_it() -> None:
    record = UsageRecord(holding_since=T0, holding_until=T0 + timedelta(hours=1))
    record.use(T0, UTC, held=True)
    assert record.days["2026-11-02"][0] == 1.0
    assert record.holding_since is None
