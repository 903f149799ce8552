"""The integration's auto-warm replayed over a trace: the planner, time only or with signals.

Each decision is the one ``usage.py`` takes, through the same core functions: the plan
(``core.warm_plan.UsagePlanner.plan``) and ``core.warm_hold.decide`` each minute and after
each use; on a context trace each edge recorded (``UsagePlanner.observe_edges``) and
answered by ``core.signal_warm.signal_warm_up``. The world they act on is
``warm_replay.py``'s ``Server`` (and its guard's holes).
"""

from __future__ import annotations

from datetime import datetime, timedelta
import math

from benchmarks.warm_replay import (
    MARGIN,
    MINUTE,
    SERVER_KEEP,
    Outcome,
    Server,
    inside,
    let_go,
    outcome,
    union,
)
from benchmarks.warm_traces import Interval, Trace
from custom_components.llm_warmth.core.signal_edges import Edge
from custom_components.llm_warmth.core.signal_warm import signal_warm_up
from custom_components.llm_warmth.core.warm_hold import KEEP_RENEW, HoldAction, decide
from custom_components.llm_warmth.core.warm_plan import UsagePlanner


def planner(trace: Trace, name: str, holes: list[Interval]) -> Outcome:
    """The integration's auto-warm on the clock alone (the time-only planner)."""
    return _planner(trace, name, holes, signals=False)


def signal_planner(trace: Trace, name: str, holes: list[Interval]) -> Outcome:
    """The integration's auto-warm with the trace's signals (every entity the model's)."""
    return _planner(trace, name, holes, signals=True)


def _planner(trace: Trace, name: str, holes: list[Interval], *, signals: bool) -> Outcome:
    """The integration's auto-warm, on the integration's own decision path.

    Each decision is ``core.warm_hold.decide`` on the planner's answer
    (``core.warm_plan.UsagePlanner.plan``), the calls ``usage.py`` makes each minute and
    after each use it sees: load a cold model ahead of an expected stretch (once per
    stretch, kept to its end), keep a resident one to the planner's time where the server
    would let it go earlier, else nothing (the server's 5 minutes). Uses are seen when they
    come (``usage.py`` sees an Ollama client's use at the next poll, 10 s at most; an
    agent's turn at once). With ``signals``, each of the trace's edges is recorded
    (``UsagePlanner.observe_edges``) and answered by ``core.signal_warm.signal_warm_up``
    when it comes, as ``usage.py`` does when a signal entity changes. ``holes``: times the
    household guard refuses the planner's holds and lets go of what they hold (the
    service needs the memory).
    """
    auto = _AutoWarm(trace, name, union(holes))
    requests = trace.requests[name]
    edges = trace.signals if signals else []
    starts = [b for b, _ in auto.holes]
    index = edge_index = hole_index = 0
    now = tick = trace.start
    while now < trace.end:
        while index < len(requests) and requests[index] <= now:
            auto.use(requests[index])
            index += 1
            tick = now  # usage.py keeps the model for its session after each use
        while edge_index < len(edges) and edges[edge_index][0] <= now:
            auto.edge(*edges[edge_index])
            edge_index += 1
        while hole_index < len(starts) and starts[hole_index] <= now:
            # The guard lets go of what auto-warm holds; the household's own keep stays.
            let_go(auto.server, now)
            auto.asked_until = None
            hole_index += 1
            tick = now
        if now >= tick:
            tick = auto.tick(now)
        # The next moment anything can change: a use, an edge, the guard, the next tick.
        following = [tick]
        if index < len(requests):
            following.append(requests[index])
        if edge_index < len(edges):
            following.append(edges[edge_index][0])
        if hole_index < len(starts):
            following.append(starts[hole_index])
        now = max(min(following), now)
    return outcome(auto.server, trace.end)


class _AutoWarm:
    """One model's server and planner, driven as ``usage.py`` drives them."""

    def __init__(self, trace: Trace, name: str, holes: list[Interval]) -> None:
        model = trace.models[name]
        self.trace, self.holes = trace, holes
        self.lead = timedelta(seconds=model.load + MARGIN)
        self.load = timedelta(seconds=model.load)
        self.server, self.usage = Server(model.load), UsagePlanner()
        self.warmed_for: datetime | None = None
        self.asked_until: float | None = None

    def _time(self, at: float) -> datetime:
        return datetime.fromtimestamp(at, self.trace.zone)

    def use(self, at: float) -> None:
        """A request of the household: served, and recorded as a use."""
        self.server.request(at, SERVER_KEEP)
        self.usage.observe(self._time(at))

    def edge(self, at: float, entity: str, state: str) -> None:
        """A signal's edge: recorded, and warmed on where it leads a use."""
        edge = Edge(self._time(at), entity, state)
        if not self.usage.observe_edges([edge]):
            return
        server = self.server
        sent = signal_warm_up(
            self.usage, edge, edge.at, held=server.resident(at), loading=server.loading(at)
        )
        if sent is not None and inside(self.holes, at) is None:
            server.hold(at, sent.hold.expiry.timestamp())

    def tick(self, now: float) -> float:
        """Decide as ``usage.py`` does each minute; return when to decide next."""
        server, holes, lead = self.server, self.holes, self.lead
        moment = self._time(now)
        plan = self.usage.plan(moment, lead, load=self.load)
        resident = server.resident(now)
        decision = decide(
            plan,
            moment,
            lead=lead,
            warmed_for=self.warmed_for,
            held=resident,
            loading=server.loading(now),
            expires_at=self._time(server.until) if resident else None,
            asked_until=self._time(self.asked_until) if self.asked_until else None,
        )
        if decision is not None and inside(holes, now) is None:
            until = decision.expiry.timestamp()  # the planner's time, or a piece of the way
            if decision.action is HoldAction.LOAD:
                self.warmed_for = plan.window_start
            else:
                self.asked_until = until
            server.hold(now, until)
        # The next moment the plan can change: the server letting go, the planner's time
        # ending or its next stretch's lead, the hour (the day's fold), the guard.
        stops = [self.trace.end, math.floor(now / 3600 + 1) * 3600]
        if server.resident(now):
            # A piece of a keep is renewed once less than KEEP_RENEW of it is left: at the
            # first minute's tick after that (a second past it, rounded up below).
            stops += [server.until, server.ready, server.until - KEEP_RENEW.total_seconds() + 1]
        if plan.warm_until is not None:
            stops.append(plan.warm_until.timestamp())
        if plan.window_start is not None and plan.window_end is not None:
            stops += [(plan.window_start - lead).timestamp(), plan.window_end.timestamp()]
        if (hole := inside(holes, now)) is not None:
            stops.append(hole[1])
        # usage.py decides on a minute's tick: a time decided on is met at the next whole
        # minute; a use and an edge when they come, the guard when the service starts.
        return max(math.ceil(min(s for s in stops if s > now) / MINUTE) * MINUTE, now + 1)
