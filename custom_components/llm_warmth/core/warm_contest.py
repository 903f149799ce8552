"""Which way of warming a model wins on the days it was used: replayed day by day (pure).

A model can be warmed in several ways (``Way``): by the clock (ahead of its expected
stretches, kept through its sessions), by its idle times (kept after each use as long as
its idle times pay for), and with the household's signals (warmed on an edge that leads a
use) beside either, or instead of both (kept through its sessions only), each with the
signals of one tier (``SIGNAL_LIMITS``: the longest hold an edge may have). Which way acts
is not guessed: as the planner folds each day, it replays the day's uses under every way
with what it had learnt *before* that day (the stretches it expected, the signals that
acted), counts the cold starts and the time the model was held, and keeps the scores,
newer days counting more (``DAY_WEIGHT``). The cost is the planner's one economy: a cold
start is worth ``COLD_START_WORTH`` of the model held. The time-only class is the cheaper
of the clock and the idle times (where the two disagree, the one that won on the days
replayed acts); a way with signals acts only where it was cheaper still, with no more
cold starts and less time held than the time-only one (a household asked for fast
replies, not for memory spent on them or saved at their price).

No Home Assistant import; times are epoch seconds inside (instants), the day's stretches
and uses given by the planner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Final

from .day_replay import DayScore, Residency, Stretch, replay_day
from .usage_rhythm import COLD_START_WORTH

# How much less a day weighs for each day since (about a month's half-life).
DAY_WEIGHT: Final = 0.98
# Days (with a use) and uses replayed before the scores choose (until then the
# forecasts' hit rate does).
MIN_CONTEST_DAYS: Final = 7
MIN_CONTEST_USES: Final = 10
# A way with signals acts where it held the model ``-SIGNAL_SLACK`` less than the
# time-only way at least, had a tenth fewer cold starts, and cost ``SIGNAL_GAIN`` less: a
# few days' luck on the days replayed is no reason to change how a model is warmed, and
# the days ahead are not the days replayed.
SIGNAL_SLACK: Final = -0.02
# The clock wins the time-only class where it cost this share less than the idle times.
CLOCK_MARGIN: Final = 0.05
SIGNAL_GAIN: Final = 0.05
# ... and with this share of the time-only way's cold starts at most.
SIGNAL_COLDS: Final = 0.9
# The signals' tiers: the most an edge may hold the model for each use it finds warm
# (None: any edge that acts). A house whose good signals are few warms on those alone.
SIGNAL_LIMITS: Final = (
    timedelta(minutes=5),
    timedelta(minutes=10),
    timedelta(minutes=20),
    None,
)


class WarmMode(StrEnum):
    """How a model is warmed."""

    CLOCK = "clock"  # ahead of its expected stretches; kept through its sessions
    IDLE = "idle"  # kept after each use as long as its idle times pay for
    CLOCK_AND_SIGNALS = "clock_and_signals"  # the clock's, and on a leading edge
    IDLE_AND_SIGNALS = "idle_and_signals"  # on a leading edge; kept by its idle times
    SIGNALS = "signals"  # on a leading edge; kept after each use through its session

    @property
    def clock(self) -> bool:
        """Return True when the clock's stretches warm the model."""
        return self in (WarmMode.CLOCK, WarmMode.CLOCK_AND_SIGNALS)

    @property
    def signals(self) -> bool:
        """Return True when the household's signals warm the model."""
        return self in (WarmMode.CLOCK_AND_SIGNALS, WarmMode.IDLE_AND_SIGNALS, WarmMode.SIGNALS)

    @property
    def idle_times(self) -> bool:
        """Return True when a use keeps the model as long as its idle times pay for."""
        return self in (WarmMode.IDLE, WarmMode.IDLE_AND_SIGNALS)


@dataclass(frozen=True, slots=True)
class Way:
    """A way of warming: a mode, and for one with signals the tier of the edges that act."""

    mode: WarmMode
    limit: timedelta | None = None

    @property
    def key(self) -> str:
        """Return the way as stored ("signals@30": the edges within 30 minutes a use)."""
        if not self.mode.signals:
            return self.mode.value
        minutes = "any" if self.limit is None else str(round(self.limit.total_seconds() / 60))
        return f"{self.mode.value}@{minutes}"


