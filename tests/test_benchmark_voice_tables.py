"""The voice benchmarks' tables: every pair and round shown, the worst judged with the median.

Fed turns as the benchmarks' pytest runs write them (no server): the figures are the
inputs', so each line can be checked by hand.
"""

from typing import Any

from benchmarks.voice_warm import cold_table
from benchmarks.warm_assistant import table


def cold_turn(pair: int, on: bool, position: int, silence: float, load: float) -> dict[str, Any]:
    return {
        "pair": pair,
        "warm_on_wake": on,
        "position": position,
        "silence": silence,
        "agent_wait": silence - 1,
        "agent_load_server_seconds": load if not on else 0.01,
        "resident_at_intent_start": on,
    }


def test_every_cold_pair_is_shown_and_the_worst_is_judged() -> None:
    turns = [
        # Pair 1: 8 s of load, 7.5 s saved (94 %); pair 2: 8 s, 4 s saved (50 %).
        cold_turn(1, False, 0, 10.0, 8.0),
        cold_turn(1, True, 1, 2.5, 8.0),
        cold_turn(2, True, 0, 6.0, 8.0),
        cold_turn(2, False, 1, 10.0, 8.0),
        cold_turn(3, False, 1, 10.0, 8.0),
        cold_turn(3, True, 0, 2.0, 8.0),
    ]
    lines = cold_table({"turns": turns})
    rows = [line.split() for line in lines[2:5]]
    assert rows[0][:2] == ["1", "control"]
    assert rows[0][-2:] == ["94", "%"]
    assert rows[1][:4] == ["2", "warm", "on", "wake"]
    assert rows[1][-2:] == ["50", "%"]
    assert rows[2][-2:] == ["100", "%"]
    median_line = next(line for line in lines if "(per pair)" in line and "load" in line)
    worst_line = next(line for line in lines if "worst pair" in line)
    assert median_line.endswith("-> met")  # the median pair hid 94 %
    assert "50 %" in worst_line
    assert worst_line.endswith("-> NOT met")  # one pair hid only half


def assistant_turns(rounds: list[tuple[float, float, float, float]]) -> list[dict[str, Any]]:
    arms = ("cold_direct", "cold_assistant", "warm_direct", "warm_assistant")
    return [
        {"round": number, "arm": arm, "silence": silence, "answered_by": "conversation.big"}
        for number, silences in enumerate(rounds, 1)
        for arm, silence in zip(arms, silences, strict=True)
    ]


def test_every_round_of_the_warm_assistant_is_shown_and_the_worst_is_judged() -> None:
    result = {
        "fallback": "conversation.nas",
        "turns": assistant_turns(
            [(14.0, 0.6, 7.5, 7.6), (13.0, 0.7, 7.0, 7.1), (14.0, 9.0, 7.2, 7.3)]
        ),
    }
    lines = table(result)
    start = lines.index("per round (silence, s):")
    assert [line.split()[0] for line in lines[start + 2 : start + 5]] == ["1", "2", "3"]
    assert lines[start + 2].split()[-1] == "96%"  # 1 - 0.6 / 14
    worst = next(line for line in lines if "worst round: cold" in line)
    assert "1.25 x" in worst  # 9.0 / 7.2
    assert worst.endswith("-> NOT met")
    median_line = next(line for line in lines if line.lstrip().startswith("cold primary, warm"))
    assert median_line.endswith("-> met")  # the median round is well within
    warm = next(line for line in lines if "worst round: warm" in line)
    assert "+1.4 %" in warm  # the largest cost: 0.1 / 7.0
    assert warm.endswith("-> met")
