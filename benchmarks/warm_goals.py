"""What the warm-policy benchmark scores, and its goals: per model, over a trace's last third.

``score`` turns one policy's outcome into its figures (requests, cold starts, GiB-hours a
day, waits); ``frontier`` reads what fixed keep-alives reach at a given memory. The goals
(``request_goals`` for a trace of requests: against the frontier, the hybrid histogram and
the 5-minute default; ``context_goals`` for a context trace: both planners on the frontier,
then ``signal_goals.py``'s) are (figure, goal, met: None when not tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
import math
from statistics import mean

from benchmarks.signal_goals import Figures, Goal, goals as signal_goals, lead_line, leading
from benchmarks.warm_replay import Outcome, overlap
from benchmarks.warm_traces import Model, Trace

FRONTIER_MINUTES = (1, 2, 3, 5, 7, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 360, 480, 720, 1440)
PLANNER = "planner"
SIGNALS = "planner + signals"

BY_CONSTRUCTION = ("pin forever", "oracle pre-warm", "hour forecaster")
# A model with fewer scored requests than this puts no cold-rate goal to the test.
MIN_SCORED = 30


@dataclass
class Score:
    """A policy's figures for one model over the scored span."""

    requests: int
    cold: int
    gib_hours_per_day: float
    mean_wait: float
    p95_wait: float

    @property
    def cold_rate(self) -> float:
        return self.cold / self.requests if self.requests else 0.0


def scored_span(trace: Trace) -> tuple[float, float]:
    """Return the last third of the trace."""
    return trace.start + (trace.end - trace.start) * 2 / 3, trace.end


def score(trace: Trace, model: Model, result: Outcome) -> Score:
    """Return a model's figures under one policy's outcome, over the last third."""
    span = scored_span(trace)
    waits = sorted(w for t, w in result.waits if span[0] <= t < span[1])
    days = (span[1] - span[0]) / 86400
    return Score(
        requests=len(waits),
        cold=sum(1 for w in waits if w > 0),
        gib_hours_per_day=overlap(result.held, span) / 3600 * model.gib / days,
        mean_wait=mean(waits) if waits else 0.0,
        p95_wait=waits[max(0, math.ceil(0.95 * len(waits)) - 1)] if waits else 0.0,
    )


def frontier(points: list[tuple[float, float]], gib_hours: float) -> float:
    """Return the cold rate fixed keep-alives reach at ``gib_hours`` (linear between two).

    ``points``: (GiB-h a day, cold rate) of each fixed keep, in the order of their keeps
    (more memory, fewer cold starts). Below the shortest keep's memory, its cold rate;
    above the longest's, the longest's.
    """
    ordered = sorted(points)
    if gib_hours <= ordered[0][0]:
        return ordered[0][1]
    for (low_gib, low_cold), (high_gib, high_cold) in pairwise(ordered):
        if low_gib <= gib_hours <= high_gib:
            share = (gib_hours - low_gib) / (high_gib - low_gib) if high_gib > low_gib else 0.0
            return low_cold + share * (high_cold - low_cold)
    return ordered[-1][1]


def reach(at_hybrid: float, rate: float) -> str:
    """Say when no fixed keep reaches ``rate`` within the hybrid's memory."""
    return "" if at_hybrid <= rate else " (no fixed keep reaches it in that memory)"


def table(scores: dict[str, Score], starved: dict[str, int]) -> list[str]:
    """Return the policies' table for one model."""
    lines = [
        f"  {'policy':18} {'requests':>8} {'cold %':>7} {'GiB-h/day':>9} "
        f"{'mean wait s':>11} {'p95 wait s':>10} {'starved min':>11}"
    ]
    for policy, s in scores.items():
        lines.append(
            f"  {policy:18} {s.requests:>8} {100 * s.cold_rate:>7.1f}"
            f" {s.gib_hours_per_day:>9.2f} {s.mean_wait:>11.2f} {s.p95_wait:>10.1f}"
            f" {starved[policy]:>11}"
            + ("  (0 cold by construction)" if policy in BY_CONSTRUCTION else "")
        )
    return lines


