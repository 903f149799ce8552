"""Context traces for ``benchmarks/warm_policy.py``, built from published smart-home datasets.

A context trace is a CSV ``timestamp,entity,state`` sorted by time (local wall-clock time,
ISO 8601 without an offset): a row with entity ``use.<model>`` and state ``1`` is a use
of that model; every other row is a household entity's new state (a signal). The
datasets are not in the repository (their terms are their authors'); the traces built
from them are, under ``benchmarks/traces/`` with their sources, and this script builds
them again from the files as published:

    .venv/bin/python -m benchmarks.context_traces ordonez DIR OUT_A.csv OUT_B.csv
    .venv/bin/python -m benchmarks.context_traces aras DIR_OF_DAYS FIRST_DAY OUT.csv

How uses and signals are chosen (``benchmarks/traces/context_traces.md`` says why): the
uses are the starts of the labelled activities in which a household asks its assistant
(``USE_ACTIVITIES``), taken from the activity labels, which the datasets' annotators wrote
apart from the sensors; the signals are every sensor's changes, as a ``binary_sensor``
(``on``/``off``). No sensor row is a use, and no use is a sensor row.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator, Sequence
import csv
from dataclasses import dataclass
from datetime import datetime, timedelta
import gzip
import io
from pathlib import Path
import re
import sys
from typing import IO

# The activities whose start is a use of the household's assistant: a meal begun (a
# recipe, a timer, the news), sitting down to spare time or the television (music, a
# programme), leaving home (the weather, the traffic).
USE_ACTIVITIES = {
    "ordonez": ("Breakfast", "Lunch", "Dinner", "Snack", "Spare_Time/TV", "Leaving"),
    # ARAS's activity ids: 2 Going Out, 3 Preparing Breakfast, 5 Preparing Lunch,
    # 7 Preparing Dinner, 10 Having Snack, 12 Watching TV.
    "aras": ("2", "3", "5", "7", "10", "12"),
}
# An activity its resident takes up again this soon after it ended is the same one, not
# a new start (ARAS labels each second: a minute of "Other" inside an evening of TV).
RESUMED = timedelta(minutes=10)
MODEL = "assistant"


@dataclass(frozen=True, order=True)
class Row:
    """One row of a context trace."""

    at: datetime
    entity: str
    state: str


def slug(text: str) -> str:
    """Return ``text`` as an entity id's object id (lower case, underscores)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


# ------------------------------------------------------------------------------ Ordóñez


def _ordonez_lines(path: Path) -> Iterator[list[str]]:
    """Return the fields of each data line (tab-separated, two header lines, CRLF)."""
    with path.open(encoding="latin-1") as handle:
        for number, line in enumerate(handle):
            fields = [f.strip() for f in re.split(r"\t+", line.strip())]
            if number < 2 or len(fields) < 3 or not fields[0][:1].isdigit():
                continue
            yield fields


