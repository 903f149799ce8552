"""The silence of a voice turn whose primary model is cold, with the warm assistant and without.

On two real hosts (the kit's second Ollama as the big box with ``big``, 1.24 GB behind the
throttled disk; its current Ollama as the always-on NAS with ``tiny``), through a real
Assist pipeline in a test Home Assistant (``tests/bench_warm_assistant.py``), rounds of four
turns in an order drawn per round (``--seed``, printed): the primary cold or warm, the
pipeline's agent the primary itself (the control arm) or the warm assistant. It prints the
world, then each figure against its goal:

- the cold-primary turn's silence with the warm assistant within 20 % of a warm turn's
  (the primary answering warm, through the primary itself);
- with the primary warm, the warm assistant costs nothing: its silence at most 5 % above
  the primary's own (medians, and the worst round). Each arm as a household gets it: warm
  on wake on for the warm assistant's pipeline (its default: the wake warms the primary's
  prompt too), off for the primary itself (a plain pipeline's default), so the warm
  assistant may be quicker than the primary alone.

Every round is printed, with the share of the control's silence the warm assistant saved
with the primary cold.

It asserts nothing.

    PREFIX=/opt/llm-warmth-servers BIG=1 SLOW_DISK_MBPS=200 scripts/llm_servers start
    eval "$(PREFIX=/opt/llm-warmth-servers scripts/llm_servers env)"
    .venv/bin/python -m benchmarks.warm_assistant [--runs 3] [--seed N] [--json FILE]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
import os
from pathlib import Path
import random
from statistics import median
from typing import Any
from urllib.parse import urlsplit

from benchmarks.world import Machine, listening_pid, read_throttle, row, run_in_pytest, spread

ROOT = Path(__file__).resolve().parent.parent
COLD_GOAL = 0.20
WARM_GOAL = 0.05


def run_rounds(args: argparse.Namespace) -> dict[str, Any]:
    """Run the rounds in pytest (the test Home Assistant); return what they wrote."""
    settings = {"LLM_WARMTH_BENCH_RUNS": str(args.runs), "LLM_WARMTH_BENCH_SEED": str(args.seed)}
    return run_in_pytest("tests/bench_warm_assistant.py", settings, args.json)


def table(result: dict[str, Any]) -> list[str]:
    """Return the figures per arm, then the goals."""
    silences: dict[str, list[float]] = {}
    answered: dict[str, list[str]] = {}
    for turn in result["turns"]:
        silences.setdefault(turn["arm"], []).append(turn["silence"])
        answered.setdefault(turn["arm"], []).append(
            "fall-back" if turn["answered_by"] == result["fallback"] else "primary"
        )
    lines = ["silence from the end of speech to the first reply, per arm (median, range):"]
    for arm in ("cold_direct", "cold_assistant", "warm_direct", "warm_assistant"):
        who = ", ".join(f"{answered[arm].count(w)} {w}" for w in ("primary", "fall-back"))
        lines.append(row(f"{arm} ({who})", spread(silences.get(arm, []))))
    rounds = round_rows(result["turns"])
    lines += ["", "per round (silence, s):", *rounds.lines]
    cold = median(silences["cold_assistant"])
    warm = median(silences["warm_direct"])
    control = median(silences["cold_direct"])
    through = median(silences["warm_assistant"])
    lines += [
        "",
        row("cold primary, no warm assistant (control)", f"{control:.2f} s"),
        row(
            "cold primary, warm assistant / warm turn",
            f"{cold:.2f} / {warm:.2f} s",
            f"<= {1 + COLD_GOAL:.2f} x the warm turn",
            cold <= (1 + COLD_GOAL) * warm,
        ),
        row(
            "warm primary: warm assistant vs the primary",
            f"{(through - warm) / warm * 100:+.1f} %",
            f"at most +{WARM_GOAL * 100:.0f} % (it costs nothing)",
            through - warm <= WARM_GOAL * warm,
        ),
        row(
            "  the worst round: cold primary through the assistant / its warm turn",
            f"{rounds.worst_cold:.2f} x",
            f"<= {1 + COLD_GOAL:.2f} x (every round, not only the median)",
            rounds.worst_cold <= 1 + COLD_GOAL,
        ),
        row(
            "  the worst round: warm primary, the assistant's cost",
            f"{rounds.worst_warm * 100:+.1f} %",
            f"at most +{WARM_GOAL * 100:.0f} % (every round)",
            rounds.worst_warm <= WARM_GOAL,
        ),
    ]
    return lines


@dataclass(frozen=True, slots=True)
class Rounds:
    """Each round's line, and the worst round against each goal."""

    lines: list[str]
    worst_cold: float
    worst_warm: float


def round_rows(turns: list[dict[str, Any]]) -> Rounds:
    """Return one line per round (the four arms' silences), the share of the control's
    silence the assistant saved with the primary cold, and the worst round per goal."""
    by_round: dict[int, dict[str, float]] = {}
    for turn in turns:
        by_round.setdefault(turn["round"], {})[turn["arm"]] = turn["silence"]
    arms = ("cold_direct", "cold_assistant", "warm_direct", "warm_assistant")
    lines = ["  round " + " ".join(f"{arm:>15}" for arm in arms) + "  saved of the control"]
    colds, warms = [], []
    for number, silence in sorted(by_round.items()):
        if any(arm not in silence for arm in arms):
            continue
        saved = 1 - silence["cold_assistant"] / silence["cold_direct"]
        lines.append(
            f"  {number:>5} "
            + " ".join(f"{silence[arm]:>15.2f}" for arm in arms)
            + f"  {saved:>8.0%}"
        )
        colds.append(silence["cold_assistant"] / silence["warm_direct"])
        warms.append((silence["warm_assistant"] - silence["warm_direct"]) / silence["warm_direct"])
    return Rounds(
        lines,
        max(colds, default=float("nan")),
        max(warms, default=float("nan")),
    )


def main() -> None:
    """Run the rounds and print the world, then the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds of four turns")
    parser.add_argument("--seed", type=int, default=None, help="the order per round")
    parser.add_argument("--json", type=Path, help="also write every turn's figures here")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(10**6)
    url = os.environ.get("LLM_WARMTH_OLLAMA_SECOND_URL", "").rstrip("/")
    if not url or not os.environ.get("LLM_WARMTH_OLLAMA_CURRENT_URL"):
        raise SystemExit("the kit's current and second Ollama must run: see the docstring")
    server_pid = listening_pid(urlsplit(url).port or 11436)
    machine = Machine(server_pid=server_pid)
    result = run_rounds(args)
    print(
        "\n".join(
            [
                f"world: big box {url} ({result['big_model']}), NAS "
                f"{os.environ['LLM_WARMTH_OLLAMA_CURRENT_URL']} ({result['nas_model']}, warm)",
                "world: disk of the big box: "
                + (read_throttle(server_pid) if server_pid else "server's process not seen"),
                f"world: {result['speech_seconds']:g} s of speech in real time, "
                f"{result['stt_seconds']:g} s of speech-to-text, accepted wait "
                f"{result['max_wait']:g} s; {args.runs} rounds, order drawn per round, "
                f"seed {args.seed} (--seed)",
                machine.start_line(),
                *machine.end_lines(),
                "",
                *table(result),
            ]
        )
    )


if __name__ == "__main__":
    main()
