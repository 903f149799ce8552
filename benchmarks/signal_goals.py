"""The goals of warming on the household's signals, on a context trace's scored uses.

- **Never worse than the time-only planner**: no more cold starts, at most 5 % more
  GiB-hours.
- **Where signals lead** (an entity's edge comes more than the load's time before a use,
  and within ``LEAD_WINDOW``, for at least half the scored uses): at most half the
  time-only planner's cold starts, at no more GiB-hours. Real sensor streams are noisy (a
  motion sensor that fires all day comes before every use): an edge is judged by its lift,
  here over the whole trace. Only an entity's edge (its change to one state) after which a
  use follows within ``LEAD_WINDOW`` at least ``MIN_LIFT`` times as often as after any
  moment of the same hour of the day counts as coming before a use.
- **On the frontier** (the planner with signals, as the time-only one): at most the cold
  starts of a fixed keep-alive holding the same GiB-hours (in whole cold starts).

``goals`` returns (figure, goal, met: None when not tested) for ``warm_policy.report``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from benchmarks.warm_traces import Trace
from custom_components.llm_warmth.core.signal_learning import MIN_LIFT, WINDOW

LEAD_WINDOW = WINDOW.total_seconds()
GIB_SLACK = 0.05
Goal = tuple[str, str, bool | None]


@dataclass(frozen=True)
class Lead:
    """The entity whose last change comes ahead of the most scored uses, and that share."""

    entity: str | None
    share: float
    uses: int

    @property
    def leads(self) -> bool:
        """Return True when signals lead: ahead of at least half the uses."""
        return self.uses > 0 and self.share >= 0.5


def leading(trace: Trace, name: str, span: tuple[float, float], load: float) -> Lead:
    """Return the entity whose edges come before most of ``name``'s scored uses.

    An edge comes before a use when it is more than ``load`` seconds and at most
    ``LEAD_WINDOW`` before it, and its kind (the entity and its new state) has a lift of
    at least ``MIN_LIFT`` over the trace (``lifts``).
    """
    uses = [t for t in trace.requests[name] if span[0] <= t < span[1]]
    lifted = {key for key, lift in lifts(trace, name).items() if lift >= MIN_LIFT}
    changes: dict[str, list[float]] = defaultdict(list)
    for at, entity, state in trace.signals:
        if (entity, state) in lifted:
            changes[entity].append(at)
    best: tuple[float, str | None] = (0.0, None)
    for entity, times in sorted(changes.items()):
        ahead = 0
        for use in uses:
            first = bisect_left(times, use - LEAD_WINDOW)
            if first < bisect_left(times, use - load):
                ahead += 1
        share = ahead / len(uses) if uses else 0.0
        best = max(best, (share, entity), key=lambda pair: pair[0])
    return Lead(best[1], best[0], len(uses))


def lifts(trace: Trace, name: str) -> dict[tuple[str, str], float]:
    """Return each kind of edge's lift: how much more often a use follows it than the hour.

    A use follows a moment when it comes within ``LEAD_WINDOW`` after it; the hour's base
    rate is the share of the trace's minutes of that hour of the day a use follows.
    """
    uses = trace.requests[name]

    def follows(at: float) -> bool:
        index = bisect_right(uses, at)
        return index < len(uses) and uses[index] - at <= LEAD_WINDOW

    minutes: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    moment = trace.start
    while moment < trace.end:
        counts = minutes[datetime.fromtimestamp(moment, trace.zone).hour]
        counts[0] += 1
        counts[1] += follows(moment)
        moment += 60
    base = {hour: followed / total for hour, (total, followed) in minutes.items()}
    observed: dict[tuple[str, str], float] = defaultdict(float)
    expected: dict[tuple[str, str], float] = defaultdict(float)
    for at, entity, state in trace.signals:
        hour = datetime.fromtimestamp(at, trace.zone).hour
        observed[(entity, state)] += follows(at)
        expected[(entity, state)] += base.get(hour, 0.0)
    return {key: observed[key] / value for key, value in expected.items() if value > 0}


@dataclass(frozen=True)
class Figures:
    """A planner's scored figures: requests, cold starts, GiB-hours a day."""

    requests: int
    cold: int
    gib_hours: float


def goals(
    time_only: Figures, with_signals: Figures, lead: Lead, frontier_cold: int, *, enough: bool
) -> list[Goal]:
    """Return the goals of the planner with signals against the time-only one.

    ``frontier_cold``: the cold starts of the fixed keep-alive at the signal planner's
    GiB-hours; ``enough``: there are enough scored requests to put a goal to the test.
    """
    tested = enough
    found: list[Goal] = [
        (
            f"{with_signals.cold} cold, {with_signals.gib_hours:.2f} GiB-h/day",
            f"never worse than the time-only planner's {time_only.cold} cold,"
            f" {time_only.gib_hours:.2f} GiB-h/day (no more cold starts, at most"
            f" {100 * GIB_SLACK:.0f} % more GiB-hours)",
            (
                with_signals.cold <= time_only.cold
                and with_signals.gib_hours <= time_only.gib_hours * (1 + GIB_SLACK) + 1e-9
            )
            if tested
            else None,
        ),
        (
            f"{with_signals.cold} cold",
            f"<= the frontier at its GiB-h ({frontier_cold} cold starts)",
            with_signals.cold <= frontier_cold if tested else None,
        ),
    ]
    if lead.leads:
        found.append(
            (
                f"{with_signals.cold} cold, {with_signals.gib_hours:.2f} GiB-h/day",
                f"signals lead ({lead.entity} ahead of {100 * lead.share:.0f} % of the uses):"
                f" <= 1/2 of the time-only planner's {time_only.cold} cold starts at no more"
                f" than its {time_only.gib_hours:.2f} GiB-h/day",
                (
                    2 * with_signals.cold <= time_only.cold
                    and with_signals.gib_hours <= time_only.gib_hours + 1e-9
                )
                if tested
                else None,
            )
        )
    return found


def lead_line(lead: Lead) -> str:
    """Return the line that says whether signals lead on a trace's model."""
    if lead.entity is None:
        return (
            f"  signals do not lead: no edge with a lift of {MIN_LIFT:g} or more comes before"
            " a scored use"
        )
    verdict = "signals lead" if lead.leads else "signals do not lead (under half)"
    return (
        f"  {verdict}: the most ahead, {lead.entity} (edges with a lift of {MIN_LIFT:g} or"
        f" more), changed more than the load's time and at most {LEAD_WINDOW / 60:.0f} min"
        f" before {100 * lead.share:.0f} % of the {lead.uses} scored uses"
    )
