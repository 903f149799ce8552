"""Which of the household's signals lead a model's uses, and how long to hold it for one (pure).

Learnt online, one day at a time as the planner folds it (``fold_day``), per model and per
edge (an entity and its new state, ``signal_edges.py``):

- **how often a use follows** an edge within ``WINDOW``, and the **lead time**'s
  distribution: each edge at which the model would have been cold (no use within its keep
  before it) is an outcome, the time to the next use or none; the latest ``MAX_OUTCOMES``
  are kept, each weighing ``DECAY`` less for every day of its age, so a signal that stops
  leading loses its weight within a few weeks;
- the **lift over the base rate at that hour**: how often a use follows an edge, against
  how often one follows any moment of the same hour of the day (``base``, learnt from the
  uses). A bathroom's motion sensor that fires all day leads nothing more than the clock
  does: its lift is about 1, however often it fires;
- the **hold** it is worth: warming on an edge holds the model until the first use, or
  ``hold`` when none comes. For each hold, a use found warm (after the load) is a cold
  start avoided, worth ``COLD_START_WORTH`` of the model held, as the planner weighs its
  time windows; the hold that pays most, on a cautious share (the lower end of its
  confidence interval), is the signal's. It acts only with enough evidence
  (``MIN_OUTCOMES``, ``MIN_FOLLOWS``: no handful of coincidences), a lift of at least
  ``MIN_LIFT`` and a hold that pays.

No Home Assistant import; every time is an aware ``datetime`` (epoch seconds inside).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
import math
from typing import Final

from .signal_edges import ALARM, MAX_ENTITIES, MAX_STATES, Edge, edge_state
from .usage_rhythm import COLD_START_WORTH

# A use this soon after an edge follows it.
WINDOW: Final = timedelta(minutes=30)
# The outcomes kept per edge, and how much less one weighs for each day of its age.
MAX_OUTCOMES: Final = 200
DECAY: Final = 0.9
# Evidence before an edge acts: outcomes, and uses that followed one after the load.
MIN_OUTCOMES: Final = 10
MIN_FOLLOWS: Final = 6
MIN_LIFT: Final = 2.0
# The share a hold is judged on: the lower end of its one-sided 95 % interval (Wilson).
Z: Final = 1.645
# A hold lasts this much past the lead it was chosen for (a use a little later).
HOLD_MARGIN: Final = timedelta(seconds=30)
# The base rate's learning weight per day (per hour of the day).
BASE_WEIGHT: Final = 0.1
NO_USE: Final = -1


@dataclass(frozen=True, slots=True)
class SignalLead:
    """What an edge is learnt to lead: a use within ``hold``, ``share`` of the time.

    ``led``/``wrong``: of the outcomes kept, the edges a use followed within ``hold``,
    and those none did; ``acts``: it warms the model (evidence, lift and a hold that pays).
    """

    entity: str
    state: str
    hold: timedelta
    share: float
    led: int
    wrong: int
    lift: float
    acts: bool
    # The time it holds the model for each use it finds warm (seconds; inf: none).
    cost_per_use: float = math.inf


@dataclass
class EdgeStats:
    """One edge's outcomes and its lift's counts (decayed)."""

    # (the edge's epoch second, the seconds to the next use or NO_USE), oldest first.
    outcomes: list[tuple[int, int]] = field(default_factory=list)
    # Edges a use followed within WINDOW, and how many the base rate expected (decayed).
    observed: float = 0.0
    expected: float = 0.0

    @property
    def lift(self) -> float:
        """Return how much more often a use follows the edge than the hour's base rate."""
        return self.observed / self.expected if self.expected > 0 else 0.0

    def as_dict(self) -> dict[str, object]:
        """Return the stats as stored."""
        return {
            "outcomes": [list(o) for o in self.outcomes],
            "observed": round(self.observed, 4),
            "expected": round(self.expected, 4),
        }

    @classmethod
    def from_dict(cls, values: object) -> EdgeStats:
        """Read stored stats; raise ``ValueError`` when they do not read."""
        if not isinstance(values, Mapping):
            raise ValueError("an edge's stats are not a mapping")
        outcomes = values.get("outcomes")
        if not isinstance(outcomes, list):
            raise ValueError("an edge's outcomes are not a list")
        read: list[tuple[int, int]] = []
        for outcome in outcomes[-MAX_OUTCOMES:]:
            if not (
                isinstance(outcome, list)
                and len(outcome) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in outcome)
                and outcome[0] > 0
                and (outcome[1] == NO_USE or 0 <= outcome[1] <= WINDOW.total_seconds())
            ):
                raise ValueError("an edge's outcome does not read")
            read.append((outcome[0], outcome[1]))
        return cls(
            sorted(read),
            observed=_amount(values.get("observed", 0.0)),
            expected=_amount(values.get("expected", 0.0)),
        )