WAYS: Final = (
    Way(WarmMode.CLOCK),
    Way(WarmMode.IDLE),
    *(
        Way(mode, limit)
        for mode in (WarmMode.CLOCK_AND_SIGNALS, WarmMode.IDLE_AND_SIGNALS, WarmMode.SIGNALS)
        for limit in SIGNAL_LIMITS
    ),
)
_BY_KEY: Final = {way.key: way for way in WAYS}


@dataclass
class Tally:
    """Each way's cold starts and hours held over days replayed (newer days count more)."""

    scores: dict[Way, tuple[float, float]] = field(
        default_factory=lambda: dict.fromkeys(WAYS, (0.0, 0.0))
    )
    days: int = 0
    uses: int = 0

    def add(self, way: Way, score: DayScore) -> None:
        """Add a way's day to its score, the older days fading by ``DAY_WEIGHT``."""
        colds, held = self.scores[way]
        self.scores[way] = (
            colds * DAY_WEIGHT + score.colds,
            held * DAY_WEIGHT + score.held / 3600,
        )

    def cost(self, way: Way) -> float:
        """Return a way's cost: its cold starts' worth and its hours held."""
        colds, hours = self.scores[way]
        return colds * COLD_START_WORTH.total_seconds() / 3600 + hours

    @property
    def decided(self) -> bool:
        """Return True once enough days were replayed for the scores to choose."""
        return self.days >= MIN_CONTEST_DAYS and self.uses >= MIN_CONTEST_USES

    def as_dict(self) -> dict[str, object]:
        """Return the tally as stored."""
        return {
            "scores": {w.key: [round(c, 4), round(h, 4)] for w, (c, h) in self.scores.items()},
            "days": self.days,
            "uses": self.uses,
        }

    @classmethod
    def from_dict(cls, values: object) -> Tally:
        """Read a stored tally; raise ``ValueError`` when it does not read."""
        if not isinstance(values, Mapping):
            raise ValueError("the contest is not a mapping")
        scores = values.get("scores")
        if not isinstance(scores, Mapping):
            raise ValueError("the contest's scores do not read")
        read: dict[Way, tuple[float, float]] = {}
        for way in WAYS:
            pair = scores.get(way.key)
            if not (
                isinstance(pair, list)
                and len(pair) == 2
                and all(
                    isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < 1e9
                    for v in pair
                )
            ):
                raise ValueError("a way's score does not read")
            read[way] = (float(pair[0]), float(pair[1]))
        return cls(read, _count(values.get("days")), _count(values.get("uses")))


