"""The warm-policy benchmark on context traces: read, replayed with signals, judged by hand.

A context trace (``timestamp,entity,state``) is read as uses and signals, a file of neither
form is refused in words; the planner with signals goes through the integration's own
calls (``UsagePlanner.observe_edges``, ``core.signal_warm.signal_warm_up``); the goals'
figures (whether signals lead, by their lift; never worse; half the cold starts) are
checked on traces whose answers are worked out here.
"""

from __future__ import annotations

from datetime import datetime, timedelta
import gzip
from pathlib import Path
import random
from zoneinfo import ZoneInfo

import pytest

from benchmarks import context_traces
from benchmarks.context_traces import Row, aras, ordonez, write
from benchmarks.planner_replay import planner, signal_planner
from benchmarks.signal_goals import Figures, Lead, goals, lead_line, leading, lifts
from benchmarks.warm_policy import report
from benchmarks.warm_traces import Model, Trace, from_csv

MADRID = ZoneInfo("Europe/Madrid")
UTC = ZoneInfo("UTC")


def read(path: Path, zone: ZoneInfo = MADRID) -> Trace:
    return from_csv(path, zone=zone, gib=6, load=8, gpu_gib=16, service_gib=10)


def test_a_context_trace_is_read_as_uses_and_signals(tmp_path: Path) -> None:
    path = tmp_path / "house.csv"
    path.write_text(
        "timestamp,entity,state\n"
        "2026-03-02T07:00:00,binary_sensor.bedroom_motion,on\n"
        "2026-03-02T07:05:00,use.kitchen,1\n"
        "2026-03-02T07:06:00,use.kitchen,0\n"  # not a use, not a signal
        "2026-03-02T07:07:00,use.,1\n"  # no model named
        "2026-03-02T07:08:00,sensor.phone_next_alarm,2026-03-03T06:30:00\n"
        "2026-03-02T07:09:00,use.lounge,1\n"
        "not a time,binary_sensor.x,on\n"
        "2026-03-02T07:10:00,binary_sensor.short\n"
    )
    trace = read(path)
    seven = datetime(2026, 3, 2, 7, 0, tzinfo=MADRID).timestamp()
    assert trace.requests == {"kitchen": [seven + 300], "lounge": [seven + 540]}
    # A state that is a time is the edge "alarm" when the time comes.
    alarm = datetime(2026, 3, 3, 6, 30, tzinfo=MADRID).timestamp()
    assert trace.signals == [
        (seven, "binary_sensor.bedroom_motion", "on"),
        (alarm, "sensor.phone_next_alarm", "alarm"),
    ]
    assert trace.models["kitchen"] == Model("kitchen", 6, 8)
    assert "signals: 2 changes of 2 entities, every model's" in trace.notes


def test_a_file_whose_header_is_neither_form_is_refused_in_words(tmp_path: Path) -> None:
    path = tmp_path / "odd.csv"
    path.write_text("timestamp,entity\n2026-03-02T07:00:00,binary_sensor.x\n")
    with pytest.raises(
        SystemExit, match="'timestamp,model' \\(requests\\) or 'timestamp,entity,state'"
    ):
        read(path)
    path.write_text("2026-03-02T07:00:00,assistant\n")  # no header at all
    with pytest.raises(SystemExit, match="its first line is"):
        read(path)
    path.write_text("\n\n")
    with pytest.raises(SystemExit, match="empty"):
        read(path)
    path.write_text("timestamp,entity,state\n2026-03-02T07:00:00,binary_sensor.x,on\n")
    with pytest.raises(SystemExit, match=r"no 'use\.<model>,1' line"):
        read(path)


def test_a_compressed_trace_reads_as_its_text(tmp_path: Path) -> None:
    rows = [
        Row(datetime(2026, 3, 2, 7, 0), "binary_sensor.a", "on"),
        Row(datetime(2026, 3, 2, 7, 1), "use.m", "1"),
    ]
    plain, packed = tmp_path / "t.csv", tmp_path / "t.csv.gz"
    write(rows, plain)
    write(rows, packed)
    assert gzip.decompress(packed.read_bytes()).decode() == plain.read_text()
    first = packed.read_bytes()
    write(rows, packed)
    assert packed.read_bytes() == first  # the same bytes each time
    assert read(plain).signals == read(packed).signals


