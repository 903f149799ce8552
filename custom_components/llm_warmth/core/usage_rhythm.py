"""A model's rhythm of use, learnt from its uses (pure): the state ``warm_plan.py`` plans on.

``UsageRhythm`` keeps one model's uses and what they teach: the day in 10-minute bins
with a recency-weighted share of past days with a use in each (per kind of day and per
weekday), the gaps between uses within a session, the idle times between uses, and how
often an expected stretch held a use. It answers how likely a use is in a bin (``share``)
and how long a use is kept (``keep``, ``idle_keep``), and reads and writes its state as
stored. What is planned on it (the pattern class, the expected stretches, the plan) is in
``warm_plan.py``, whose docstring tells what is learnt and why. No Home Assistant import;
every time is an aware ``datetime`` in the household's own time zone.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
import math
from typing import Final, Self

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
MAX_GAPS: Final = 500
# What one cold start avoided is worth in time the model is held (its memory's price): a
# sporadic model's keep after a use is the one that pays best over the idle times seen
# (up to IDLE_RANGE; a longer one counts as that long).
COLD_START_WORTH: Final = timedelta(hours=2)
IDLE_RANGE: Final = timedelta(hours=4)
KEEPS: Final = tuple(
    timedelta(minutes=m) for m in (5, 7, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240)
)
# The idle times' keep settled on stays while it gains this share of the best's gain.
IDLE_KEEP_MARGIN: Final = 0.05
# How often an expected stretch held a use, checked on each day as it is folded: a forecast
# that misses more often than it hits is no rhythm (the model is sporadic: a warm-up
# ahead would be a guess). Judged once this many stretches were checked.
HIT_WEIGHT: Final = 0.03
MIN_HIT_RATE: Final = 0.25
MIN_FORECASTS: Final = 10
# The fold mark is a local day's start: up to a day before the first use of this era.
_ERA_MARK_START: Final = datetime(1999, 12, 30, tzinfo=UTC)
_ERA_END: Final = datetime(9001, 1, 1, tzinfo=UTC)


def bin_of(when: datetime) -> int:
    """Return the 10-minute bin of the day ``when`` falls in, on its own clock."""
    return (when.hour * 60 + when.minute) // 10


def day_start(when: datetime) -> datetime:
    """Return the start (midnight) of ``when``'s day, on its own clock."""
    return when.replace(hour=0, minute=0, second=0, microsecond=0)


def _weekend(when: datetime) -> bool:
    return when.weekday() >= 5


def wall_instant(wall: datetime) -> datetime:
    """Return the instant (UTC) a reading of the household's clock stands for.

    A reading that the clock skips (the hour a change to summer time leaves out) stands
    for the instant after the change it would have been read at; one it shows twice (the
    hour a change back repeats), for the first.
    """
    return wall.replace(fold=0).astimezone(UTC)


def local_time(when: datetime, zone: tzinfo | None) -> datetime:
    """Return ``when`` as the clock of ``zone`` shows it."""
    return when.astimezone(zone)


