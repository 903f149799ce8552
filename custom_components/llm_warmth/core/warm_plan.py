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
from datetime import UTC, datetime, timedelta, tzinfo
from enum import StrEnum
import math
from typing import Any, Final

BIN: Final = timedelta(minutes=10)
BINS_PER_DAY: Final = 144
# The uses kept: about eight weeks.
HISTORY: Final = timedelta(weeks=8)
MAX_USES: Final = 20_000
# Per kind of day (5 weekdays, 2 weekend days a week) and per weekday (once a week).
DAY_WEIGHT: Final = 0.25
WEEK_WEIGHT: Final = 0.6
# A bin is expected when the blend of both shares reaches this.
EXPECT: Final = 0.15
# Days of history before the rhythm is trusted.
MIN_DAYS: Final = 5
# Gaps under this separate uses within one session; the keep after a use is bounded.
SESSION_GAP: Final = timedelta(minutes=30)
MIN_KEEP: Final = timedelta(minutes=2)
DEFAULT_KEEP: Final = timedelta(minutes=5)
MAX_KEEP: Final = SESSION_GAP
MIN_GAPS: Final = 10
# An expected stretch this long holds several sessions (an evening, working hours): it is
# held through once a use came in it; a shorter one (a routine) is let go once one did.
LONG_STRETCH: Final = timedelta(hours=1)
# A long stretch no use came in is held this long from its start, then let go: a day the
# household skipped (a day off, a holiday) holds the model an hour, not the whole stretch.
UNUSED_HOLD: Final = timedelta(hours=1)
# A stretch goes on across a dip this long between expected bins.
BRIDGE: Final = timedelta(minutes=30)
MAX_GAPS: Final = 500
# What one cold start avoided is worth in time the model is held (its memory's price): a
# sporadic model's keep after a use is the one that pays best over the idle times seen
# (up to IDLE_RANGE; a longer one counts as that long).
COLD_START_WORTH: Final = timedelta(hours=2)
IDLE_RANGE: Final = timedelta(hours=4)
KEEPS: Final = tuple(
    timedelta(minutes=m) for m in (5, 7, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240)
)
# How often an expected stretch held a use, checked on each day as it is folded: a forecast
# that misses more often than it hits is no rhythm (the model is sporadic: a warm-up
# ahead would be a guess). Judged once this many stretches were checked.
HIT_WEIGHT: Final = 0.03
MIN_HIT_RATE: Final = 0.25
MIN_FORECASTS: Final = 10


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


def _bin_of(when: datetime) -> int:
    return (when.hour * 60 + when.minute) // 10


def _day_start(when: datetime) -> datetime:
    return when.replace(hour=0, minute=0, second=0, microsecond=0)


def _weekend(when: datetime) -> bool:
    return when.weekday() >= 5


def _instant(wall: datetime) -> datetime:
    """Return the instant (UTC) a reading of the household's clock stands for.

    A reading that the clock skips (the hour a change to summer time leaves out) stands
    for the instant after the change it would have been read at; one it shows twice (the
    hour a change back repeats), for the first.
    """
    return wall.replace(fold=0).astimezone(UTC)


def _local(when: datetime, zone: tzinfo | None) -> datetime:
    return when.astimezone(zone)


