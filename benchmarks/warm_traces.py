"""The worlds ``benchmarks/warm_policy.py`` replays: households' requests, a GPU, a service.

A trace is each model's requests (epoch seconds), the model's size and cold load, the
household's zone (the clock its routines follow, the one the planner plans on), its GPU
and the times a household service (a media server's transcodes) needs part of the GPU.

- ``household``: a synthetic household as irregular as real ones (its docstring lists how);
- ``sporadic``: uses at no time that repeats (the planner must not guess);
- ``from_csv``: any ``timestamp,model`` file, or a context trace (``timestamp,entity,state``:
  rows ``use.<model>,1`` are the uses, every other row a household entity's new state, the
  signals), read in a stated zone; a service is given to it by the same seeded rule as the
  household's, so the guard is put to the test there too.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
import gzip
from pathlib import Path
import random
from zoneinfo import ZoneInfo

Interval = tuple[float, float]
AMSTERDAM = ZoneInfo("Europe/Amsterdam")  # the synthetic worlds cross a change of summer time


@dataclass(frozen=True)
class Model:
    """A model of the world: its name, size and cold-load time."""

    name: str
    gib: float
    load: float


@dataclass
class Trace:
    """Requests per model (epoch seconds, sorted), the world around them, the span."""

    name: str
    start: float
    end: float
    zone: tzinfo
    models: dict[str, Model]
    requests: dict[str, list[float]]
    gpu_gib: float = 24.0
    service_gib: float = 10.0
    service: list[Interval] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # A context trace's signals: (epoch seconds, entity, new state), in time order; every
    # model's (the household picked them all).
    signals: list[tuple[float, str, str]] = field(default_factory=list)


def _day(first: datetime, index: int) -> datetime:
    """Return the start of the ``index``-th day after ``first`` on its own clock."""
    day = first + timedelta(days=index, hours=12)
    return datetime(day.year, day.month, day.day, tzinfo=first.tzinfo)


def evening_service(
    start: float, end: float, zone: tzinfo, seed: int, share: float = 0.4
) -> list[Interval]:
    """Return a media server's transcodes: ``share`` of the evenings, 20:00 (±20 min), 1-2.5 h."""
    rng = random.Random(seed)
    first = datetime.fromtimestamp(start, zone)
    first = datetime(first.year, first.month, first.day, tzinfo=zone)
    service: list[Interval] = []
    index = 0
    while (day := _day(first, index)).timestamp() < end:
        if rng.random() < share:
            begin = day + timedelta(minutes=20 * 60 + rng.gauss(0, 20))
            service.append(
                (begin.timestamp(), (begin + timedelta(minutes=rng.uniform(60, 150))).timestamp())
            )
        index += 1
    return [(b, min(e, end)) for b, e in service if b < end]