@dataclass
class Contest:
    """The ways of warming replayed day by day: their scores, and which one acts.

    ``tally``: every day replayed, for the time-only class. ``since``: the days since the
    time-only way last changed (the clock or the idle times, and the idle times' keep),
    for the signals: a way with signals is judged against the time-only way as it warms
    now, not against days it warmed another way (a keep of four hours early on would make
    any signal look frugal for weeks after the keep settled at half an hour).
    """

    tally: Tally = field(default_factory=Tally)
    since: Tally = field(default_factory=Tally)
    # The time-only way the ``since`` days were replayed against.
    base: str = ""
    # Each way's replayed model between days (not stored: it starts gone).
    _carry: dict[Way, Residency] = field(default_factory=dict, compare=False)

    @property
    def scores(self) -> dict[Way, tuple[float, float]]:
        """Return every way's score over every day replayed."""
        return self.tally.scores

    @property
    def days(self) -> int:
        """Return how many days with a use were replayed."""
        return self.tally.days

    @property
    def uses(self) -> int:
        """Return how many uses were replayed."""
        return self.tally.uses

    def play(
        self,
        *,
        span: tuple[float, float],
        uses: Sequence[float],
        stretches: Sequence[Stretch],
        keeps: Mapping[WarmMode, float],
        signals: Mapping[timedelta | None, Sequence[tuple[float, float]]],
        load: float,
        lead: float,
    ) -> None:
        """Replay one day under every way; add it to the scores.

        ``signals``: the day's leading edges (time, hold) of each tier. A day without a
        use (a holiday, a day away) is replayed, so that the next day starts as it ended,
        but not scored: it tells nothing of the cold starts a way avoids, and the clock's
        rule lets a stretch no use came in go after its first hour.
        """
        clock = self.clock_wins()
        base = (
            "undecided" if clock is None else "clock" if clock else f"idle@{keeps[WarmMode.IDLE]:g}"
        )
        if base != self.base:
            self.since, self.base = Tally(), base
        for way in WAYS:
            mode = way.mode
            state = self._carry.setdefault(way, Residency())
            score = replay_day(
                state,
                span=span,
                uses=uses,
                stretches=stretches if mode.clock else (),
                keep=keeps[mode],
                signals=signals.get(way.limit, ()) if mode.signals else (),
                load=load,
                lead=lead,
            )
            if uses:
                self.tally.add(way, score)
                self.since.add(way, score)
        if uses:
            for tally in (self.tally, self.since):
                tally.days += 1
                tally.uses += len(uses)

    def cost(self, way: Way) -> float:
        """Return a way's cost over every day replayed."""
        return self.tally.cost(way)

    @property
    def decided(self) -> bool:
        """Return True once enough days were replayed for the scores to choose."""
        return self.tally.decided

    def clock_wins(self) -> bool | None:
        """Return whether warming by the clock cost ``CLOCK_MARGIN`` less than by idle times.

        Where the two cost about the same, the idle times win: a keep-alive chosen by
        them is one a fixed keep-alive would hold, on the frontier by construction, where
        the clock's stretches may hold memory for little. None: too few days replayed to
        tell (``decided``).
        """
        if not self.decided:
            return None
        return self.cost(Way(WarmMode.CLOCK)) <= self.cost(Way(WarmMode.IDLE)) * (1 - CLOCK_MARGIN)

    def with_signals(self, base: WarmMode) -> Way:
        """Return the way that acts: ``base`` (time only), or one with signals that won.

        A way with signals wins when it cost ``SIGNAL_GAIN`` less than ``base``, with
        ``SIGNAL_COLDS`` of its cold starts at most and ``SIGNAL_SLACK`` more hours held
        (a share less, as it is negative), both on the days since the time-only way last
        changed (``since``: against it as it warms now) and on every day replayed (a short
        run of lucky days is not enough); the cheapest of those on ``since`` wins.
        """
        time_only = Way(base)
        since = self.since
        if not (self.decided and since.decided):
            return time_only
        admitted = [
            way
            for way in WAYS
            if way.mode.signals
            and _wins(since, way, time_only)
            and _wins(self.tally, way, time_only)
        ]
        return min(admitted, key=since.cost, default=time_only)

    def as_dict(self) -> dict[str, object]:
        """Return the contest as stored."""
        return {"tally": self.tally.as_dict(), "since": self.since.as_dict(), "base": self.base}

    @classmethod
    def from_dict(cls, values: object) -> Contest:
        """Read a stored contest; raise ``ValueError`` when it does not read."""
        if not isinstance(values, Mapping):
            raise ValueError("the contest is not a mapping")
        base = values.get("base")
        if not isinstance(base, str) or len(base) > 32:
            raise ValueError("the contest's base does not read")
        return cls(Tally.from_dict(values.get("tally")), Tally.from_dict(values.get("since")), base)


def _wins(tally: Tally, way: Way, time_only: Way) -> bool:
    """Return True when ``way`` beat ``time_only`` in ``tally`` as a way with signals must.

    ``SIGNAL_COLDS`` of its cold starts at most, ``SIGNAL_SLACK`` more hours held (a share
    less), ``SIGNAL_GAIN`` less cost.
    """
    colds, hours = tally.scores[time_only]
    return (
        tally.scores[way][0] <= colds * SIGNAL_COLDS + 1e-9
        and tally.scores[way][1] <= hours * (1 + SIGNAL_SLACK) + 1e-9
        and tally.cost(way) <= tally.cost(time_only) * (1 - SIGNAL_GAIN) + 1e-9
    )


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("not a count")
    return value


def way_of(key: str) -> Way | None:
    """Return the way a stored key names (None: none)."""
    return _BY_KEY.get(key)
