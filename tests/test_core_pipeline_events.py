"""Home Assistant's record of the pipelines' runs, read for one satellite (pure, no hass)."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import given, strategies as st

from custom_components.llm_warmth.core.pipeline_events import (
    EVENTS_UNREADABLE,
    NO_DEBUG,
    RunRead,
    events_of,
    latest_run,
    turn_of,
)

T0 = datetime(2026, 12, 2, 7, 30, tzinfo=UTC)
KITCHEN = "assist_satellite.kitchen"
HALL = "assist_satellite.hall"


def stamp(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat()


@dataclass
class Event:
    """A recorded event, shaped as Home Assistant's ``PipelineEvent``."""

    type: object
    timestamp: object
    data: object


@dataclass
class Run:
    """A recorded run, shaped as Home Assistant's ``PipelineRunDebug``."""

    events: object = field(default_factory=list)


def run_of(satellite: str, at: float, pipeline: str = "p1") -> Run:
    """Return a short run of ``satellite`` that started ``at`` seconds after T0."""
    return Run(
        [
            Event("run-start", stamp(at), {"pipeline": pipeline, "satellite_id": satellite}),
            Event("stt-start", stamp(at + 0.1), {"engine": "stt.test"}),
            Event("run-end", stamp(at + 2), None),
        ]
    )


def test_the_latest_run_of_the_satellite_is_read() -> None:
    """Of the runs of every pipeline, the satellite's with the latest start."""
    debug = {
        "p1": {"a": run_of(KITCHEN, 1), "b": run_of(KITCHEN, 5), "c": run_of(HALL, 9)},
        "p2": {"d": run_of(KITCHEN, 3, "p2")},
    }
    read = latest_run(debug, KITCHEN)
    assert read.fault is None
    assert read.events is not None
    assert read.events[0] == ("run-start", stamp(5), {"pipeline": "p1", "satellite_id": KITCHEN})
    assert len(read.events) == 3
    assert read.pipeline == "p1"
    assert latest_run(debug, HALL).events == tuple(
        (e.type, e.timestamp, e.data)
        for e in run_of(HALL, 9).events  # type: ignore[attr-defined]
    )


def test_a_later_run_elsewhere_in_the_record_wins() -> None:
    """The latest start wins wherever it is, not the last one read."""
    debug = {"p1": {"a": run_of(KITCHEN, 5)}, "p2": {"b": run_of(KITCHEN, 3, "p2")}}
    assert latest_run(debug, KITCHEN).pipeline == "p1"
    same = {"p1": {"a": run_of(KITCHEN, 5)}, "p2": {"b": run_of(KITCHEN, 5, "p2")}}
    assert latest_run(same, KITCHEN).pipeline == "p1"  # a tie keeps the first


def test_no_run_of_the_satellite_is_no_fault() -> None:
    """Runs not started yet, and other satellites', are passed over."""
    debug = {"p1": {"a": Run([]), "b": run_of(HALL, 1)}}
    assert latest_run(debug, KITCHEN) == RunRead(None, None)
    assert latest_run({}, KITCHEN) == RunRead(None, None)
    assert RunRead(None).pipeline is None


def test_a_record_that_is_not_there_is_said() -> None:
    """No ``pipeline_debug``: the reason says so."""
    assert latest_run(None, KITCHEN) == RunRead(None, NO_DEBUG)
    assert latest_run([run_of(KITCHEN, 1)], KITCHEN).fault == NO_DEBUG


def test_a_record_of_another_shape_is_a_fault() -> None:
    """Runs that are not runs, events that are not events: the error names the shape."""
    fault = latest_run({"p1": ["not a mapping"]}, KITCHEN).fault
    assert fault is not None
    assert fault.startswith("AttributeError: ")
    fault = latest_run({"p1": {"a": object()}}, KITCHEN).fault
    assert fault is not None
    assert fault.startswith("AttributeError: ")
    fault = latest_run({"p1": {"a": Run(42)}}, KITCHEN).fault
    assert fault == "TypeError: a run's events are 42"
    fault = latest_run({"p1": {"a": Run([Event(1, stamp(0), {})])}}, KITCHEN).fault
    assert fault is not None
    assert fault.startswith("TypeError: a run starts with (1, ")
    fault = latest_run({"p1": {"a": Run([Event("run-start", stamp(0), None)])}}, KITCHEN).fault
    assert fault is not None
    assert fault.startswith("TypeError: a run starts with ('run-start', ")


