"""The planner with the household's signals, without Home Assistant (the clock passed in).

Edges recorded beside the uses, learnt one day at a time with the contest of the ways of
warming; what auto-warm sends on an edge (``core.signal_warm``), and the event it fires.
"""

from __future__ import annotations

from datetime import datetime, timedelta
import random
from zoneinfo import ZoneInfo

import pytest

from custom_components.llm_warmth.core.signal_edges import Edge
from custom_components.llm_warmth.core.signal_learning import SignalLead
from custom_components.llm_warmth.core.signal_warm import auto_warm_event, signal_warm_up
from custom_components.llm_warmth.core.warm_contest import Contest, WarmMode, Way
from custom_components.llm_warmth.core.warm_hold import Hold, HoldAction, HoldReason, piece
from custom_components.llm_warmth.core.warm_plan import (
    ASSUMED_LEAD,
    ASSUMED_LOAD,
    MOST_SECONDS,
    PatternClass,
    UsagePlanner,
)

ZONE = ZoneInfo("Europe/Amsterdam")
DAY0 = datetime(2026, 9, 7, tzinfo=ZONE)  # a Monday
MOTION = "binary_sensor.bedroom_motion"
LOAD = timedelta(seconds=8)
LEAD = LOAD + timedelta(seconds=60)


def at(day: int, hour: float) -> datetime:
    return (DAY0 + timedelta(days=day, hours=hour)).astimezone(ZONE)


def mornings(days: int, *, seed: int = 1, lead_minutes: float = 6) -> UsagePlanner:
    """A household that wakes between 06:30 and 07:15: the bedroom's motion, then a use.

    The clock learns the three quarters of an hour as an expected stretch and holds the
    model through them every morning; the edge comes ``lead_minutes`` before each use.
    """
    rng = random.Random(seed)
    planner = UsagePlanner()
    for index in range(days):
        wake = at(index, rng.uniform(6.5, 7.25))
        planner.observe_edges([Edge(wake, MOTION, "on")])
        planner.observe(wake + timedelta(minutes=lead_minutes))
        # The rest of the day: a session in the evening, at no set hour either.
        evening = at(index, rng.uniform(17, 22))
        planner.observe(evening)
        planner.observe(evening + timedelta(minutes=3))
        planner.plan(at(index, 23.9), LEAD, load=LOAD)
    return planner


def test_a_signal_that_leads_the_uses_warms_the_model_for_its_lead() -> None:
    planner = mornings(28)
    planner.plan(at(28, 1), LEAD, load=LOAD)
    way = planner.way()
    assert way.mode.signals, planner.contest.as_dict()
    (lead,) = [lead for lead in planner.leads() if lead.acts]
    assert (lead.entity, lead.state) == (MOTION, "on")
    assert timedelta(minutes=6) <= lead.hold <= timedelta(minutes=7)
    assert lead.share == pytest.approx(1.0)
    assert lead.lift > 2
    # The edge at 06:00 tomorrow: a load now, held for the lead, asked for as a piece.
    edge = Edge(at(28, 6), MOTION, "on")
    sent = signal_warm_up(planner, edge, edge.at, held=False, loading=False)
    assert sent is not None
    assert sent.hold == Hold(
        HoldAction.LOAD, edge.at + lead.hold, HoldReason.SIGNAL, piece(edge.at + lead.hold, edge.at)
    )
    assert sent.lead == lead
    # Warm already, or a load that runs: nothing; another edge: nothing.
    assert signal_warm_up(planner, edge, edge.at, held=True, loading=False) is None
    assert signal_warm_up(planner, edge, edge.at, held=False, loading=True) is None
    other = Edge(at(28, 6), "person.anna", "home")
    assert signal_warm_up(planner, other, edge.at, held=False, loading=False) is None
    # An edge whose hold is over by now (told late): nothing.
    late = edge.at + lead.hold
    assert signal_warm_up(planner, edge, late, held=False, loading=False) is None


def test_a_signal_too_close_to_its_use_is_no_help() -> None:
    # The motion comes 5 s before the use: less than the load; nothing gained.
    planner = mornings(28, lead_minutes=5 / 60)
    planner.plan(at(28, 1), LEAD, load=LOAD)
    assert not planner.way().mode.signals
    assert not [lead for lead in planner.leads() if lead.acts]
    edge = Edge(at(28, 6), MOTION, "on")
    assert signal_warm_up(planner, edge, edge.at, held=False, loading=False) is None


def test_without_signals_the_planner_is_the_time_only_one() -> None:
    with_edges, without = mornings(21), UsagePlanner()
    rng = random.Random(1)
    for index in range(21):
        wake = at(index, rng.uniform(6.5, 7.25))
        without.observe(wake + timedelta(minutes=6))
        evening = at(index, rng.uniform(17, 22))
        without.observe(evening)
        without.observe(evening + timedelta(minutes=3))
        without.plan(at(index, 23.9), LEAD, load=LOAD)
    clock, idle = Way(WarmMode.CLOCK), Way(WarmMode.IDLE)
    # The same uses: the same time-only scores.
    for way in (clock, idle):
        assert with_edges.contest.scores[way] == pytest.approx(without.contest.scores[way])
    assert not without.way().mode.signals
    assert without.leads() == []


