"""Keep-alive policies replayed over weeks of a household's requests: cold starts and cost.

Each policy decides when a model is held in GPU memory (``benchmarks/warm_replay.py``
states the world: a request that finds the model not ready waits for the rest of the load
that runs, or for a whole one). Each model is replayed on its own (one model at a time:
its own table); the GPU is shared only where the household's service is concerned. The
policies learn online over the whole trace and are scored on its last third.

Policies:
- ``default 5 min``, ``keep N min``: the server's keep-alive after each request; the
  fixed keep-alives from 1 minute to a day make the *frontier*: the cold rate a fixed keep
  reaches at a given memory (interpolated between the two keeps around it; the planner is
  compared with it in whole cold starts, to the nearest request). The frontier at the
  hybrid's memory is printed too: a goal below it is one no fixed keep reaches there;
- ``pin forever``; ``schedule``: warm 06:00-09:00 and 17:00-23:00 every day, 5 min after;
- ``hybrid histogram``: Shahrad et al., USENIX ATC 2020, as published (its rules, and how
  the ones the paper leaves open are read, are in ``warm_replay.py``);
- ``planner``: the integration's auto-warm on its own decision path
  (``core.warm_hold.decide`` on ``core.warm_plan``'s answers), behind the household guard;
  on a context trace also ``planner + signals``: the same, with every edge of the trace's
  entities recorded and answered as ``usage.py`` does (``core.signal_warm``);
- references that know the future: ``oracle pre-warm`` (the default plus a load that ends
  exactly at every request it would miss), ``hour forecaster`` (warm through each clock
  hour that holds a request).

    .venv/bin/python -m benchmarks.warm_policy [--weeks 9] [--seed 1 ...]
        [--trace FILE ...] [--zone ZONE] [--gib 8] [--load 20] [--gpu-gib 16]
        [--service-gib 10] [--self-test]

A trace (``--trace`` or ``--csv``, plain or ``.gz``) is ``timestamp,model`` lines, or a
context trace ``timestamp,entity,state`` (rows ``use.<model>,1`` are the uses, every other
row a household entity's new state, sorted by time); its first line says which, and a
file with neither is refused. A time is ISO 8601 (a time without an offset is read in
``--zone``, default UTC; the planner plans on that clock too) or seconds since the epoch.
Its models are ``--gib`` GiB with a ``--load`` s cold load; its
household service needs ``--service-gib`` of the ``--gpu-gib`` GPU on two evenings in five
(seeded), so the guard is put to the test. ``benchmarks/traces/`` holds real ones, each
with its source and licence (``context_traces.md``: four homes' sensors and uses). Each
trace ends with the goals, met or not (a context trace's: both planners on the frontier,
and ``signal_goals.py``'s), and a line saying how many are met. ``--self-test`` replays
small traces whose answers were worked out by hand, and says which hold. It asserts
nothing (the self-test's test does).
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path
import sys
from zoneinfo import ZoneInfo

from benchmarks.planner_replay import planner, signal_planner
from benchmarks.warm_goals import (
    FRONTIER_MINUTES,
    PLANNER,
    SIGNALS,
    context_goals,
    frontier,
    request_goals,
    score,
    scored_span,
    table,
)
from benchmarks.warm_replay import (
    Policy,
    Server,
    hour_forecaster,
    hybrid_histogram,
    keep_alive,
    oracle_prewarm,
    pin_forever,
    play,
    schedule,
    starved_minutes,
)
from benchmarks.warm_traces import Model, Trace, from_csv, household, read_stamp, sporadic
from benchmarks.world import Machine, verdict

SHOWN = {
    5: "default 5 min",
    10: "keep 10 min",
    30: "keep 30 min",
    60: "keep 60 min",
    120: "keep 120 min",
}
POLICIES: dict[str, tuple[Policy, bool]] = {
    # name: (policy, behind the guard)
    "pin forever": (pin_forever, False),
    "schedule": (schedule, False),
    "hybrid histogram": (hybrid_histogram, False),
    "planner": (planner, True),
    "oracle pre-warm": (oracle_prewarm, False),
    "hour forecaster": (hour_forecaster, False),
}


def report(trace: Trace) -> tuple[list[str], int, int]:
    """Return one trace's tables and goals, and how many goals were met of those tested.

    A context trace (one with signals) adds the planner with signals, and its goals are
    the frontier's (both planners) and those of ``signal_goals.py``; a trace of requests
    alone has the time-only planner's goals against the frontier, the hybrid histogram
    and the 5-minute default.
    """
    span = scored_span(trace)
    lines = [f"## {trace.name}"]
    lines.append(
        f"  GPU {trace.gpu_gib:g} GiB; the household's service needs {trace.service_gib:g} GiB"
        f" of it {len(trace.service)} times; scored: the last third "
        f"({(span[1] - span[0]) / 86400:.1f} days); GiB-hours: every second loading or held"
    )
    lines += [f"  {note}" for note in trace.notes]
    policies = dict(POLICIES)
    if trace.signals:
        policies[SIGNALS] = (signal_planner, True)
    # The fixed keeps make the frontier behind the same guard as the planner's (a keep
    # that starves the service is no fair match); the table shows them without it.
    fixed = {m: play(trace, keep_alive(m * 60.0)) for m in SHOWN}
    guarded_fixed = {m: play(trace, keep_alive(m * 60.0), guarded=True) for m in FRONTIER_MINUTES}
    played = {name: play(trace, policy, guarded=g) for name, (policy, g) in policies.items()}
    starved = {name: starved_minutes(trace, result, span) for name, result in played.items()}
    starved.update({SHOWN[m]: starved_minutes(trace, fixed[m], span) for m in SHOWN})
    met = tested = 0
    for model in trace.models.values():
        name = model.name
        scores = {SHOWN[m]: score(trace, model, fixed[m][name]) for m in SHOWN}
        scores |= {p: score(trace, model, played[p][name]) for p in policies}
        points = [
            (s.gib_hours_per_day, s.cold_rate)
            for s in (score(trace, model, guarded_fixed[m][name]) for m in FRONTIER_MINUTES)
        ]
        lines.append("")
        lines.append(
            f"  {name}: {model.gib:g} GiB, cold load {model.load:g} s, "
            f"{len(trace.requests[name])} requests"
        )
        lines += table(scores, starved)
        if trace.signals:
            goals, said = context_goals(trace, model, scores, points)
        else:
            goals, said = request_goals(scores, points)
        lines += said
        width = max(len(figure) for figure, _, _ in goals)
        for figure, goal, result in goals:
            verdict_said = "not tested (too few requests)" if result is None else verdict(result)
            lines.append(f"  {figure:{width}}  goal: {goal} -> {verdict_said}")
            if result is not None:
                tested += 1
                met += result
    lines.append("")
    for policy in [p for p in (PLANNER, SIGNALS) if p in policies]:
        alone = starved_minutes(trace, play(trace, policies[policy][0]), span)
        guard_tested = alone > 0
        lines.append(
            f"  {policy}'s starved minutes {starved[policy]}  goal: 0 behind the guard"
            f" (without it: {alone}) -> "
            + (verdict(starved[policy] == 0) if guard_tested else "not tested by this trace")
        )
        if guard_tested:
            tested += 1
            met += starved[policy] == 0
    lines.append(f"  goals met on this trace: {met} of {tested}")
    return lines, met, tested


# ----------------------------------------------------------------------------- self-test


def _one(name: str, load: float, times: list[float], *, end: float | None = None) -> Trace:
    model = Model(name, 8.0, load)
    return Trace(
        name="self-test",
        start=0.0,
        end=end if end is not None else max(times) + 1,
        zone=ZoneInfo("UTC"),
        models={name: model},
        requests={name: times},
        gpu_gib=16.0,
    )


def self_test() -> list[tuple[str, object, object]]:
    """Return (what, expected by hand, got) for small traces worked out by hand."""
    checks: list[tuple[str, object, object]] = []
    # A request that comes while an earlier request's cold load runs waits for its rest.
    joined = keep_alive(300)(_one("m", 20, [0, 10]), "m", [])
    checks.append(
        (
            "join: waits of requests at 0 s and 10 s, 20 s load",
            [20.0, 10.0],
            [w for _, w in joined.waits],
        )
    )
    # The default keep: 0 loads (ready 20, kept to 320), 200 warm (kept to 500), 600 cold.
    default = keep_alive(300)(_one("m", 20, [0, 200, 600], end=1000), "m", [])
    checks.append(
        ("default keep: waits at 0, 200, 600 s", [20.0, 0.0, 20.0], [w for _, w in default.waits])
    )
    checks.append(("default keep: held", [(0.0, 500.0), (600.0, 920.0)], default.held))
    # Hybrid: 12 requests 600 s apart with a 20 s load. The first waits 20 s and ends at 20;
    # idle times 580 s (bin 9) then 600 s (bin 10) once warm. Until 10 idle times the
    # histogram is not representative: a 4 h keep, all warm. After the 10th (request 11 at
    # 6000 s): head = 9 min x 0.9 = 486 s, tail = 11 min x 1.1 = 726 s: unloaded at 6000,
    # loaded at 6486 (ready 6506), held to 6726: request 12 at 6600 is warm, and the
    # model is unloaded once it is served (the next pre-warm, 7086 s, is past the end).
    times = [600.0 * i for i in range(12)]
    hybrid = hybrid_histogram(_one("m", 20, times, end=7000), "m", [])
    checks.append(("hybrid: cold requests", 1, sum(1 for _, w in hybrid.waits if w > 0)))
    checks.append(
        (
            "hybrid: unloaded after the 11th, pre-warmed at its head",
            [(0.0, 6000.0), (6486.0, 6600.0)],
            hybrid.held,
        )
    )
    # A pin with a 60-minute service needing 10 of 16 GiB beside an 8 GiB model: 60 minutes.
    pinned = _one("m", 20, [100.0], end=7200)
    pinned.service = [(3600.0, 7200.0)]
    result = {"m": pin_forever(pinned, "m", [])}
    checks.append(
        (
            "starved minutes of a pin beside a 60-min service",
            60,
            starved_minutes(pinned, result, (0, 7200)),
        )
    )
    # The guard: the planner's holds are let go when the service starts.
    guarded = play(pinned, pin_forever, guarded=True)
    checks.append(
        (
            "a policy behind the guard is still what it is (a pin is not guarded)",
            60,
            starved_minutes(pinned, guarded, (0, 7200)),
        )
    )
    # A naive timestamp read in the stated zone: 07:00 in Amsterdam in March is 06:00 UTC.
    checks.append(
        (
            "a naive time read in Europe/Amsterdam",
            datetime(2026, 3, 1, 6, 0, tzinfo=ZoneInfo("UTC")).timestamp(),
            read_stamp("2026-03-01T07:00:00", ZoneInfo("Europe/Amsterdam")),
        )
    )
    # The frontier between two keeps: half-way in memory is half-way in cold rate.
    checks.append(
        (
            "frontier half-way between (10, 0.4) and (20, 0.2)",
            0.3,
            round(frontier([(10, 0.4), (20, 0.2)], 15), 9),
        )
    )
    # A server's load: a warm-up at 0 (20 s load) kept to 100; a request at 5 waits 15.
    server = Server(20)
    server.hold(0, 100)
    checks.append(
        ("a request during a warm-up's load waits for its rest", 15.0, server.request(5, 300))
    )
    return checks


def main() -> None:
    """Replay the synthetic households (and any trace given) against every policy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weeks", type=int, default=9)
    parser.add_argument("--seed", type=int, action="append", help="seeds (default 1 and 2)")
    parser.add_argument("--trace", "--csv", type=Path, action="append", default=[])
    parser.add_argument("--zone", default="UTC", help="the zone of a trace's naive times")
    parser.add_argument("--gib", type=float, default=8.0)
    parser.add_argument("--load", type=float, default=20.0)
    parser.add_argument("--gpu-gib", type=float, default=16.0)
    parser.add_argument("--service-gib", type=float, default=10.0)
    parser.add_argument("--no-synthetic", action="store_true", help="only the traces given")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        failed = 0
        for what, expected, got in self_test():
            ok = expected == got
            failed += not ok
            print(f"{'ok ' if ok else 'BAD'} {what}: expected {expected}, got {got}")
        print(f"self-test: {'every check holds' if not failed else f'{failed} do not hold'}")
        sys.exit(1 if failed else 0)
    machine = Machine()
    traces: list[Trace] = []
    if not args.no_synthetic:
        seeds = args.seed or [1, 2]
        traces += [household(args.weeks, seed) for seed in seeds]
        traces.append(sporadic(args.weeks, seeds[0]))
    zone = ZoneInfo(args.zone)
    traces += [
        from_csv(
            path,
            zone=zone,
            gib=args.gib,
            load=args.load,
            gpu_gib=args.gpu_gib,
            service_gib=args.service_gib,
        )
        for path in args.trace
    ]
    reports = [report(trace) for trace in traces]
    print(
        "world: simulated, no server (benchmarks/warm_replay.py);"
        " each trace lists its models and GPU"
    )
    print(machine.start_line())
    print("\n".join(machine.end_lines()))
    print("(simulated time: the machine's load does not change a figure)")
    for lines, _, _ in reports:
        print()
        print("\n".join(lines))
    met = sum(m for _, m, _ in reports)
    tested = sum(t for _, _, t in reports)
    print()
    print(
        f"goals met: {met} of {tested} over {len(reports)} traces"
        + (" (every goal met)" if met == tested else "")
    )


if __name__ == "__main__":
    main()
