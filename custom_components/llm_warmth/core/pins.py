"""Pins: models the household wants kept resident, and when to ask the server again.

A pin keeps one model resident until it is unpinned or until a time, with a priority (the
household guard releases the lowest first). The server does not know about pins: Ollama
keeps a model as its last request's ``keep_alive`` says (the last writer wins),
llama-server lets the least recently used model go when ``--models-max`` needs a place,
llama-swap stops a model after its ``ttl`` or when another model of its group starts. So
after each poll the pins are compared with what the server holds and re-asserted where the
server shows the model gone or (Ollama) its expiry earlier than the pin's end.

Pure logic with the clock passed in; the controller does the requests.
"""

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from .backends.base import Capabilities, KeepAlive
from .backends.types import ResidencyState, ResidentModel

# An Ollama expiry this much before the pin's end counts as shortened (the server sets
# it from the request's arrival; polls and clocks add a little).
EXPIRY_TOLERANCE = timedelta(seconds=30)
# A model re-asserted and gone again within this long waits before the next attempt,
# doubling each time up to REASSERT_BACKOFF_MAX: two pins that do not fit together (or a
# client that keeps shortening the expiry) must not keep the server loading all day.
REASSERT_BACKOFF = timedelta(seconds=60)
REASSERT_BACKOFF_MAX = timedelta(hours=1)
# States in which the server lets the weights go (llama-server's sleep, llama-swap's stop).
_LET_GO = (ResidencyState.SLEEPING, ResidencyState.UNLOADING)
PRIORITY_MIN = -100
PRIORITY_MAX = 100


class ReassertReason(StrEnum):
    """Why a pin is asserted again."""

    GONE = "gone"  # not resident (expired, evicted, displaced, the server restarted)
    EXPIRY_SHORTENED = "expiry_shortened"  # another request's shorter keep_alive (Ollama)


