"""When an idle profile's probes run, and which polls show a use (pure, the clock passed in).

A probe is due that long after the model's last use; a use seen in between (the model
loaded by someone, or its Ollama expiry moved on: any request resets it) restarts the
wait. A probe that could not run (the house needed the GPU, or the server failed) is
looked at again ``RETRY`` later. ``idle_profiler.py`` sets the timers, runs the probes
and stores the profiles (the store's ``idle_profiles`` section) as this module says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from .backends.types import ResidentModel
from .idle_profile import IdleProfile, IdleResult
from .monitor import ProbeResult

# Another look this long after a probe could not run (the house needed the GPU, or the
# server failed).
RETRY: Final = timedelta(minutes=5)
# An Ollama expiry that moves on by more than this between polls is a use.
MOVED: Final = timedelta(seconds=5)


@dataclass(frozen=True, slots=True)
class Sighting:
    """What a poll showed of a profiled model: resident or not, and its expiry."""

    resident: bool
    expires_at: datetime | None

    @classmethod
    def of(cls, resident: ResidentModel | None) -> Sighting:
        """Return the sighting of a model the server holds as ``resident`` (None: not held)."""
        return cls(resident is not None, resident.expires_at if resident else None)

    def shows_a_use_since(self, before: Sighting) -> bool:
        """Return True when this poll shows a use since ``before``'s.

        The model loaded anew, or its expiry moved on by more than ``MOVED``.
        """
        loaded = self.resident and not before.resident
        moved = (
            self.expires_at is not None
            and before.expires_at is not None
            and self.expires_at - before.expires_at > MOVED
        )
        return loaded or moved


@dataclass(slots=True)
class IdleWatch:
    """What the last poll showed of each profiled model.

    None (absent): no baseline yet (after a start, a restart or a probe of ours).
    """

    _seen: dict[str, Sighting] = field(default_factory=dict)

    def polled(
        self,
        profiles: Mapping[str, IdleProfile],
        held: Mapping[str, ResidentModel],
        probing: frozenset[str],
        now: datetime,
    ) -> dict[str, IdleProfile]:
        """Return the profiles a poll at ``now`` shows a use of, their waits restarted.

        A done profile, or one whose model a probe of ours runs on, is not looked at; the
        first poll of a model is its baseline.
        """
        used: dict[str, IdleProfile] = {}
        for model, profile in profiles.items():
            if profile.done or model in probing:
                continue
            now_seen = Sighting.of(held.get(model))
            before = self._seen.get(model)
            self._seen[model] = now_seen
            if before is not None and now_seen.shows_a_use_since(before):
                used[model] = profile.used(now)
        return used

    def forget(self, model: str) -> None:
        """Forget what was seen of ``model``: its own probe is no use, a new baseline."""
        self._seen.pop(model, None)


def fire_at(profile: IdleProfile | None, at: datetime | None, now: datetime) -> datetime | None:
    """Return when the timer of a profile fires: ``at``, else its next probe's time.

    Never before ``now``; None: nothing to schedule (no profile, or one done).
    """
    due = at or (profile.due_at() if profile else None)
    return None if due is None else max(due, now)


def probe_due(profile: IdleProfile, now: datetime, *, probing: bool) -> bool:
    """Return True when the profile's next probe is due at ``now``.

    Not while a probe of ours runs on its model (``probing``), nor once it is done.
    """
    due = profile.due_at()
    return due is not None and due <= now and not probing


def probe_result(profile: IdleProfile, probe: ProbeResult, at: datetime) -> IdleResult:
    """Return the result of the profile's next probe, answered ``at`` as ``probe``."""
    sample = probe.sample
    return IdleResult(
        minutes=profile.next_minutes or 0,
        at=at,
        resident=probe.resident_before is not None,
        ttft_ms=sample.ttft_ms,
        load_ms=sample.queue_and_load_ms,
        prefill_ms=sample.prefill_ms,
    )


def profiles_as_stored(profiles: Mapping[str, IdleProfile]) -> dict[str, object]:
    """Return the profiles as stored (the ``idle_profiles`` section), by model."""
    return {model: profile.as_dict() for model, profile in profiles.items()}
