"""The idle profile: how a model's first reply grows with the time it was not used.

The fixed prompt is measured after 0, 1, 10, 60 and 480 minutes without any use of the
model; a use in between (any request resets the server's idle timer) restarts that
interval's wait. Each result records whether the model was resident at the probe and the
stage split; the verdict names the interval at which each layer went cold. Pure logic
with the clock passed in: the shell schedules the probes and stores the profile.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TypeGuard

from .json_value import JsonValue
from .sentence import Duration, Figure, Number, Sentence

INTERVALS_MINUTES = (0, 1, 10, 60, 480)


@dataclass(frozen=True, slots=True)
class IdleResult:
    """One probe of the profile: after ``minutes`` idle, resident or not, its stages (ms)."""

    minutes: int
    at: datetime
    resident: bool
    ttft_ms: float
    load_ms: float | None
    prefill_ms: float | None

    def as_dict(self) -> dict[str, JsonValue]:
        """Return the result as stored and shown."""
        return {
            "minutes": self.minutes,
            "at": self.at.isoformat(),
            "resident": self.resident,
            "ttft_ms": self.ttft_ms,
            "load_ms": self.load_ms,
            "prefill_ms": self.prefill_ms,
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, object]) -> IdleResult:
        """Read a stored result; raise ValueError (or KeyError) when damaged."""
        stamp, minutes = values["at"], values["minutes"]
        if not isinstance(stamp, str) or not _interval(minutes):
            raise ValueError("not an idle result")
        at = datetime.fromisoformat(stamp)
        if at.tzinfo is None:
            raise ValueError("not an idle result")
        return cls(
            minutes=minutes,
            at=at,
            resident=bool(values["resident"]),
            ttft_ms=_number(values["ttft_ms"]),
            load_ms=None if values["load_ms"] is None else _number(values["load_ms"]),
            prefill_ms=None if values["prefill_ms"] is None else _number(values["prefill_ms"]),
        )


def _interval(minutes: object) -> TypeGuard[int]:
    """Return True for one of the profile's intervals, in minutes (a bool is not one)."""
    return (
        isinstance(minutes, int) and not isinstance(minutes, bool) and minutes in INTERVALS_MINUTES
    )


def _number(value: object) -> float:
    """Return a stored figure as a float; raise ValueError when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class IdleProfile:
    """A profile under way (or done): the last use it counts from, and the results so far."""

    model: str
    last_use: datetime
    results: tuple[IdleResult, ...] = field(default=())

    @property
    def done(self) -> bool:
        """Return True once every interval was measured."""
        return len(self.results) == len(INTERVALS_MINUTES)

    @property
    def next_minutes(self) -> int | None:
        """Return the interval measured next (None when done)."""
        return None if self.done else INTERVALS_MINUTES[len(self.results)]

    def due_at(self) -> datetime | None:
        """Return when the next probe is due: that long after the last use."""
        minutes = self.next_minutes
        return None if minutes is None else self.last_use + timedelta(minutes=minutes)

    def used(self, at: datetime) -> IdleProfile:
        """Return the profile after a use of the model at ``at`` (the wait restarts)."""
        return replace(self, last_use=max(self.last_use, at))

    def measured(self, result: IdleResult) -> IdleProfile:
        """Return the profile with one more result; the probe is itself a use."""
        return replace(self, results=(*self.results, result), last_use=result.at)

    def as_dict(self) -> dict[str, object]:
        """Return the profile as stored."""
        return {
            "model": self.model,
            "last_use": self.last_use.isoformat(),
            "results": [r.as_dict() for r in self.results],
        }

    @classmethod
    def from_dict(cls, values: object) -> IdleProfile:
        """Read a stored profile; raise ValueError when damaged."""
        if not isinstance(values, Mapping):
            raise ValueError("not an idle profile: not a mapping")
        try:
            last_use = datetime.fromisoformat(values["last_use"])
            results = tuple(IdleResult.from_dict(r) for r in values["results"])
            model = values["model"]
        except (KeyError, TypeError) as err:
            raise ValueError(f"not an idle profile: {err!r}") from err
        if not isinstance(model, str) or last_use.tzinfo is None:
            raise ValueError("not an idle profile")
        return cls(model=model, last_use=last_use, results=results)


def verdict(
    results: tuple[IdleResult, ...], *, target_ms: float | None = None, size: int | None = None
) -> tuple[Sentence, ...]:
    """Say at which idle interval each layer went cold, and what the target would cost.

    In English: "resident through 1 min; evicted by 10 min: load 8.1 s"; "after 480 min
    the load grew: 31.0 s against 8.1 s at 60 min (read from disk again)"; with a target,
    the first interval that breaks it and the GiB-hours of residency that keeping it
    would take.
    """
    if not results:
        return (Sentence("idle_no_results"),)
    said: list[Sentence] = []
    resident = [r for r in results if r.resident]
    # A profile that began with the model cold: its 0-minute probe loaded it (a start,
    # not an eviction after idle).
    evicted = [r for r in results if not r.resident and r.minutes > 0]
    if resident:
        before = [r for r in resident if not evicted or r.minutes < evicted[0].minutes]
        if before:
            said.append(Sentence("idle_resident_through", {"minutes": before[-1].minutes}))
    said += _evicted(evicted)
    if target_ms is not None:
        said.append(_against_target(results, target_ms, size))
    return tuple(said)


def _evicted(evicted: list[IdleResult]) -> list[Sentence]:
    """Say when the model was first found evicted, and when its load grew (from disk)."""
    if not evicted:
        return []
    first = evicted[0]
    if first.load_ms is None:
        said = [Sentence("idle_evicted_by", {"minutes": first.minutes})]
    else:
        said = [
            Sentence(
                "idle_evicted_by_load",
                {"minutes": first.minutes, "load": Duration(first.load_ms)},
            )
        ]
    slower = [
        r
        for r in evicted[1:]
        if r.load_ms is not None and first.load_ms is not None and r.load_ms >= 2 * first.load_ms
    ]
    if slower:
        r = slower[0]
        said.append(
            Sentence(
                "idle_load_grew",
                {
                    "minutes": r.minutes,
                    "load": Duration(r.load_ms or 0),
                    "first_load": Duration(first.load_ms or 0),
                    "first_minutes": first.minutes,
                },
            )
        )
    return said


def _against_target(
    results: tuple[IdleResult, ...], target_ms: float, size: int | None
) -> Sentence:
    """Say whether every interval kept the target, or the first that broke it (its cost)."""
    broken = next((r for r in results if r.ttft_ms > target_ms), None)
    if broken is None:
        return Sentence("idle_within_target", {"target": Duration(target_ms)})
    figures: dict[str, Figure] = {
        "target": Duration(target_ms),
        "minutes": broken.minutes,
        "ttft": Duration(broken.ttft_ms),
    }
    if size is None:
        return Sentence("idle_target_breaks", figures)
    figures["gib_hours"] = Number(size / 1024**3 * broken.minutes / 60, 1)
    return Sentence("idle_target_breaks_cost", figures)