# What asserting a pin again costs, per kind of server and reason (README, action answers).
REASSERT_COST: Mapping[KeepAlive, str] = {
    KeepAlive.IDLE_TIMER: (
        "expiry shortened: one empty request, no reload; gone: a full load of the weights"
    ),
    KeepAlive.LRU: (
        "a full load, and with --models-max reached the server unloads its least recently "
        "used model to make room"
    ),
    KeepAlive.TTL: (
        "a full load, which stops the other models of its group (a swap); with a ttl the "
        "model is stopped again after that idle time"
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Pin:
    """Keep ``model`` resident until unpinned (``until`` None) or until ``until``.

    ``num_ctx``: the context it is loaded with (Ollama; its agent's, so the agent's turns do
    not reload it). ``released``: why the household guard let it go (None while it holds).
    """

    model: str
    priority: int = 0
    until: datetime | None = None
    num_ctx: int | None = None
    since: datetime
    released: str | None = None
    released_at: datetime | None = None

    def expired(self, now: datetime) -> bool:
        """Return True once the pin's end has passed."""
        return self.until is not None and now >= self.until

    def keep_seconds(self, now: datetime) -> float:
        """Return the keep_alive that holds the model to the pin's end (-1: for ever)."""
        if self.until is None:
            return -1
        return max((self.until - now).total_seconds(), 1.0)

    def as_dict(self) -> dict[str, object]:
        """Return the pin as stored."""
        return {
            "model": self.model,
            "priority": self.priority,
            "until": self.until.isoformat() if self.until else None,
            "num_ctx": self.num_ctx,
            "since": self.since.isoformat(),
            "released": self.released,
            "released_at": self.released_at.isoformat() if self.released_at else None,
        }

    @classmethod
    def from_dict(cls, values: object) -> Pin:
        """Read a stored pin; raise ValueError when it is damaged."""
        if not isinstance(values, Mapping):
            raise ValueError("not a mapping")
        model = values.get("model")
        priority = values.get("priority", 0)
        num_ctx = values.get("num_ctx")
        released = values.get("released")
        if not isinstance(model, str) or not model:
            raise ValueError("no model")
        if not _whole(priority) or not PRIORITY_MIN <= priority <= PRIORITY_MAX:
            raise ValueError(f"bad priority {priority!r}")
        if num_ctx is not None and (not _whole(num_ctx) or num_ctx <= 0):
            raise ValueError(f"bad num_ctx {num_ctx!r}")
        if released is not None and not isinstance(released, str):
            raise ValueError(f"bad release reason {released!r}")
        since = _time(values.get("since"))
        if since is None:
            raise ValueError("no start time")
        return cls(
            model=model,
            priority=priority,
            until=_time(values.get("until")),
            num_ctx=num_ctx,
            since=since,
            released=released,
            released_at=_time(values.get("released_at")),
        )


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _time(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"bad time {value!r}")
    when = datetime.fromisoformat(value)
    if when.tzinfo is None:
        raise ValueError(f"time without zone {value!r}")
    return when


@dataclass(frozen=True, slots=True)
class Reassertion:
    """Ask the server for ``pin`` again, because of ``reason``."""

    pin: Pin
    reason: ReassertReason


@dataclass(slots=True)
class _Attempts:
    last: datetime
    count: int
    reason: ReassertReason


class PinBook:
    """The pins of one server, and when each was last asserted again."""

    def __init__(self, capabilities: Capabilities, pins: Mapping[str, Pin] | None = None) -> None:
        """Start from the stored pins."""
        self.capabilities = capabilities
        self._pins: dict[str, Pin] = dict(pins or {})
        self._attempts: dict[str, _Attempts] = {}

    @property
    def pins(self) -> dict[str, Pin]:
        """Return the pins, by model."""
        return dict(self._pins)

    def get(self, model: str) -> Pin | None:
        """Return the pin of ``model``, if it has one."""
        return self._pins.get(model)

    def pin(self, pin: Pin) -> None:
        """Add or replace the pin of ``pin.model`` (a new pin starts without back-off)."""
        self._pins[pin.model] = pin
        self._attempts.pop(pin.model, None)

    def unpin(self, model: str) -> Pin | None:
        """Remove the pin of ``model``; return it (None: it had none)."""
        self._attempts.pop(model, None)
        return self._pins.pop(model, None)

    def release(self, model: str, reason: str, now: datetime) -> None:
        """Mark the pin released by the guard: it is not asserted until re-applied."""
        if (pin := self._pins.get(model)) is not None:
            self._pins[model] = replace(pin, released=reason, released_at=now)

    def reapply(self, model: str) -> None:
        """Hold the released pin again (asserted at once)."""
        if (pin := self._pins.get(model)) is not None:
            self._pins[model] = replace(pin, released=None, released_at=None)
            self._attempts.pop(model, None)

    def drop_expired(self, now: datetime) -> list[Pin]:
        """Remove and return the pins whose end has passed."""
        ended = [pin for pin in self._pins.values() if pin.expired(now)]
        for pin in ended:
            self.unpin(pin.model)
        return ended

    def due(
        self,
        resident: Mapping[str, ResidentModel],
        available: frozenset[str],
        now: datetime,
    ) -> list[Reassertion]:
        """Return the pins to assert again now, highest priority first.

        ``resident``: what the server lists (asleep or unloading counts as gone);
        ``available``: the models it can load. While the server loads a model, a pinned
        model that is gone waits: loading it now would abort that load (another client's
        request) on a server that has room for one. Released pins, ended pins, models the server
        no longer has and pins in back-off wait.
        """
        due: list[Reassertion] = []
        busy = any(m.state is ResidencyState.LOADING for m in resident.values())
        for pin in sorted(self._pins.values(), key=lambda p: (-p.priority, p.model)):
            if pin.released or pin.expired(now) or pin.model not in available:
                continue
            reason = self._reason(pin, resident.get(pin.model), now)
            if reason is None or (busy and reason is ReassertReason.GONE):
                continue
            attempts = self._attempts.get(pin.model)
            if (
                attempts is not None
                and attempts.reason is reason
                and now - attempts.last < _backoff(attempts.count)
            ):
                continue
            due.append(Reassertion(pin, reason))
        return due

    def asserted(self, due: Reassertion, now: datetime) -> None:
        """Note that a pin was asserted again at ``now`` (for the back-off).

        The back-off grows while the same thing keeps happening soon after each attempt
        (gone again, shortened again); another reason, or a pin that held for a while,
        starts it afresh.
        """
        model, reason = due.pin.model, due.reason
        attempts = self._attempts.get(model)
        if (
            attempts is not None
            and attempts.reason is reason
            and now - attempts.last < 2 * _backoff(attempts.count)
        ):
            self._attempts[model] = _Attempts(now, attempts.count + 1, reason)
        else:
            self._attempts[model] = _Attempts(now, 1, reason)

    def _reason(
        self, pin: Pin, resident: ResidentModel | None, now: datetime
    ) -> ReassertReason | None:
        if resident is None or resident.state in _LET_GO:
            return ReassertReason.GONE
        if resident.state is ResidencyState.LOADING:
            return None  # wait for it
        if self.capabilities.keep_alive is not KeepAlive.IDLE_TIMER:
            return None  # the server keeps it by its own rule, not by a time we can set
        expires = resident.expires_at
        if expires is None or not self.capabilities.reports_expiry:
            return None
        if pin.until is None:
            return None if resident.kept_forever(now) else ReassertReason.EXPIRY_SHORTENED
        return ReassertReason.EXPIRY_SHORTENED if expires < pin.until - EXPIRY_TOLERANCE else None


def _backoff(count: int) -> timedelta:
    """Return how long to wait after ``count`` attempts close together."""
    backoff: timedelta = REASSERT_BACKOFF * 2 ** max(count - 1, 0)
    return min(backoff, REASSERT_BACKOFF_MAX)
