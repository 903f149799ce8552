"""The household's signals: what counts as an edge of an entity, and the edges kept (pure).

A signal is an entity the household picked for a model (a person arriving home, a motion
sensor, the TV, a satellite, a next-alarm sensor, a calendar): each change of its state
to another state is an *edge* (``binary_sensor.kitchen_motion`` to ``on``). ``edge_state``
says which new states are edges; a next-alarm sensor's state is a time, and its edge
(``alarm``) comes when that time comes (``alarm_time``). ``EdgeLog`` keeps a model's
edges, bounded (``HISTORY``, ``MAX_EDGES``, ``MAX_STATES``), a repeat of the same edge
within ``QUIET`` of the last one not kept (a motion sensor that fires all evening is one
edge when the room wakes, not a hundred). No Home Assistant import; times are aware.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
import math
from typing import Final

# The edge a next-alarm sensor has when its time comes.
ALARM: Final = "alarm"
# A state that is no edge: the entity tells nothing then.
NO_STATE: Final = frozenset({"", "unknown", "unavailable", "none"})
MAX_STATE_LENGTH: Final = 32
# The edges kept: the uses' eight weeks, at most this many per entity's state, and at
# most this many states per entity (a sensor whose states never repeat tells nothing).
HISTORY: Final = timedelta(weeks=8)
MAX_EDGES: Final = 3000
MAX_STATES: Final = 8
MAX_ENTITIES: Final = 64
# The same edge again this soon after the last one (kept or not) is not kept.
QUIET: Final = timedelta(minutes=5)


# The kinds of entity a household may pick as a model's signals, by domain; a sensor only
# when its state is a time (a next alarm: ``TIMESTAMP``).
SIGNAL_DOMAINS: Final = (
    "person",
    "device_tracker",
    "binary_sensor",
    "media_player",
    "assist_satellite",
    "input_boolean",
    "calendar",
    "sensor",
)
TIMESTAMP: Final = "timestamp"
# Suggested wherever the household's satellites are: arriving home is no room's.
EVERYWHERE: Final = frozenset({"person"})


def is_signal_kind(domain: str, device_class: str | None) -> bool:
    """Return True for an entity a household may pick as a signal."""
    if domain == "sensor":
        return device_class == TIMESTAMP
    return domain in SIGNAL_DOMAINS


def is_alarm_kind(domain: str, device_class: str | None) -> bool:
    """Return True for a signal whose state is a time, its edge when the time comes."""
    return domain == "sensor" and device_class == TIMESTAMP


@dataclass(frozen=True, slots=True)
class Candidate:
    """An entity that might be suggested as a signal: its kind and its area."""

    entity_id: str
    domain: str
    device_class: str | None
    area: str | None


def suggested_signals(candidates: Iterable[Candidate], areas: Collection[str]) -> list[str]:
    """Return the entities to suggest as a model's signals, in order.

    Entities of a signal kind in ``areas`` (those of the satellites whose pipelines use
    the model), and every person (arriving home is no room's), sorted by entity id.
    """
    return sorted(
        c.entity_id
        for c in candidates
        if is_signal_kind(c.domain, c.device_class)
        and (c.domain in EVERYWHERE or (c.area is not None and c.area in areas))
    )


def edge_state(state: object) -> str | None:
    """Return the edge a new ``state`` of a signal entity is (None: none).

    Unknown, unavailable and empty states are none, nor is a number (a temperature, a
    level: it changes all the time and leads nothing) or a long text.
    """
    if not isinstance(state, str):
        return None
    text = state.strip().lower()
    if text in NO_STATE or len(text) > MAX_STATE_LENGTH:
        return None
    try:
        float(text)
    except ValueError:
        return text
    return None


def alarm_time(state: object) -> datetime | None:
    """Return the time a next-alarm sensor's ``state`` names (None: not a time with a zone)."""
    if not isinstance(state, str):
        return None
    try:
        when = datetime.fromisoformat(state.strip())
    except ValueError:
        return None
    if when.tzinfo is None or not 2000 <= when.astimezone(UTC).year <= 9000:
        return None
    return when


def edge_of_change(known: str | None, state: object) -> str | None:
    """Return the edge a signal's new ``state`` is, after its last known edge ``known``.

    None: no edge (the same state again, or one that tells nothing: a sensor that was
    unavailable for a while and comes back as it was has no edge).
    """
    new = edge_state(state)
    return new if new is not None and new != known else None


@dataclass(frozen=True, slots=True, order=True)
class Edge:
    """One edge: ``entity`` changed to ``state`` at ``at`` (an instant)."""

    at: datetime
    entity: str
    state: str

    @property
    def key(self) -> tuple[str, str]:
        """Return what the edge is of: its entity and its new state."""
        return self.entity, self.state


def history_edges(entity: str, states: Iterable[tuple[datetime, str]]) -> list[Edge]:
    """Return the edges of ``entity``'s past ``states`` (time, state), oldest first."""
    found: list[Edge] = []
    known: str | None = None
    for at, state in states:
        if (edge := edge_of_change(known, state)) is not None:
            found.append(Edge(at, entity, edge))
        known = edge_state(state) or known
    return found


def alarm_edges(entity: str, states: Sequence[tuple[datetime, str]], now: datetime) -> list[Edge]:
    """Return the alarms a next-alarm sensor's past ``states`` (time, state) came to.

    A state names a time: its edge (``ALARM``) is that time, when it came while the state
    still named it (an alarm moved or dismissed before its time has none).
    """
    found: list[Edge] = []
    for index, (since, state) in enumerate(states):
        until = states[index + 1][0] if index + 1 < len(states) else now
        when = alarm_time(state)
        if when is not None and since <= when <= until:
            found.append(Edge(when, entity, ALARM))
    return found


@dataclass
class EdgeLog:
    """A model's signals' edges, per entity and state (instants, as whole UTC seconds)."""

    edges: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    # When each edge was last seen, kept or not (not stored: a restart keeps the next one).
    _seen: dict[tuple[str, str], int] = field(default_factory=dict, compare=False)

    def add(self, edge: Edge) -> bool:
        """Keep ``edge`` unless it repeats the last one within ``QUIET``; return True if kept.

        An entity's state beyond its first ``MAX_STATES``, and an entity beyond the first
        ``MAX_ENTITIES``, are not kept.
        """
        second = math.floor(edge.at.timestamp())
        last = self._seen.get(edge.key)
        self._seen[edge.key] = max(second, last) if last is not None else second
        states = self.edges.get(edge.entity)
        if states is None and len(self.edges) >= MAX_ENTITIES:
            return False
        states = self.edges.setdefault(edge.entity, {})
        if edge.state not in states and len(states) >= MAX_STATES:
            return False
        times = states.setdefault(edge.state, [])
        index = bisect_left(times, second)
        near = [t for t in times[max(index - 1, 0) : index + 1] if abs(t - second) < QUIET.seconds]
        if near or (last is not None and 0 <= second - last < QUIET.seconds):
            return False
        insort(times, second)
        if len(times) > MAX_EDGES:
            del times[: len(times) - MAX_EDGES]
        return True

    def between(self, begin: datetime, end: datetime) -> list[Edge]:
        """Return the edges kept in [begin, end), in time order."""
        low, high = begin.timestamp(), end.timestamp()
        found = [
            Edge(datetime.fromtimestamp(t, UTC), entity, state)
            for entity, states in self.edges.items()
            for state, times in states.items()
            for t in times[bisect_left(times, low) : bisect_left(times, high)]
        ]
        return sorted(found)

    def first(self) -> datetime | None:
        """Return the earliest edge kept (None: none)."""
        earliest = min((t[0] for s in self.edges.values() for t in s.values() if t), default=None)
        return None if earliest is None else datetime.fromtimestamp(earliest, UTC)

    def last_before(self, entity: str, when: datetime) -> datetime | None:
        """Return ``entity``'s last edge (of any state) at or before ``when`` (None: none)."""
        moment = when.timestamp()
        found = [
            times[index - 1]
            for times in self.edges.get(entity, {}).values()
            if (index := bisect_right(times, moment))
        ]
        return datetime.fromtimestamp(max(found), UTC) if found else None

    def entities(self) -> frozenset[str]:
        """Return the entities that have edges kept."""
        return frozenset(self.edges)

    def keep_only(self, entities: Iterable[str]) -> bool:
        """Forget every entity not in ``entities``; return True when one was forgotten."""
        wanted = set(entities)
        gone = [entity for entity in self.edges if entity not in wanted]
        for entity in gone:
            del self.edges[entity]
        for key in [k for k in self._seen if k[0] not in wanted]:
            del self._seen[key]
        return bool(gone)

    def prune(self, now: datetime) -> None:
        """Forget the edges older than ``HISTORY`` before ``now``."""
        cut = (now - HISTORY).timestamp()
        for states in self.edges.values():
            for times in states.values():
                if times and times[0] < cut:
                    del times[: bisect_left(times, cut)]

    def count(self) -> int:
        """Return how many edges are kept."""
        return sum(len(t) for s in self.edges.values() for t in s.values())

    # ------------------------------------------------------------------ the store

    def as_dict(self) -> dict[str, dict[str, list[int]]]:
        """Return the edges as stored."""
        return {
            entity: {s: list(t) for s, t in states.items()} for entity, states in self.edges.items()
        }

    @classmethod
    def from_dict(cls, values: object) -> EdgeLog:
        """Read stored edges; raise ``ValueError`` when they do not read."""
        if values is None:
            return cls()
        if not isinstance(values, Mapping):
            raise ValueError("the edges are not a mapping")
        edges: dict[str, dict[str, list[int]]] = {}
        for entity, states in list(values.items())[:MAX_ENTITIES]:
            if not isinstance(entity, str) or not isinstance(states, Mapping):
                raise ValueError("an entity's edges are not a mapping")
            kept: dict[str, list[int]] = {}
            for state, times in list(states.items())[:MAX_STATES]:
                if edge_state(state) != state and state != ALARM:
                    raise ValueError("an edge's state does not read")
                kept[state] = sorted(_seconds(times))[-MAX_EDGES:]
            edges[entity] = kept
        return cls(edges)


# Whole seconds since the epoch a stored edge may be at: years 2000 to 9000.
_EARLIEST, _LATEST = 946_684_800, 223_945_920_000


def _seconds(values: object) -> Iterator[int]:
    if not isinstance(values, list):
        raise ValueError("an edge's times are not a list")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("an edge's time is not whole seconds")
        if _EARLIEST <= value <= _LATEST:
            yield value