def test_ordonez_sensors_are_intervals_and_its_meals_are_uses(tmp_path: Path) -> None:
    sensors, activities = tmp_path / "s.txt", tmp_path / "a.txt"
    head = "Start time\t\tEnd time\t\tLocation\tType\tPlace\r\n----\t----\r\n"
    sensors.write_text(
        head
        + "2011-11-28 06:00:00\t\t2011-11-28 06:10:00\t\tBed\t\tPressure\tBedroom\r\n"
        + "2011-11-28 06:12:00 \t2011-11-28 06:13:00\t\tShower\t\tPIR\t\tBathroom\r\n"
        + "2011-11-28 06:20:00\t\t2011-11-28 06:20:00\t\tBed\t\tPressure\tBedroom\r\n",
        encoding="latin-1",
    )
    activities.write_text(
        "Start time\tEnd time\tActivity\r\n----\t----\t----\r\n"
        "2011-11-28 06:30:00\t\t2011-11-28 06:40:00\t\tBreakfast\t\r\n"
        "2011-11-28 06:45:00\t\t2011-11-28 06:50:00\t\tBreakfast\r\n"  # resumed: no new use
        "2011-11-28 07:10:00\t\t2011-11-28 07:15:00\t\tGrooming\r\n"  # no use
        "2011-11-28 08:00:00\t\t2011-11-28 08:01:00\t\tLeaving\r\n",
        encoding="latin-1",
    )
    rows = ordonez(sensors, activities)
    assert [(r.at.strftime("%H:%M"), r.entity, r.state) for r in rows] == [
        ("06:00", "binary_sensor.bedroom_bed", "on"),
        ("06:10", "binary_sensor.bedroom_bed", "off"),
        ("06:12", "binary_sensor.bathroom_shower", "on"),
        ("06:13", "binary_sensor.bathroom_shower", "off"),
        # The bed's 06:20 interval: on and off at the same second, in the file's order.
        ("06:20", "binary_sensor.bedroom_bed", "on"),
        ("06:20", "binary_sensor.bedroom_bed", "off"),
        ("06:30", "use.assistant", "1"),
        ("08:00", "use.assistant", "1"),
    ]


def test_aras_days_are_seconds_and_an_activity_begun_is_a_use(tmp_path: Path) -> None:
    line = "0 " * 20
    day = [f"{line}1 1\n"] * 3 + [f"1 {line[2:]}3 1\n"] * 2 + [f"1 {line[2:]}1 1\n"] * 2
    day += [f"{line}3 1\n"]  # the breakfast again 2 s later: taken up again, no new use
    (tmp_path / "DAY_1.csv").write_text("".join(day))
    (tmp_path / "DAY_2.csv").write_text(f"{line}1 12\n")  # resident 2 watches TV: a use
    rows = aras(tmp_path, datetime(2013, 4, 1), "house_a")
    first = datetime(2013, 4, 1)
    assert Row(first + timedelta(seconds=3), "binary_sensor.wardrobe_photocell", "on") in rows
    assert Row(first + timedelta(seconds=7), "binary_sensor.wardrobe_photocell", "off") in rows
    uses = [r.at for r in rows if r.entity == "use.assistant"]
    assert uses == [first + timedelta(seconds=3), first + timedelta(days=1)]
    assert (
        len(context_traces.ARAS_SENSORS["house_a"])
        == len(context_traces.ARAS_SENSORS["house_b"])
        == 20
    )


def context_trace(days: int, *, lead_minutes: float, noisy: bool = False, seed: int = 1) -> Trace:
    """Mornings between 06:30 and 07:30, each after the bedroom's motion; a noisy hall sensor.

    The clock holds the model through the mornings' hour every day and misses a morning
    now and then; the motion comes ``lead_minutes`` before each morning's use; evenings at
    no set hour; the hall's sensor (``noisy``) fires every 7 minutes, day and night.
    """
    rng = random.Random(seed)
    start = datetime(2026, 3, 2, tzinfo=UTC).timestamp()
    uses: list[float] = []
    signals: list[tuple[float, str, str]] = []
    for index in range(days):
        day = start + index * 86400
        wake = day + rng.uniform(6.5 * 3600, 7.5 * 3600)
        signals.append((wake, "binary_sensor.bedroom_motion", "on"))
        uses.append(wake + lead_minutes * 60)
        evening = day + rng.uniform(16 * 3600, 23 * 3600)
        uses += [evening, evening + 120]
        if noisy:
            signals += [
                (day + minute * 60.0, "binary_sensor.hall", "on") for minute in range(0, 1440, 7)
            ]
    return Trace(
        name="mornings",
        start=start,
        end=start + days * 86400,
        zone=UTC,
        models={"assistant": Model("assistant", 6.0, 8.0)},
        requests={"assistant": sorted(uses)},
        gpu_gib=16.0,
        signals=sorted(signals),
    )