@dataclass
class SignalBook:
    """A model's edges' stats, the hour's base rate, and what each edge leads."""

    stats: dict[tuple[str, str], EdgeStats] = field(default_factory=dict)
    # How often a use follows a moment of each hour of the day within WINDOW (decayed).
    base: list[float] = field(default_factory=lambda: [0.0] * 24)
    # The last day folded (its end, epoch seconds): outcomes' ages are read from it.
    folded: int = 0
    # What each edge leads, for the model's cold load (not stored: worked out again).
    _leads: dict[timedelta | None, dict[tuple[str, str], SignalLead]] = field(
        default_factory=dict, compare=False
    )
    _load: float | None = field(default=None, compare=False)  # the load _leads are for

    def fold_day(
        self,
        edges: Sequence[Edge],
        uses: Sequence[datetime],
        *,
        day: tuple[datetime, datetime],
        keep: timedelta,
        zone_of: datetime,
    ) -> None:
        """Learn from one day's ``edges``, with every use kept (``uses``, sorted instants).

        ``keep``: how long a use keeps the model (an edge within it finds the model warm:
        no outcome); ``day``: the day's span; ``zone_of``: a time on the household's clock
        (the hour of an edge is read on it).
        """
        begin, end = day
        times = [u.timestamp() for u in uses]
        window, kept = WINDOW.total_seconds(), keep.total_seconds()
        hourly = _coverage(times, begin, end, window, zone_of)
        for edge in edges:
            moment = edge.at.timestamp()
            stats = self.stats.setdefault(edge.key, EdgeStats())
            after = bisect_right(times, moment)
            lead = times[after] - moment if after < len(times) else math.inf
            follows = lead <= window
            hour = edge.at.astimezone(zone_of.tzinfo).hour
            stats.observed += follows
            stats.expected += self.base[hour]
            before = times[after - 1] if after else -math.inf
            if moment - before > kept:  # cold there: an outcome
                stats.outcomes.append((math.floor(moment), round(lead) if follows else NO_USE))
                del stats.outcomes[:-MAX_OUTCOMES]
        for stats in self.stats.values():
            stats.observed *= DECAY
            stats.expected *= DECAY
        for hour, share in hourly.items():
            self.base[hour] += BASE_WEIGHT * (share - self.base[hour])
        self.folded = max(self.folded, math.floor(end.timestamp()))
        self._load = None  # worked out again on the next ask

    def leads(
        self, load: timedelta, cap: timedelta | None = None
    ) -> dict[tuple[str, str], SignalLead]:
        """Return what each edge leads, for a model whose cold load is ``load``.

        ``cap``: the longest hold an edge may have (None: ``WINDOW``).
        """
        seconds = load.total_seconds()
        if seconds != self._load:
            self._leads.clear()
            self._load = seconds
        if cap not in self._leads:
            most = WINDOW.total_seconds() if cap is None else cap.total_seconds()
            self._leads[cap] = {
                key: lead_of(key, stats, load=seconds, now=self.folded, cap=most)
                for key, stats in self.stats.items()
            }
        return self._leads[cap]

    def acting(
        self, load: timedelta, cap: timedelta | None = None
    ) -> dict[tuple[str, str], SignalLead]:
        """Return the edges that warm the model (those that act), each held ``cap`` at most."""
        return {key: lead for key, lead in self.leads(load, cap).items() if lead.acts}

    def forget(self, entities: frozenset[str]) -> bool:
        """Forget every entity but ``entities``; return True when one was forgotten."""
        gone = [key for key in self.stats if key[0] not in entities]
        for key in gone:
            del self.stats[key]
        self._load = None
        return bool(gone)

    def as_dict(self) -> dict[str, object]:
        """Return the book as stored."""
        by_entity: dict[str, dict[str, object]] = {}
        for (entity, state), stats in self.stats.items():
            by_entity.setdefault(entity, {})[state] = stats.as_dict()
        return {
            "edges": by_entity,
            "base": [round(b, 4) for b in self.base],
            "folded": self.folded,
        }

    @classmethod
    def from_dict(cls, values: object) -> SignalBook:
        """Read a stored book; raise ``ValueError`` when it does not read."""
        if values is None:
            return cls()
        if not isinstance(values, Mapping):
            raise ValueError("the signals are not a mapping")
        edges, base, folded = values.get("edges"), values.get("base"), values.get("folded", 0)
        if not isinstance(edges, Mapping) or not isinstance(base, list) or len(base) != 24:
            raise ValueError("the signals' edges or base rate do not read")
        if isinstance(folded, bool) or not isinstance(folded, int) or folded < 0:
            raise ValueError("the signals' fold mark is not a time")
        stats: dict[tuple[str, str], EdgeStats] = {}
        for entity, states in list(edges.items())[:MAX_ENTITIES]:
            if not isinstance(entity, str) or not isinstance(states, Mapping):
                raise ValueError("an entity's signals are not a mapping")
            for state, values_of in list(states.items())[:MAX_STATES]:
                if not isinstance(state, str) or (edge_state(state) != state and state != ALARM):
                    raise ValueError("an edge's state does not read")
                stats[(entity, state)] = EdgeStats.from_dict(values_of)
        shares = [_amount(b) for b in base]
        if not all(s <= 1.0 for s in shares):
            raise ValueError("a base rate is not a share")
        return cls(stats, shares, folded)