@dataclass
class UsagePlanner:
    """One model's uses and what they teach; serializable to the store.

    ``observe`` records a use (a real request, never one of our own warm-ups);
    ``plan`` answers at a time (it folds the days that ended since into the rhythm).
    """

    # The uses' instants (UTC, in order): a keep, a gap and the order of uses are real
    # time; only the rhythm's bins read the household's clock.
    uses: list[datetime] = field(default_factory=list)
    # Shares of days with a use in each bin: per kind of day, and per weekday.
    by_kind: dict[str, list[float]] = field(
        default_factory=lambda: {"weekday": [0.0] * BINS_PER_DAY, "weekend": [0.0] * BINS_PER_DAY}
    )
    by_weekday: list[list[float]] = field(
        default_factory=lambda: [[0.0] * BINS_PER_DAY for _ in range(7)]
    )
    # The first day not folded in yet (its start), and how many days were folded.
    folded_until: datetime | None = None
    days: int = 0
    # Gaps between uses within sessions (seconds), the latest last.
    gaps: list[float] = field(default_factory=list)
    # Idle times between consecutive uses (seconds, at most IDLE_RANGE), the latest last.
    idles: list[float] = field(default_factory=list)
    # How often an expected stretch held a use (recency-weighted), and how many were checked.
    hit_rate: float = 1.0
    forecasts: int = 0

    # ------------------------------------------------------------------ learning

    def _anchor(self, zone_of: datetime) -> None:
        """Read ``folded_until`` in the zone of ``zone_of`` (a stored time has an offset only).

        A day's start read back with the offset it was written with would, after a change
        of summer time, fold days at 23:00 or 01:00 local time.
        """
        if self.folded_until is not None and zone_of.tzinfo is not None:
            self.folded_until = _day_start(self.folded_until.astimezone(zone_of.tzinfo))

    def observe(self, when: datetime) -> None:
        """Record a use at ``when`` (uses may come a little out of order)."""
        self._anchor(when)
        if self.folded_until is None:
            self.folded_until = _day_start(when)
        if when < self.folded_until:
            # A day folded already (a use recorded late, or history older than the first
            # recorded day): the use is kept and the rhythm learnt again from the uses.
            self._relearn(_day_start(when))
        instant = when.astimezone(UTC)
        index = bisect_right(self.uses, instant)
        before = self.uses[index - 1] if index else None
        self.uses.insert(index, instant)
        if before is not None and timedelta(0) < instant - before < SESSION_GAP:
            self.gaps = [*self.gaps, (instant - before).total_seconds()][-MAX_GAPS:]
        if before is not None and instant > before:
            idle = min(instant - before, IDLE_RANGE).total_seconds()
            self.idles = [*self.idles, idle][-MAX_GAPS:]
        if len(self.uses) > MAX_USES:
            del self.uses[: len(self.uses) - MAX_USES]

    def _relearn(self, since: datetime) -> None:
        """Forget the rhythm; the next ``advance`` folds every day again from ``since``.

        The uses kept (``HISTORY``) are what it is learnt from: a day older than them
        weighs less than 0.75 ** 40 in the blend today.
        """
        first = _day_start(_local(self.uses[0], since.tzinfo)) if self.uses else since
        self.folded_until = min(since, first)
        self.by_kind = {kind: [0.0] * BINS_PER_DAY for kind in ("weekday", "weekend")}
        self.by_weekday = [[0.0] * BINS_PER_DAY for _ in range(7)]
        self.days = 0
        self.hit_rate, self.forecasts = 1.0, 0

    def advance(self, now: datetime) -> None:
        """Fold every day that ended before ``now`` into the rhythm; forget old uses."""
        self._anchor(now)
        if self.folded_until is None:
            self.folded_until = _day_start(now)
            return
        today = _day_start(now)
        self.folded_until = min(
            self.folded_until, today
        )  # written while a clock was wrong: start again today
        day = self.folded_until
        if day < today - HISTORY - timedelta(days=1):
            # Days past the uses kept hold nothing to learn: they would only fade the
            # shares to nothing (0.75 ** 56), which is where they are set, day by day no
            # more (a mark of 1970, a clock before its first sync, folded 20,000 days).
            skipped = _day_start(today - HISTORY)
            self.by_kind = {kind: [0.0] * BINS_PER_DAY for kind in ("weekday", "weekend")}
            self.by_weekday = [[0.0] * BINS_PER_DAY for _ in range(7)]
            self.days += max((skipped - day).days, 0)
            day = skipped
        while day < today:
            following = _day_start(day + timedelta(hours=36))  # a DST day has 23 or 25 h
            self._fold(day, following)
            day = following
        self.folded_until = day
        cut = bisect_left(self.uses, now - HISTORY)
        if cut:
            del self.uses[:cut]

    def _fold(self, day: datetime, following: datetime) -> None:
        hits = [False] * BINS_PER_DAY
        for use in self.uses[bisect_left(self.uses, day) : bisect_left(self.uses, following)]:
            hits[_bin_of(_local(use, day.tzinfo))] = True
        self._check_forecast(day, hits)
        kind = self.by_kind["weekend" if _weekend(day) else "weekday"]
        weekday = self.by_weekday[day.weekday()]
        for index, hit in enumerate(hits):
            kind[index] += DAY_WEIGHT * (hit - kind[index])
            weekday[index] += WEEK_WEIGHT * (hit - weekday[index])
        self.days += 1

    def _check_forecast(self, day: datetime, hits: list[bool]) -> None:
        """Score what the rhythm expected of ``day`` against its uses, before it folds in.

        Each run of expected bins is one forecast: a hit when a use came in it or in the
        bin before it (a routine a little early).
        """
        if self.days < MIN_DAYS:
            return
        kind = self.by_kind["weekend" if _weekend(day) else "weekday"]
        weekday = self.by_weekday[day.weekday()]
        expected = [(k + w) / 2 >= EXPECT for k, w in zip(kind, weekday, strict=True)]
        index = 0
        while index < BINS_PER_DAY:
            if not expected[index]:
                index += 1
                continue
            end = index
            while end < BINS_PER_DAY and expected[end]:
                end += 1
            hit = any(hits[max(index - 1, 0) : end])
            self.hit_rate += HIT_WEIGHT * (hit - self.hit_rate)
            self.forecasts += 1
            index = end

    # ------------------------------------------------------------------ answers

    def share(self, when: datetime) -> float:
        """Return how likely a use is in ``when``'s bin, from the rhythm learnt so far."""
        index = _bin_of(when)
        kind = self.by_kind["weekend" if _weekend(when) else "weekday"][index]
        return (kind + self.by_weekday[when.weekday()][index]) / 2

    @property
    def keep(self) -> timedelta:
        """Return how long a use is kept: its session's gaps (95th percentile, plus 10 %)."""
        if len(self.gaps) < MIN_GAPS:
            return DEFAULT_KEEP
        ordered = sorted(self.gaps)
        p95 = ordered[math.ceil(0.95 * len(ordered)) - 1]  # the 19th of 20
        return min(max(timedelta(seconds=p95 * 1.1), MIN_KEEP), MAX_KEEP)

    @property
    def idle_keep(self) -> timedelta:
        """Return the keep that pays best over the idle times seen (``COLD_START_WORTH``).

        A keep ``k`` longer than the server's 5 minutes avoids the cold starts of the idle
        times between them, for the time it holds the model beyond those 5 minutes.
        """
        if len(self.idles) < MIN_GAPS:
            return DEFAULT_KEEP
        worth = COLD_START_WORTH.total_seconds()
        base = DEFAULT_KEEP.total_seconds()
        best, best_gain = DEFAULT_KEEP, 0.0
        for keep in KEEPS:
            k = keep.total_seconds()
            gain = sum(
                (base < idle <= k) - (min(idle, k) - min(idle, base)) / worth for idle in self.idles
            )
            if gain > best_gain + 1e-9:
                best, best_gain = keep, gain
        return best

    def pattern(self) -> PatternClass:
        """Return the model's pattern class."""
        if self.days < MIN_DAYS:
            return PatternClass.NEW
        if self.forecasts >= MIN_FORECASTS and self.hit_rate < MIN_HIT_RATE:
            return PatternClass.SPORADIC
        if any(s >= EXPECT for s in self.by_kind["weekday"] + self.by_kind["weekend"]):
            return PatternClass.RHYTHMIC
        if any(s >= EXPECT for row in self.by_weekday for s in row):
            return PatternClass.RHYTHMIC
        return PatternClass.SPORADIC

    def _window(self, now: datetime, lead: timedelta) -> tuple[datetime, datetime] | None:
        """Return the expected stretch now is in (from ``lead`` before it), or the next one.

        Looked for over the next day on the household's clock; a stretch is a run of
        expected bins, going on across a dip of up to ``BRIDGE``; one that has ended is
        passed over. Returned as instants (UTC).
        """
        start_bin = _day_start(now) + BIN * _bin_of(now)
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
            first, last = _instant(begin), _instant(end)
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

    def plan(self, now: datetime, lead: timedelta = timedelta(0)) -> Plan:
        """Return whether the model should be warm at ``now``, until when, and what is next.

        ``lead``: how long before an expected stretch to start warming (the model's
        cold-load time plus a margin).
        """
        self.advance(now)
        pattern = self.pattern()
        # A rhythm is warmed ahead and kept through its sessions; uses at no time that
        # repeats are kept as long as their idle times pay for.
        keep = self.keep if pattern is PatternClass.RHYTHMIC else max(self.keep, self.idle_keep)
        moment = now.astimezone(UTC)  # reckoned in real time; answered on now's clock
        index = bisect_right(self.uses, moment)
        last = self.uses[index - 1] if index else None
        session_until = last + keep if last is not None else None
        warm_until = session_until if session_until is not None and session_until > moment else None
        window = self._window(now, lead) if pattern is PatternClass.RHYTHMIC else None
        next_use: datetime | None = None
        window_start = window_end = expected_until = None
        used = False
        if window is not None:
            window_start, window_end = window
            # A routine (a short stretch) happened once a use came in it; a long stretch
            # holds several sessions: it is held through once it began, and let go when
            # none came in its first ``UNUSED_HOLD``.
            began = last is not None and last >= window_start
            long = window_end - window_start >= LONG_STRETCH
            used = began and not long
            if not used:
                expected_until = window_end if began or not long else window_start + UNUSED_HOLD
                if moment >= expected_until:
                    expected_until = None
            ahead = window_start - lead <= moment < window_end
            if ahead and expected_until is not None:
                warm_until = max(warm_until or expected_until, expected_until)
            next_use = window_start
            if used:
                following = self._window(_local(window_end, now.tzinfo), timedelta(0))
                next_use = following[0] if following else None

        def shown(when: datetime | None) -> datetime | None:
            return None if when is None else _local(when, now.tzinfo)

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
        )

    # ------------------------------------------------------------------ the store

    def as_dict(self) -> dict[str, Any]:
        """Return the planner's state as stored (JSON types)."""
        return {
            "uses": [u.isoformat() for u in self.uses],
            "by_kind": {k: [round(v, 4) for v in row] for k, row in self.by_kind.items()},
            "by_weekday": [[round(v, 4) for v in row] for row in self.by_weekday],
            "folded_until": self.folded_until.isoformat() if self.folded_until else None,
            "days": self.days,
            "gaps": [round(g, 3) for g in self.gaps],
            "idles": [round(i, 3) for i in self.idles],
            "hit_rate": round(self.hit_rate, 4),
            "forecasts": self.forecasts,
        }

    @classmethod
    def from_dict(cls, values: object) -> UsagePlanner:
        """Read a stored state; raise ``ValueError`` when it does not read."""
        if not isinstance(values, Mapping):
            raise ValueError("not a planner's state")
        # A use out of this era (a clock before its first sync) is none.
        uses = sorted(t.astimezone(UTC) for t in _times(values.get("uses")) if _plausible(t))
        uses = uses[-MAX_USES:]
        by_kind = values.get("by_kind")
        if not isinstance(by_kind, Mapping):
            raise ValueError("by_kind is not a mapping")
        weekday_rows = values.get("by_weekday")
        if not isinstance(weekday_rows, list) or len(weekday_rows) != 7:
            raise ValueError("by_weekday is not seven rows")
        folded = values.get("folded_until")
        if folded is not None and not all(_plausible(t) for t in _times([folded])):
            raise ValueError("the fold mark is out of this era")
        days = values.get("days")
        if not isinstance(days, int) or isinstance(days, bool) or days < 0:
            raise ValueError("days is not a count")
        return cls(
            uses=uses,
            by_kind={kind: _shares(by_kind.get(kind)) for kind in ("weekday", "weekend")},
            by_weekday=[_shares(row) for row in weekday_rows],
            folded_until=next(iter(_times([folded])), None) if folded is not None else None,
            days=days,
            gaps=[g for g in _numbers(values.get("gaps")) if 0 <= g < 86400][-MAX_GAPS:],
            # Stored before idle times and forecasts were kept: none yet.
            idles=[
                i for i in _numbers(values.get("idles", [])) if 0 < i <= IDLE_RANGE.total_seconds()
            ][-MAX_GAPS:],
            hit_rate=_share(values.get("hit_rate", 1.0)),
            forecasts=_count(values.get("forecasts", 0)),
        )


