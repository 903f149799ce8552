"""One day of a model's uses replayed under one way of warming (pure): its cold starts, its hours.

The contest (``warm_contest.py``) replays each day the planner folds under every way of
warming; this is the replay of one: the stretches the clock warms ahead, the edges of
the household's signals and the uses, in time order, with the model's load, its keep
after a use and the holds of each. A use that finds the model gone or still loading is a
cold start. Times are epoch seconds (instants), given by the planner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
import math

from .usage_rhythm import DEFAULT_KEEP


@dataclass(frozen=True, slots=True)
class Stretch:
    """An expected stretch of a day (epoch seconds): warmed ``lead`` before ``start``.

    ``long``: held through once a use came in it, its first hour only while none did; a
    short one (a routine) is let go once one did.
    """

    start: float
    end: float
    long: bool
    unused_hold: float


@dataclass
class Residency:
    """A replayed model between days: held since when, ready when, and why until when."""

    since: float | None = None
    ready: float = -math.inf
    clock: float = -math.inf
    signal: float = -math.inf
    keep: float = -math.inf
    # Each stretch warmed and what it holds the model to (None: it holds it no more).
    holds: dict[Stretch, float | None] = field(default_factory=dict)

    @property
    def until(self) -> float:
        """Return when the model is let go, as things stand."""
        return max(self.clock, self.signal, self.keep, self.ready)


@dataclass(frozen=True, slots=True)
class DayScore:
    """One replayed day: the cold starts, and the seconds the model was held."""

    colds: int
    held: float


@dataclass
class _Day:
    """One day's replay under way: its span, what was held in it, the stretches on."""

    begin: float
    end: float
    held: float = 0.0
    colds: int = 0

    def close(self, state: Residency, at: float) -> None:
        """Let the model go at ``at``: count the time it was held in the day."""
        if state.since is not None:
            self.held += max(min(at, self.end) - max(state.since, self.begin), 0.0)
        state.since = None
        state.ready = state.clock = state.signal = state.keep = -math.inf
        # The stretches stay: a use later in a long one holds the model to its end again.

    def expire(self, state: Residency, now: float) -> None:
        """Let the model go where nothing holds it at ``now`` any more."""
        if state.since is not None and state.until <= now:
            self.close(state, state.until)

    def load(self, state: Residency, now: float, load: float) -> None:
        """Load the model at ``now`` unless it is held."""
        if state.since is None:
            state.since, state.ready = now, now + load


def _clock_until(state: Residency) -> float:
    """Return until when the stretches warmed hold the model."""
    return max((h for h in state.holds.values() if h is not None), default=-math.inf)


def replay_day(
    state: Residency,
    *,
    span: tuple[float, float],
    uses: Sequence[float],
    stretches: Sequence[Stretch],
    keep: float,
    signals: Sequence[tuple[float, float]],
    load: float,
    lead: float,
) -> DayScore:
    """Replay one day (``span``) of ``uses`` under a mode: its cold starts and time held.

    ``stretches`` are warmed ``lead`` before each start (the clock's), ``signals`` are the
    leading edges (time, hold); a use keeps the model ``keep`` (at least the server's
    default) and ends a signal's hold; a short stretch a use came in holds no more, a long
    one holds to its end. A use that finds the model gone or loading is a cold start.
    ``state`` goes on to the next day.
    """
    day = _Day(*span)
    if state.since is not None and state.since > day.begin:
        # A day before the one carried (a clock that went back: the days fold again): what
        # was carried is of days to come, so the day starts with the model gone.
        day.close(state, day.begin)
        state.holds.clear()
    for stretch in [s for s in state.holds if s.end < day.begin]:
        del state.holds[stretch]  # over: it holds nothing any more
    # In time order (a stable sort): at the same moment a stretch's warm-up, then an edge,
    # then a use, as they are listed here.
    events: list[tuple[float, Stretch | float | None]] = [(s.start - lead, s) for s in stretches]
    events += [(at, float(hold)) for at, hold in signals]
    events += [(at, None) for at in uses]
    kept = max(keep, DEFAULT_KEEP.total_seconds())
    for now, what in sorted(events, key=lambda e: e[0]):
        day.expire(state, now)
        match what:
            case Stretch():
                day.load(state, now, load)
                state.holds[what] = what.start + what.unused_hold if what.long else what.end
                state.clock = _clock_until(state)
            case float() if state.since is None:  # an edge finds the model warm: nothing
                day.load(state, now, load)
                state.signal = now + what
            case None:
                if state.since is None or now < state.ready:
                    day.colds += 1
                day.load(state, now, load)
                _used(state, now)
                state.clock = _clock_until(state)
                state.keep = max(state.keep, max(now, state.ready) + kept)
    day.expire(state, day.end)
    if state.since is not None:
        day.held += day.end - max(state.since, day.begin)
        state.since = day.end
    return DayScore(day.colds, day.held)


def _used(state: Residency, now: float) -> None:
    """Hold a long stretch a use came in (at ``now``) through to its end."""
    for stretch, hold in list(state.holds.items()):
        if hold is not None and stretch.long and stretch.start <= now < stretch.end:
            state.holds[stretch] = stretch.end
