"""What polling has seen of one resident model's runner, and what its expiry says (pure).

The residency tracker (``residency.py``) keeps one ``Sighting`` per resident model: its
phase, when its runner was first and last seen, its expiry and its runner's facts. The
expiry is evidence: one that moved forward with the clock is a runner in use (Ollama 0.9),
how far it moved dates the end of a busy runner's first request, and one that has come
(within the clocks' tolerance) says a model that left expired.
"""

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
import math

from .runner_key import RunnerKey

# An expiry that moved forward by the time between two polls, within this much, floats.
_FLOAT_TOLERANCE_SECONDS = 0.15
_FLOAT_TOLERANCE_RATIO = 0.02
# A model that left this close before its expiry (or after it) expired: the two machines'
# clocks and the server's timer are not exact.
EXPIRY_TOLERANCE_SECONDS = 2.0


class Phase(StrEnum):
    """What the tracker knows about a resident model."""

    UNSURE = "unsure"
    LOADING = "loading"
    LOADED = "loaded"


@dataclass(slots=True)
class Sighting:
    """One resident model as polling last saw it, and what the tracker knows of it."""

    phase: Phase
    first_seen: float  # monotonic: the first sighting of this runner
    seen_at: datetime
    seen_mono: float
    expires_at: datetime | None
    runner: RunnerKey
    reloaded: bool = False
    # Until when (monotonic) a load of this model is one our own request announced:
    # polling gives no second event for it.
    announced_until: float = -math.inf

    def announced(self, monotonic: float) -> bool:
        """Return True while a load of this model is already announced."""
        return monotonic <= self.announced_until


@dataclass(slots=True)
class Gone:
    """A model that left early with nothing in sight, and when (monotonic)."""

    tracked: Sighting
    left_at: float


def expiry_floats(previous: Sighting, expires_at: datetime | None, now: datetime) -> bool:
    """Return True when the expiry moved forward with the clock (Ollama 0.9, in use)."""
    if previous.expires_at is None or expires_at is None:
        return False
    moved = (expires_at - previous.expires_at).total_seconds()
    elapsed = (now - previous.seen_at).total_seconds()
    tolerance = _FLOAT_TOLERANCE_SECONDS + _FLOAT_TOLERANCE_RATIO * elapsed
    return moved > 0 and abs(moved - elapsed) <= tolerance


def expired(gone: Sighting, now: datetime) -> bool:
    """Return True when a model that left did so at or after its expiry (within tolerance)."""
    return (
        gone.expires_at is not None
        and (gone.expires_at - now).total_seconds() <= EXPIRY_TOLERANCE_SECONDS
    )


def load_end(previous: Sighting, expires_at: datetime | None, monotonic: float) -> float:
    """Return when a busy runner's first request ended, on the monotonic clock.

    A floating expiry (Ollama 0.9) stops at "end + keep_alive": how far it moved since the
    previous poll dates the end between the two polls. Otherwise the end is known to the
    resolution of the poll interval: this poll.
    """
    if previous.expires_at is None or expires_at is None:
        return monotonic
    moved = (expires_at - previous.expires_at).total_seconds()
    return previous.seen_mono + min(max(moved, 0.0), monotonic - previous.seen_mono)