def household(weeks: int, seed: int) -> Trace:  # noqa: PLR0912 (one branch per habit)
    """A synthetic household with the irregularities of real ones.

    - ``assistant`` (8 GiB, 25 s): a weekday morning routine whose time drifts from day to
      day (a random walk of ±15 min a day, up to ±45 min) and moves an hour earlier when a
      new job starts (at 55 % of the trace); one weekday morning in eight skipped; evening
      sessions from 18:00 to 22:30; weekend mornings around 09:00 (±40 min) and
      afternoon sessions; a week of holiday with a few random uses; a one-off use at a
      random hour on one day in three. A session is 2-10 requests with gaps of 1-40
      minutes (most under 5).
    - ``coder`` (14 GiB, 45 s): weekdays 09:00-17:00 in sessions, lunch off, not on
      holiday, one working day in ten off.
    - ``vision`` (6 GiB, 15 s): a few random uses a week (camera snapshots described).
    - The service needs 10 of the 24 GiB on two evenings in five, from 20:00 (±20 min).
    """
    rng = random.Random(seed)
    first = datetime(2026, 9, 7, tzinfo=AMSTERDAM)  # a Monday; the trace crosses 25 October
    days = weeks * 7
    holiday = range(days // 3 + 3, days // 3 + 10)
    change = int(days * 0.55)
    requests: dict[str, list[float]] = {"assistant": [], "coder": [], "vision": []}
    drift = 0.0

    def gap() -> float:
        # Most gaps within a session are short; some are the long pauses of real use.
        return min(
            40.0, max(1.0, rng.expovariate(1 / 3) if rng.random() < 0.8 else rng.uniform(5, 40))
        )

    def session(model: str, day: datetime, begin: float, count: int | None = None) -> float:
        when = begin
        for _ in range(count or rng.randint(2, 10)):
            requests[model].append((day + timedelta(minutes=when)).timestamp())
            when += gap()
        return when

    for index in range(days):
        day = _day(first, index)
        weekend = day.weekday() >= 5
        drift = max(-45.0, min(45.0, drift + rng.uniform(-15, 15)))
        if index in holiday:
            for _ in range(rng.randint(0, 3)):
                session("assistant", day, rng.uniform(8 * 60, 22 * 60), rng.randint(1, 3))
            continue
        if weekend:
            session("assistant", day, rng.gauss(9 * 60, 40))
            for _ in range(rng.randint(0, 2)):
                session("assistant", day, rng.uniform(13 * 60, 18 * 60), rng.randint(1, 4))
        else:
            if rng.random() >= 1 / 8:
                morning = 5 * 60 + 45 if index >= change else 6 * 60 + 45
                session("assistant", day, morning + drift + rng.gauss(0, 8))
            evening = 18 * 60 + rng.gauss(0, 20)
            while evening < 22.5 * 60:
                evening = session("assistant", day, evening, rng.randint(2, 5)) + rng.uniform(
                    15, 60
                )
            if rng.random() >= 0.1:
                for begin, until in ((9 * 60, 12 * 60), (13 * 60, 17 * 60)):
                    when = begin + rng.uniform(0, 25)
                    while when < until:
                        when = session("coder", day, when) + rng.uniform(5, 40)
        if rng.random() < 1 / 3:
            session("assistant", day, rng.uniform(0, 24 * 60), 1)
        if rng.random() < 0.4:
            session("vision", day, rng.uniform(7 * 60, 21 * 60), rng.randint(1, 2))
    start, end = first.timestamp(), _day(first, days).timestamp()
    return Trace(
        name=f"household (seed {seed}, {weeks} weeks, Europe/Amsterdam)",
        start=start,
        end=end,
        zone=AMSTERDAM,
        models={
            "assistant": Model("assistant", 8.0, 25.0),
            "coder": Model("coder", 14.0, 45.0),
            "vision": Model("vision", 6.0, 15.0),
        },
        requests={name: sorted(times) for name, times in requests.items()},
        service=evening_service(start, end, AMSTERDAM, seed),
    )


def sporadic(weeks: int, seed: int) -> Trace:
    """Uses at random times (about 6 a day, one in three followed by 1-3 more): no rhythm."""
    rng = random.Random(seed)
    first = datetime(2026, 9, 7, tzinfo=AMSTERDAM)
    start, end = first.timestamp(), _day(first, weeks * 7).timestamp()
    times: list[float] = []
    when = start
    while (when := when + rng.expovariate(6 / 86400)) < end:
        times.append(when)
        if rng.random() < 1 / 3:
            follow = when
            for _ in range(rng.randint(1, 3)):
                follow += rng.uniform(60, 900)
                times.append(follow)
    return Trace(
        name=f"sporadic (seed {seed}, {weeks} weeks, Europe/Amsterdam)",
        start=start,
        end=end,
        zone=AMSTERDAM,
        models={"assistant": Model("assistant", 8.0, 25.0)},
        requests={"assistant": sorted(t for t in times if t < end)},
        gpu_gib=16.0,
        service=evening_service(start, end, AMSTERDAM, seed),
    )


def read_stamp(text: str, zone: tzinfo) -> float:
    """Return the epoch seconds of a timestamp: seconds, or ISO 8601 (naive: read in ``zone``)."""
    try:
        return float(text)
    except ValueError:
        parsed = datetime.fromisoformat(text)
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=zone)).timestamp()


