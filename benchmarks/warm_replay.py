"""Keep-alive policies played against one model's requests, one model at a time.

``Server`` is one model on a server: a request that finds it ready waits nothing; one that
comes while a load runs (a warm-up's, or an earlier request's cold load) waits for the
rest of that load; one that finds it gone waits for a whole load, which starts then.
Requests take no time beyond their wait. Every second the model is loading or held counts
in its GiB-hours. What a policy holds by its own choice is what is held beyond each
request's own load and the server's default 5 minutes after it (the household asked for
those): that part alone can starve the household's service, and the guard lets go of it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
import math
from statistics import mean

from benchmarks.warm_traces import Interval, Trace

SERVER_KEEP = 300.0  # Ollama's default keep after a request
MINUTE = 60.0
# usage.py: warming starts the model's cold load plus this before an expected stretch.
MARGIN = 60.0


# ---------------------------------------------------------------------------- intervals


def union(intervals: list[Interval]) -> list[Interval]:
    """Return the intervals merged, sorted."""
    merged: list[Interval] = []
    for begin, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return merged


def minus(intervals: list[Interval], holes: list[Interval]) -> list[Interval]:
    """Return ``intervals`` without ``holes`` (both merged)."""
    result: list[Interval] = []
    for begin, end in intervals:
        cursor = begin
        for hole_begin, hole_end in holes:
            if hole_end <= cursor or hole_begin >= end:
                continue
            if hole_begin > cursor:
                result.append((cursor, hole_begin))
            cursor = max(cursor, hole_end)
        if cursor < end:
            result.append((cursor, end))
    return result


def overlap(intervals: list[Interval], span: Interval) -> float:
    """Return the seconds of ``intervals`` within ``span``."""
    return sum(max(0.0, min(e, span[1]) - max(b, span[0])) for b, e in intervals)


def inside(intervals: list[Interval], when: float) -> Interval | None:
    """Return the interval of sorted, merged ``intervals`` that holds ``when``, or None."""
    index = bisect_right(intervals, (when, math.inf)) - 1
    if index >= 0 and intervals[index][0] <= when < intervals[index][1]:
        return intervals[index]
    return None


# ------------------------------------------------------------------------------ server


class Server:
    """One model on a server, driven in time order."""

    def __init__(self, load: float) -> None:
        """Start with the model gone."""
        self.load = load
        self.segments: list[Interval] = []  # closed stretches of residency
        self.since: float | None = None  # the open one's start (None: gone)
        self.ready = -math.inf
        self.until = -math.inf
        self.waits: list[tuple[float, float]] = []

    def _expire(self, now: float) -> None:
        if self.since is not None and self.until <= now:
            self.segments.append((self.since, self.until))
            self.since = None

    def resident(self, now: float) -> bool:
        """Return True while the model is held or loading at ``now``."""
        self._expire(now)
        return self.since is not None

    def loading(self, now: float) -> bool:
        """Return True while a load of the model runs at ``now``."""
        return self.resident(now) and now < self.ready

    def request(self, now: float, keep: float) -> float:
        """Serve a request at ``now``, kept ``keep`` after it; return its wait."""
        self._expire(now)
        if self.since is None:
            self.since, self.ready = now, now + self.load
        wait = max(0.0, self.ready - now)
        self.until = max(self.until, now + wait + keep)
        self.waits.append((now, wait))
        return wait

    def hold(self, now: float, until: float) -> None:
        """Load the model at ``now`` unless it is resident; keep it at least to ``until``."""
        self._expire(now)
        if until <= now:
            return
        if self.since is None:
            self.since, self.ready = now, now + self.load
        self.until = max(self.until, until, self.ready)

    def set_until(self, now: float, until: float) -> None:
        """Keep the resident model exactly to ``until`` (earlier: let it go then)."""
        if self.since is not None and self.until >= now:
            self.until = max(until, now)
        self._expire(now)

    def finish(self, end: float) -> list[Interval]:
        """Return every stretch of residency up to ``end``."""
        self._expire(end)
        if self.since is not None:
            self.segments.append((self.since, min(self.until, end)))
            self.since = None
        return union(self.segments)


@dataclass
class Outcome:
    """What a policy did for one model: each request's wait, what it held, what by choice."""

    waits: list[tuple[float, float]]
    held: list[Interval]
    chosen: list[Interval]


def outcome(server: Server, end: float) -> Outcome:
    """Return the server's outcome: its waits, residency and the part held by choice."""
    held = server.finish(end)
    asked = union([(t, t + w + SERVER_KEEP) for t, w in server.waits])
    return Outcome(server.waits, held, minus(held, asked))


