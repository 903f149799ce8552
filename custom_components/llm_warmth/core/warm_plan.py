"""Learned warming: when a model will be used next, and how long to keep it (pure).

A household uses its models at times that repeat: the morning routine, the evening, a
developer's working hours. ``UsagePlanner`` learns each model's rhythm from its uses and
says, at any time it is asked, whether the model should be warm now, until when, and when
its next use is expected. No Home Assistant import; the clock is passed in: every time is
an aware ``datetime`` in the household's own time zone (a routine follows the local clock).

What it learns, from the anchors it is measured against (``benchmarks/warm_policy.py``):

- **Rhythm** (as IceBreaker, ASPLOS 2022, predicts with the periodic structure of
  invocations): the day in 10-minute bins; for each bin, a recency-weighted share of past
  days with a use in it, kept twice: per kind of day (weekday or weekend, updated every
  day of that kind) and per day of the week (updated once a week). A bin is *expected*
  when the blend of both reaches ``EXPECT``. Each day folds in with weight ``DAY_WEIGHT``
  (per kind) or ``WEEK_WEIGHT`` (per weekday): after a change of habit the new time is
  expected from its second or third day, and two weeks later the old one keeps about a
  tenth of its share (0.75 ** 10 and 0.4 ** 2, blended), below ``EXPECT``.
- **Sessions** (as the hybrid histogram policy of "Serverless in the Wild", USENIX ATC
  2020, keeps a function alive until the 99th percentile of its idle times): after a
  use, the model is kept through the gaps that separate uses within a session (the 95th
  percentile of the gaps under ``SESSION_GAP``, plus 10 %), not longer.
- **Pattern class** (as SPES, ICDE 2024, treats each function by its class of invocation
  pattern): a model with too little history is ``NEW`` (kept through sessions only); one
  with expected bins is ``RHYTHMIC`` (warmed ahead of each expected stretch); one without
  is ``SPORADIC`` (kept through sessions only: warming it ahead would be a guess).

The plan: warm from ``lead`` (the model's cold-load time plus a margin) before an expected
stretch of bins until its end, unless a use already came in that stretch and its session
keep has run out (the routine happened: holding the model longer is waste); a long
stretch (``LONG_STRETCH``) is held through once a use came in it, and for its first
``UNUSED_HOLD`` only while none did (a day the household skipped); and after any use,
through its session keep. Then the model goes back to the server's own keep.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
import math
from typing import Final, Self, override

from .day_replay import Stretch
from .signal_edges import Edge, EdgeLog
from .signal_learning import SignalBook, SignalLead
from .usage_rhythm import (
    BIN,
    EXPECT,
    MIN_DAYS,
    MIN_FORECASTS,
    MIN_HIT_RATE,
    UsageRhythm,
    bin_of,
    day_start,
    local_time,
    wall_instant,
)
from .warm_contest import SIGNAL_LIMITS, Contest, WarmMode, Way

# An expected stretch this long holds several sessions (an evening, working hours): it is
# held through once a use came in it; a shorter one (a routine) is let go once one did.
LONG_STRETCH: Final = timedelta(hours=1)
# A long stretch no use came in is held this long from its start, then let go: a day the
# household skipped (a day off, a holiday) holds the model an hour, not the whole stretch.
UNUSED_HOLD: Final = timedelta(hours=1)
# A stretch goes on across a dip this long between expected bins.
BRIDGE: Final = timedelta(minutes=30)
# The cold load, and how long ahead of a stretch warming starts, until the shell tells.
ASSUMED_LOAD: Final = timedelta(seconds=30)
ASSUMED_LEAD: Final = timedelta(seconds=90)
# The longest load or lead kept (a day: the contest replays one day at a time).
MOST_SECONDS: Final = 86400.0


class PatternClass(StrEnum):
    """How a model is used, which decides how it is warmed."""

    NEW = "new"  # too little history: kept through sessions only
    RHYTHMIC = "rhythmic"  # uses that repeat at times of the day: warmed ahead of them
    SPORADIC = "sporadic"  # uses at no time that repeats: kept through sessions only


@dataclass(frozen=True, slots=True)
class Plan:
    """What the planner says at one moment about one model."""

    pattern: PatternClass
    # Warm now, and until when (None: not warm now).
    warm: bool
    warm_until: datetime | None
    # The expected stretch we are in, or the next one: its start and end.
    window_start: datetime | None
    window_end: datetime | None
    # When its next use is expected: the start of now's stretch while no use came in it
    # yet, else of the next stretch (None: none expected within a day).
    next_use: datetime | None
    # How long a use is kept warm after it (its session's gaps).
    keep: timedelta
    # A use came in now's stretch already (a routine that happened).
    used: bool
    # Until when now's (or the next) expected stretch holds the model: its end, or for a
    # long stretch with no use yet ``UNUSED_HOLD`` after its start (None: it holds
    # nothing, a routine that happened or a long stretch let go).
    expected_until: datetime | None = None
    # How the model is warmed: by the clock or its idle times, with the signals or not.
    mode: WarmMode = WarmMode.IDLE


@dataclass
class UsagePlanner(UsageRhythm):
    """One model's uses and what they teach; serializable to the store.

    ``observe`` records a use (a real request, never one of our own warm-ups);
    ``plan`` answers at a time (it folds the days that ended since into the rhythm).
    The learning and the store are ``UsageRhythm``'s (``usage_rhythm.py``).
    """

    # The household's signals: their edges kept, what each leads, and the contest of
    # the ways of warming (``warm_contest.py``) that decides which acts.
    signals: SignalBook = field(default_factory=SignalBook)
    edges: EdgeLog = field(default_factory=EdgeLog)
    contest: Contest = field(default_factory=Contest)
    # The model's cold load, and how long ahead of a stretch warming starts (seconds), as
    # ``plan`` was last told: the days are replayed with them.
    load: float = ASSUMED_LOAD.total_seconds()
    lead: float = ASSUMED_LEAD.total_seconds()

    def pattern(self) -> PatternClass:
        """Return the model's pattern class (how the clock reads its uses).

        Rhythmic while warming by the clock wins the contest over warming by the idle
        times (until enough days were replayed: while its forecasts hit often enough).
        """
        if self.days < MIN_DAYS:
            return PatternClass.NEW
        expected = any(s >= EXPECT for s in self.by_kind["weekday"] + self.by_kind["weekend"])
        expected = expected or any(s >= EXPECT for row in self.by_weekday for s in row)
        if not expected:
            return PatternClass.SPORADIC
        if (clock := self.contest.clock_wins()) is not None:
            return PatternClass.RHYTHMIC if clock else PatternClass.SPORADIC
        if self.forecasts >= MIN_FORECASTS and self.hit_rate < MIN_HIT_RATE:
            return PatternClass.SPORADIC
        return PatternClass.RHYTHMIC

    def way(self) -> Way:
        """Return how the model is warmed: the time-only class's way, or one with signals."""
        pattern = self.pattern()
        if pattern is PatternClass.NEW:
            return Way(WarmMode.IDLE)
        base = WarmMode.CLOCK if pattern is PatternClass.RHYTHMIC else WarmMode.IDLE
        return self.contest.with_signals(base)

    def mode(self) -> WarmMode:
        """Return the mode of the way the model is warmed."""
        return self.way().mode

    # ------------------------------------------------------------------ signals

    def observe_edges(self, edges: Iterable[Edge]) -> int:
        """Record the household's ``edges`` (live, or read from the past); return how many.

        An edge older than the days folded (read from the recorder's history) has the
        rhythm, the signals and the contest learnt again from everything kept.
        """
        kept = [edge for edge in edges if self.edges.add(edge)]
        mark = self.folded_until
        if kept and mark is not None and (earliest := min(e.at for e in kept)) < mark:
            self._relearn(day_start(earliest.astimezone(mark.tzinfo)))
        return len(kept)

    def signal_lead(self, edge: Edge) -> SignalLead | None:
        """Return what ``edge`` leads when it warms the model now (None: it does not)."""
        way = self.way()
        if not way.mode.signals:
            return None
        return self.signals.acting(timedelta(seconds=self.load), way.limit).get(edge.key)

    def leads(self) -> list[SignalLead]:
        """Return what every edge learnt leads, the ones that act first, then by share."""
        found = self.signals.leads(timedelta(seconds=self.load)).values()
        return sorted(found, key=lambda lead: (not lead.acts, -lead.share, lead.entity))

    def keep_signals(self, entities: Iterable[str]) -> bool:
        """Forget every signal but ``entities`` (learnt again without them); True if one went."""
        wanted = frozenset(entities)
        gone = self.edges.keep_only(wanted) | self.signals.forget(wanted)
        if gone and self.folded_until is not None:
            self._relearn(self.folded_until)
        return gone

    def idle_times_keep(self) -> timedelta:
        """Return how long a use keeps the model where its idle times decide."""
        return max(self.keep, self.idle_keep)

    @override
    def _relearn(self, since: datetime) -> None:
        """Forget what was learnt (the edges stay); the days fold again from ``since``."""
        super()._relearn(since)
        self.signals, self.contest = SignalBook(), Contest()

    @override
    def _fold(self, day: datetime, following: datetime) -> None:
        """Replay the day under each way of warming, learn its signals, then its rhythm.

        All three read what was learnt before the day: the contest is an honest forecast.
        """
        edges = self.edges.between(day, following)
        if self.days >= MIN_DAYS:
            self._play(day, following, edges)
        self.signals.fold_day(
            edges, self.uses, day=(day, following), keep=self.idle_times_keep(), zone_of=day
        )
        super()._fold(day, following)
        self.edges.prune(following)

    def _play(self, day: datetime, following: datetime, edges: list[Edge]) -> None:
        load = timedelta(seconds=self.load)
        signals: dict[timedelta | None, list[tuple[float, float]]] = {}
        for limit in SIGNAL_LIMITS:
            acting = self.signals.acting(load, limit)
            signals[limit] = [
                (e.at.timestamp(), acting[e.key].hold.total_seconds())
                for e in edges
                if e.key in acting
            ]
        uses = self.uses[bisect_left(self.uses, day) : bisect_left(self.uses, following)]
        keep, idle = self.keep.total_seconds(), self.idle_times_keep().total_seconds()
        self.contest.play(
            span=(day.timestamp(), following.timestamp()),
            uses=[u.timestamp() for u in uses],
            stretches=self._stretches(day, following, timedelta(seconds=self.lead)),
            keeps={mode: idle if mode.idle_times else keep for mode in WarmMode},
            signals=signals,
            load=self.load,
            lead=self.lead,
        )

    def _stretches(self, day: datetime, following: datetime, lead: timedelta) -> list[Stretch]:
        """Return the expected stretches warmed in the day (from ``lead`` before each)."""
        found: list[Stretch] = []
        moment = day
        while moment < following:
            window = self._window(moment, lead)
            if window is None or window[0] - lead >= following:
                break
            start, end = window
            if start - lead >= day:
                found.append(
                    Stretch(
                        start=start.timestamp(),
                        end=end.timestamp(),
                        long=end - start >= LONG_STRETCH,
                        unused_hold=UNUSED_HOLD.total_seconds(),
                    )
                )
            moment = local_time(end, day.tzinfo)
        return found

    # ------------------------------------------------------------------ the store

    @override
    def as_dict(self) -> dict[str, object]:
        """Return the planner's state as stored, its signals and contest included."""
        return super().as_dict() | {
            "signals": self.signals.as_dict(),
            "edges": self.edges.as_dict(),
            "contest": self.contest.as_dict(),
            "load": round(self.load, 3),
            "lead": round(self.lead, 3),
        }

    @override
    @classmethod
    def from_dict(cls, values: object) -> Self:
        """Read a stored state; raise ``ValueError`` when its uses and rhythm do not read.

        What was learnt of the signals and the contest that does not read (or a state
        stored before them) is learnt again from the uses and edges kept.
        """
        planner = super().from_dict(values)
        stored = values if isinstance(values, Mapping) else {}
        planner.load = _seconds(stored.get("load"), ASSUMED_LOAD)
        planner.lead = _seconds(stored.get("lead"), ASSUMED_LEAD)
        try:
            planner.edges = EdgeLog.from_dict(stored.get("edges"))
        except ValueError:
            planner.edges = EdgeLog()
        try:
            planner.signals = SignalBook.from_dict(stored.get("signals"))
            planner.contest = Contest.from_dict(stored["contest"])
        except KeyError, ValueError:
            if planner.folded_until is not None:
                planner._relearn(planner.folded_until)
        return planner

    def _in_stretch(
        self, now: datetime, window: tuple[datetime, datetime], last: datetime | None
    ) -> tuple[bool, datetime | None, datetime | None]:
        """Return whether ``window`` was used, until when a use is expected, the next use.

        A routine (a short stretch) happened once a use came in it; a long stretch holds
        several sessions: it is held through once it began, and let go when none came in
        its first ``UNUSED_HOLD``.
        """
        start, end = window
        moment = now.astimezone(UTC)
        began = last is not None and last >= start
        long = end - start >= LONG_STRETCH
        if began and not long:
            following = self._window(local_time(end, now.tzinfo), timedelta(0))
            return True, None, following[0] if following else None
        expected_until = end if began or not long else start + UNUSED_HOLD
        return False, expected_until if moment < expected_until else None, start

    def _window(self, now: datetime, lead: timedelta) -> tuple[datetime, datetime] | None:
        """Return the expected stretch now is in (from ``lead`` before it), or the next one.

        Looked for over the next day on the household's clock; a stretch is a run of
        expected bins, going on across a dip of up to ``BRIDGE``; one that has ended is
        passed over. Returned as instants (UTC).
        """
        start_bin = day_start(now) + BIN * bin_of(now)
        step = start_bin - BIN * math.ceil(lead / BIN)
        horizon = start_bin + timedelta(days=1)
        while step < horizon:
            if self.share(step) < EXPECT:
                step += BIN
                continue
            # Back to the stretch's first bin (it may have begun before now), then its end.
            begin = step
            while begin > start_bin - timedelta(hours=6) and self._expected_within(
                begin - BRIDGE, begin
            ):
                begin = self._first_expected(begin - BRIDGE, begin)
            end = step + BIN
            while end < step + timedelta(hours=12) and self._expected_within(end, end + BRIDGE):
                end = self._last_expected(end, end + BRIDGE) + BIN
            # In real time: a stretch inside the hour a change to summer time skips is none.
            first, last = wall_instant(begin), wall_instant(end)
            if first < last and last > now:
                return first, last
            step = end
        return None

    def _expected_within(self, begin: datetime, end: datetime) -> bool:
        step = begin
        while step < end:
            if self.share(step) >= EXPECT:
                return True
            step += BIN
        return False

    def _first_expected(self, begin: datetime, end: datetime) -> datetime:
        step = begin
        while self.share(step) < EXPECT:
            step += BIN
        return step

    def _last_expected(self, begin: datetime, end: datetime) -> datetime:
        step = end - BIN
        while self.share(step) < EXPECT:
            step -= BIN
        return step

    def plan(
        self, now: datetime, lead: timedelta = timedelta(0), *, load: timedelta | None = None
    ) -> Plan:
        """Return whether the model should be warm at ``now``, until when, and what is next.

        ``lead``: how long before an expected stretch to start warming (the model's
        cold-load time plus a margin); ``load``: its cold load (both kept for the days
        the contest replays).
        """
        if lead > timedelta(0):
            self.lead = min(lead.total_seconds(), MOST_SECONDS)
        if load is not None:
            self.load = min(max(load.total_seconds(), 0.0), MOST_SECONDS)
        self.advance(now)
        pattern = self.pattern()
        mode = self.mode()
        # A rhythm is warmed ahead and kept through its sessions; uses at no time that
        # repeats (or warmed by the signals instead) are kept as long as their idle
        # times pay for.
        keep = self.idle_times_keep() if mode.idle_times else self.keep
        moment = now.astimezone(UTC)  # reckoned in real time; answered on now's clock
        index = bisect_right(self.uses, moment)
        last = self.uses[index - 1] if index else None
        session_until = last + keep if last is not None else None
        warm_until = session_until if session_until is not None and session_until > moment else None
        window = self._window(now, lead) if mode.clock else None
        next_use: datetime | None = None
        window_start = window_end = expected_until = None
        used = False
        if window is not None:
            window_start, window_end = window
            used, expected_until, next_use = self._in_stretch(now, window, last)
            ahead = window_start - lead <= moment < window_end
            if ahead and expected_until is not None:
                warm_until = max(warm_until or expected_until, expected_until)

        def shown(when: datetime | None) -> datetime | None:
            return None if when is None else local_time(when, now.tzinfo)

        return Plan(
            pattern=pattern,
            warm=warm_until is not None,
            warm_until=shown(warm_until),
            window_start=shown(window_start),
            window_end=shown(window_end),
            next_use=shown(next_use),
            keep=keep,
            used=used,
            expected_until=shown(expected_until),
            mode=mode,
        )


def _seconds(value: object, default: timedelta) -> float:
    """Return a stored number of seconds (a load, a lead), or the default."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default.total_seconds()
    if not math.isfinite(value) or not 0 <= value <= MOST_SECONDS:
        return default.total_seconds()
    return float(value)
