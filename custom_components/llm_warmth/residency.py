"""Follow resident models across polls and name what changed (pure logic, clock passed in).

A model is first seen either loading (Ollama reports the zero ``expires_at`` until the
request that loads it finishes) or with an expiry. Ollama before 0.10 reports a loading
model's expiry as "now + keep_alive" instead of the zero time, so it "floats" forward with
the clock: a model first seen with an expiry is therefore looked at once more before it is
called loaded. The coordinator polls quickly while any model is loading or unsure.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from .backends.types import ResidentModel

# An expiry that moved forward by the time between two polls, within this much, floats.
_FLOAT_TOLERANCE_SECONDS = 0.15
_FLOAT_TOLERANCE_RATIO = 0.02


class Phase(StrEnum):
    """What the tracker knows about a resident model."""

    UNSURE = "unsure"
    LOADING = "loading"
    LOADED = "loaded"


class UnloadReason(StrEnum):
    """Why a model left memory."""

    EXPIRED = "expired"
    DISPLACED = "displaced"
    SERVER_RESTARTED = "server_restarted"


@dataclass(frozen=True, slots=True)
class ModelLoaded:
    """A model finished loading; ``load_seconds`` when the load was seen in progress."""

    model: str
    load_seconds: float | None


@dataclass(frozen=True, slots=True)
class ModelUnloaded:
    """A loaded model left memory."""

    model: str
    reason: UnloadReason


type ResidencyChange = ModelLoaded | ModelUnloaded


@dataclass(slots=True)
class _Tracked:
    phase: Phase
    first_seen: float
    seen_at: datetime
    seen_mono: float
    expires_at: datetime | None


def _floats(previous: _Tracked, expires_at: datetime | None, now: datetime) -> bool:
    """Return True when the expiry moved forward with the clock (legacy Ollama, loading)."""
    if previous.expires_at is None or expires_at is None:
        return False
    moved = (expires_at - previous.expires_at).total_seconds()
    elapsed = (now - previous.seen_at).total_seconds()
    tolerance = _FLOAT_TOLERANCE_SECONDS + _FLOAT_TOLERANCE_RATIO * elapsed
    return moved > 0 and abs(moved - elapsed) <= tolerance


class ResidencyTracker:
    """Turns successive ``/api/ps`` snapshots into load and unload changes."""

    def __init__(self) -> None:
        """Start with no knowledge: the first observation is the baseline."""
        self._models: dict[str, _Tracked] = {}
        self._baseline_taken = False

    @property
    def settling(self) -> bool:
        """Return True while a model is loading or not yet known to be loaded."""
        return any(t.phase is not Phase.LOADED for t in self._models.values())

    def phase(self, model: str) -> Phase | None:
        """Return the phase of a resident model, or None when it is not resident."""
        tracked = self._models.get(model)
        return tracked.phase if tracked else None

    def observe(
        self,
        resident: Iterable[ResidentModel],
        *,
        now: datetime,
        monotonic: float,
        server_restarted: bool = False,
    ) -> list[ResidencyChange]:
        """Record one poll's resident models and return what changed since the last one.

        ``now`` is the wall-clock time of the poll (compared with the server's expiries),
        ``monotonic`` the same instant on a monotonic clock (for measured durations).
        """
        changes: list[ResidencyChange] = []
        baseline = not self._baseline_taken
        self._baseline_taken = True
        seen: dict[str, _Tracked] = {}
        for model in resident:
            previous = self._models.get(model.name)
            if previous is None:
                seen[model.name] = self._first_sight(model, now, monotonic, baseline=baseline)
                continue
            tracked = _Tracked(
                previous.phase, previous.first_seen, now, monotonic, model.expires_at
            )
            still_loading = model.loading or _floats(previous, model.expires_at, now)
            if previous.phase is Phase.LOADED and model.loading:
                # Reloaded in place (e.g. another client asked for a different num_ctx).
                tracked.phase, tracked.first_seen = Phase.LOADING, monotonic
            elif previous.phase is Phase.UNSURE and still_loading:
                tracked.phase = Phase.LOADING
            elif previous.phase is Phase.UNSURE:
                tracked.phase = Phase.LOADED
                changes.append(ModelLoaded(model.name, None))
            elif previous.phase is Phase.LOADING and not still_loading:
                tracked.phase = Phase.LOADED
                loaded_at = _load_end(previous, model.expires_at, monotonic)
                changes.append(ModelLoaded(model.name, round(loaded_at - previous.first_seen, 3)))
            seen[model.name] = tracked
        for name, gone in self._models.items():
            if name in seen or gone.phase is not Phase.LOADED:
                continue
            changes.append(ModelUnloaded(name, _unload_reason(gone, now, server_restarted)))
        self._models = seen
        return changes

    @staticmethod
    def _first_sight(
        model: ResidentModel, now: datetime, monotonic: float, *, baseline: bool
    ) -> _Tracked:
        if model.loading:
            phase = Phase.LOADING
        elif baseline:
            phase = Phase.LOADED
        else:
            phase = Phase.UNSURE
        return _Tracked(phase, monotonic, now, monotonic, model.expires_at)


def _load_end(previous: _Tracked, expires_at: datetime | None, monotonic: float) -> float:
    """Return when a load ended, on the monotonic clock.

    A floating expiry (Ollama 0.9) stops at "load end + keep_alive": how far it moved
    since the previous poll dates the end between the two polls. Otherwise the end is
    known to the resolution of the poll interval: this poll.
    """
    if previous.expires_at is None or expires_at is None:
        return monotonic
    moved = (expires_at - previous.expires_at).total_seconds()
    return previous.seen_mono + min(max(moved, 0.0), monotonic - previous.seen_mono)


def _unload_reason(gone: _Tracked, now: datetime, server_restarted: bool) -> UnloadReason:
    if server_restarted:
        return UnloadReason.SERVER_RESTARTED
    if gone.expires_at is not None and now >= gone.expires_at:
        return UnloadReason.EXPIRED
    return UnloadReason.DISPLACED
