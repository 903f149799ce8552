"""What auto-warm sends on a household's edge (pure, the clock passed in).

An edge of a signal the planner learnt to lead a use (``warm_plan.UsagePlanner.signal_lead``)
warms the model for that signal's hold, when the planner's contest chose a way of warming
with signals: a cold model is loaded, kept until the edge's time plus the hold (unused,
the server lets the model go when it ends; after a use, the session keep goes on); a
resident one is warm already, and a load that runs is not joined. The
integration (``usage.py``) and the benchmark (``benchmarks/warm_replay.py``) both call
``signal_warm_up``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .signal_edges import Edge
from .signal_learning import SignalLead
from .warm_hold import Hold, HoldAction, HoldReason, piece
from .warm_plan import UsagePlanner


@dataclass(frozen=True, slots=True)
class SignalWarmUp:
    """A warm-up on an edge: the hold to send, and what the edge was learnt to lead."""

    hold: Hold
    lead: SignalLead


def signal_warm_up(
    planner: UsagePlanner, edge: Edge, now: datetime, *, held: bool, loading: bool
) -> SignalWarmUp | None:
    """Return what to send now for ``edge`` (None: nothing).

    ``now`` on the household's clock (the planner folds the days that ended first);
    ``held``: the server holds the model (warm already: the edge holds it no longer, as
    the contest replayed it); ``loading``: a load of it runs (nothing is sent beside it).
    The hold is asked for a piece at a time, as a stretch's.
    """
    planner.advance(now)
    lead = planner.signal_lead(edge)
    if lead is None or held or loading:
        return None
    until = edge.at + lead.hold
    if until <= now:
        return None
    return SignalWarmUp(Hold(HoldAction.LOAD, until, HoldReason.SIGNAL, piece(until, now)), lead)


def auto_warm_event(
    model: str,
    hold: Hold,
    *,
    lead: SignalLead | None = None,
    expected_at: datetime | None = None,
) -> dict[str, object]:
    """Return the data of the event a warm-up fires: the model, why, until when.

    On a signal's edge: the entity, its new state, and what it leads (a use within
    ``within_minutes``, ``share_percent`` of the time); ahead of an expected stretch: its
    start (``expected_at``).
    """
    data: dict[str, object] = {
        "model": model,
        "reason": hold.reason.value,
        "until": hold.until.isoformat(),
    }
    if lead is not None:
        data |= {
            "signal_entity_id": lead.entity,
            "signal_state": lead.state,
            "within_minutes": max(round(lead.hold.total_seconds() / 60), 1),
            "share_percent": round(100 * lead.share),
        }
    if expected_at is not None:
        data["expected_at"] = expected_at.isoformat()
    return data
