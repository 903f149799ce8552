"""Usage's decisions (pure, the clock passed in): what counts as a use, and what it scores.

``usage.py`` reads Home Assistant and the servers and hands what it saw here: an expiry
that moved, an agent's message, llama-swap's activity, a warm-up that held a model. What a
model's uses taught (its ``UsagePlanner``), its auto-warm option and its scoreboard are one
``UsageRecord``, stored in the store's ``usage`` section.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Final

from .backends.types import ServedRequest
from .signal_learning import SignalLead
from .usage_rhythm import local_time
from .warm_hold import Hold, HoldAction, HoldReason
from .warm_plan import Plan, UsagePlanner

# An expiry that moved by more than this between two polls (on, or back by a request with
# a shorter keep): a request came.
EXPIRY_JUMP: Final = timedelta(seconds=2)
# How long after an agent's message began its turn can still show on the server, and the
# clocks' slack.
AGENT_TURN: Final = timedelta(minutes=2)
SLACK: Final = timedelta(seconds=2)
# The days the scoreboard keeps (7 and today), and its columns: requests warm thanks to
# auto-warm's clock (an expected stretch), cold starts, GiB-hours spent warming, and
# requests warm thanks to a signal (an edge that leads a use; kept since store 1.8).
SCORE_DAYS: Final = 8
HELPED, COLD, GIB_HOURS, SIGNAL_HELPED = 0, 1, 2, 3
COLUMNS: Final = 4
# The most a scoreboard cell may read as (a stored count or GiB-hours).
MAX_SCORE: Final = 1e9


@dataclass
class UsageRecord:
    """A model's uses and what they taught (its planner), and its auto-warm option.

    ``warmed``: loads auto-warm sent ahead of an expected use; ``refused``: those the
    household guard refused. ``warmed_for``: the stretch last warmed for (its start).
    """

    planner: UsagePlanner = field(default_factory=UsagePlanner)
    auto_warm: bool = False
    warmed: int = 0
    refused: int = 0
    warmed_for: datetime | None = None
    # The warm-up held now: sent when, and until the end of which stretch (None: none).
    holding_since: datetime | None = None
    holding_until: datetime | None = None
    # The model's GPU memory (bytes) once the warm-up loaded it: what the holding costs.
    holding_bytes: int = 0
    # The warm-up's load answered (not stored): from then on, a model no longer held is
    # no longer held by it.
    holding_loaded: bool = field(default=False, compare=False)
    # The stretch the guard refused a warm-up for (not stored: a refusal counts once).
    refused_for: datetime | None = field(default=None, compare=False)
    # Why the warm-up held now was sent: an expected stretch, or a signal (stored).
    holding_reason: HoldReason | None = None
    # Until when, and why, auto-warm last asked the server to keep the model (not stored:
    # shown on the model while it lasts).
    kept_until: datetime | None = field(default=None, compare=False)
    kept_for: HoldReason | None = field(default=None, compare=False)
    # The last signal that warmed the model, and when (not stored: shown while it holds).
    signal: SignalLead | None = field(default=None, compare=False)
    signal_at: datetime | None = field(default=None, compare=False)
    # The scoreboard by local day (ISO date): one row of the columns above per day, the
    # last ``SCORE_DAYS`` days.
    days: dict[str, list[float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """Return the record as stored."""
        return {
            "planner": self.planner.as_dict(),
            "auto_warm": self.auto_warm,
            "warmed": self.warmed,
            "refused": self.refused,
            "warmed_for": _iso(self.warmed_for),
            "holding_since": _iso(self.holding_since),
            "holding_until": _iso(self.holding_until),
            "holding_reason": self.holding_reason.value if self.holding_reason else None,
            "days": {day: [round(v, 4) for v in row] for day, row in self.days.items()},
        }

    def tally(self, day: date, column: int, amount: float) -> None:
        """Add ``amount`` to a column of the scoreboard's ``day``; forget older days."""
        self.days.setdefault(day.isoformat(), [0.0] * COLUMNS)[column] += amount
        for old in sorted(self.days)[:-SCORE_DAYS]:
            del self.days[old]

    def score(self, column: int, today: date) -> tuple[float, float]:
        """Return a column's sum over ``today`` and over the 7 days up to it."""
        week = (today - timedelta(days=6)).isoformat()
        rows = [(day, row[column]) for day, row in self.days.items()]
        return (
            sum(v for day, v in rows if day == today.isoformat()),
            sum(v for day, v in rows if week <= day <= today.isoformat()),
        )

    def summary(self, today: date) -> dict[str, object]:
        """Return what the diagnostics show: counts, not when the household was at home."""
        return {
            "uses": len(self.planner.uses),
            "days_learnt": self.planner.days,
            "pattern": self.planner.pattern().value,
            "auto_warm": self.auto_warm,
            "warmed": self.warmed,
            "refused": self.refused,
            "scoreboard_7_days": [
                round(self.score(column, today)[1], 3)
                for column in (HELPED, COLD, GIB_HOURS, SIGNAL_HELPED)
            ],
            # Counts only: which entities the household picked would tell of its home.
            "signals": len(self.planner.edges.entities()),
            "signals_acting": sum(1 for lead in self.planner.leads() if lead.acts),
            "edges": self.planner.edges.count(),
            "warmed_by": self.planner.way().key,
        }

    def uses_since(self, since: datetime) -> int:
        """Return how many uses were recorded since ``since``."""
        return sum(1 for use in self.planner.uses if use >= since)

    def close_holding(self, end: datetime, day: date) -> None:
        """End the warm-up's hold at ``end`` (local ``day``): score the GiB-hours it held."""
        since = self.holding_since
        self.holding_since = self.holding_until = self.holding_reason = None
        self.holding_loaded = False
        if since is not None and end > since:
            self.tally(day, GIB_HOURS, held_gib_hours(since, end, self.holding_bytes))

    def plan(
        self, now: datetime, zone: tzinfo | None, lead: timedelta, load: timedelta | None = None
    ) -> Plan:
        """Return the planner's answer at ``now`` on ``zone``'s clock, warming ``lead`` ahead.

        ``load``: the model's last measured cold load (None: as the planner last knew).
        """
        return self.planner.plan(local_time(now, zone), lead, load=load)

    def uses_today(self, now: datetime, zone: tzinfo | None) -> int:
        """Return how many uses were recorded since ``zone``'s midnight before ``now``."""
        return self.uses_since(local_midnight(now, zone))

    def use(self, at: datetime, zone: tzinfo | None, *, held: bool) -> None:
        """Record a use at ``at`` (a household's, never one of ours) on ``zone``'s clock.

        The first use while an auto-warm warm-up holds the model found it warm because
        of it (when the model is ``held`` now): scored, and the warm-up's time ends there.
        """
        self.planner.observe(local_time(at, zone))
        since = self.holding_since
        if since is not None and at >= since:
            if held:
                column = SIGNAL_HELPED if self.holding_reason is HoldReason.SIGNAL else HELPED
                self.tally(local_day(at, zone), column, 1)
            self.close_holding(at, local_day(at, zone))

    def cold_start(self, now: datetime, zone: tzinfo | None) -> None:
        """Score a cold start a household request had (not one of our probes) at ``now``.

        The household waited for a load: whatever our warm-up held is gone, and the use
        this load shows is no use warm thanks to it (not both).
        """
        day = local_day(now, zone)
        self.tally(day, COLD, 1)
        self.close_holding(now, day)

    def hold_over(self, now: datetime, zone: tzinfo | None) -> None:
        """End the warm-up's hold once its stretch is over at ``now``.

        No use came while our warm-up held the model: all of it was spent.
        """
        until = self.holding_until
        if until is not None and now >= until:
            self.close_holding(until, local_day(until, zone))

    def let_go(self, now: datetime, zone: tzinfo | None) -> None:
        """Note at ``now`` that the server no longer holds the model.

        Evicted (or expired) before a use came: a warm-up whose load answered holds it no
        more (one still loading is not let go).
        """
        if self.holding_loaded:
            self.close_holding(now, local_day(now, zone))

    def warm_up_refused(self, start: datetime) -> bool:
        """Count the guard's refusal of a warm-up for the stretch from ``start``, once.

        Tried again each minute of the stretch; counted once. Return True when counted.
        """
        if self.refused_for == start:
            return False
        self.refused_for = start
        self.refused += 1
        return True

    def warm_up_sent(self, start: datetime, now: datetime, hold: Hold) -> None:
        """Note a warm-up sent at ``now`` for the stretch from ``start``, held as ``hold``."""
        self.warmed_for = start
        self.holding_since, self.holding_until = now, hold.until
        self.holding_reason = HoldReason.EXPECTED_USE
        self.kept_until, self.kept_for = hold.until, HoldReason.EXPECTED_USE

    def signal_warm_up_sent(self, now: datetime, hold: Hold, lead: SignalLead) -> None:
        """Note a warm-up sent at ``now`` on a signal's edge (``lead``), held as ``hold``.

        A load starts a warm-up's hold (scored as the clock's are); a keep of a resident
        model only holds it longer.
        """
        if hold.action is HoldAction.LOAD:
            self.holding_since, self.holding_until = now, hold.until
            self.holding_reason = HoldReason.SIGNAL
        self.kept_until, self.kept_for = hold.until, HoldReason.SIGNAL
        self.signal, self.signal_at = lead, now

    def warm_up_loaded(self, size_bytes: int) -> None:
        """Count the warm-up once the model is in, holding ``size_bytes`` of GPU memory."""
        self.warmed += 1
        self.holding_loaded = self.holding_since is not None
        self.holding_bytes = size_bytes

    def warm_up_failed(self) -> None:
        """Forget the hold of a warm-up that failed (it holds nothing)."""
        self.holding_since = self.holding_until = None

    def kept(self, hold: Hold) -> None:
        """Note that auto-warm asked the server to keep the model as ``hold`` says."""
        self.kept_until, self.kept_for = hold.until, hold.reason

    @classmethod
    def from_dict(cls, values: object) -> UsageRecord:
        """Read a stored record; raise ``ValueError`` when it does not read."""
        if not isinstance(values, Mapping):
            raise ValueError("not a usage record")
        counts = [values.get(key, 0) for key in ("warmed", "refused")]
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
            raise ValueError("a count is not a whole number")
        days = values.get("days", {})
        if not isinstance(days, Mapping) or not all(
            _is_date(day) and _is_row(row) for day, row in days.items()
        ):
            raise ValueError("the scoreboard does not read")
        return cls(
            planner=UsagePlanner.from_dict(values.get("planner")),
            auto_warm=values.get("auto_warm") is True,
            warmed=counts[0],
            refused=counts[1],
            warmed_for=_time(values.get("warmed_for")),
            holding_since=_time(values.get("holding_since")),
            holding_until=_time(values.get("holding_until")),
            holding_reason=_reason(values.get("holding_reason")),
            days={day: _padded(row) for day, row in days.items()},
        )


