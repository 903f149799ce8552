"""The silence after a spoken command, with and without warm on wake, on a real Ollama.

Part 1 runs turns of the kit's ``big`` model (1.24 GB behind the throttled disk) through a
real Assist pipeline in a test Home Assistant, with Home Assistant's own Ollama agent: 3 s
of speech in real time, then 3 s of speech-to-text (``tests/bench_voice_warm.py``). In
pairs, each one turn with warm on wake off (the control arm) and one with it on, the
order of the two drawn at random per pair (``--seed``, printed):

- cold pairs: the model evicted and dropped from the page cache before each turn. Per
  pair the silence saved (the control's silence less the warmed turn's), and that saving
  as a share of the control arm's load (Ollama's own ``load_duration`` of the control
  turn's agent request); the turns whose model was resident at the agent's start, per arm.
- resident pairs: the model resident in both arms (loaded with the agent's settings; the
  fixed prefix of the agent's prompt, up to Home Assistant's time of day, read by the
  turn before). Per pair the silence with warm on wake less the
  silence without: the resident-turn cost, and how many pairs were slower with it.

Part 2 measures what the prompt warm-up costs on a server with one slot (Ollama's default
``OLLAMA_NUM_PARALLEL=1``): the first token of an agent-like turn after a load-only
warm-up, after a prompt warm-up that had ended, when the turn comes 0.3 s into one, and
when it comes 0.3 s into one that is let go (its request cancelled at the turn's start, as
the integration does at the agent's start). ``--slot-only`` runs part 2 alone.

It prints its world first (the server, the model's size, the disk's read limit, the cold
load measured, the machine's CPUs and load at the start and the end, and what else used
the CPUs meanwhile), then each figure with its goal, met or not. It asserts nothing.

    PREFIX=/opt/llm-warmth-servers BIG=1 SLOW_DISK_MBPS=200 scripts/llm_servers start
    eval "$(PREFIX=/opt/llm-warmth-servers scripts/llm_servers env)"
    .venv/bin/python -m benchmarks.voice_warm [--runs 5] [--resident-runs N] [--slot-runs 2]
        [--seed N] [--server VAR] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
import json
import os
from pathlib import Path
import random
from statistics import median
import sys
from typing import Any
from urllib.parse import urlsplit
import urllib.request

from benchmarks.voice_slot import part_two
from benchmarks.world import (
    LABEL,
    Machine,
    listening_pid,
    read_throttle,
    row,
    run_in_pytest,
    spread,
)

ROOT = Path(__file__).resolve().parent.parent
MODEL = "big-voice:latest"  # tests/voice_runs.py: big's weights, replies of 8 tokens
# The resident-turn cost that counts as none: within this of zero, median of the pairs.
RESIDENT_TOLERANCE = 0.2
# Ollama's load_duration of a request that found its model loaded (a few ms, more on a
# busy machine): below this the agent waited for no load.
NO_LOAD = 0.5


def run_turns(args: argparse.Namespace) -> dict[str, Any]:
    """Run the turns in pytest (the test Home Assistant); return what they wrote."""
    settings = {
        "LLM_WARMTH_BENCH_RUNS": str(args.runs),
        "LLM_WARMTH_BENCH_RESIDENT_RUNS": str(args.resident_runs),
        "LLM_WARMTH_BENCH_SEED": str(args.seed),
        "LLM_WARMTH_BENCH_SERVER": args.server,
    }
    return run_in_pytest("tests/bench_voice_warm.py", settings, args.json)


def by_pair(turns: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Return each pair's (warm on wake off, on) turns."""
    pairs: dict[int, dict[bool, dict[str, Any]]] = {}
    for turn in turns:
        pairs.setdefault(turn["pair"], {})[turn["warm_on_wake"]] = turn
    return [(arms[False], arms[True]) for _, arms in sorted(pairs.items()) if len(arms) == 2]


def orders_line(pairs: list[tuple[dict[str, Any], dict[str, Any]]], off: str = "control") -> str:
    """Return how many pairs ran warm on wake off first."""
    first = sum(1 for turn, _ in pairs if turn["position"] == 0)
    return f"{off} first in {first}, warm on wake first in {len(pairs) - first}"


