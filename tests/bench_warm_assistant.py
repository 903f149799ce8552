"""The voice turns ``benchmarks/warm_assistant.py`` times (not a ``test_`` module: never run by CI).

On the two real hosts of ``tests/warm_house.py``, through a real Assist pipeline, in rounds
of four turns whose order is drawn per round (``random.Random(LLM_WARMTH_BENCH_SEED)``):

- ``cold_direct``: the big box's model cold, the pipeline's agent the primary itself (the
  control arm: the household waits the load);
- ``cold_assistant``: the big box's model cold, the warm assistant the agent;
- ``warm_direct``: the big box's model warm (loaded afresh before the turn: no earlier
  prompt kept, as in the other warm arm), the primary itself;
- ``warm_assistant``: the big box's model warm, the warm assistant.

The NAS's model is warm throughout. Each turn's figures go to ``LLM_WARMTH_BENCH_OUT``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import random
from typing import Any

from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from .assist import hass_config_dir_fixture  # noqa: F401 (a fixture)
from .warm_house import MAX_WAIT, SPEECH_MS, STT_SECONDS, close, real_house

pytestmark = pytest.mark.e2e
ARMS = ("cold_direct", "cold_assistant", "warm_direct", "warm_assistant")


async def test_rounds(hass: HomeAssistant, hass_client: ClientSessionGenerator) -> None:
    rounds = int(os.environ.get("LLM_WARMTH_BENCH_RUNS", "3"))
    rng = random.Random(int(os.environ.get("LLM_WARMTH_BENCH_SEED", "0")))
    house = await real_house(hass, hass_client)
    turns: list[dict[str, Any]] = []
    try:
        for number in range(rounds):
            arms = list(ARMS)
            rng.shuffle(arms)
            for position, arm in enumerate(arms):
                await house.fallback_warm()
                if arm.startswith("cold"):
                    await house.primary_cold()
                else:
                    await house.primary_loaded_afresh()
                await house.use_assistant(arm.endswith("assistant"))
                turn = await house.turn()
                turns.append(
                    {
                        "round": number,
                        "position": position,
                        "arm": arm,
                        "silence": turn.silence,
                        "agent_first_text": turn.voice["agent_first_text_seconds"],
                        "answered_by": turn.route["agent"] if turn.route else house.primary,
                        "reason": turn.route["reason"] if turn.route else None,
                        "warm_prefix": turn.voice.get("warm_prefix"),
                        "warmed_on_wake": turn.voice.get("warmed_on_wake"),
                    }
                )
    finally:
        await close(house)
    write(
        json.dumps(
            {
                "turns": turns,
                "primary": house.primary,
                "fallback": house.fallback,
                "big_model": house.big_model,
                "nas_model": house.nas_model,
                "max_wait": MAX_WAIT,
                "speech_seconds": SPEECH_MS / 1000,
                "stt_seconds": STT_SECONDS,
            }
        )
    )


def write(text: str) -> None:
    """Write the result where the benchmark reads it."""
    Path(os.environ["LLM_WARMTH_BENCH_OUT"]).write_text(text)
