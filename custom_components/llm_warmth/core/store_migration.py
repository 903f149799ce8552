"""An entry's stored file brought up to today's version: pure transforms of its dict.

Each migration takes the file's data as it was written by an older minor version (1.x) and
changes it in place to the next one's form; what is not the expected shape (a damaged file)
is left alone, for each feature's own reading to drop. No I/O.
"""

from collections.abc import Callable, Mapping
from typing import Final

STORAGE_VERSION: Final = 1
# 1.2: the polling figure stored as "load_seconds" (the request that loaded a model, as
# polls saw it) became "cold_request_seconds"; "load_seconds" is now the server's own.
# 1.3: "load_source" says who measured "load_seconds" (until then only Ollama: "server");
# stages a server did not report are null.
# 1.4: "pins" (by model) and "guard" (the household guard's record) added; files
# without them have none.
# 1.5: "diagnoses" (the last diagnosis of each model, as its action answered it),
# "ttft_targets" (seconds, by model) and "idle_profiles" (by model). They were written
# by releases that still called the file 1.4: a 1.4 file may have them or not.
# 1.6: a diagnosis keeps its verdict as a sentence ("said": key and figures, put in
# words from the translations when shown) instead of English words ("verdict"); one
# stored before keeps its words, said as they were.
# 1.7: a figure polls saw ("load_source" or "cold_request_source" "polling": a lower bound)
# is kept apart, as "load_at_least_seconds" / "cold_request_at_least_seconds", so that it
# never shows as if it were exact.
# 1.8: a model's usage record ("usage") keeps a fourth scoreboard column (requests warm
# thanks to a signal) and its planner the household's signals: their edges ("edges"),
# what they taught ("signals") and the contest of the ways of warming ("contest"). A
# record without them gets the column at 0 and no edges; its contest is learnt again from
# the uses it kept when it is read.
STORAGE_MINOR_VERSION: Final = 8

type StoredData = dict[str, object]


def _models(data: StoredData) -> list[dict[str, object]]:
    """Return the stored figures of each model (what is not a mapping is left alone)."""
    models = data.get("models")
    return [v for v in models.values() if isinstance(v, dict)] if isinstance(models, dict) else []


def _to_1_2(data: StoredData) -> None:
    """Keep a polled load time as the cold request's, which is what polls measured."""
    for values in _models(data):
        if seconds := values.pop("load_seconds", None):
            values["cold_request_seconds"] = seconds
            values["cold_request_source"] = "polling"


def _to_1_3(data: StoredData) -> None:
    """Say that a stored load time is the server's own (only Ollama reported one)."""
    for values in _models(data):
        if values.get("load_seconds") is not None:
            values.setdefault("load_source", "server")


def _to_1_5(data: StoredData) -> None:
    """Give the sections 1.5 added, empty, to a file that has not got them."""
    for section in ("diagnoses", "ttft_targets", "idle_profiles"):
        data.setdefault(section, {})


def _to_1_6(data: StoredData) -> None:
    """Keep a diagnosis' English verdict as a sentence that says it as it was."""
    diagnoses = data.get("diagnoses")
    for values in diagnoses.values() if isinstance(diagnoses, dict) else ():
        if isinstance(values, dict) and "said" not in values:
            words = values.pop("verdict", "")
            values["said"] = {
                "key": "diagnosis_as_stored",
                "figures": {"words": words if isinstance(words, str) else ""},
            }


def _to_1_7(data: StoredData) -> None:
    """Keep a figure polls saw apart, as a lower bound, from the exact one."""
    for values in _models(data):
        for figure in ("load", "cold_request"):
            if values.get(f"{figure}_source") == "polling":
                values[f"{figure}_at_least_seconds"] = values.pop(f"{figure}_seconds", None)
                values[f"{figure}_source"] = None


def _to_1_8(data: StoredData) -> None:
    """Give each usage record its signal column and its planner no edges yet."""
    usage = data.get("usage")
    for record in usage.values() if isinstance(usage, dict) else ():
        if not isinstance(record, dict):
            continue
        days = record.get("days")
        for row in days.values() if isinstance(days, dict) else ():
            if isinstance(row, list) and len(row) == 3:
                row.append(0.0)
        planner = record.get("planner")
        if isinstance(planner, dict):
            planner.setdefault("edges", {})


# Each migration, by the minor version it brings a file to.
MIGRATIONS: Final[Mapping[int, Callable[[StoredData], None]]] = {
    2: _to_1_2,
    3: _to_1_3,
    5: _to_1_5,
    6: _to_1_6,
    7: _to_1_7,
    8: _to_1_8,
}


def migrate(data: StoredData, old_minor_version: int) -> StoredData:
    """Bring ``data``, written as 1.``old_minor_version``, to today's form (in place).

    Every migration to a minor version above the file's runs, oldest first.
    """
    for minor_version, to_minor in MIGRATIONS.items():
        if old_minor_version < minor_version:
            to_minor(data)
    return data
