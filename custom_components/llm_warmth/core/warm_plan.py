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

from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
import math
from typing import Final

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

# An expected stretch this long holds several sessions (an evening, working hours): it is
# held through once a use came in it; a shorter one (a routine) is let go once one did.
LONG_STRETCH: Final = timedelta(hours=1)
# A long stretch no use came in is held this long from its start, then let go: a day the
# household skipped (a day off, a holiday) holds the model an hour, not the whole stretch.
UNUSED_HOLD: Final = timedelta(hours=1)
# A stretch goes on across a dip this long between expected bins.
BRIDGE: Final = timedelta(minutes=30)


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


@dataclass
class UsagePlanner(UsageRhythm):
    """One model's uses and what they teach; serializable to the store.

    ``observe`` records a use (a real request, never one of our own warm-ups);
    ``plan`` answers at a time (it folds the days that ended since into the rhythm).
    The learning and the store are ``UsageRhythm``'s (``usage_rhythm.py``).
    """

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
                following = self._window(local_time(window_end, now.tzinfo), timedelta(0))
                next_use = following[0] if following else None

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
        )