def test_a_lifted_edge_ahead_of_the_uses_leads_and_a_noisy_one_does_not() -> None:
    trace = context_trace(30, lead_minutes=10, noisy=True)
    found = lifts(trace, "assistant")
    assert found[("binary_sensor.bedroom_motion", "on")] > 2
    assert found[("binary_sensor.hall", "on")] < 1.5  # fires all day: no lift
    lead = leading(trace, "assistant", (trace.start, trace.end), 8.0)
    assert lead.entity == "binary_sensor.bedroom_motion"
    assert lead.share == pytest.approx(1 / 3)  # the mornings, not the evenings
    assert not lead.leads
    # An edge seconds before its use (less than the load) comes before none.
    close = context_trace(30, lead_minutes=5 / 60)
    assert leading(close, "assistant", (close.start, close.end), 8.0).share == 0.0


def test_the_signal_goals_at_their_edges() -> None:
    time_only = Figures(requests=40, cold=10, gib_hours=20.0)
    leads = Lead("binary_sensor.bedroom_motion", 0.5, 40)
    assert leads.leads
    assert not Lead("x", 0.49, 40).leads
    assert not Lead(None, 1.0, 0).leads

    def verdicts(
        cold: int, gib: float, lead: Lead = leads, *, enough: bool = True
    ) -> list[bool | None]:
        return [
            met for _, _, met in goals(time_only, Figures(40, cold, gib), lead, 8, enough=enough)
        ]

    # Never worse: no more cold starts, at most 5 % more GiB-hours; the frontier; half.
    assert verdicts(5, 20.0) == [True, True, True]
    assert verdicts(5, 21.0) == [True, True, False]  # 5 % more: not worse, but not less
    assert verdicts(5, 21.01) == [False, True, False]
    assert verdicts(6, 20.0) == [True, True, False]  # more than half the cold starts
    assert verdicts(8, 20.0) == [True, True, False]
    assert verdicts(9, 20.0) == [True, False, False]  # above the frontier's 8
    assert verdicts(11, 10.0) == [False, False, False]
    # Where signals do not lead, no half goal; too few requests, nothing tested.
    assert verdicts(5, 20.0, Lead("x", 0.2, 40)) == [True, True]
    assert verdicts(5, 20.0, enough=False) == [None, None, None]
    assert "signals lead: the most ahead, x" in lead_line(Lead("x", 0.6, 10))
    assert "signals do not lead (under half)" in lead_line(Lead("x", 0.4, 10))
    assert "no edge with a lift of 2 or more" in lead_line(Lead(None, 0.0, 10))


def test_the_planner_with_signals_warms_on_a_leading_edge_and_the_time_only_one_cannot() -> None:
    trace = context_trace(42, lead_minutes=10)
    time_only = planner(trace, "assistant", [])
    with_signals = signal_planner(trace, "assistant", [])
    last = trace.start + 28 * 86400

    def cold(waits: list[tuple[float, float]]) -> int:
        return sum(1 for at, wait in waits if at >= last and wait > 0)

    mornings = {
        t
        for t in trace.requests["assistant"]
        if t >= last and (t - trace.start) % 86400 < 12 * 3600
    }
    # The planner with signals has no more cold starts, for less memory (the clock's
    # three quarters of an hour each morning against a load on the motion).
    assert cold(with_signals.waits) <= cold(time_only.waits)
    held = [sum(e - b for b, e in o.held if b >= last) for o in (time_only, with_signals)]
    assert held[1] < held[0]
    assert mornings
    lines, met, tested = report(trace)
    assert any(line.startswith("  planner + signals ") for line in lines)
    assert any("signals do not lead" in line or "signals lead" in line for line in lines)
    assert lines[-1] == f"  goals met on this trace: {met} of {tested}"


def test_the_context_traces_in_the_repository_read() -> None:
    folder = Path(__file__).parent.parent / "benchmarks" / "traces"
    for name, zone, uses in (
        ("ordonez_a.csv", MADRID, 95),
        ("ordonez_b.csv", MADRID, 212),
        ("aras_house_a.csv.gz", ZoneInfo("Europe/Istanbul"), 519),
        ("aras_house_b.csv.gz", ZoneInfo("Europe/Istanbul"), 168),
    ):
        trace = read(folder / name, zone)
        assert len(trace.requests["assistant"]) == uses, name
        assert trace.signals
        assert all(not entity.startswith("use.") for _, entity, _ in trace.signals)