def frontier_goal(who: str, ours: Score, points: list[tuple[float, float]]) -> Goal:
    """Return the goal of ``ours`` against the frontier: in whole cold starts, as it is read.

    The frontier's interpolated rate times the requests, to the nearest request (a
    fraction of a cold start is none).
    """
    at_ours = frontier(points, ours.gib_hours_per_day)
    frontier_cold = round(at_ours * ours.requests)
    return (
        f"{who}'s cold {100 * ours.cold_rate:.1f} %",
        f"<= the frontier's {100 * at_ours:.1f} % at the same {ours.gib_hours_per_day:.2f}"
        f" GiB-h/day ({ours.cold} <= {frontier_cold} cold starts)",
        ours.cold <= frontier_cold if ours.requests >= MIN_SCORED else None,
    )


def request_goals(
    scores: dict[str, Score], points: list[tuple[float, float]]
) -> tuple[list[Goal], list[str]]:
    """Return the time-only planner's goals on a trace of requests, and what to say first."""
    ours, hybrid, default = scores[PLANNER], scores["hybrid histogram"], scores["default 5 min"]
    at_ours = frontier(points, ours.gib_hours_per_day)
    # What fixed keeps reach within the hybrid's memory: a cold-rate goal above it is out
    # of reach of every keep-alive there (on a trace with no routine, of any policy that
    # does not know the future).
    at_hybrid = frontier(points, hybrid.gib_hours_per_day)
    said = [
        f"  frontier (fixed keeps {FRONTIER_MINUTES[0]} min-{FRONTIER_MINUTES[-1] // 60} h,"
        " behind the guard):"
        f" {100 * at_ours:.1f} % cold at the planner's {ours.gib_hours_per_day:.1f} GiB-h/day",
        f"  fixed keeps at the hybrid's {hybrid.gib_hours_per_day:.1f} GiB-h/day:"
        f" {100 * at_hybrid:.1f} % cold",
    ]
    enough = ours.requests >= MIN_SCORED
    figure = f"planner's cold {100 * ours.cold_rate:.1f} %"
    goals: list[Goal] = [
        frontier_goal(PLANNER, ours, points),
        (
            figure,
            f"<= 1/2 of the hybrid histogram's {100 * hybrid.cold_rate:.1f} %"
            + reach(at_hybrid, hybrid.cold_rate / 2),
            ours.cold_rate <= hybrid.cold_rate / 2 if enough else None,
        ),
        (
            figure,
            f"<= 1/5 of the 5-minute default's {100 * default.cold_rate:.1f} %"
            + reach(at_hybrid, default.cold_rate / 5),
            ours.cold_rate <= default.cold_rate / 5 if enough else None,
        ),
        (
            f"planner's {ours.gib_hours_per_day:.1f} GiB-h/day",
            f"<= the hybrid histogram's {hybrid.gib_hours_per_day:.1f}",
            ours.gib_hours_per_day <= hybrid.gib_hours_per_day if enough else None,
        ),
    ]
    return goals, said


def context_goals(
    trace: Trace, model: Model, scores: dict[str, Score], points: list[tuple[float, float]]
) -> tuple[list[Goal], list[str]]:
    """Return the planners' goals on a context trace, and whether signals lead there."""
    ours, signals = scores[PLANNER], scores[SIGNALS]
    lead = leading(trace, model.name, scored_span(trace), model.load)
    at_signals = frontier(points, signals.gib_hours_per_day)
    figures = [Figures(s.requests, s.cold, s.gib_hours_per_day) for s in (ours, signals)]
    goals = [frontier_goal(PLANNER, ours, points)]
    goals += [
        (f"{SIGNALS}: {figure}", goal, met)
        for figure, goal, met in signal_goals(
            figures[0],
            figures[1],
            lead,
            round(at_signals * signals.requests),
            enough=signals.requests >= MIN_SCORED,
        )
    ]
    return goals, [lead_line(lead)]