def test_an_edge_older_than_the_days_folded_has_everything_learnt_again() -> None:
    planner = mornings(10)
    learnt = planner.signals.as_dict()
    days = planner.days
    # The recorder's history of a new signal, read after the days were folded.
    past = [Edge(at(i, 4), "person.anna", "home") for i in range(10)]
    assert planner.observe_edges(past) == 10
    assert planner.folded_until is not None
    assert planner.folded_until <= at(0, 0)  # learnt again from the first use's day
    planner.plan(at(10, 1), LEAD, load=LOAD)
    assert planner.days == days + 1
    assert ("person.anna", "home") in planner.signals.stats
    assert planner.signals.as_dict()["edges"].keys() >= learnt["edges"].keys()  # type: ignore[union-attr]
    # An edge kept already, again: nothing new, nothing learnt again.
    assert planner.observe_edges(past[:1]) == 0


def test_forgetting_a_signal_learns_again_without_it() -> None:
    planner = mornings(28)
    planner.plan(at(28, 1), LEAD, load=LOAD)
    assert planner.way().mode.signals
    assert not planner.keep_signals({MOTION})  # kept: nothing changes
    assert planner.keep_signals(set())
    planner.plan(
        at(
            28,
            1,
        ),
        LEAD,
        load=LOAD,
    )
    assert planner.edges.count() == 0
    assert planner.leads() == []
    assert not planner.way().mode.signals


def test_a_new_model_is_warmed_by_its_idle_times_whatever_its_signals() -> None:
    planner = mornings(3)
    assert planner.pattern() is PatternClass.NEW
    assert planner.way() == Way(WarmMode.IDLE)
    assert planner.mode() is WarmMode.IDLE


def test_the_load_and_lead_are_kept_for_the_days_replayed() -> None:
    planner = UsagePlanner()
    assert (planner.load, planner.lead) == (
        ASSUMED_LOAD.total_seconds(),
        ASSUMED_LEAD.total_seconds(),
    )
    planner.plan(at(0, 1), timedelta(seconds=100), load=timedelta(seconds=40))
    assert (planner.load, planner.lead) == (40.0, 100.0)
    planner.plan(at(0, 2))  # no lead, no load told: as they were
    assert (planner.load, planner.lead) == (40.0, 100.0)
    planner.plan(at(0, 3), timedelta(days=3), load=timedelta(days=2))
    assert (planner.load, planner.lead) == (MOST_SECONDS, MOST_SECONDS)
    planner.plan(at(0, 4), load=timedelta(seconds=-5))
    assert planner.load == 0.0


def test_the_planner_with_signals_round_trips_and_learns_again_what_does_not_read() -> None:
    planner = mornings(14)
    stored = planner.as_dict()
    assert {"signals", "edges", "contest", "load", "lead"} <= stored.keys()
    read = UsagePlanner.from_dict(stored)
    assert read.as_dict() == stored
    # A store written before signals (1.7): no edges, the contest learnt from the uses.
    older = {k: v for k, v in stored.items() if k not in ("signals", "edges", "contest")}
    relearnt = UsagePlanner.from_dict(older)
    assert relearnt.edges.count() == 0
    relearnt.plan(at(14, 1), LEAD, load=LOAD)
    assert relearnt.contest.days > 0
    # Damaged signals or edges are learnt again, the uses kept.
    for damage in ({"edges": {3: []}}, {"signals": []}, {"contest": {"scores": 1}}):
        again = UsagePlanner.from_dict({**stored, **damage})
        assert again.uses == planner.uses
    assert UsagePlanner.from_dict({**stored, "load": "x", "lead": -1}).load == (
        ASSUMED_LOAD.total_seconds()
    )
    assert UsagePlanner.from_dict({**stored, "lead": float("nan")}).lead == (
        ASSUMED_LEAD.total_seconds()
    )


def test_the_event_of_a_warm_up_says_why() -> None:
    until = at(0, 7)
    hold = Hold(HoldAction.LOAD, until, HoldReason.SIGNAL)
    lead = SignalLead(MOTION, "on", timedelta(minutes=12, seconds=10), 0.6449, 9, 5, 3.0, True)
    assert auto_warm_event("qwen3:8b", hold, lead=lead) == {
        "model": "qwen3:8b",
        "reason": "signal",
        "until": until.isoformat(),
        "signal_entity_id": MOTION,
        "signal_state": "on",
        "within_minutes": 12,
        "share_percent": 64,
    }
    brief = SignalLead(MOTION, "on", timedelta(seconds=20), 1.0, 9, 0, 3.0, True)
    assert auto_warm_event("m", hold, lead=brief)["within_minutes"] == 1  # never "0 min"
    hour = SignalLead(MOTION, "on", timedelta(hours=1), 1.0, 9, 0, 3.0, True)
    assert auto_warm_event("m", hold, lead=hour)["within_minutes"] == 60
    clock = Hold(HoldAction.LOAD, until, HoldReason.EXPECTED_USE)
    assert auto_warm_event("m", clock, expected_at=at(0, 6)) == {
        "model": "m",
        "reason": "expected_use",
        "until": until.isoformat(),
        "expected_at": at(0, 6).isoformat(),
    }


def test_a_contest_not_decided_leaves_the_forecasts_to_choose() -> None:
    planner = mornings(6)
    planner.contest = Contest()
    assert planner.pattern() in (PatternClass.RHYTHMIC, PatternClass.SPORADIC)
    assert not planner.way().mode.signals