def _stamp(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S")


def ordonez(sensors: Path, activities: Path) -> list[Row]:
    """Return the context trace of one Ordóñez home (its sensors' and activities' files).

    A sensor row is an interval: ``on`` at its start, ``off`` at its end, on the entity
    ``binary_sensor.<place>_<location>`` (``binary_sensor.bedroom_bed``).
    """
    rows: list[Row] = []
    for start, end, location, _kind, place, *_ in (
        f for f in _ordonez_lines(sensors) if len(f) >= 5
    ):
        entity = f"binary_sensor.{slug(place)}_{slug(location)}"
        rows += [Row(_stamp(start), entity, "on"), Row(_stamp(end), entity, "off")]
    wanted = USE_ACTIVITIES["ordonez"]
    last_end: dict[str, datetime] = {}
    for start, end, label, *_ in _ordonez_lines(activities):
        began, ended = _stamp(start), _stamp(end)
        if label in wanted and not (label in last_end and began - last_end[label] < RESUMED):
            rows.append(Row(began, f"use.{MODEL}", "1"))
        last_end[label] = ended
    return _changes(rows)


# --------------------------------------------------------------------------------- ARAS

ARAS_SENSORS = {
    "house_a": (
        "wardrobe_photocell", "couch_bed_photocell", "tv_receiver", "couch_force_1",
        "couch_force_2", "chair_distance_1", "chair_distance_2", "fridge_photocell",
        "kitchen_drawer_photocell", "wardrobe_photocell_2", "bathroom_cabinet_photocell",
        "house_door", "bathroom_door", "shower_cabinet_door", "hall_sonar", "kitchen_sonar",
        "tap_distance", "water_closet_distance", "kitchen_temperature", "bed_force",
    ),
    "house_b": (
        "kitchen_cupboard_1", "kitchen_cupboard_2", "house_door", "wardrobe_door_1",
        "wardrobe_door_2", "shower_cabinet_door", "tap_distance", "chair_force_1",
        "chair_force_2", "chair_force_3", "fridge_photocell", "kitchen_drawer_photocell",
        "couch_pressure_1", "couch_pressure_2", "bed_pressure_1", "bed_pressure_2",
        "armchair_pressure", "bathroom_door_sonar", "kitchen_sonar", "closet_sonar",
    ),
}  # fmt: skip


def aras(days: Path, first_day: datetime, house: str) -> list[Row]:
    """Return the context trace of one ARAS house (``DAY_1.csv`` ... in ``days``).

    Each file is a day, one line a second: 20 sensor columns (0/1), then each resident's
    activity id. ARAS gives no calendar date: ``DAY_n`` is ``first_day`` plus n - 1 days.
    A sensor's change is its entity's new state; an activity of ``USE_ACTIVITIES`` that a
    resident begins (not taken up again within ``RESUMED``) is a use.
    """
    names = ARAS_SENSORS[house]
    rows: list[Row] = []
    wanted = USE_ACTIVITIES["aras"]
    previous: list[str] | None = None
    ended: dict[tuple[int, str], datetime] = {}
    number = 1
    while (path := days / f"DAY_{number}.csv").exists():
        midnight = first_day + timedelta(days=number - 1)
        with path.open() as handle:
            for second, line in enumerate(handle):
                values = line.split()
                at = midnight + timedelta(seconds=second)
                for column, name in enumerate(names):
                    if previous is None or values[column] != previous[column]:
                        state = "on" if values[column] == "1" else "off"
                        rows.append(Row(at, f"binary_sensor.{name}", state))
                for resident in (20, 21):
                    label = values[resident]
                    before = previous[resident] if previous is not None else None
                    if label == before:
                        continue
                    if before is not None:
                        ended[(resident, before)] = at
                    last = ended.get((resident, label))
                    if label in wanted and (last is None or at - last >= RESUMED):
                        rows.append(Row(at, f"use.{MODEL}", "1"))
                previous = values
        number += 1
    return _changes(rows)


# -------------------------------------------------------------------------------- write


def _changes(rows: Iterable[Row]) -> list[Row]:
    """Return the rows in time order, each entity's only where its state changed.

    Rows of the same second keep the order they were read in (an interval of no length
    is ``on`` then ``off``).
    """
    kept: list[Row] = []
    state: dict[str, str] = {}
    for row in sorted(rows, key=lambda row: row.at):
        if row.entity.startswith("use.") or state.get(row.entity) != row.state:
            kept.append(row)
            state[row.entity] = row.state
    return kept


def _open(path: Path) -> IO[str]:
    """Open ``path`` to write text (``.gz``: compressed, the same bytes each time)."""
    if path.suffix == ".gz":
        packed = gzip.GzipFile(
            filename="", mode="wb", compresslevel=9, fileobj=path.open("wb"), mtime=0
        )
        return io.TextIOWrapper(packed, newline="")
    return path.open("w", newline="")


def write(rows: Sequence[Row], path: Path) -> None:
    """Write ``rows`` as a context trace (``.gz``: compressed)."""
    with _open(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["timestamp", "entity", "state"])
        writer.writerows((row.at.isoformat(), row.entity, row.state) for row in rows)
    uses = sum(1 for row in rows if row.entity.startswith("use."))
    print(f"{path}: {len(rows)} rows, {uses} uses, {rows[0].at} to {rows[-1].at}")


def main(argv: Sequence[str] | None = None) -> None:
    """Build the context traces from the datasets' files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="dataset", required=True)
    one = sub.add_parser("ordonez", help="UCI ADL binary sensors (Ordóñez), homes A and B")
    one.add_argument("directory", type=Path, help="holds Ordonez{A,B}_{Sensors,ADLs}.txt")
    one.add_argument("out_a", type=Path)
    one.add_argument("out_b", type=Path)
    other = sub.add_parser("aras", help="ARAS (Boğaziçi University), one house")
    other.add_argument("days", type=Path, help="holds DAY_1.csv ... DAY_30.csv")
    other.add_argument("first_day", type=datetime.fromisoformat, help="DAY_1's date")
    other.add_argument("house", choices=sorted(ARAS_SENSORS))
    other.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.dataset == "ordonez":
        for home, out in (("A", args.out_a), ("B", args.out_b)):
            directory = args.directory
            write(
                ordonez(
                    directory / f"Ordonez{home}_Sensors.txt", directory / f"Ordonez{home}_ADLs.txt"
                ),
                out,
            )
    else:
        write(aras(args.days, args.first_day, args.house), args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
