"""What a pipeline's voice entities show: its last turn's figures, what warming did (pure).

The shell (``voice_entities.py``) describes the entities and reads the voice feature's
records; here is each entity's value by its key, why a figure of the last turn is
unknown, the turn's details on the silence sensor, and what the warm-on-wake switch tells
of the prompt warm-ups and the false wakes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Final

from .voice import WAKE_KEEP
from .voice_record import VoiceRecord, WakeCounts

# The sensor whose attributes carry the last turn's details.
SILENCE: Final = "voice_silence"


class NoTurnFigure(StrEnum):
    """Why a figure of the last turn is unknown: the ``reason`` attribute (translations)."""

    # No turn of the pipeline was heard since it was found.
    NO_TURN_YET = "no_turn_yet"
    # The last turn did not show this stage (it ended early, or its run did not read).
    NOT_TIMED = "not_timed"
    # The agent streamed no words: its reply came whole, or empty (its first words and
    # the rest of its reply were not timed apart; its whole turn is in the silence sensor's
    # ``turn`` attribute, ``agent_reply_seconds``).
    NO_WORDS = "no_words"


# The figures of the agent's streamed words: unknown when it streamed none.
WORDS_FIGURES: Final = frozenset({"voice_agent_first_text", "voice_agent_rest"})


def turn_reasons(key: str) -> tuple[NoTurnFigure, ...]:
    """Return why the figure of the last turn under ``key`` can be unknown."""
    if key in WORDS_FIGURES:
        return tuple(NoTurnFigure)
    return (NoTurnFigure.NO_TURN_YET, NoTurnFigure.NOT_TIMED)


def _dominant(record: VoiceRecord) -> str | None:
    """Return the stage that cost the turn the most (None: no stage was timed)."""
    dominant = record.explained.dominant
    return dominant.value if dominant else None


# The figures of a pipeline's last turn, by sensor key: durations, then the costliest stage.
TURN_FIGURES: Final[Mapping[str, Callable[[VoiceRecord], float | str | None]]] = {
    SILENCE: lambda r: r.turn.silence,
    "voice_wake_to_speech_end": lambda r: r.turn.wake_to_speech_end,
    "voice_stt": lambda r: r.turn.stt,
    "voice_agent_first_text": lambda r: r.turn.agent_first_text,
    "voice_agent_rest": lambda r: r.turn.agent_rest,
    "voice_tts_start": lambda r: r.turn.tts_start,
    "voice_dominant_stage": _dominant,
}

# What warming at the wake did for the pipeline's turns, by sensor key.
COUNT_FIGURES: Final[Mapping[str, Callable[[WakeCounts], float | int]]] = {
    "voice_warm_helped": lambda c: c.helped,
    "voice_warm_too_late": lambda c: c.too_late,
    "voice_warm_refused": lambda c: c.refused,
    "voice_warm_hidden": lambda c: round(c.hidden_seconds, 3),
}


def turn_details(record: VoiceRecord | None) -> dict[str, object] | None:
    """Return the last turn's details as the silence sensor's ``turn`` attribute tells them."""
    if record is None:
        return None
    ended = record.turn.ended_at
    return {**record.details(), "ended_at": ended.isoformat() if ended else None}


def turn_attributes(
    key: str, record: VoiceRecord | None, value: float | str | None
) -> dict[str, object] | None:
    """Return a sensor's attributes: the last turn's details, and why its figure is unknown.

    ``key``: the sensor's; ``value``: its figure. The silence sensor carries the turn's
    details (None before the first turn); a figure of the last turn that is unknown says
    why; a count never is.
    """
    attrs: dict[str, object] = {}
    if key == SILENCE:
        attrs["turn"] = turn_details(record)
    if key in TURN_FIGURES and value is None:
        attrs["reason"] = _unknown(key, record).value
    return attrs or None


def _unknown(key: str, record: VoiceRecord | None) -> NoTurnFigure:
    """Return why the last turn's figure under ``key`` is unknown."""
    if record is None:
        return NoTurnFigure.NO_TURN_YET
    turn = record.turn
    if key in WORDS_FIGURES and turn.first_text_at is None and turn.agent_reply is not None:
        return NoTurnFigure.NO_WORDS
    return NoTurnFigure.NOT_TIMED


def warm_up_attributes(counts: WakeCounts) -> dict[str, float | int | None]:
    """Return what the warm-ups of the agent's prompt prefix did, and the false wakes."""
    return {
        "prompt_warm_ups_sent": counts.prefix_sent,
        "prompt_warm_ups_left_out": counts.prefix_skipped,
        "prompt_warm_ups_overlapped": counts.prefix_overlapped,
        "prompt_warm_ups_held": counts.prefix_held,
        "last_prompt_warm_up_seconds": counts.prefix_seconds,
        # Wakes no command followed whose load held the model, and for how long.
        "wasted_warm_ups": counts.wasted,
        "wasted_gib_seconds": round(counts.wasted_gib_seconds, 3),
        "wake_keep_seconds": WAKE_KEEP,
    }


# The warm-on-wake switch's attributes (not recorded: they change every turn).
WARM_UP_ATTRIBUTES: Final = frozenset(warm_up_attributes(WakeCounts()))