def _times(values: object) -> list[datetime]:
    if not isinstance(values, list):
        raise ValueError("not a list of times")
    found: list[datetime] = []
    for value in values:
        if not isinstance(value, str):
            raise ValueError("a time is not text")
        when = datetime.fromisoformat(value)
        if when.tzinfo is None:
            raise ValueError("a time without its zone")
        found.append(when)
    return found


def _plausible(when: datetime) -> bool:
    """Return True for a time every zone can show (years 2000 to 9000, in UTC).

    Judged in UTC, as uses are stored: 2000-01-01 00:00 at +01:00 is 1999 there, and
    would be kept on one read and dropped on the next. Its own year first: year 1 at
    +14:00 has no UTC time.
    """
    return 1999 <= when.year <= 9001 and 2000 <= when.astimezone(UTC).year <= 9000


def _numbers(values: object) -> Iterable[float]:
    if not isinstance(values, list):
        raise ValueError("not a list of numbers")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("not a number")
        try:
            number = float(value)
        except OverflowError:
            raise ValueError("a number no float holds") from None
        if math.isnan(number):
            raise ValueError("not a number")
        yield number


def _share(value: object) -> float:
    shares = list(_numbers([value]))
    if not 0.0 <= shares[0] <= 1.0:
        raise ValueError("not a share")
    return shares[0]


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError("not a count")
    return value


def _shares(values: object) -> list[float]:
    shares = list(_numbers(values))
    if len(shares) != BINS_PER_DAY or not all(0.0 <= s <= 1.0 for s in shares):
        raise ValueError("not a day of shares")
    return shares
