"""The household guard: pins must not starve the house's other GPU users (pure logic).

The household needs the GPU when a protected entity is on (a transcode, a camera
recorder, a game PC) or when a GPU's free memory falls below the reserve. Then:

- a preload or pin that would load a model is refused (unless forced), with the numbers;
- pinned models are released, lowest priority first: one for each protected entity that
  turns on (a higher priority pin stays while a lower one can make room), one per
  ``HEADROOM_SETTLE`` while the headroom stays below the reserve (the GPU's next reading
  shows whether that was enough); their pins are not asserted again meanwhile;
- once the household has not needed the GPU for ``clear_for``, the released pins are
  re-applied (asserted again, highest priority first, by the pins' own logic).

It also counts the time during which the household needed the GPU while a pin held a
model in memory, and the releases of the last day. Clock passed in; no I/O.
"""

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from .pins import Pin

# A gap longer than this between two decisions (Home Assistant was down) is not counted.
MAX_TICK = timedelta(minutes=5)
# After a release for headroom, the next waits this long: the GPU's reading must show the
# memory the first one freed.
HEADROOM_SETTLE = timedelta(seconds=20)
# Releases within this long are counted for the repair issue.
RELEASE_WINDOW = timedelta(days=1)
# Releases within a day from which a repair issue says the pins and the house collide.
RELEASES_BEFORE_REPAIR = 3
_GIB = 1024**3


class GpuNeed(StrEnum):
    """Why the household needs the GPU now."""

    PROTECTED_ENTITY = "protected_entity"
    HEADROOM_LOW = "headroom_low"


