"""What auto-warm does next, and which requests are the household's (pure, fixed clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.core.agent_turn import AgentTurnLog
from custom_components.llm_warmth.core.auto_warm import (
    AgentKeep,
    AskedKeep,
    ExpiryWatch,
    KeepLedger,
    KeepOrder,
    WarmUp,
    activity_uses,
    expiry_uses,
    held_bytes,
    household_cold_starts,
    household_request,
    keep_order,
    uses_seen_within,
    warm_up,
)
from custom_components.llm_warmth.core.backends.types import (
    ResidencyState,
    ResidentModel,
    ServedRequest,
)
from custom_components.llm_warmth.core.load_figures import LoadFigures
from custom_components.llm_warmth.core.monitor import ColdStartObserved, LoadObserved, ProbeResult
from custom_components.llm_warmth.core.own_requests import OwnRequestLog
from custom_components.llm_warmth.core.ttft import Classification, Stage, StageBreakdown, Verdict
from custom_components.llm_warmth.core.warm_hold import Hold, HoldAction, HoldReason
from custom_components.llm_warmth.core.warm_plan import PatternClass, Plan

T = datetime(2026, 11, 2, 7, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
SEC = timedelta(seconds=1)
LEAD = 90 * SEC


def resident(
    expires_at: datetime | None = None,
    *,
    context: int | None = 4096,
    size: int | None = None,
    vram: int | None = None,
) -> ResidentModel:
    return ResidentModel(
        "m",
        ResidencyState.LOADED,
        size=size,
        size_vram=vram,
        expires_at=expires_at,
        context_length=context,
    )


def stretch_plan(start: datetime = T + 10 * MIN) -> Plan:
    """A rhythmic plan whose expected stretch runs from ``start`` for 50 minutes."""
    return Plan(
        pattern=PatternClass.RHYTHMIC,
        warm=False,
        warm_until=None,
        window_start=start,
        window_end=start + 50 * MIN,
        next_use=start,
        keep=5 * MIN,
        used=False,
        expected_until=start + 50 * MIN,
    )


def session_plan(until: datetime = T + 20 * MIN) -> Plan:
    """A sporadic plan that keeps the model through its session until ``until``."""
    return Plan(
        pattern=PatternClass.SPORADIC,
        warm=True,
        warm_until=until,
        window_start=None,
        window_end=None,
        next_use=None,
        keep=20 * MIN,
        used=True,
    )


def test_a_request_is_the_households_unless_ours_or_its_agents() -> None:
    ours, agents = OwnRequestLog(), AgentTurnLog()
    assert household_request("m", T, T + MIN, ours=ours, agents=agents)
    ours.started("m", T + 30 * SEC)
    assert not household_request("m", T, T + MIN, ours=ours, agents=agents)
    assert household_request("other", T, T + MIN, ours=ours, agents=agents)
    agents.turn("other", T + 10 * SEC, T)
    assert not household_request("other", T, T + MIN, ours=ours, agents=agents)


def test_an_expiry_that_moved_or_a_new_model_is_a_use_not_ours() -> None:
    ours, agents = OwnRequestLog(), AgentTurnLog()
    previous = {"moved": T, "kept": T, "unknown": None, "ours": T}
    expiries = {
        "moved": T + 3 * SEC,
        "kept": T + 2 * SEC,  # within the jump: as it was
        "unknown": T,
        "new": None,  # loaded since the last poll
        "ours": T + 10 * MIN,
    }
    ours.started("ours", T + 10 * SEC)
    uses = expiry_uses(previous, expiries, T, T + MIN, ours=ours, agents=agents)
    assert uses == ("moved", "new")


def test_the_expiry_watch_compares_each_poll_with_the_last() -> None:
    ours, agents = OwnRequestLog(), AgentTurnLog()
    watch = ExpiryWatch()
    # No baseline yet: the first poll is one, and tells no use.
    first = watch.polled(
        T, {"m": resident(T + 5 * MIN)}, reports_expiry=True, ours=ours, agents=agents
    )
    assert first == ()
    assert watch.polled_at == T
    assert watch.expiries == {"m": T + 5 * MIN}
    later = T + MIN
    uses = watch.polled(
        later, {"m": resident(later + 5 * MIN)}, reports_expiry=True, ours=ours, agents=agents
    )
    assert uses == ("m",)
    assert (watch.polled_at, watch.expiries) == (later, {"m": later + 5 * MIN})
    # A server that tells no expiry shows no use, but the poll is taken.
    last = T + 2 * MIN
    none = watch.polled(
        last, {"m": resident(last + 5 * MIN)}, reports_expiry=False, ours=ours, agents=agents
    )
    assert none == ()
    assert watch.polled_at == last
    watch.baseline(T, {})
    assert (watch.polled_at, watch.expiries) == (T, {})


def test_llama_swaps_requests_of_ours_or_its_agents_are_left_out() -> None:
    ours, agents = OwnRequestLog(), AgentTurnLog()
    theirs = ServedRequest(1, "a", T + MIN, 10.0, 200)
    mine = ServedRequest(2, "b", T + MIN, 10.0, 200)
    agent = ServedRequest(3, "c", T + MIN, 10.0, 200)
    ours.started("b", T + 55 * SEC)
    agents.turn("c", T + 50 * SEC, T)
    assert activity_uses([theirs, mine, agent], ours=ours, agents=agents) == (theirs,)


def test_only_a_household_requests_cold_start_is_scored() -> None:
    figures = LoadFigures()
    sample = StageBreakdown(900.0, 800.0, 50.0, 10.0, 40.0, 30.0, 10, 5)
    probe = ProbeResult(sample, Verdict(Classification.COLD, Stage.LOAD))
    changes = [
        LoadObserved("waited", figures),
        LoadObserved("preloaded", figures, waited=False),
        LoadObserved("probed", figures, probe=probe),
        ColdStartObserved("cold probe", probe),
        LoadObserved("again", figures),
    ]
    assert household_cold_starts(changes) == ("waited", "again")


def test_the_memory_a_warm_up_holds() -> None:
    assert held_bytes(None) == 0
    assert held_bytes(resident()) == 0
    assert held_bytes(resident(size=5)) == 5
    assert held_bytes(resident(size=5, vram=3)) == 3


def test_how_late_another_clients_use_is_seen() -> None:
    interval = timedelta(seconds=30.4)
    assert uses_seen_within(reports_requests=True, reports_expiry=False, interval=interval) == 30
    assert uses_seen_within(reports_requests=False, reports_expiry=True, interval=interval) == 30
    assert uses_seen_within(reports_requests=False, reports_expiry=False, interval=interval) is None
    assert uses_seen_within(reports_requests=True, reports_expiry=True, interval=60.6 * SEC) == 61


def test_a_warm_up_is_due_from_its_lead_once_per_stretch() -> None:
    plan = stretch_plan()
    start = T + 10 * MIN
    early = start - LEAD - SEC
    assert warm_up(plan, early, lead=LEAD, warmed_for=None, held=False, loading=False) is None
    now = start - LEAD
    due = warm_up(plan, now, lead=LEAD, warmed_for=None, held=False, loading=False)
    assert due is not None
    until = start + 50 * MIN
    assert due == WarmUp(
        start, Hold(HoldAction.LOAD, until, HoldReason.EXPECTED_USE, now + 30 * MIN)
    )
    # Asked for a piece of the way (Ollama sets the keep), else the server's own keep.
    assert due.keep_seconds(now, requests_set_keep=True) == 30 * 60
    assert due.keep_seconds(now, requests_set_keep=False) is None
    assert warm_up(plan, now, lead=LEAD, warmed_for=start, held=False, loading=False) is None
    assert warm_up(plan, now, lead=LEAD, warmed_for=None, held=True, loading=False) is None
    assert warm_up(plan, now, lead=LEAD, warmed_for=None, held=False, loading=True) is None
    assert warm_up(None, now, lead=LEAD, warmed_for=None, held=False, loading=False) is None
    assert (
        warm_up(session_plan(), now, lead=LEAD, warmed_for=None, held=False, loading=False) is None
    )


def order(
    plan: Plan | None = None,
    *,
    model: ResidentModel | None = None,
    agent: AgentKeep | None = None,
    asked: AskedKeep | None = None,
    polled_at: datetime | None = None,
    loading: bool = False,
) -> KeepOrder | None:
    return keep_order(
        session_plan() if plan is None else plan,
        T,
        lead=LEAD,
        warmed_for=None,
        resident=resident(T + 5 * MIN) if model is None else model,
        loading=loading,
        agent=agent or AgentKeep(),
        asked=asked or AskedKeep(),
        polled_at=polled_at,
    )


def test_a_resident_model_is_kept_through_its_session_with_its_context() -> None:
    until = T + 20 * MIN
    keep = Hold(HoldAction.KEEP, until, HoldReason.SESSION_KEEP, until)
    assert order() == KeepOrder(keep, 4096)
    # The agent's context first (its turns loaded it); none known: not sent.
    assert order(agent=AgentKeep(num_ctx=8192)) == KeepOrder(keep, 8192)
    assert order(model=resident(T + 5 * MIN, context=None)) == KeepOrder(keep, None)
    # Kept long enough by the server already, or loading: nothing.
    assert order(model=resident(until)) is None
    assert order(loading=True) is None
    assert order(plan=stretch_plan()) is None  # cold-load plan, nothing to keep now
    assert (
        keep_order(
            None,
            T,
            lead=LEAD,
            warmed_for=None,
            resident=resident(T + 5 * MIN),
            loading=False,
            agent=AgentKeep(),
            asked=AskedKeep(),
            polled_at=None,
        )
        is None
    )
    assert (
        keep_order(
            session_plan(),
            T,
            lead=LEAD,
            warmed_for=None,
            resident=None,
            loading=False,
            agent=AgentKeep(),
            asked=AskedKeep(),
            polled_at=None,
        )
        is None
    )


def test_the_agents_keep_counts_and_for_ever_needs_none_of_ours() -> None:
    assert order(agent=AgentKeep(keep_seconds=-1)) is None
    # Its last turn keeps the model 30 minutes: past the planner's time.
    assert order(agent=AgentKeep(keep_seconds=1800, heard=T)) is None
    assert order(agent=AgentKeep(keep_seconds=60, heard=T)) is not None


def test_our_keep_asked_again_only_once_overwritten() -> None:
    until = T + 20 * MIN
    asked = AskedKeep(until, T - MIN)
    # Still asked for: the server's poll came before our answer.
    assert order(asked=asked, polled_at=T - 2 * MIN) is None
    # A poll after our answer shows an earlier expiry: overwritten, asked for again.
    assert order(asked=asked, polled_at=T) is not None


def test_the_keep_ledger_remembers_our_last_keep() -> None:
    ledger = KeepLedger()
    assert ledger.asked("m") == AskedKeep(None, None)
    ledger.sent("m", T + MIN)
    ledger.answered("m", T)
    assert ledger.asked("m") == AskedKeep(T + MIN, T)
    ledger.failed("m")
    assert ledger.asked("m") == AskedKeep(None, T)
    ledger.failed("m")  # nothing to forget
    assert ledger.asked("other") == AskedKeep()
