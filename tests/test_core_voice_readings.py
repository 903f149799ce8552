"""What a pipeline's voice entities show (pure, no hass)."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from custom_components.llm_warmth.core.voice import WAKE_KEEP, VoiceStage, VoiceTurn
from custom_components.llm_warmth.core.voice_readings import (
    COUNT_FIGURES,
    SILENCE,
    TURN_FIGURES,
    WARM_UP_ATTRIBUTES,
    NoTurnFigure,
    turn_attributes,
    turn_details,
    turn_reasons,
    warm_up_attributes,
)
from custom_components.llm_warmth.core.voice_record import VoiceRecord, WakeCounts
from custom_components.llm_warmth.core.voice_stages import Explained

T0 = datetime(2026, 12, 2, 7, 30, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def record(*, ended: bool = True, dominant: VoiceStage | None = VoiceStage.PREFILL) -> VoiceRecord:
    """Return a turn: wake 0, speech end 1, text 1.5, agent 1.5 to 3.5 / 4.5, audio 4.75."""
    turn = VoiceTurn(
        pipeline="p1",
        satellite="assist_satellite.kitchen",
        conversation_id="c1",
        agent="conversation.ollama",
        started_at=at(0),
        wake_at=at(0),
        speech_end_at=at(1),
        stt_start_at=at(0),
        stt_end_at=at(1.5),
        intent_start_at=at(1.5),
        first_text_at=at(3.5),
        intent_end_at=at(4.5),
        audio_requested_at=at(4.75),
        ended_at=at(5) if ended else None,
        streamed=False,
        error=None,
    )
    stages = {VoiceStage.PREFILL: 2.0} if dominant else {}
    return VoiceRecord(turn, "qwen3:8b", None, Explained(stages, dominant), False, None)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (SILENCE, 3.75),
        ("voice_wake_to_speech_end", 1.0),
        ("voice_stt", 0.5),
        ("voice_agent_first_text", 2.0),
        ("voice_agent_rest", 1.0),
        ("voice_tts_start", 0.25),
        ("voice_dominant_stage", "prefill"),
    ],
)
def test_each_figure_of_the_last_turn(key: str, value: float | str) -> None:
    """Each sensor reads its own figure of the turn."""
    assert TURN_FIGURES[key](record()) == value


def test_no_costliest_stage_when_none_was_timed() -> None:
    assert TURN_FIGURES["voice_dominant_stage"](record(dominant=None)) is None


def test_each_count_of_what_warming_did() -> None:
    """Each count reads its own figure; the hidden time rounded to the millisecond."""
    counts = WakeCounts(helped=3, too_late=2, refused=1, hidden_seconds=1.23456)
    assert {key: figure(counts) for key, figure in COUNT_FIGURES.items()} == {
        "voice_warm_helped": 3,
        "voice_warm_too_late": 2,
        "voice_warm_refused": 1,
        "voice_warm_hidden": 1.235,
    }


def test_the_turns_details_on_the_silence_sensor() -> None:
    """Its details, with when it ended; None before the first turn."""
    kept = record()
    assert turn_details(kept) == {**kept.details(), "ended_at": at(5).isoformat()}
    assert turn_details(record(ended=False))["ended_at"] is None  # type: ignore[index]
    assert turn_details(None) is None
    assert turn_attributes(SILENCE, kept, 3.75) == {"turn": turn_details(kept)}


def test_why_a_figure_of_the_last_turn_is_unknown() -> None:
    """No turn yet, or the last one did not time it; a known figure says nothing."""
    assert turn_attributes(SILENCE, None, None) == {
        "turn": None,
        "reason": NoTurnFigure.NO_TURN_YET.value,
    }
    assert turn_attributes("voice_stt", record(), None) == {"reason": "not_timed"}
    assert turn_attributes("voice_stt", None, None) == {"reason": "no_turn_yet"}
    assert turn_attributes("voice_stt", record(), 0.5) is None
    assert turn_attributes("voice_stt", record(), 0.0) is None  # a figure of nothing is known
    # A count is never unknown: it has no reason.
    assert turn_attributes("voice_warm_helped", None, None) is None


def test_what_the_warm_on_wake_switch_tells() -> None:
    """The prompt warm-ups' counts, the false wakes, and the keep a load at the wake asks."""
    counts = WakeCounts(
        prefix_sent=5,
        prefix_skipped=4,
        prefix_overlapped=3,
        prefix_held=2,
        prefix_seconds=1.5,
        wasted=1,
        wasted_gib_seconds=2.34567,
    )
    assert warm_up_attributes(counts) == {
        "prompt_warm_ups_sent": 5,
        "prompt_warm_ups_left_out": 4,
        "prompt_warm_ups_overlapped": 3,
        "prompt_warm_ups_held": 2,
        "last_prompt_warm_up_seconds": 1.5,
        "wasted_warm_ups": 1,
        "wasted_gib_seconds": 2.346,
        "wake_keep_seconds": WAKE_KEEP,
    }
    assert frozenset(warm_up_attributes(counts)) == WARM_UP_ATTRIBUTES
    assert len(WARM_UP_ATTRIBUTES) == 8


def test_an_agent_that_streamed_no_words_says_so() -> None:
    """Its first words and the rest are unknown for that reason; its whole turn is told."""
    kept = record()
    silent = replace(kept, turn=replace(kept.turn, first_text_at=None))
    assert silent.details()["agent_reply_seconds"] == 3.0
    assert kept.details()["agent_reply_seconds"] == 3.0
    for key in ("voice_agent_first_text", "voice_agent_rest"):
        assert TURN_FIGURES[key](silent) is None
        assert turn_attributes(key, silent, None) == {"reason": "no_words"}
        assert NoTurnFigure.NO_WORDS in turn_reasons(key)
    # Other figures never say it; an agent that never ended did not time its words.
    assert turn_attributes("voice_stt", silent, None) == {"reason": "not_timed"}
    assert NoTurnFigure.NO_WORDS not in turn_reasons("voice_stt")
    unended = replace(silent, turn=replace(silent.turn, intent_end_at=None))
    assert turn_attributes("voice_agent_first_text", unended, None) == {"reason": "not_timed"}
    assert turn_reasons(SILENCE) == (NoTurnFigure.NO_TURN_YET, NoTurnFigure.NOT_TIMED)