def lead_of(
    key: tuple[str, str], stats: EdgeStats, *, load: float, now: int, cap: float = math.inf
) -> SignalLead:
    """Return what an edge leads: the hold that pays most, its share, whether it acts.

    Each outcome weighs ``DECAY`` per day of its age at ``now``. A hold ``h`` (a lead seen,
    plus ``HOLD_MARGIN``) avoids the cold starts of the uses that came after the load and
    within it, and holds the model until the use or for ``h``: it pays when its cautious
    share of ``COLD_START_WORTH`` is more than the time it holds on average.
    """
    outcomes = stats.outcomes
    weights = [DECAY ** max((now - at) / 86400, 0.0) for at, _ in outcomes]
    total = sum(weights)
    worth, margin = COLD_START_WORTH.total_seconds(), HOLD_MARGIN.total_seconds()
    follows = sorted((lead, w) for (_, lead), w in zip(outcomes, weights, strict=True) if lead >= 0)
    leads = [lead for lead, _ in follows]
    best: tuple[float, float, float, float] | None = None  # (net, hold, share, spent)
    if total > 0:
        # A sweep over the holds in lead order: what pays (the uses after the load up to
        # the lead), and what the hold costs (each edge held to its use or to the hold).
        weight_to, time_to = [0.0], [0.0]
        for lead, w in follows:
            weight_to.append(weight_to[-1] + w)
            time_to.append(time_to[-1] + w * lead)
        before_load = bisect_right(leads, load)
        for index in range(before_load, len(follows)):
            hold = follows[index][0] + margin
            if hold > cap:
                break
            held = bisect_right(leads, hold)  # the follows within the hold
            spent = time_to[held] + (total - weight_to[held]) * hold
            share = (weight_to[held] - weight_to[before_load]) / total
            net = _cautious(share, total) * worth - spent / total
            if best is None or net > best[0]:
                best = (net, hold, share, spent / total)
    if best is None:
        hold, share, net, spent = WINDOW.total_seconds(), 0.0, -1.0, math.inf
    else:
        net, hold, share, spent = best
    raw = [lead for _, lead in outcomes]
    led = sum(1 for lead in raw if 0 <= lead <= hold)
    after_load = sum(1 for lead in raw if load < lead <= hold)
    acts = (
        len(raw) >= MIN_OUTCOMES
        and after_load >= MIN_FOLLOWS
        and stats.lift >= MIN_LIFT
        and net > 0
    )
    return SignalLead(
        entity=key[0],
        state=key[1],
        hold=timedelta(seconds=round(hold)),
        share=share,
        led=led,
        wrong=len(raw) - led,
        lift=stats.lift,
        acts=acts,
        cost_per_use=spent / share if share > 0 else math.inf,
    )


def _cautious(share: float, weight: float) -> float:
    """Return the lower end of a share's one-sided 95 % interval (Wilson) over ``weight``."""
    if weight <= 0:
        return 0.0
    z2 = Z * Z
    centre = share + z2 / (2 * weight)
    spread = Z * math.sqrt(share * (1 - share) / weight + z2 / (4 * weight * weight))
    return max((centre - spread) / (1 + z2 / weight), 0.0)


def _coverage(
    uses: Sequence[float], begin: datetime, end: datetime, window: float, zone_of: datetime
) -> dict[int, float]:
    """Return, per hour of the day in [begin, end), the share a use follows within ``window``."""
    zone = zone_of.tzinfo
    shares: dict[int, float] = {}
    hour = begin
    while hour < end:
        following = min(hour + timedelta(hours=1), end)
        low, high = hour.timestamp(), following.timestamp()
        covered = 0.0
        # A moment t is covered when a use comes in (t, t + window].
        reach = low
        for use in uses[bisect_left(uses, low) : bisect_right(uses, high + window)]:
            start, stop = max(use - window, reach), min(use, high)
            if stop > start:
                covered += stop - start
                reach = stop
        hour_of_day = hour.astimezone(zone).hour
        # A wall-clock hour that a change to summer time skips lasts no time: no share.
        shares[hour_of_day] = covered / (high - low) if high > low else 0.0
        hour = following
    return shares


def _amount(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("not a number")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError("not an amount")
    return number