# ---------------------------------------------------------------------------- policies

Policy = Callable[[Trace, str, list[Interval]], Outcome]


def keep_alive(seconds: float) -> Policy:
    """The server's keep-alive of ``seconds`` after each request.

    Behind the guard (``holes``), what it keeps beyond the server's default 5 minutes is
    let go while the household's service needs the memory, as auto-warm's holds are.
    """

    def policy(trace: Trace, name: str, holes: list[Interval]) -> Outcome:
        server = Server(trace.models[name].load)
        holes = union(holes)
        events = sorted([(b, 0) for b, _ in holes] + [(t, 1) for t in trace.requests[name]])
        for when, kind in events:
            if kind == 0:
                let_go(server, when)
            else:
                server.request(when, SERVER_KEEP if inside(holes, when) else seconds)
        return outcome(server, trace.end)

    return policy


def let_go(server: Server, now: float) -> None:
    """The guard lets go of what a policy holds beyond the household's own keep."""
    floor = max((t + w + SERVER_KEEP for t, w in server.waits[-1:]), default=now)
    server.set_until(now, min(server.until, max(floor, now)))


def pin_forever(trace: Trace, name: str, _holes: list[Interval]) -> Outcome:
    """Held from the trace's start to its end."""
    server = Server(trace.models[name].load)
    server.hold(trace.start, trace.end)
    for when in trace.requests[name]:
        server.request(when, SERVER_KEEP)
    return outcome(server, trace.end)


def schedule(trace: Trace, name: str, _holes: list[Interval]) -> Outcome:
    """Warm 06:00-09:00 and 17:00-23:00 on the household's clock, then the server's 5 min."""
    warm: list[Interval] = []
    day = datetime.fromtimestamp(trace.start, trace.zone).replace(hour=0, minute=0, second=0)
    while day.timestamp() < trace.end:
        for begin, end in ((6, 9), (17, 23)):
            warm.append((day.replace(hour=begin).timestamp(), day.replace(hour=end).timestamp()))
        day = (day + timedelta(hours=36)).replace(hour=0)
    return _with_holds(trace, name, warm)


def _with_holds(trace: Trace, name: str, warm: list[Interval]) -> Outcome:
    """Play the requests with warm-ups ``warm`` (each loads at its start, held to its end)."""
    server = Server(trace.models[name].load)
    events = sorted(
        [(b, 0, e) for b, e in union(warm)] + [(t, 1, 0.0) for t in trace.requests[name]]
    )
    for when, kind, end in events:
        if kind == 0:
            server.hold(when, end)
        else:
            server.request(when, SERVER_KEEP)
    return outcome(server, trace.end)


def oracle_prewarm(trace: Trace, name: str, _holes: list[Interval]) -> Outcome:
    """The 5-minute default plus a load that ends exactly at every request it would miss."""
    requests, model = trace.requests[name], trace.models[name]
    warm = [
        (t - model.load, t + 1)
        for i, t in enumerate(requests)
        if i == 0 or t - requests[i - 1] > SERVER_KEEP
    ]
    return _with_holds(trace, name, warm)


def hour_forecaster(trace: Trace, name: str, _holes: list[Interval]) -> Outcome:
    """Knows which clock hours hold a request (not when in them): warm through each."""
    requests, model = trace.requests[name], trace.models[name]
    hours = sorted({math.floor(t / 3600) for t in requests})
    warm = [(h * 3600.0 - model.load, (h + 1) * 3600.0) for h in hours]
    return _with_holds(trace, name, warm)


# The hybrid histogram policy: Shahrad et al., "Serverless in the Wild: Characterizing and
# Optimizing the Serverless Workload at a Large Cloud Provider", USENIX ATC 2020, section
# 4.2, its rules as published: idle times (a request's end to the next one's arrival) in a
# histogram of 1-minute bins over 4 hours; the pre-warming window is its head (the 5th
# percentile) less a 10 % margin, the keep-alive window reaches its tail (the 99th
# percentile) plus 10 %. After each request the model is unloaded, loaded again when the
# pre-warming window ends and kept to the keep-alive window's end; with a pre-warming
# window of 0 it is kept from the request to that end. While the histogram is not
# representative (its bins' coefficient of variation under 2, or fewer than 10 idle
# times: the paper leaves the count open) a fixed keep-alive of the histogram's range (4 h)
# and no pre-warming; when most idle times fall past the range, the next one is
# predicted (the paper: ARIMA; here the mean of the last 5 such idle times) and the model
# pre-warmed at 85 % of it and kept to 115 %. A load takes the model's cold load here, so
# a pre-warm that starts at the window's end is ready that long after it; the head is the
# 5th percentile's bin start, the tail its bin end.
RANGE_MINUTES = 240
HEAD, TAIL, MARGIN_SHARE = 0.05, 0.99, 0.1
CV_THRESHOLD, MIN_IDLE_TIMES = 2.0, 10


