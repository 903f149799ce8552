"""Home Assistant's record of the Assist pipelines' runs, read for one satellite (pure).

``hass.data["assist_pipeline"].pipeline_debug`` (internal) keeps every event of a
pipeline's last runs with Home Assistant's own timestamp: per pipeline, per run, a run
whose ``events`` each have a ``type``, a ``timestamp`` and ``data``. The shell hands that
record over as it finds it; here it is read by duck typing, each shape checked, into the
events of a satellite's latest run. What does not read is said (``RunRead.fault``, a
reason for the log line), never raised: the shell says it once and the turns go on untimed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .voice import VoiceTurn, run_events

# One recorded event as read: (type, timestamp, data), each as the record holds it.
type RawEvent = tuple[object, object, object]

# Why the record does not read (the reasons its log line gives).
NO_DEBUG = "pipeline_debug is not there"
EVENTS_UNREADABLE = "its events do not read"


@dataclass(frozen=True, slots=True)
class RunRead:
    """The events of a satellite's latest run (None: no run of it), or why none read."""

    events: tuple[RawEvent, ...] | None = None
    fault: str | None = None

    @property
    def pipeline(self) -> str | None:
        """Return the pipeline the run uses, as its run-start names it (None: not named)."""
        if not self.events:
            return None
        data = self.events[0][2]
        pipeline = data.get("pipeline") if isinstance(data, Mapping) else None
        return pipeline if isinstance(pipeline, str) else None


@dataclass(frozen=True, slots=True)
class TurnRead:
    """A satellite's latest turn (None: no run, or it does not read), and why not."""

    turn: VoiceTurn | None
    fault: str | None = None


def latest_run(debug: object, satellite: str) -> RunRead:
    """Return the events of the satellite's latest run, from the pipelines' record.

    ``debug``: the record (``pipeline_debug``), per pipeline the runs by id. The latest
    run is the one whose first event has the latest timestamp among those whose run-start
    names ``satellite``. A record of another shape is a fault, not an empty record.
    """
    if not isinstance(debug, Mapping):
        return RunRead(fault=NO_DEBUG)
    latest: tuple[str, list[RawEvent]] | None = None
    try:
        for runs in debug.values():
            for run in runs.values():
                start, events = events_of(run)
                if start is None or start.get("satellite_id") != satellite:
                    continue  # not started yet, or another satellite's
                stamp = str(events[0][1])
                if latest is None or stamp > latest[0]:
                    latest = (stamp, events)
    except (AttributeError, TypeError) as err:
        return RunRead(fault=f"{type(err).__name__}: {err}")
    return RunRead(tuple(latest[1]) if latest else None)


def events_of(run: object) -> tuple[Mapping[object, object] | None, list[RawEvent]]:
    """Return a recorded run's first event's data and its events; raise when not a run.

    Each event as (type, timestamp, data). A run that starts with an event of another
    shape is a changed format, not a run; one with no event yet has not started.
    """
    recorded: object = run.events  # type: ignore[attr-defined]
    if not isinstance(recorded, Iterable):
        raise TypeError(f"a run's events are {recorded!r}")
    events: list[RawEvent] = [
        (getattr(e, "type", None), getattr(e, "timestamp", None), getattr(e, "data", None))
        for e in recorded
    ]
    if not events:
        return None, events
    kind, _stamp, data = events[0]
    if not isinstance(kind, str) or not isinstance(data, Mapping):
        raise TypeError(f"a run starts with {events[0]!r}")
    return data, events


def turn_of(read: RunRead) -> TurnRead:
    """Return the turn a satellite's latest run tells, or why it does not read.

    No run is no turn and no fault; a run whose events do not read into a turn is a fault.
    """
    if read.fault is not None or read.events is None:
        return TurnRead(None, read.fault)
    parsed = run_events(read.events)
    turn = VoiceTurn.from_events(parsed) if parsed else None
    return TurnRead(turn, EVENTS_UNREADABLE if turn is None else None)