def pair_rows(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[str]:
    """Return one line per pair: both arms' silences, the saving, the share of the load hidden.

    The share hidden is the silence saved over the control arm's own load (Ollama's
    ``load_duration``): what warming at the wake took off the wait that load caused.
    """
    lines = [
        f"  {'pair':>4} {'first':>13} {'control s':>10} {'warmed s':>9} {'saved s':>8}"
        f" {'control load s':>15} {'hidden':>7}"
    ]
    for number, (off, on) in enumerate(pairs, 1):
        saved = off["silence"] - on["silence"]
        load = off["agent_load_server_seconds"]
        hidden = f"{100 * saved / load:.0f} %" if load else "-"
        first = "control" if off["position"] == 0 else "warm on wake"
        lines.append(
            f"  {number:>4} {first:>13} {off['silence']:>10.2f} {on['silence']:>9.2f}"
            f" {saved:>+8.2f} {load if load is not None else float('nan'):>15.2f} {hidden:>7}"
        )
    return lines


def resident_count(turns: list[dict[str, Any]]) -> int:
    return sum(1 for t in turns if t["resident_at_intent_start"])


def cold_table(result: dict[str, Any]) -> list[str]:
    """Return the cold pairs' table."""
    pairs = by_pair(result["turns"])
    n = len(pairs)
    control = [off for off, _ in pairs]
    warmed = [on for _, on in pairs]
    saved = [off["silence"] - on["silence"] for off, on in pairs]
    loads = [off["agent_load_server_seconds"] for off in control]
    shares = [
        100 * s / load for s, load in zip(saved, loads, strict=True) if load is not None and load
    ]
    saving = median(saved) if saved else float("nan")
    share = median(shares) if shares else float("nan")
    agent_loads = [on["agent_load_server_seconds"] for on in warmed]
    worst = min(shares) if shares else float("nan")
    return [
        f"cold pairs: {n}, the model evicted and out of the page cache before each turn; "
        f"{orders_line(pairs)}",
        *pair_rows(pairs),
        f"  {'':{LABEL}} {'median (min to max)':>28}",
        row("silence, control (warm on wake off)", spread([t["silence"] for t in control])),
        row("silence, warm on wake", spread([t["silence"] for t in warmed])),
        row("  agent's wait, control", spread([t["agent_wait"] for t in control])),
        row("  agent's wait, warm on wake", spread([t["agent_wait"] for t in warmed])),
        row(
            "silence saved (control - warmed, per pair)",
            spread(saved, signed=True),
            "> 0 s",
            saving > 0,
        ),
        row(
            "  pairs that saved silence",
            f"{sum(1 for s in saved if s > 0)} of {n}",
            f"{n} of {n}",
            all(s > 0 for s in saved),
        ),
        row(
            "control arm's load (Ollama load_duration)",
            spread([x for x in loads if x is not None]),
        ),
        row(
            "saving / control arm's load (per pair)",
            spread(shares, "%"),
            "> 50 % (more than half the load)",
            share > 50,
        ),
        row(
            "  the worst pair's saving / its control's load",
            f"{worst:.0f} %",
            "> 50 % (every pair, not only the median)",
            worst > 50,
        ),
        row(
            "warmed arm's agent load (Ollama load_duration)",
            spread([x for x in agent_loads if x is not None]),
            f"< {NO_LOAD:g} s each (ours had loaded it)",
            all(x is not None and x < NO_LOAD for x in agent_loads),
        ),
        row(
            "resident at the agent's start, warm on wake",
            f"{resident_count(warmed)} of {n}",
            f"{n} of {n}",
            resident_count(warmed) == n,
        ),
        row(
            "resident at the agent's start, control",
            f"{resident_count(control)} of {n}",
            f"0 of {n} (a check: it was cold)",
            resident_count(control) == 0,
        ),
    ]


def resident_table(result: dict[str, Any]) -> list[str]:
    """Return the resident pairs' table: the resident-turn cost."""
    pairs = by_pair(result["resident"])
    n = len(pairs)
    if not n:
        return ["resident pairs: none run"]
    off = [a for a, _ in pairs]
    on = [b for _, b in pairs]
    cost = [b["silence"] - a["silence"] for a, b in pairs]
    relative = [100 * c / a["silence"] for c, (a, _) in zip(cost, pairs, strict=True)]
    slower = sum(1 for c in cost if c > 0)
    middle = median(cost)
    return [
        f"resident pairs: {n}, the model resident in both arms (the prompt's fixed prefix read "
        f"by the turn before); {orders_line(pairs, 'off')}",
        f"  {'':{LABEL}} {'median (min to max)':>28}",
        row("silence, warm on wake off", spread([t["silence"] for t in off])),
        row("silence, warm on wake on", spread([t["silence"] for t in on])),
        row("  agent's wait, off", spread([t["agent_wait"] for t in off])),
        row("  agent's wait, on", spread([t["agent_wait"] for t in on])),
        row(
            "resident-turn cost (on - off, per pair)",
            spread(cost, signed=True),
            f"within +-{RESIDENT_TOLERANCE:g} s",
            abs(middle) <= RESIDENT_TOLERANCE,
        ),
        row("  the same, of the off turn's silence", spread(relative, "%", signed=True)),
        row(
            "  pairs slower with warm on wake",
            f"{slower} of {n}",
            f"fewer than {n} (not slower every time)",
            slower < n,
        ),
        row(
            "agent's prompt read (Ollama), off",
            spread([t.get("agent_prompt_server_seconds") or 0.0 for t in off]),
        ),
        row(
            "agent's prompt read (Ollama), on",
            spread([t.get("agent_prompt_server_seconds") or 0.0 for t in on]),
        ),
        row(
            "loads warm on wake sent for the resident model",
            str(sum(t["loads_sent"] for t in on)),
            "0",
            sum(t["loads_sent"] for t in on) == 0,
        ),
        row(
            "requests to the server in a turn, off / on",
            " / ".join(f"{median(t.get('requests_sent', 0) for t in arm):g}" for arm in (off, on)),
            "on no more than off",
            median(t.get("requests_sent", 0) for t in on)
            <= median(t.get("requests_sent", 0) for t in off),
        ),
        row(
            "prompt warm-ups it sent (warm_prefix)",
            f"{sum(t['prompt_warm_ups_sent'] for t in on)} in {n} turns",
        ),
        row("  its warm_prefix per turn", ", ".join(str(t["warm_prefix"]) for t in on)[:28]),
        row(
            "resident at the agent's start, off / on",
            f"{resident_count(off)} / {resident_count(on)} of {n}",
            f"{n} / {n} (a check: it was resident)",
            resident_count(off) == resident_count(on) == n,
        ),
    ]


def model_size(url: str, model: str) -> str:
    """Return the model's size as the server lists it."""
    with urllib.request.urlopen(f"{url}/api/tags", timeout=10) as reply:
        models = json.load(reply)["models"]
    sizes = [m["size"] for m in models if m.get("name") in {model, "big:latest"}]
    return f"{sizes[0] / 1e9:.2f} GB" if sizes else "not listed"


def main() -> None:
    """Run the parts and print the world, then their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="cold pairs (one turn off, one on)")
    parser.add_argument(
        "--resident-runs", type=int, default=None, help="resident pairs (default: --runs)"
    )
    parser.add_argument("--slot-runs", type=int, default=2, help="runs of part 2 (0: skip)")
    parser.add_argument("--slot-only", action="store_true", help="part 2 alone")
    parser.add_argument(
        "--seed", type=int, default=None, help="the arms' order per pair (default: drawn)"
    )
    parser.add_argument("--json", type=Path, help="also write every turn's figures here")
    parser.add_argument(
        "--server",
        default="LLM_WARMTH_OLLAMA_CURRENT_URL",
        help="the variable naming the Ollama's URL (scripts/llm_servers env)",
    )
    args = parser.parse_args()
    if args.resident_runs is None:
        args.resident_runs = args.runs
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(10**6)
    url = os.environ.get(args.server, "").rstrip("/")
    if not url:
        raise SystemExit(f"{args.server} is not set: see this script's docstring")
    server_pid = listening_pid(urlsplit(url).port or 11434)
    machine = Machine(server_pid=server_pid)
    if args.slot_only:
        disk = read_throttle(server_pid) if server_pid else "server's process not seen"
        print(f"voice_warm: part 2 alone, {args.slot_runs} one-slot runs at {url}")
        print(f"world: disk of the server: {disk}\n{machine.start_line()}")
        print("\n".join(asyncio.run(part_two(args.slot_runs, url, MODEL))))
        print("\n".join(machine.end_lines()))
        return
    print(
        f"voice_warm: {args.runs} cold pairs, {args.resident_runs} resident pairs, "
        f"{args.slot_runs} one-slot runs, seed {args.seed}; {machine.start_line()}",
        file=sys.stderr,
        flush=True,
    )
    result = run_turns(args)
    slot = asyncio.run(part_two(args.slot_runs, url, MODEL)) if args.slot_runs else []
    control_loads = [
        off["agent_load_server_seconds"]
        for off, _ in by_pair(result["turns"])
        if off["agent_load_server_seconds"] is not None
    ]
    world = [
        f"world: {result['server']} at {url} (one slot), model big as {result['model']} "
        f"({model_size(url, result['model'])}), Home Assistant's Ollama agent through a "
        "real Assist pipeline",
        "world: disk of the server: "
        + (read_throttle(server_pid) if server_pid else "server's process not seen"),
        f"world: cold load measured (the control arm's Ollama load_duration): "
        f"{spread(control_loads)}",
        f"world: {result['speech_seconds']:g} s of speech in real time, "
        f"{result['stt_seconds']:g} s of speech-to-text; arms' order drawn per pair, "
        f"seed {args.seed} (--seed)",
        machine.start_line(),
        *machine.end_lines(),
    ]
    print("\n".join(world))
    tables: list[Callable[[dict[str, Any]], list[str]]] = [cold_table, resident_table]
    for table in tables:
        print()
        print("\n".join(table(result)))
    if slot:
        print()
        print("\n".join(slot))


if __name__ == "__main__":
    main()