@dataclass(frozen=True, slots=True)
class Household:
    """What the household needs now.

    ``lowest_headroom``: the free memory less the reserve on the GPU with the least
    (negative: short); ``best_headroom``: on the GPU with the most (where a new model would
    go). Both None without a GPU source. ``protected_on``: protected entities that are on.
    """

    lowest_headroom: int | None = None
    best_headroom: int | None = None
    reserve: int = 0
    protected_on: tuple[str, ...] = ()
    other_processes: tuple[str, ...] = ()

    @property
    def headroom_low(self) -> bool:
        """Return True when a GPU has less free memory than the reserve."""
        return self.lowest_headroom is not None and self.lowest_headroom < 0

    @property
    def need(self) -> GpuNeed | None:
        """Return why the household needs the GPU now (None: it does not)."""
        if self.protected_on:
            return GpuNeed.PROTECTED_ENTITY
        if self.headroom_low:
            return GpuNeed.HEADROOM_LOW
        return None


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a load is refused: a protected entity is on, or the model does not fit."""

    model: str
    need: GpuNeed
    size: int | None = None
    headroom: int | None = None
    entity: str | None = None


def admit(model: str, size: int | None, household: Household, *, resident: bool) -> Refusal | None:
    """Return why loading ``model`` (``size`` bytes, None: unknown) would starve the house.

    A resident model costs nothing more. A model of unknown size, or a house without a
    GPU source, is refused only while a protected entity is on.
    """
    if resident:
        return None
    if household.protected_on:
        return Refusal(model, GpuNeed.PROTECTED_ENTITY, entity=household.protected_on[0])
    headroom = household.best_headroom
    if size is not None and headroom is not None and size > headroom:
        return Refusal(model, GpuNeed.HEADROOM_LOW, size=size, headroom=headroom)
    return None


def admit_hold(model: str, household: Household) -> Refusal | None:
    """Return why holding a resident ``model`` longer would starve the house, or None.

    A longer keep asks for no memory now, but keeps what the household needs: refused
    whenever it needs the GPU (a protected entity on, a GPU below the reserve), as pins are
    released then.
    """
    if household.protected_on:
        return Refusal(model, GpuNeed.PROTECTED_ENTITY, entity=household.protected_on[0])
    if household.headroom_low:
        return Refusal(model, GpuNeed.HEADROOM_LOW, headroom=household.lowest_headroom)
    return None


@dataclass(frozen=True, slots=True)
class Release:
    """Let ``model`` go now: the household needs the GPU (``need``)."""

    model: str
    need: GpuNeed


@dataclass(frozen=True, slots=True)
class Reapply:
    """Hold the released pin of ``model`` again."""

    model: str


@dataclass(slots=True)
class GuardRecord:
    """What the guard keeps across restarts."""

    contended_seconds: float = 0.0
    releases: list[datetime] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """Return the record as stored."""
        return {
            "contended_seconds": round(self.contended_seconds, 3),
            "releases": [when.isoformat() for when in self.releases],
        }

    @classmethod
    def from_dict(cls, values: object) -> GuardRecord:
        """Read a stored record; raise ValueError when it is damaged."""
        if not isinstance(values, Mapping):
            raise ValueError("not a mapping")
        seconds = values.get("contended_seconds", 0.0)
        releases = values.get("releases", [])
        if (
            not isinstance(seconds, int | float)
            or isinstance(seconds, bool)
            or not 0 <= seconds < 1e12
        ):
            raise ValueError(f"bad contended time {seconds!r}")
        if not isinstance(releases, list) or not all(isinstance(r, str) for r in releases):
            raise ValueError(f"bad releases {releases!r}")
        times = [datetime.fromisoformat(r) for r in releases]
        if any(t.tzinfo is None for t in times):
            raise ValueError("release time without zone")
        return cls(contended_seconds=float(seconds), releases=times)


def stored_record(stored: object) -> tuple[GuardRecord, str | None]:
    """Return the guard's record from its store section, and why a damaged one is ignored.

    Nothing stored: a fresh record. A damaged record is set aside for a fresh one, with the
    reason (for the log); None when it was read.
    """
    if stored is None:
        return GuardRecord(), None
    try:
        return GuardRecord.from_dict(stored), None
    except (ValueError, TypeError) as err:
        return GuardRecord(), str(err)


def release_data(need: GpuNeed, household: Household) -> dict[str, str | float | list[str] | None]:
    """Return what a pin's release event says of the household that needed the GPU.

    Why (``reason``), the first protected entity that is on (None: the headroom was low),
    the lowest headroom and the reserve in GiB (2 decimals), and the GPU's other processes.
    """
    return {
        "reason": need.value,
        "entity": household.protected_on[0] if household.protected_on else None,
        "headroom_gib": None
        if household.lowest_headroom is None
        else round(household.lowest_headroom / _GIB, 2),
        "reserve_gib": round(household.reserve / _GIB, 2),
        "processes": list(household.other_processes),
    }


def releases_repair(releases: int, contended_minutes: float, server: str) -> dict[str, str] | None:
    """Return the placeholders of the repair issue about pins released again and again.

    ``releases``: within the last day; from ``RELEASES_BEFORE_REPAIR`` on the issue is
    raised (None: not, or no longer). The contended minutes are shown whole.
    """
    if releases < RELEASES_BEFORE_REPAIR:
        return None
    return {"server": server, "count": str(releases), "minutes": f"{contended_minutes:.0f}"}


class Guard:
    """Decides, at each poll, which pins to release and when to re-apply them."""

    def __init__(self, clear_for: timedelta, record: GuardRecord | None = None) -> None:
        """Re-apply released pins once the household has not needed the GPU ``clear_for``."""
        self.clear_for = clear_for
        self.record = record or GuardRecord()
        self._clear_since: datetime | None = None
        self._last_tick: datetime | None = None
        # Protected entities whose turning on was answered with a release, and the last
        # release for headroom.
        self._answered: set[str] = set()
        self._headroom_release: datetime | None = None

    @property
    def contended_minutes(self) -> float:
        """Return the minutes the household needed the GPU while a pin held a model."""
        return self.record.contended_seconds / 60

    def releases_within_a_day(self, now: datetime) -> int:
        """Return how many pins were released during the last day."""
        return sum(1 for when in self.record.releases if now - when < RELEASE_WINDOW)

    def decide(
        self,
        pins: Mapping[str, Pin],
        held: Collection[str],
        household: Household,
        now: datetime,
    ) -> Sequence[Release | Reapply]:
        """Return what to do now with the pins, given what the server holds."""
        need = household.need
        holding = sorted(
            (pin for pin in pins.values() if pin.model in held and not pin.released),
            key=lambda pin: (pin.priority, -pin.since.timestamp(), pin.model),
        )
        self._tick(now, contended=need is not None and bool(holding))
        self._answered &= set(household.protected_on)
        if need is not None:
            self._clear_since = None
            if not holding:
                return []
            new = [e for e in household.protected_on if e not in self._answered]
            if new:
                self._answered.update(new)
                need = GpuNeed.PROTECTED_ENTITY
            elif household.headroom_low and (
                self._headroom_release is None or now - self._headroom_release >= HEADROOM_SETTLE
            ):
                self._headroom_release = now
                need = GpuNeed.HEADROOM_LOW
            else:
                return []
            self.record.releases = [
                when for when in self.record.releases if now - when < RELEASE_WINDOW
            ]
            self.record.releases.append(now)
            return [Release(holding[0].model, need)]
        if self._clear_since is None:
            self._clear_since = now
        if now - self._clear_since < self.clear_for:
            return []
        released = sorted(
            (pin for pin in pins.values() if pin.released),
            key=lambda pin: (-pin.priority, pin.model),
        )
        return [Reapply(pin.model) for pin in released]

    def _tick(self, now: datetime, *, contended: bool) -> None:
        if contended and self._last_tick is not None:
            step = now - self._last_tick
            if timedelta(0) < step <= MAX_TICK:
                self.record.contended_seconds += step.total_seconds()
        self._last_tick = now
