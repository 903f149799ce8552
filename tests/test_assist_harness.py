"""The Assist harness itself (tests/assist.py): a real pipeline runs, turn by turn."""

from datetime import datetime
from typing import Any

from homeassistant.core import HomeAssistant
import pytest

from .assist import (  # noqa: F401 (the fixtures)
    Assist,
    assist_fixture,
    hass_config_dir_fixture,
    pipeline_debug_broken,
)
from .conftest import LLAMA
from .ollama_emulator import OllamaEmulator

LONG_REPLY = "It is ten past four in the afternoon, and the weather outside is quite pleasant."
TURN = [
    "run-start",
    "stt-start",
    "stt-vad-start",
    "stt-vad-end",
    "stt-end",
    "intent-start",
]


def chats(emulator: OllamaEmulator) -> list[dict[str, Any]]:
    return [r.json for r in emulator.requests if r.path == "/api/chat"]


async def test_a_turn_runs_end_to_end(
    hass: HomeAssistant, assist: Assist, emulator: OllamaEmulator
) -> None:
    emulator.models[LLAMA].load_delay = 0.2
    turn = await assist.turn(stt_seconds=0.4)
    types = turn.types()
    assert types[: len(TURN)] == TURN
    assert types[-4:] == ["intent-end", "tts-start", "tts-end", "run-end"]
    assert turn.error is None
    assert turn.response_text == "Hello there friend"
    assert turn.state_names() == ["idle", "listening", "processing", "responding", "idle"]
    # The harness's stopwatch (monotonic, as each event arrived) agrees with the
    # pipeline's own stamps of the same events, which the voice features read: the
    # speech-to-text after the speech ended, and the agent's whole turn.
    [run] = assist.debug_runs()
    stamps = {e.type: datetime.fromisoformat(e.timestamp) for e in reversed(run.events)}
    for start, end in (("stt-vad-end", "stt-end"), ("intent-start", "intent-end")):
        own = (stamps[end] - stamps[start]).total_seconds()
        assert turn.at(end) - turn.at(start) == pytest.approx(own, abs=0.05), (start, end)
    assert turn.at("stt-vad-end") < turn.at("stt-end") < turn.at("intent-start")
    # The satellite played the response, then went idle.
    assert turn.first_audio_at is not None
    assert turn.audio_done_at is not None
    assert turn.at("tts-end") <= turn.first_audio_at <= turn.audio_done_at
    assert turn.states[-1][0] >= turn.audio_done_at
    assert turn.conversation_id == turn.event("run-start").data["conversation_id"]
    # One chat for the agent's model, with the agent's settings; a cold start of the model.
    [chat] = chats(emulator)
    assert chat["model"] == LLAMA
    assert chat["options"] == {"num_ctx": 4096}
    assert chat["keep_alive"] == -1
    assert emulator.loaded[LLAMA].num_ctx == 4096
    # Home Assistant's debug buffer holds the run, from run-start to run-end.
    assert [e.type for e in run.events] == types
    state = hass.states.get(assist.satellite.entity_id)
    assert state is not None
    assert state.state == "idle"


async def test_a_long_reply_streams_to_speech(assist: Assist, emulator: OllamaEmulator) -> None:
    emulator.models[LLAMA].reply = LONG_REPLY
    emulator.models[LLAMA].token_delay = 0.02
    turn = await assist.turn()
    streaming = [
        e for e in turn.events if e.type == "intent-progress" and e.data.get("tts_start_streaming")
    ]
    assert len(streaming) == 1
    # The audio starts while the agent still speaks.
    assert turn.first_audio_at is not None
    assert streaming[0].at <= turn.first_audio_at < turn.at("intent-end")
    assert turn.state_names()[-1] == "idle"


async def test_a_second_turn_continues_the_conversation(
    assist: Assist, emulator: OllamaEmulator
) -> None:
    first = await assist.turn()
    second = await assist.turn(stt_seconds=0.1, text="and tomorrow")
    assert first.conversation_id == second.conversation_id
    assert [m["content"] for m in chats(emulator)[1]["messages"]][1:] == [
        "tell me about the weather",
        "Hello there friend",
        "and tomorrow",
    ]
    assert len(assist.debug_runs()) == 2


async def test_a_wake_word_turn(assist: Assist) -> None:
    turn = await assist.turn(wake=True)
    assert turn.types()[:3] == ["run-start", "wake_word-start", "wake_word-end"]
    wake = turn.event("wake_word-end").data["wake_word_output"]
    assert wake["wake_word_id"] == "okay_nabu"
    assert turn.types()[-1] == "run-end"
    assert turn.error is None
    assert turn.state_names() == ["idle", "listening", "processing", "responding", "idle"]


async def test_an_agent_error_ends_the_turn_with_an_error(
    assist: Assist, emulator: OllamaEmulator
) -> None:
    assist.fail_agent(status=500)
    turn = await assist.turn()
    assert turn.error is not None
    assert turn.types()[-2:] == ["error", "run-end"]
    assert "tts-start" not in turn.types()
    assert turn.state_names() == ["idle", "listening", "processing", "idle"]
    # The next turn is fine again.
    assert (await assist.turn()).error is None


async def test_the_server_drops_mid_reply(assist: Assist, emulator: OllamaEmulator) -> None:
    emulator.models[LLAMA].reply = LONG_REPLY
    assist.fail_agent("drop", after_chunks=14)
    turn = await assist.turn(audio_timeout=3)
    assert turn.error is not None
    assert turn.types()[-1] == "run-end"
    assert turn.state_names()[-1] == "idle"


async def test_a_turn_aborted_mid_turn(assist: Assist, emulator: OllamaEmulator) -> None:
    emulator.models[LLAMA].load_delay = 5
    task = assist.start_turn()
    await assist.wait_for("intent-start")
    await assist.abort()
    turn = await task
    assert turn.aborted
    # Home Assistant ends the cancelled run: no error, and the satellite is idle again.
    assert turn.types()[-2:] == ["intent-start", "run-end"]
    assert turn.error is None
    assert turn.state_names() == ["idle", "listening", "processing", "idle"]
    # A new turn runs.
    emulator.models[LLAMA].load_delay = 0
    assert (await assist.turn()).error is None


async def test_a_new_turn_during_one_aborts_it(assist: Assist, emulator: OllamaEmulator) -> None:
    emulator.models[LLAMA].load_delay = 5
    first = assist.start_turn()
    await assist.wait_for("intent-start")
    emulator.models[LLAMA].load_delay = 0
    second = await assist.turn()
    assert (await first).aborted
    assert second.error is None
    assert second.types()[-1] == "run-end"


async def test_the_debug_buffer_broken(assist: Assist) -> None:
    with pipeline_debug_broken(assist.hass, "no_runs"):
        turn = await assist.turn()
        assert assist.debug_runs() == []
    assert turn.error is None
    assert turn.types()[-1] == "run-end"
    with pipeline_debug_broken(assist.hass, "missing"):
        assert not hasattr(assist.pipeline_data, "pipeline_debug")
    assert assist.debug_runs() == []
    with pipeline_debug_broken(assist.hass, "no_data"):
        assert "assist_pipeline" not in assist.hass.data
    assert assist.pipeline_data.pipeline_debug is not None
