"""What auto-warm sends for the planner's answer: load, keep, or nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.core.warm_hold import (
    KEEP_PIECE,
    KEEP_RENEW,
    KEEP_SLACK,
    Hold,
    HoldAction,
    HoldReason,
    decide,
    expiry_with_agent,
    hold,
    hold_reason,
    piece,
    still_asked,
    warm_lead,
)
from custom_components.llm_warmth.core.warm_plan import PatternClass, Plan, UsagePlanner

NOW = datetime(2026, 12, 7, 6, 40, tzinfo=UTC)
MIN = timedelta(minutes=1)


def plan(
    warm_until: datetime | None, window_end: datetime | None = None, *, used: bool = False
) -> Plan:
    return Plan(
        pattern=PatternClass.RHYTHMIC,
        warm=warm_until is not None,
        warm_until=warm_until,
        window_start=None if window_end is None else window_end - 20 * MIN,
        window_end=window_end,
        next_use=None,
        keep=25 * MIN,
        used=used,
        expected_until=None if window_end is None or used else window_end,
    )


def test_why_a_model_is_held() -> None:
    assert hold_reason(plan(None)) is None
    assert hold_reason(plan(NOW + 20 * MIN, NOW + 20 * MIN)) is HoldReason.EXPECTED_USE
    # A use late in the stretch: its session outlasts the stretch.
    assert hold_reason(plan(NOW + 30 * MIN, NOW + 20 * MIN)) is HoldReason.SESSION_KEEP
    assert hold_reason(plan(NOW + 25 * MIN)) is HoldReason.SESSION_KEEP
    # A routine that happened: what holds it is its session, not the stretch.
    assert hold_reason(plan(NOW + 20 * MIN, NOW + 20 * MIN, used=True)) is HoldReason.SESSION_KEEP


def answer(the_plan: Plan, **state: object) -> Hold | None:
    values: dict[str, object] = {
        "held": True,
        "loading": False,
        "expires_at": NOW + 5 * MIN,
        "asked_until": None,
    } | state
    return hold(the_plan, NOW, **values)  # type: ignore[arg-type]


def test_a_resident_model_is_kept_to_the_planners_time_never_shorter() -> None:
    session = plan(NOW + 25 * MIN)
    assert answer(session) == Hold(
        HoldAction.KEEP, NOW + 25 * MIN, HoldReason.SESSION_KEEP, NOW + 25 * MIN
    )
    # The server keeps it long enough already (or for ever): nothing is sent.
    assert answer(session, expires_at=NOW + 25 * MIN - KEEP_SLACK) is None
    assert answer(session, expires_at=NOW + 25 * MIN - KEEP_SLACK - MIN / 60) is not None
    assert answer(session, expires_at=NOW + 2 * 60 * MIN) is None
    assert answer(session, expires_at=None) is None
    # Asked already, not polled since.
    assert answer(session, asked_until=NOW + 25 * MIN) is None
    assert answer(session, asked_until=NOW + 10 * MIN) is not None


def test_a_cold_model_is_loaded_ahead_of_a_stretch_only() -> None:
    stretch = plan(NOW + 20 * MIN, NOW + 20 * MIN)
    assert answer(stretch, held=False, expires_at=None) == Hold(
        HoldAction.LOAD, NOW + 20 * MIN, HoldReason.EXPECTED_USE, NOW + 20 * MIN
    )
    # A session keep does not bring back a model that left.
    assert answer(plan(NOW + 25 * MIN), held=False, expires_at=None) is None
    # Nothing beside a load that runs, nothing once the time is over, nothing to hold.
    assert answer(stretch, held=False, loading=True) is None
    assert answer(stretch, loading=True) is None
    assert answer(plan(NOW), expires_at=NOW - MIN) is None
    assert answer(plan(None)) is None


def test_the_keep_asked_is_whole_seconds_to_the_time() -> None:
    until = Hold(HoldAction.KEEP, NOW + timedelta(seconds=90.2), HoldReason.SESSION_KEEP)
    assert until.keep_seconds(NOW) == 91
    assert until.keep_seconds(NOW + timedelta(seconds=90)) == 1
    assert until.keep_seconds(NOW + MIN * 2) == 1


def test_the_planners_own_answers_after_a_use_and_ahead_of_a_morning() -> None:
    planner = UsagePlanner()
    planner.observe(NOW)
    after = planner.plan(NOW + MIN)
    decided = hold(
        after, NOW + MIN, held=True, loading=False, expires_at=NOW + MIN, asked_until=None
    )
    assert decided == Hold(
        HoldAction.KEEP, NOW + planner.keep, HoldReason.SESSION_KEEP, NOW + planner.keep
    )


def test_the_one_decision_loads_once_per_stretch_keeps_a_resident_model_or_waits() -> None:
    """``decide`` is what usage.py and the benchmark act on: load, keep or nothing."""
    stretch = plan(NOW + 20 * MIN, NOW + 20 * MIN)  # a stretch from NOW on
    start = NOW
    lead = 2 * MIN
    kwargs = {"expires_at": None, "asked_until": None}
    load = decide(stretch, NOW, lead=lead, warmed_for=None, held=False, loading=False, **kwargs)
    assert load == Hold(HoldAction.LOAD, NOW + 20 * MIN, HoldReason.EXPECTED_USE, NOW + 20 * MIN)
    # Loaded for this stretch already (and gone again): not loaded twice.
    assert (
        decide(stretch, NOW, lead=lead, warmed_for=start, held=False, loading=False, **kwargs)
        is None
    )
    # A load runs (ours or another client's): nothing beside it.
    assert (
        decide(stretch, NOW, lead=lead, warmed_for=None, held=False, loading=True, **kwargs) is None
    )
    assert (
        decide(None, NOW, lead=lead, warmed_for=None, held=False, loading=False, **kwargs) is None
    )
    # A session keep never loads a model that left.
    session = plan(NOW + 25 * MIN)
    assert (
        decide(session, NOW, lead=lead, warmed_for=None, held=False, loading=False, **kwargs)
        is None
    )
    # Resident: kept to the planner's time where the server would let it go earlier.
    keep = decide(
        session,
        NOW,
        lead=lead,
        warmed_for=None,
        held=True,
        loading=False,
        expires_at=NOW + 5 * MIN,
        asked_until=None,
    )
    assert keep == Hold(HoldAction.KEEP, NOW + 25 * MIN, HoldReason.SESSION_KEEP, NOW + 25 * MIN)
    assert (
        decide(
            session,
            NOW,
            lead=lead,
            warmed_for=None,
            held=True,
            loading=False,
            expires_at=NOW + 25 * MIN,
            asked_until=None,
        )
        is None
    )


def test_our_keep_holds_until_a_poll_after_its_answer_shows_it_cut() -> None:
    """Ollama's last writer wins: a shorter expiry read after our keep answered is another's."""
    asked, answered = NOW + 20 * MIN, NOW
    after, cut = NOW + timedelta(seconds=2), NOW + 5 * MIN
    assert still_asked(asked, answered, after, cut) is None
    # Within the slack, or as asked: still ours.
    assert still_asked(asked, answered, after, asked - KEEP_SLACK) == asked
    assert still_asked(asked, answered, after, asked - KEEP_SLACK - timedelta(seconds=1)) is None
    assert still_asked(asked, answered, after, asked) == asked
    # A poll read at (or before) the answer may show the old expiry: not taken as a cut.
    assert still_asked(asked, answered, answered, cut) == asked
    assert still_asked(asked, answered, answered - timedelta(seconds=1), cut) == asked
    # Nothing asked, not answered yet, never polled, or no expiry shown: as it was.
    assert still_asked(None, answered, after, cut) is None
    assert still_asked(asked, None, after, cut) == asked
    assert still_asked(asked, answered, None, cut) == asked
    assert still_asked(asked, answered, after, None) == asked


def test_far_from_the_planners_time_a_model_is_kept_a_piece_at_a_time() -> None:
    """An evening stretch held through (4 h on) is asked for 30 minutes at a time.

    On Ollama a request that sends no keep keeps the last one asked for: after the
    stretch, such a request keeps the model a piece more, never the whole evening again.
    """
    assert (timedelta(minutes=30), timedelta(minutes=15)) == (KEEP_PIECE, KEEP_RENEW)
    evening = plan(NOW + 240 * MIN, NOW + 240 * MIN)
    first = answer(evening)  # the server lets it go in 5 minutes
    assert first == Hold(
        HoldAction.KEEP, NOW + 240 * MIN, HoldReason.EXPECTED_USE, NOW + KEEP_PIECE
    )
    assert first is not None
    assert first.keep_seconds(NOW) == 1800
    assert first.expiry == NOW + KEEP_PIECE
    # A cold model ahead of it: loaded for the first piece.
    loaded = answer(evening, held=False, expires_at=None)
    assert loaded == Hold(
        HoldAction.LOAD, NOW + 240 * MIN, HoldReason.EXPECTED_USE, NOW + KEEP_PIECE
    )
    # Renewed once less than 15 minutes of the piece are left, not before.
    assert answer(evening, expires_at=NOW + KEEP_RENEW) is None
    renewed = answer(evening, expires_at=NOW + KEEP_RENEW - timedelta(seconds=1))
    assert renewed is not None
    assert renewed.expiry == NOW + KEEP_PIECE
    assert answer(evening, expires_at=NOW + MIN, asked_until=NOW + KEEP_RENEW) is None
    # The last piece ends at the planner's time exactly, kept within its slack.
    assert piece(NOW + KEEP_PIECE, NOW) == NOW + KEEP_PIECE
    assert piece(NOW + KEEP_PIECE + timedelta(seconds=1), NOW) == NOW + KEEP_PIECE
    assert piece(NOW + MIN, NOW) == NOW + MIN
    last = plan(NOW + KEEP_PIECE, NOW + KEEP_PIECE)
    assert answer(last, expires_at=NOW + KEEP_PIECE - KEEP_SLACK) is None
    final = answer(last, expires_at=NOW + KEEP_RENEW)
    assert final is not None
    assert final.expiry == NOW + KEEP_PIECE
    # A Hold without a piece asks for the planner's time itself.
    assert Hold(HoldAction.KEEP, NOW + MIN, HoldReason.SESSION_KEEP).expiry == NOW + MIN


def test_warming_leads_an_expected_use_by_the_cold_load_and_a_margin() -> None:
    assert warm_lead(12.5) == timedelta(seconds=72.5)
    assert warm_lead(None) == timedelta(seconds=90)  # no load measured yet: 30 s assumed
    assert warm_lead(0.0) == timedelta(seconds=90)


def test_the_agents_own_keep_counts_with_the_servers_expiry() -> None:
    t = datetime(2026, 11, 2, 7, 0, tzinfo=UTC)
    later, sooner = t + timedelta(minutes=10), t + timedelta(minutes=2)
    # No agent: the server's expiry.
    assert expiry_with_agent(later, agent_keep_seconds=None, agent_heard=t) == (False, later)
    # An agent that keeps for ever.
    assert expiry_with_agent(later, agent_keep_seconds=-1, agent_heard=t) == (True, None)
    # Its last turn plus its keep, where later than the server's expiry; never earlier.
    assert expiry_with_agent(sooner, agent_keep_seconds=300, agent_heard=t) == (
        False,
        t + timedelta(minutes=5),
    )
    assert expiry_with_agent(later, agent_keep_seconds=300, agent_heard=t) == (False, later)
    assert expiry_with_agent(None, agent_keep_seconds=300, agent_heard=t) == (
        False,
        t + timedelta(minutes=5),
    )
    assert expiry_with_agent(later, agent_keep_seconds=0, agent_heard=t) == (False, later)
    # Not heard yet: the server's expiry.
    assert expiry_with_agent(later, agent_keep_seconds=300, agent_heard=None) == (False, later)


def test_an_expiry_30_seconds_short_of_the_planners_time_is_kept_as_it_is() -> None:
    """The figure itself: 30 s of slack, not a second more; and a time come is no hold."""
    session = plan(NOW + 25 * MIN)
    assert answer(session, expires_at=NOW + 25 * MIN - timedelta(seconds=30)) is None
    assert answer(session, expires_at=NOW + 25 * MIN - timedelta(seconds=30.5)) is not None
    assert answer(plan(NOW), expires_at=NOW - MIN) is None