def hybrid_histogram(trace: Trace, name: str, _holes: list[Interval]) -> Outcome:
    """The hybrid histogram policy, as published (the rules above)."""
    server = Server(trace.models[name].load)
    bins = [0] * RANGE_MINUTES
    out_of_bounds: list[float] = []
    count = 0
    previous_end: float | None = None
    scheduled: Interval | None = None
    for when in trace.requests[name]:
        if scheduled is not None and scheduled[0] < when:
            server.hold(scheduled[0], scheduled[1])
        scheduled = None
        wait = server.request(when, 0.0)
        done = when + wait
        if previous_end is not None:
            idle = max(0.0, when - previous_end) / MINUTE
            count += 1
            if idle >= RANGE_MINUTES:
                out_of_bounds.append(idle)
            else:
                bins[int(idle)] += 1
        previous_end = done
        if count and len(out_of_bounds) > count / 2:
            predicted = mean(out_of_bounds[-5:]) * MINUTE
            server.set_until(done, done)
            scheduled = (done + 0.85 * predicted, done + 1.15 * predicted)
            continue
        if not _representative(bins, count - len(out_of_bounds)):
            server.set_until(done, done + RANGE_MINUTES * MINUTE)
            continue
        head = _percentile(bins, HEAD) * MINUTE * (1 - MARGIN_SHARE)
        tail = (_percentile(bins, TAIL) + 1) * MINUTE * (1 + MARGIN_SHARE)
        if head <= 0:
            server.set_until(done, done + tail)
        else:
            server.set_until(done, done)
            scheduled = (done + head, done + tail)
    if scheduled is not None:
        server.hold(scheduled[0], min(scheduled[1], trace.end))
    return outcome(server, trace.end)


def _representative(bins: list[int], in_range: int) -> bool:
    if in_range < MIN_IDLE_TIMES:
        return False
    average = in_range / len(bins)
    deviation = math.sqrt(sum((b - average) ** 2 for b in bins) / len(bins))
    return deviation / average >= CV_THRESHOLD


def _percentile(bins: list[int], share: float) -> int:
    """Return the bin (minute) the ``share`` percentile falls in."""
    total, running = sum(bins), 0
    for minute, count in enumerate(bins):
        running += count
        if running >= share * total:
            return minute
    return len(bins) - 1


def guard_holes(trace: Trace, chosen: dict[str, list[Interval]]) -> dict[str, list[Interval]]:
    """Return when the guard lets go of each model's chosen holds, the largest first.

    While the service needs its memory, a model held by choice is let go (and its holds
    refused) until the service fits beside what stays on the GPU.
    """
    holes: dict[str, list[Interval]] = {name: [] for name in trace.models}
    for begin, end in union(trace.service):
        held = sorted(
            (m for m in trace.models.values() if overlap(chosen[m.name], (begin, end)) > 0),
            key=lambda m: -m.gib,
        )
        total = sum(m.gib for m in held)
        for model in held:
            if total + trace.service_gib <= trace.gpu_gib:
                break
            holes[model.name].append((begin, end))
            total -= model.gib
    return holes


def play(trace: Trace, policy: Policy, *, guarded: bool = False) -> dict[str, Outcome]:
    """Return every model's outcome under ``policy`` (behind the guard: ``guarded``)."""
    first = {name: policy(trace, name, []) for name in trace.models}
    if not guarded:
        return first
    holes = guard_holes(trace, {name: o.chosen for name, o in first.items()})
    return {name: policy(trace, name, holes[name]) for name in trace.models}


def starved_minutes(trace: Trace, outcomes: dict[str, Outcome], span: Interval) -> int:
    """Return the minutes the service could not have its memory because of a policy's choice.

    Minute by minute while it needs the memory: the models held (all of the GPU's) and the
    service do not fit the GPU, and one of them is held by the policy's choice.
    """
    minutes = 0
    for begin, end in union(trace.service):
        when = max(begin, span[0])
        while when < min(end, span[1]):
            held = chosen = 0.0
            for name, model in trace.models.items():
                if inside(outcomes[name].held, when):
                    held += model.gib
                if inside(outcomes[name].chosen, when):
                    chosen += model.gib
            minutes += held + trace.service_gib > trace.gpu_gib and chosen > 0
            when += MINUTE
    return minutes