@dataclass
class UsageRhythm:
    """One model's uses and what they teach; serializable to the store.

    ``observe`` records a use (a real request, never one of our own warm-ups);
    ``advance`` folds the days that ended before a time into the rhythm.
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
    # The idle times' keep settled on at the last fold (seconds; None: none yet).
    settled_idle_keep: float | None = None

    # ------------------------------------------------------------------ learning

    def _anchor(self, zone_of: datetime) -> None:
        """Read ``folded_until`` in the zone of ``zone_of`` (a stored time has an offset only).

        A day's start read back with the offset it was written with would, after a change
        of summer time, fold days at 23:00 or 01:00 local time.
        """
        if self.folded_until is not None and zone_of.tzinfo is not None:
            self.folded_until = day_start(self.folded_until.astimezone(zone_of.tzinfo))

    def observe(self, when: datetime) -> None:
        """Record a use at ``when`` (uses may come a little out of order)."""
        self._anchor(when)
        if self.folded_until is None:
            self.folded_until = day_start(when)
        if when < self.folded_until:
            # A day folded already (a use recorded late, or history older than the first
            # recorded day): the use is kept and the rhythm learnt again from the uses.
            self._relearn(day_start(when))
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
        first = day_start(local_time(self.uses[0], since.tzinfo)) if self.uses else since
        self.folded_until = min(since, first)
        self.by_kind = {kind: [0.0] * BINS_PER_DAY for kind in ("weekday", "weekend")}
        self.by_weekday = [[0.0] * BINS_PER_DAY for _ in range(7)]
        self.days = 0
        self.hit_rate, self.forecasts = 1.0, 0
        self.settled_idle_keep = None

    def advance(self, now: datetime) -> None:
        """Fold every day that ended before ``now`` into the rhythm; forget old uses."""
        self._anchor(now)
        if self.folded_until is None:
            self.folded_until = day_start(now)
            return
        today = day_start(now)
        self.folded_until = min(
            self.folded_until, today
        )  # written while a clock was wrong: start again today
        day = self.folded_until
        if day < today - HISTORY - timedelta(days=1):
            # Days past the uses kept hold nothing to learn: they would only fade the
            # shares to nothing (0.75 ** 56), which is where they are set, day by day no
            # more (a mark of 1970, a clock before its first sync, folded 20,000 days).
            skipped = day_start(today - HISTORY)
            self.by_kind = {kind: [0.0] * BINS_PER_DAY for kind in ("weekday", "weekend")}
            self.by_weekday = [[0.0] * BINS_PER_DAY for _ in range(7)]
            self.days += max((skipped - day).days, 0)
            day = skipped
        while day < today:
            following = day_start(day + timedelta(hours=36))  # a DST day has 23 or 25 h
            self._fold(day, following)
            day = following
        self.folded_until = day
        cut = bisect_left(self.uses, now - HISTORY)
        if cut:
            del self.uses[:cut]

    def _fold(self, day: datetime, following: datetime) -> None:
        hits = [False] * BINS_PER_DAY
        for use in self.uses[bisect_left(self.uses, day) : bisect_left(self.uses, following)]:
            hits[bin_of(local_time(use, day.tzinfo))] = True
        self._check_forecast(day, hits)
        kind = self.by_kind["weekend" if _weekend(day) else "weekday"]
        weekday = self.by_weekday[day.weekday()]
        for index, hit in enumerate(hits):
            kind[index] += DAY_WEIGHT * (hit - kind[index])
            weekday[index] += WEEK_WEIGHT * (hit - weekday[index])
        self.days += 1
        self.settle_idle_keep()

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
        index = bin_of(when)
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
        times between them, for the time it holds the model beyond those 5 minutes. The
        keep settled on at the last day's fold (``settled_idle_keep``) stays while it pays
        within ``IDLE_KEEP_MARGIN`` of the best.
        """
        if len(self.idles) < MIN_GAPS:
            return DEFAULT_KEEP
        if self.settled_idle_keep is not None:
            return timedelta(seconds=self.settled_idle_keep)
        return self._idle_keeps()[0]

    def _idle_keeps(self) -> tuple[timedelta, dict[float, float]]:
        """Return the keep that pays best over the idle times, and what each keep gains."""
        worth = COLD_START_WORTH.total_seconds()
        base = DEFAULT_KEEP.total_seconds()
        best, best_gain = DEFAULT_KEEP, 0.0
        gains: dict[float, float] = {}
        for keep in KEEPS:  # the server's default first: it gains nothing
            k = keep.total_seconds()
            gain = sum(
                (base < idle <= k) - (min(idle, k) - min(idle, base)) / worth for idle in self.idles
            )
            gains[k] = gain
            if gain > best_gain + 1e-9:
                best, best_gain = keep, gain
        return best, gains

    def settle_idle_keep(self) -> None:
        """Settle the idle times' keep for the day ahead (at a day's fold).

        The keep settled before stays while it gains within ``IDLE_KEEP_MARGIN`` of the
        best: keeps that pay about the same are far apart (30 minutes and 4 hours), and a
        model kept by one on some days and the other on others holds more memory for its
        cold starts than a keep-alive between them would.
        """
        if len(self.idles) < MIN_GAPS:
            self.settled_idle_keep = None
            return
        best, gains = self._idle_keeps()
        kept = self.settled_idle_keep
        if kept is None or not still_pays(gains.get(kept, -math.inf), gains[best.total_seconds()]):
            self.settled_idle_keep = best.total_seconds()

    # ------------------------------------------------------------------ the store

    def as_dict(self) -> dict[str, object]:
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
            "settled_idle_keep": self.settled_idle_keep,
        }

    @classmethod
    def from_dict(cls, values: object) -> Self:
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
        if folded is not None and not all(_plausible_mark(t) for t in _times([folded])):
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
            settled_idle_keep=_settled(values.get("settled_idle_keep")),
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


def _plausible_mark(when: datetime) -> bool:
    """Return True for a fold mark every zone can show: a day's start of a use in this era.

    The first use may be 2000-01-01 05:00 UTC, whose day starts at 1999-12-31 12:00 UTC
    in a zone 12 hours behind: the mark is a local day's start, up to a day before it.
    """
    return when.year >= 1999 and _ERA_MARK_START <= when < _ERA_END


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


def still_pays(gain: float, best: float) -> bool:
    """Return True where a keep's ``gain`` is within ``IDLE_KEEP_MARGIN`` of the ``best``.

    Gains are in cold starts avoided (less the time held): under one, the margin is a
    twentieth of a cold start.
    """
    return gain >= best - IDLE_KEEP_MARGIN * max(best, 1.0)


def _share(value: object) -> float:
    shares = list(_numbers([value]))
    if not 0.0 <= shares[0] <= 1.0:
        raise ValueError("not a share")
    return shares[0]


def _settled(value: object) -> float | None:
    """Return a stored settled keep: one of the keeps (seconds), else none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    known = {k.total_seconds() for k in KEEPS} | {DEFAULT_KEEP.total_seconds()}
    return float(value) if value in known else None


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError("not a count")
    return value


def _shares(values: object) -> list[float]:
    shares = list(_numbers(values))
    if len(shares) != BINS_PER_DAY or not all(0.0 <= s <= 1.0 for s in shares):
        raise ValueError("not a day of shares")
    return shares
