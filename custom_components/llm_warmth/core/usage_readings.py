"""What a model's usage entities show (pure, the clock passed in): values and attributes.

``usage_entities.py`` reads the usage feature (a model's ``UsageRecord`` and the
planner's ``Plan`` now) and shows what this module computes: the next expected use and
why none is expected, the scoreboard's figures, whether now is in an expected stretch,
and what auto-warm did. The words for the reasons are in ``translations/``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum

from .signal_learning import SignalLead
from .usage import UsageRecord
from .warm_hold import HoldReason
from .warm_plan import PatternClass, Plan


class NoUseExpected(StrEnum):
    """Why no next use is expected: the ``reason`` attribute (words: translations)."""

    # Fewer days of uses than the planner trusts a rhythm from.
    LEARNING = "learning"
    # Its uses come at no time of day that repeats: kept after each use, not warmed ahead.
    NO_RHYTHM = "no_rhythm"
    # A rhythm, but no expected stretch within the next day.
    NONE_WITHIN_A_DAY = "none_within_a_day"
    # The household's signals warm it instead of the clock (they cost less).
    WARMED_BY_SIGNALS = "warmed_by_signals"


def no_use_expected(plan: Plan) -> NoUseExpected | None:
    """Return why the plan expects no next use (None: it expects one)."""
    if plan.next_use is not None:
        return None
    if plan.pattern is PatternClass.NEW:
        return NoUseExpected.LEARNING
    if plan.mode.signals and not plan.mode.clock:
        return NoUseExpected.WARMED_BY_SIGNALS
    if plan.pattern is PatternClass.SPORADIC:
        return NoUseExpected.NO_RHYTHM
    return NoUseExpected.NONE_WITHIN_A_DAY


# The usage rhythm sensor's state while a next use is expected (the others: NoUseExpected).
USE_EXPECTED = "use_expected"
RHYTHMS = (USE_EXPECTED, *(reason.value for reason in NoUseExpected))


def usage_rhythm(plan: Plan | None) -> str | None:
    """Return what the planner makes of the model's uses: a use expected, or why none is.

    The words of the next expected use's ``reason`` as a state of its own, so that the
    device page says "Still learning" where the timestamp can only say Unknown.
    """
    if plan is None:
        return None
    reason = no_use_expected(plan)
    return USE_EXPECTED if reason is None else reason.value


def next_use(plan: Plan | None) -> datetime | None:
    """Return the start of the expected stretch ahead (or now's, before its use)."""
    return plan.next_use if plan else None


def next_use_attributes(
    plan: Plan | None,
    record: UsageRecord | None,
    reason_of: Callable[[Plan], NoUseExpected | None] = no_use_expected,
) -> dict[str, object]:
    """Return why no use is expected (``reason``), and the days of uses learnt from.

    A model with no plan yet is learning.
    """
    reason = reason_of(plan) if plan else NoUseExpected.LEARNING
    return {
        "days_learnt": record.planner.days if record else 0,
        **({"reason": reason.value} if reason else {}),
    }


def score_shown(value: float, digits: int) -> float | int:
    """Return a scoreboard figure as shown: rounded to ``digits``, a whole number for 0."""
    return round(value, digits) if digits else round(value)


def in_usage_window(plan: Plan | None, now: datetime) -> bool:
    """Return True while ``now`` is inside the expected stretch of ``plan``."""
    if plan is None or plan.window_start is None or plan.window_end is None:
        return False
    return plan.window_start <= now < plan.window_end


def auto_warm_attributes(
    record: UsageRecord | None,
    plan: Plan | None,
    now: datetime,
    *,
    uses_seen_within: int | None,
) -> dict[str, object]:
    """Return the loads auto-warm sent, those the guard refused, and why it holds the model.

    ``kept_for``: ``expected_use`` (warmed ahead of, and held through, an expected
    stretch) or ``session_keep`` (kept through a session's gaps after a use), until
    ``kept_until``; None once that time is over. ``pattern``: how the planner reads
    the model's uses; ``session_keep_minutes``: its keep after a use;
    ``uses_seen_within_seconds``: how late the server shows another client's use at
    most (None: it shows none; Home Assistant's agents' turns are seen at once).
    """
    learnt: dict[str, object] = {
        # How the planner reads the model's uses (new, rhythmic: warmed ahead of its
        # stretches; sporadic: kept by its idle times), and its keep after a use.
        "pattern": plan.pattern.value if plan else None,
        # How it is warmed: by the clock, by its idle times, with the signals or not.
        "warmed_by": plan.mode.value if plan else None,
        "session_keep_minutes": round(plan.keep.total_seconds() / 60, 1) if plan else None,
        "uses_seen_within_seconds": uses_seen_within,
    }
    if record is None:
        return (
            dict.fromkeys(("kept_for", "kept_until", "signal"))
            | {"warm_ups": 0, "refused_by_the_guard": 0}
            | learnt
        )
    until, reason = record.kept_until, record.kept_for
    holding = until is not None and reason is not None and until > now
    signal = record.signal if holding and reason is HoldReason.SIGNAL else None
    return {
        "warm_ups": record.warmed,
        "refused_by_the_guard": record.refused,
        "kept_for": reason.value if holding and reason else None,
        "kept_until": until.isoformat() if holding and until else None,
        # The edge that warmed the model, while its hold lasts (None: none).
        "signal": signal_row(signal) if signal else None,
    } | learnt


class NoSignalActs(StrEnum):
    """Why no signal warms a model: the ``reason`` attribute (words: translations)."""

    # The household picked no entity for it (a warming-signals subentry names them).
    NONE_CHOSEN = "none_chosen"
    # Not one leads its uses yet, with enough evidence (or none has been seen).
    LEARNING = "learning"
    # Some lead, but warming by the clock or the idle times alone cost less.
    TIME_ONLY_CHEAPER = "time_only_cheaper"


def signal_row(lead: SignalLead, name: str | None = None) -> dict[str, object]:
    """Return what a signal was learnt to lead, as an attribute's row."""
    row: dict[str, object] = {"entity_id": lead.entity}
    if name is not None:
        row["name"] = name
    return row | {
        "edge": lead.state,
        "within_minutes": max(round(lead.hold.total_seconds() / 60), 1),
        "share_percent": round(100 * lead.share),
        "led": lead.led,
        "wrong": lead.wrong,
        "lift": round(lead.lift, 1),
        "acts": lead.acts,
    }


def signals_reading(
    plan: Plan | None,
    leads: Sequence[SignalLead],
    chosen: Sequence[str],
    names: Mapping[str, str],
) -> tuple[int, dict[str, object]]:
    """Return how many signals warm the model now, and the learnt signals as attributes.

    ``leads``: what every edge learnt leads (``UsagePlanner.leads``, acting first);
    ``chosen``: the entities the household picked; ``names``: their names. A signal acts
    only while the planner warms by signals (its contest found them cheaper).
    """
    picked = set(chosen)
    rows = [signal_row(lead, names.get(lead.entity)) for lead in leads if lead.entity in picked]
    by_signals = plan is not None and plan.mode.signals
    acting = sum(1 for lead in leads if lead.acts and lead.entity in picked) if by_signals else 0
    attributes: dict[str, object] = {
        "chosen": len(picked),
        "warmed_by": plan.mode.value if plan else None,
        "signals": rows,
    }
    if acting == 0:
        if not picked:
            reason = NoSignalActs.NONE_CHOSEN
        elif any(lead.acts and lead.entity in picked for lead in leads):
            reason = NoSignalActs.TIME_ONLY_CHEAPER
        else:
            reason = NoSignalActs.LEARNING
        attributes["reason"] = reason.value
    return acting, attributes
