"""The warm-policy benchmark's world (``benchmarks/warm_*.py``): answers worked out by hand.

The benchmark prints figures and asserts nothing; what it counts is checked here: its
self-test's small traces, a trace file read in its stated zone, the guard's release, the
frontier, and the planner's row going through the integration's own decision.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from benchmarks import planner_replay
from benchmarks.planner_replay import planner
from benchmarks.warm_goals import frontier, reach
from benchmarks.warm_policy import report, self_test
from benchmarks.warm_replay import (
    SERVER_KEEP,
    Server,
    guard_holes,
    keep_alive,
    play,
    starved_minutes,
)
from benchmarks.warm_traces import Model, Trace, from_csv, household, read_stamp
from custom_components.llm_warmth.core.warm_plan import PatternClass, Plan

UTC_ZONE = ZoneInfo("UTC")


@pytest.mark.parametrize("check", self_test(), ids=lambda check: check[0])
def test_every_self_test_check_holds(check: tuple[str, object, object]) -> None:
    _what, expected, got = check
    assert got == expected


def test_a_trace_file_is_read_in_its_stated_zone(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(
        "timestamp,model\n"
        "2026-03-01T07:00:00,a\n"  # naive: Amsterdam's 07:00 is 06:00 UTC
        "2026-03-01T07:00:00+00:00,a\n"  # an offset wins over the zone
        "1772352000,b\n"  # seconds since the epoch
        "\n"
        "broken\n"
    )
    trace = from_csv(
        path, zone=ZoneInfo("Europe/Amsterdam"), gib=6, load=8, gpu_gib=12, service_gib=7
    )
    six = datetime(2026, 3, 1, 6, 0, tzinfo=UTC).timestamp()
    assert trace.requests == {"a": [six, six + 3600], "b": [1772352000.0]}
    assert trace.models["a"] == Model("a", 6, 8)
    assert (trace.gpu_gib, trace.service_gib) == (12, 7)
    assert "Europe/Amsterdam" in trace.name
    empty = tmp_path / "empty.csv"
    empty.write_text("timestamp,model\n")
    with pytest.raises(SystemExit, match="no 'timestamp,model' line"):
        from_csv(empty, zone=UTC_ZONE, gib=1, load=1, gpu_gib=2, service_gib=1)
    assert read_stamp("12.5", UTC_ZONE) == 12.5


def test_a_warm_up_the_model_is_in_already_loads_nothing_and_a_shorter_one_cuts_nothing() -> None:
    server = Server(20)
    assert server.request(0, SERVER_KEEP) == 20
    server.hold(100, 200)  # resident: kept, not loaded again
    assert server.request(150, SERVER_KEEP) == 0
    server.set_until(500, 500)  # let go at 500 (its keep ended at 450: gone already)
    assert server.request(600, 0) == 20
    assert server.finish(1000) == [(0, 450), (600, 620)]


def test_the_guard_lets_go_of_the_largest_model_held_by_choice_until_the_service_fits() -> None:
    models = {"big": Model("big", 14, 30), "small": Model("small", 6, 10)}
    trace = Trace(
        name="guard",
        start=0,
        end=7200,
        zone=UTC_ZONE,
        models=models,
        requests={"big": [10.0], "small": [10.0]},
        gpu_gib=24,
        service_gib=10,
        service=[(3600.0, 5400.0)],
    )
    long_keep = keep_alive(7200)
    free = play(trace, long_keep)
    assert starved_minutes(trace, free, (0, 7200)) == 30
    holes = guard_holes(trace, {name: o.chosen for name, o in free.items()})
    assert holes == {"big": [(3600.0, 5400.0)], "small": []}  # 6 + 10 fit in 24
    guarded = play(trace, long_keep, guarded=True)
    assert starved_minutes(trace, guarded, (0, 7200)) == 0
    # Let go at the service's start, the small one kept to its 2 hours.
    assert guarded["big"].held == [(10.0, 3600.0)]
    assert guarded["small"].held == [(10.0, 7200.0)]


def test_the_frontier_is_read_between_its_keeps_and_held_at_its_ends() -> None:
    points = [(10.0, 0.5), (20.0, 0.3), (40.0, 0.1)]
    assert frontier(points, 5) == 0.5
    assert frontier(points, 30) == pytest.approx(0.2)
    assert frontier(points, 80) == 0.1
    assert frontier([(10.0, 0.5), (10.0, 0.4)], 10) == 0.4  # of equal memory, the fewer


def test_a_goal_below_the_frontier_at_the_hybrids_memory_is_said_out_of_reach() -> None:
    assert reach(0.3, 0.2) == " (no fixed keep reaches it in that memory)"
    assert reach(0.2, 0.2) == ""
    assert reach(0.1, 0.2) == ""


def test_the_planner_row_warms_a_routine_ahead_through_the_integrations_decision() -> None:
    """Three weeks of a household: the planner loads ahead of mornings the default misses."""
    trace = household(3, 1)
    results = play(trace, planner, guarded=True)
    default = play(trace, keep_alive(SERVER_KEEP))
    for name in ("assistant", "coder"):
        waits = [w for _, w in results[name].waits]
        default_waits = [w for _, w in default[name].waits]
        assert len(waits) == len(trace.requests[name])
        assert sum(w > 0 for w in waits) < sum(w > 0 for w in default_waits) / 2
    lines, met, tested = report(trace)
    assert lines[-1] == f"  goals met on this trace: {met} of {tested}"
    assert tested > 0
    assert any("frontier" in line for line in lines)


def test_the_planner_row_renews_a_long_hold_a_piece_at_a_time_without_a_break(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four hours held in 30-minute pieces: renewed at the minute after 15 are left.

    The planner is given one answer (an evening under way until 22:00); the replay must
    renew each piece before it runs out, as usage.py's minute tick does, not let the model
    go and load it again every half hour.
    """
    start = datetime(2026, 3, 2, 18, 0, tzinfo=UTC).timestamp()
    until = datetime(2026, 3, 2, 22, 0, tzinfo=UTC)

    class Evening:
        def observe(self, _when: datetime) -> None:
            pass

        def plan(self, now: datetime, _lead: timedelta, *, load: timedelta) -> Plan:
            assert load == timedelta(seconds=20)  # the model's cold load, for the contest
            held = now < until
            return Plan(
                pattern=PatternClass.RHYTHMIC,
                warm=held,
                warm_until=until if held else None,
                window_start=until - timedelta(hours=4),
                window_end=until,
                next_use=None,
                keep=timedelta(minutes=5),
                used=False,
                expected_until=until if held else None,
            )

    monkeypatch.setattr(planner_replay, "UsagePlanner", Evening)
    trace = Trace(
        name="evening",
        start=start,
        end=start + 5 * 3600,
        zone=ZoneInfo("UTC"),
        models={"m": Model("m", 8.0, 20.0)},
        requests={"m": [start, start + 3 * 3600 + 50 * 60]},
    )
    result = planner(trace, "m", [])
    assert [w for _, w in result.waits] == [20.0, 0.0]  # one load, the late request warm
    assert result.held == [(start, until.timestamp())]  # one stretch, to the planner's time