def local_day(when: datetime, zone: tzinfo | None) -> date:
    """Return the household's local date of ``when`` (``zone``: its time zone)."""
    return local_time(when, zone).date()


def local_midnight(when: datetime, zone: tzinfo | None) -> datetime:
    """Return the start of ``when``'s local day in ``zone``."""
    local = local_time(when, zone)
    return datetime.combine(local.date(), time(), tzinfo=local.tzinfo)


def _is_date(value: object) -> bool:
    """Return True for an ISO date (a scoreboard's day)."""
    if not isinstance(value, str):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_row(row: object) -> bool:
    """Return True for a scoreboard row: three columns (before store 1.8) or four."""
    return (
        isinstance(row, list)
        and len(row) in (COLUMNS - 1, COLUMNS)
        and all(
            isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < MAX_SCORE
            for v in row
        )
    )


def _padded(row: list[float]) -> list[float]:
    """Return a stored row with every column (one before store 1.8 had no signal column)."""
    return [float(v) for v in row] + [0.0] * (COLUMNS - len(row))


def _reason(value: object) -> HoldReason | None:
    """Return a stored warm-up's reason (None: none, or one that does not read)."""
    try:
        return HoldReason(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.isoformat()


def _time(value: object) -> datetime | None:
    """Return a stored time; None for anything but a time with its zone."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def held_gib_hours(since: datetime, end: datetime, size_bytes: int) -> float:
    """Return the GiB-hours a model of ``size_bytes`` held from ``since`` to ``end``."""
    return size_bytes / 1024**3 * max((end - since).total_seconds(), 0.0) / 3600


def expiry_shows_a_use(
    previous: Mapping[str, datetime | None], model: str, expires: datetime | None
) -> bool:
    """Return True when a model's expiry shows a request since the last poll (Ollama).

    A model not held at the last poll was loaded since: used. One held then whose expiry
    moved by more than ``EXPIRY_JUMP`` (on, or back by a shorter keep): used. An expiry
    unknown on either side tells nothing.
    """
    if model not in previous:
        return True
    earlier = previous[model]
    if expires is None or earlier is None:
        return False
    return abs(expires - earlier) > EXPIRY_JUMP


def agent_heard(messages: Iterable[datetime], begin: datetime, end: datetime) -> bool:
    """Return True when an agent's message began in [begin - ``AGENT_TURN``, end + slack].

    A turn (a cold load, tool calls, a long reply) can end a while after its message
    began: what the server shows of it then is that turn, heard already.
    """
    return any(begin - AGENT_TURN <= at <= end + SLACK for at in messages)


def on_this_clock(at: datetime, now: datetime) -> bool:
    """Return True when a message's time ``at`` is now, within the clocks' slack."""
    return abs(now - at) <= SLACK


@dataclass(frozen=True, slots=True)
class ActivityRead:
    """What one page of llama-swap's activity tells: the requests new since the last."""

    newest: int | None
    new: tuple[ServedRequest, ...]


def new_activity(served: Sequence[ServedRequest], seen: int | None) -> ActivityRead:
    """Return the requests of ``served`` after the entry ``seen`` (None: none read yet).

    The first page is the baseline: what came before we looked is not counted (an empty
    one is a baseline of nothing: every entry after it is new). Ids that began again show
    a llama-swap restarted while we looked: its log is kept in memory, so all of it came
    after the restart and is new. A failed request (status 400 or more) is no use.
    """
    newest = max((r.id for r in served), default=None)
    if seen is None:
        return ActivityRead(0 if newest is None else newest, ())
    if newest is not None and newest < seen:
        seen = 0  # its ids began again: everything in its new log is new
    mark = newest if newest is not None else seen
    new = tuple(r for r in sorted(served, key=lambda r: r.id) if r.id > seen and r.status < 400)
    return ActivityRead(mark, new)