LEGACY_HEADER = ("timestamp", "model")
CONTEXT_HEADER = ("timestamp", "entity", "state")
USE_PREFIX = "use."


def _rows(path: Path) -> tuple[tuple[str, ...], list[list[str]]]:
    """Return a trace's header and rows (a ``.gz`` file is read uncompressed)."""
    with (
        gzip.open(path, "rt", newline="") if path.suffix == ".gz" else path.open(newline="")
    ) as handle:
        rows = [row for row in csv.reader(handle) if any(cell.strip() for cell in row)]
    if not rows:
        raise SystemExit(
            f"{path}: empty: a trace's first line is 'timestamp,model' or 'timestamp,entity,state'"
        )
    header = tuple(cell.strip().lower() for cell in rows[0])
    if header not in (LEGACY_HEADER, CONTEXT_HEADER):
        raise SystemExit(
            f"{path}: its first line is {','.join(rows[0])!r}: a trace's first line is"
            " 'timestamp,model' (requests) or 'timestamp,entity,state' (a context trace)"
        )
    return header, rows[1:]


def _alarm(state: str, zone: tzinfo) -> float | None:
    """Return the instant a next-alarm sensor's state names (None: not a time)."""
    if len(state) < 16 or not state[:4].isdigit() or state[4:5] != "-":
        return None
    try:
        return read_stamp(state, zone)
    except ValueError:
        return None


def from_csv(
    path: Path,
    *,
    zone: tzinfo,
    gib: float,
    load: float,
    gpu_gib: float,
    service_gib: float,
    seed: int = 1,
) -> Trace:
    """A trace from ``timestamp,model`` lines or a context trace (models ``gib`` GiB, ``load`` s).

    In a context trace, a state that is a time (a next-alarm sensor's) is the edge
    ``alarm`` when that time comes.
    """
    header, rows = _rows(path)
    requests: dict[str, list[float]] = {}
    signals: list[tuple[float, str, str]] = []
    for row in rows:
        if len(row) < len(header):
            continue
        try:
            when = read_stamp(row[0].strip(), zone)
        except ValueError:
            continue
        if header == LEGACY_HEADER:
            requests.setdefault(row[1].strip(), []).append(when)
            continue
        entity, state = row[1].strip(), row[2].strip()
        if entity.startswith(USE_PREFIX):
            if state == "1" and len(entity) > len(USE_PREFIX):
                requests.setdefault(entity.removeprefix(USE_PREFIX), []).append(when)
        elif (alarm := _alarm(state, zone)) is not None:
            signals.append((alarm, entity, "alarm"))
        elif entity:
            signals.append((when, entity, state))
    everything = [t for times in requests.values() for t in times]
    if not everything:
        kind = "'use.<model>,1'" if header == CONTEXT_HEADER else "'timestamp,model'"
        raise SystemExit(f"{path}: no {kind} line")
    start, end = min(everything), max(everything) + 1
    notes = [f"service: the household's rule (seed {seed}): 2 evenings in 5 from 20:00, 1-2.5 h"]
    if header == CONTEXT_HEADER:
        entities = len({entity for _, entity, _ in signals})
        notes.append(f"signals: {len(signals)} changes of {entities} entities, every model's")
    return Trace(
        name=f"{path.name} (read in {zone})",
        start=start,
        end=end,
        zone=zone,
        models={name: Model(name, gib, load) for name in requests},
        requests={name: sorted(times) for name, times in requests.items()},
        gpu_gib=gpu_gib,
        service_gib=service_gib,
        service=evening_service(start, end, zone, seed),
        notes=notes,
        signals=sorted(signals),
    )