def test_events_of_a_run() -> None:
    """Each event as (type, timestamp, data); missing attributes read as None."""
    assert events_of(Run([])) == (None, [])
    start, events = events_of(Run([Event("run-start", "t", {"x": 1}), object()]))
    assert start == {"x": 1}
    assert events == [("run-start", "t", {"x": 1}), (None, None, None)]


def test_the_pipeline_a_run_names() -> None:
    """Its run-start's ``pipeline``, when a text."""
    assert RunRead((("run-start", "t", {"pipeline": "p9"}),)).pipeline == "p9"
    assert RunRead((("run-start", "t", {"pipeline": 9}),)).pipeline is None
    assert RunRead((("run-start", "t", None),)).pipeline is None
    assert RunRead(()).pipeline is None


def test_the_turn_of_a_run() -> None:
    """A run that reads is a turn; one that does not is said; no run is neither."""
    read = turn_of(latest_run({"p1": {"a": run_of(KITCHEN, 1)}}, KITCHEN))
    assert read.fault is None
    assert read.turn is not None
    assert (read.turn.pipeline, read.turn.satellite) == ("p1", KITCHEN)
    assert read.turn.started_at == T0 + timedelta(seconds=1)
    assert turn_of(RunRead()).turn is None
    assert turn_of(RunRead()).fault is None
    assert turn_of(RunRead(None, NO_DEBUG)).fault == NO_DEBUG
    unread = turn_of(RunRead((("run-start", "not a time", {}),)))
    assert (unread.turn, unread.fault) == (None, EVENTS_UNREADABLE)
    not_a_start = turn_of(RunRead((("stt-start", stamp(0), {}),)))
    assert (not_a_start.turn, not_a_start.fault) == (None, EVENTS_UNREADABLE)
    assert turn_of(RunRead(())).fault == EVENTS_UNREADABLE


anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
events = st.builds(
    Event,
    st.one_of(st.sampled_from(["run-start", "stt-start", "run-end"]), anything),
    st.one_of(st.floats(0, 60).map(stamp), anything),
    st.one_of(st.fixed_dictionaries({"satellite_id": st.just(KITCHEN)}), anything),
)
runs = st.one_of(st.builds(Run, st.lists(events, max_size=4)), st.builds(Run, anything), anything)
records = st.one_of(
    anything,
    st.dictionaries(st.text(max_size=3), st.dictionaries(st.text(max_size=3), runs, max_size=3)),
)


@given(records)
def test_any_record_reads_or_says_why(debug: object) -> None:
    """Whatever the record holds, reading it neither raises nor half reads."""
    read = latest_run(debug, KITCHEN)
    assert (read.events is None) or (read.fault is None)
    if read.events is not None:
        assert isinstance(read.events[0][0], str)
        assert isinstance(read.events[0][2], dict)
        assert read.events[0][2].get("satellite_id") == KITCHEN
    turn = turn_of(read)
    assert turn.turn is None or turn.fault is None
    if turn.turn is not None:
        assert turn.turn.satellite == KITCHEN


def test_the_latest_run_is_the_latest_to_start_not_the_latest_to_go_on() -> None:
    """A run started at 1 s whose speech took 20 s, and one started at 5 s: the later
    start is the latest run, though the earlier one's next event came after it."""
    long_speech = Run(
        [
            Event("run-start", stamp(1), {"pipeline": "p1", "satellite_id": KITCHEN}),
            Event("stt-start", stamp(21), {"engine": "stt.test"}),
        ]
    )
    debug = {"p1": {"a": long_speech}, "p2": {"b": run_of(KITCHEN, 5, "p2")}}
    assert latest_run(debug, KITCHEN).pipeline == "p2"
