"""A voice turn from a pipeline run's events, its stages and what warming at the wake did (pure)."""

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, strategies as st

from custom_components.llm_warmth.core.backends.types import ServedRequest
from custom_components.llm_warmth.core.voice import (
    WAKE_KEEP,
    VoiceStage,
    VoiceTurn,
    prefix_warm_fits,
    run_events,
    wake_keep,
    wake_outcome,
)
from custom_components.llm_warmth.core.voice_stages import (
    Explained,
    ServerSide,
    _told_apart,
    explain,
    join_request,
    waited_load,
)

T0 = datetime(2026, 12, 2, 7, 30, tzinfo=UTC)


def stamp(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat()


def delta(text: str) -> dict[str, Any]:
    return {"chat_log_delta": {"role": "assistant", "content": text}}


# A real run's events, as Home Assistant 2026.10 stamped them (a satellite with its own
# wake word, the Ollama agent, a streaming text-to-speech), times shifted to T0.
STREAMED = [
    ("run-start", stamp(0), {"pipeline": "p1", "satellite_id": "assist_satellite.kitchen",
                             "conversation_id": "c1", "language": "en"}),
    ("stt-start", stamp(0.000), {"engine": "stt.test"}),
    ("stt-vad-start", stamp(0.042), {"timestamp": 290}),
    ("stt-vad-end", stamp(0.443), {"timestamp": 2190}),
    ("stt-end", stamp(0.746), {"stt_output": {"text": "what time is it"}}),
    ("intent-start", stamp(0.746), {"engine": "conversation.ollama_conversation"}),
    ("intent-progress", stamp(0.747), {"chat_log_delta": {"role": "assistant"}}),
    ("intent-progress", stamp(1.158), delta("It")),
    ("intent-progress", stamp(1.400), delta(" is")),
    ("intent-progress", stamp(1.507), {"tts_start_streaming": True}),
    ("intent-end", stamp(1.667), {"processed_locally": False}),
    ("tts-start", stamp(1.667), {"engine": "tts.test"}),
    ("tts-end", stamp(1.668), {"tts_output": {"url": "/api/tts_proxy/x"}}),
    ("run-end", stamp(1.668), None),
]  # fmt: skip


def heard(agent: str) -> list[tuple[str, str, dict[str, Any]]]:
    """A run to its agent's start: speech ends at 2.0 s, its transcript at 2.4 s."""
    return [
        ("run-start", stamp(0), {"pipeline": "p1"}),
        ("stt-start", stamp(0.0), {}),
        ("stt-vad-end", stamp(2.0), {}),
        ("stt-end", stamp(2.4), {}),
        ("intent-start", stamp(2.4), {"engine": agent}),
    ]


def turn_of(raw: list[tuple[object, object, object]]) -> VoiceTurn:
    events = run_events(raw)
    assert events is not None
    turn = VoiceTurn.from_events(events)
    assert turn is not None
    return turn


def test_a_streamed_turn_stage_by_stage() -> None:
    turn = turn_of(STREAMED)  # type: ignore[arg-type]
    assert (turn.pipeline, turn.satellite, turn.conversation_id, turn.agent) == (
        "p1",
        "assist_satellite.kitchen",
        "c1",
        "conversation.ollama_conversation",
    )
    assert turn.streamed
    assert turn.spoken
    assert turn.error is None
    # The satellite's own wake word: the run starts at speech-to-text.
    assert turn.wake_to_speech_end == 0.443
    assert turn.stt == 0.303  # after the end of speech
    assert turn.agent_first_text == 0.412  # the first delta with words, not the empty one
    assert turn.agent_rest == 0.509
    assert turn.tts_start == 0.349  # from the first words to the audio asked for
    assert turn.silence == 1.064  # end of speech to the reply's audio asked for
    explained = explain_it(turn)
    assert explained.dominant is VoiceStage.PREFILL
    # Streamed: the reply's rest is no silence.
    assert VoiceStage.GENERATION not in explained.stages


def explain_it(turn: VoiceTurn, server: ServerSide | None = None) -> Explained:
    return explain(turn, server)


def test_a_cold_model_makes_the_load_the_costliest_stage() -> None:
    raw = [
        ("run-start", stamp(0), {"pipeline": "p1"}),
        ("wake_word-end", stamp(0.3), {"wake_word_output": {"timestamp": 300}}),
        ("stt-start", stamp(0.3), {}),
        ("stt-vad-end", stamp(2.0), {}),
        ("stt-end", stamp(2.4), {}),
        ("intent-start", stamp(2.4), {"engine": "conversation.kitchen"}),
        ("intent-progress", stamp(10.2), delta("Four")),
        ("intent-end", stamp(10.3), {}),
        ("tts-start", stamp(10.3), {}),
        ("tts-end", stamp(10.31), {}),
        ("run-end", stamp(10.31), None),
    ]
    turn = turn_of(raw)  # type: ignore[arg-type]
    assert turn.wake_at == T0 + timedelta(seconds=0.3)  # the wake word's end
    assert not turn.streamed  # a short reply: spoken once written
    assert turn.tts_start == 0.01
    assert turn.silence == 8.31
    explained = explain_it(turn, ServerSide("qwen3:8b", False, True, 7.8, "server"))
    assert explained.stages == {
        VoiceStage.STT: 0.4,
        VoiceStage.LOAD: 7.8,
        VoiceStage.PREFILL: 0.0,
        VoiceStage.GENERATION: 0.1,
        VoiceStage.TTS: 0.01,
    }
    assert explained.dominant is VoiceStage.LOAD
    # A load longer than the wait (it began before the agent's start): only the wait counts.
    longer = explain_it(turn, ServerSide("qwen3:8b", False, True, 30.0, "polling"))
    assert longer.stages[VoiceStage.LOAD] == 7.8


def test_an_agent_that_streamed_no_words_kept_the_household_waiting_its_whole_turn() -> None:
    """An empty reply, or one handed over whole: the agent's whole turn is in the stages.

    Seen on CI (the real Ollama, a model of random weights): a 16 s silence explained as
    3 s of speech-to-text, the agent's 13 s left out because no delta carried words.
    """
    raw = [
        *heard("conversation.kitchen"),
        ("intent-progress", stamp(2.5), {"chat_log_delta": {"role": "assistant", "content": ""}}),
        ("intent-end", stamp(10.3), {}),
        ("tts-start", stamp(10.3), {}),
        ("tts-end", stamp(10.31), {}),
        ("run-end", stamp(10.31), None),
    ]  # fmt: skip
    turn = turn_of(raw)  # type: ignore[arg-type]
    assert (turn.agent_first_text, turn.agent_rest) == (None, None)
    assert turn.agent_reply == 7.9
    assert turn.silence == 8.31
    # Cold, no figure of the load: the whole wait counts as the load, as for first words.
    cold = explain_it(turn, ServerSide("qwen3:8b", False, False, None, "residency"))
    assert cold.stages == {VoiceStage.STT: 0.4, VoiceStage.LOAD: 7.9, VoiceStage.TTS: 0.01}
    assert cold.dominant is VoiceStage.LOAD
    # A load timed: the rest of the turn is the reply's writing (no words, none heard).
    timed = explain_it(turn, ServerSide("qwen3:8b", False, False, 6.0, "server"))
    assert timed.stages == {
        VoiceStage.STT: 0.4,
        VoiceStage.LOAD: 6.0,
        VoiceStage.GENERATION: 1.9,
        VoiceStage.TTS: 0.01,
    }
    # Warm: all of it the reply's writing; no prefill is made up.
    warm = explain_it(turn, ServerSide("qwen3:8b", True, False))
    assert warm.stages == {VoiceStage.STT: 0.4, VoiceStage.GENERATION: 7.9, VoiceStage.TTS: 0.01}
    # Unknown server: the same.
    assert explain_it(turn).stages == warm.stages
    # The server's record tells the load and the prefill; the rest is the writing.
    request = served(2.5, 7.7, prefill_seconds=0.6, generation_seconds=0.1)
    split = explain_it(turn, ServerSide("qwen3:8b", False, False, request=request))
    assert split.stages == {
        VoiceStage.STT: 0.4,
        VoiceStage.LOAD: 7.0,
        VoiceStage.PREFILL: 0.6,
        VoiceStage.GENERATION: 0.3,
        VoiceStage.TTS: 0.01,
    }
    # A record whose stages fill the whole turn leaves no writing of no time.
    filled = served(2.4, 7.9, prefill_seconds=0.9, generation_seconds=0.0)
    whole = explain_it(turn, ServerSide("qwen3:8b", False, False, request=filled))
    assert VoiceStage.GENERATION not in whole.stages
    assert whole.stages[VoiceStage.LOAD] + whole.stages[VoiceStage.PREFILL] == 7.9


def test_a_text_only_turn_and_a_failed_one() -> None:
    raw = [
        ("run-start", stamp(0), {}),
        ("intent-start", stamp(0.1), {"engine": "conversation.kitchen"}),
        ("intent-progress", stamp(0.6), delta("Hi")),
        ("intent-end", stamp(0.9), {}),
        ("run-end", stamp(0.9), None),
    ]
    turn = turn_of(raw)  # type: ignore[arg-type]
    assert not turn.spoken
    assert turn.heard_at == T0 + timedelta(seconds=0.6)  # the first words, read
    assert turn.silence is None  # no speech: typed, not spoken
    assert explain_it(turn).stages == {VoiceStage.PREFILL: 0.5}
    failed = turn_of([*raw[:2], ("error", stamp(0.3), {"code": "intent-failed"})])  # type: ignore[list-item]
    assert failed.error == "intent-failed"
    assert failed.agent_first_text is None
    assert explain_it(failed).dominant is None


def test_runs_that_do_not_read_are_no_turn() -> None:
    assert run_events([("run-start", "yesterday", {})]) is None
    assert run_events([("run-start", "2026-12-02T07:30:00", {})]) is None  # no zone
    assert run_events([(1, stamp(0), {})]) is None
    assert run_events([("run-start", stamp(0), ["not", "a", "mapping"])]) is None
    assert VoiceTurn.from_events([]) is None
    events = run_events([("stt-start", stamp(0), {})])
    assert events is not None
    assert VoiceTurn.from_events(events) is None  # not from its start
    # Times out of order are no figure, not a negative one.
    turn = turn_of(
        [
            ("run-start", stamp(0), {"pipeline": 7}),
            ("stt-start", stamp(1), {}),
            ("stt-end", stamp(0.5), {}),
        ]
    )
    assert (turn.stt, turn.pipeline) == (None, None)


_ANY = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))
_DATA = st.one_of(
    _ANY,
    st.dictionaries(
        st.sampled_from(
            ["pipeline", "engine", "chat_log_delta", "tts_start_streaming", "code", "x"]
        ),
        st.one_of(_ANY, st.dictionaries(st.sampled_from(["content", "role"]), _ANY)),
    ),
)
_KIND = st.one_of(st.sampled_from([kind for kind, _stamp, _data in STREAMED] + ["error"]), _ANY)
_STAMP = st.one_of(st.floats(min_value=0, max_value=100).map(stamp), st.text(max_size=30), _ANY)


@given(st.lists(st.tuples(_KIND, _STAMP, _DATA), max_size=20))
def test_any_events_read_as_a_turn_or_none_never_an_error(
    raw: list[tuple[object, object, object]],
) -> None:
    events = run_events(raw)
    turn = VoiceTurn.from_events(events) if events is not None else None
    if turn is None:
        return
    for figure in (turn.stt, turn.silence, turn.agent_first_text, turn.tts_start):
        assert figure is None or figure >= 0
    explained = explain_it(turn, ServerSide("m", None, False, 1.0, "server"))
    assert all(seconds >= 0 for seconds in explained.stages.values())


def test_warming_at_the_wake_hid_the_load_or_part_of_it() -> None:
    done = wake_outcome(load_started=100.0, load_ended=101.9, intent_started=102.4)
    assert (done.helped, done.hidden_seconds, done.too_late) == (True, 1.9, False)
    late = wake_outcome(load_started=100.0, load_ended=None, intent_started=102.4)
    assert (late.helped, late.hidden_seconds, late.too_late) == (False, 2.4, True)
    ended_after = wake_outcome(load_started=100.0, load_ended=105.0, intent_started=102.4)
    assert (ended_after.helped, ended_after.too_late) == (False, True)


def test_the_prompt_warm_up_is_sent_only_when_it_is_expected_to_end_before_the_agent() -> None:
    # No turn known yet: sent. Never measured: sent while half the time is left, and it
    # measures itself.
    assert prefix_warm_fits(prefix_seconds=5.0, wake_to_intent=[], elapsed=9.0)
    assert prefix_warm_fits(prefix_seconds=None, wake_to_intent=[4.0, 2.0], elapsed=1.0)
    assert not prefix_warm_fits(prefix_seconds=None, wake_to_intent=[4.0, 2.0], elapsed=1.1)
    # Against the quickest of the latest turns, from the time already gone since the wake.
    assert prefix_warm_fits(prefix_seconds=1.0, wake_to_intent=[3.0, 1.5], elapsed=0.5)
    assert not prefix_warm_fits(prefix_seconds=1.0, wake_to_intent=[3.0, 1.5], elapsed=0.6)
    assert not prefix_warm_fits(prefix_seconds=2.0, wake_to_intent=[3.0, 1.5], elapsed=0.0)


def served(started: float, seconds: float, **figures: Any) -> ServedRequest:
    """A request the server recorded: arrived ``started`` s after T0, ``seconds`` long."""
    values: dict[str, Any] = {"status": 200, "prefill_seconds": 0.5, "generation_seconds": 0.1}
    values |= figures
    return ServedRequest(
        id=int(started * 1000),
        model="qwen3:8b",
        ended_at=T0 + timedelta(seconds=started + seconds),
        **{"seconds": seconds, **values},
    )


def test_the_servers_record_of_the_agents_request_is_joined_by_time() -> None:
    raw = [
        *heard("conversation.garage"),
        ("intent-progress", stamp(10.2), delta("Four")),
        ("intent-end", stamp(10.3), {}),
        ("run-end", stamp(10.31), None),
    ]
    turn = turn_of(raw)  # type: ignore[arg-type]
    agents = served(2.45, 7.9, prefill_seconds=0.6, generation_seconds=0.1)
    others = [
        served(-30.0, 1.0),  # long before
        served(2.5, 7.0, status=502),  # failed
        served(13.0, 1.0),  # after the agent's first words (and the 2 s of clock tolerance)
        served(0.0, 2.0),  # ended before the agent started
    ]
    assert join_request(turn, [*others, agents, served(1.0, 9.3)]) == agents
    assert join_request(turn, others) is None
    # Waited 7.2 s before its prefill: the load (cold at the agent's start), or the queue.
    cold = explain_it(turn, ServerSide("qwen3:8b", False, False, 7.2, "server", agents))
    assert (cold.stages[VoiceStage.LOAD], cold.stages[VoiceStage.PREFILL]) == (7.2, 0.6)
    assert cold.dominant is VoiceStage.LOAD
    busy = explain_it(turn, ServerSide("qwen3:8b", True, False, request=agents))
    assert busy.stages[VoiceStage.QUEUE] == 7.2
    assert VoiceStage.LOAD not in busy.stages
    assert busy.dominant is VoiceStage.QUEUE
    # A record longer than what Home Assistant saw is held within it.
    long = served(2.4, 20.0, prefill_seconds=15.0, generation_seconds=0.0)
    within = explain_it(turn, ServerSide("qwen3:8b", True, False, request=long))
    assert within.stages[VoiceStage.QUEUE] + within.stages[VoiceStage.PREFILL] == 7.8
    # A record without rates does not tell the wait apart: the residency's reading stands.
    blind = served(2.45, 7.9, prefill_seconds=None)
    assert blind.waited_seconds is None
    unknown = explain_it(turn, ServerSide("qwen3:8b", False, False, request=blind))
    assert unknown.stages[VoiceStage.LOAD] == 7.8
    no_intent = turn_of([("run-start", stamp(0), {}), ("run-end", stamp(1), None)])  # type: ignore[arg-type]
    assert join_request(no_intent, [agents]) is None


def boundary_turn(intent: float, first: float) -> VoiceTurn:
    """A turn whose agent started ``intent`` s after T0 and spoke ``first`` s after T0."""
    raw = [
        ("run-start", stamp(0), {"pipeline": "p1"}),
        ("stt-start", stamp(0.0), {}),
        ("stt-vad-end", stamp(1.0), {}),
        ("stt-end", stamp(1.0), {}),  # speech-to-text took no time
        ("intent-start", stamp(intent), {"engine": "conversation.garage"}),
        ("intent-progress", stamp(first), delta("Four")),
        ("intent-end", stamp(first + 0.1), {}),
        ("run-end", stamp(first + 0.2), None),
    ]
    return turn_of(raw)  # type: ignore[arg-type]


def test_figures_are_to_the_millisecond_and_a_stage_of_no_time_is_told() -> None:
    """Each figure rounds to 3 decimals; a stage that took no time is 0.0, not left out."""
    turn = boundary_turn(1.0, 3.12345)
    assert turn.stt == 0.0  # an end equal to its start is a figure (0), not None
    assert turn.agent_first_text == 2.123
    # The load and the prefill are rounded to the millisecond too.
    known = explain(turn, ServerSide("m", False, False, 1.23456, "server"))
    assert known.stages[VoiceStage.LOAD] == 1.235
    assert known.stages[VoiceStage.PREFILL] == 0.888
    # Resident: no load stage at all (not a load of 0).
    warm = explain(turn, ServerSide("m", True, False))
    assert VoiceStage.LOAD not in warm.stages
    assert warm.stages[VoiceStage.PREFILL] == 2.123
    # The server's record: a wait of none is no stage, a prefill without rates is 0.
    request = served(1.0, 2.2, prefill_seconds=1.23456, generation_seconds=0.96544)
    assert request.waited_seconds == 0.0
    split = explain(turn, ServerSide("m", True, False, request=request))
    assert VoiceStage.QUEUE not in split.stages
    assert split.stages[VoiceStage.PREFILL] == 1.235
    waiting = served(1.0, 2.2, prefill_seconds=0.3, generation_seconds=0.43456)
    queued = explain(turn, ServerSide("m", True, False, request=waiting))
    assert queued.stages[VoiceStage.QUEUE] == 1.465  # rounded: 2.2 - 0.3 - 0.43456
    # A record told apart needs both its wait and its prefill.
    no_wait = served(1.0, 2.2, prefill_seconds=None, generation_seconds=None)
    assert not _told_apart(no_wait)
    # A prefill without the generation's time: the wait before it is not known.
    assert not _told_apart(served(1.0, 2.2, prefill_seconds=0.3, generation_seconds=None))
    assert (
        explain(turn, ServerSide("m", False, False, request=no_wait)).stages[VoiceStage.LOAD]
        == 2.123
    )


def test_the_join_takes_requests_at_the_edges_of_its_tolerance() -> None:
    """Arrived exactly 2 s before the agent's start, or 2 s after its first words: joined."""
    turn = boundary_turn(4.0, 6.0)
    assert join_request(turn, [served(2.0, 2.5)]) is not None  # 2 s before the start
    assert join_request(turn, [served(1.999, 2.5)]) is None
    assert join_request(turn, [served(8.0, 1.0)]) is not None  # 2 s after the first words
    assert join_request(turn, [served(8.001, 1.0)]) is None
    assert join_request(turn, [served(3.0, 1.0)]) is not None  # ended at the start itself
    # llama-swap's times are whole seconds, floored: an end read up to a second before the
    # start may be after it; one a whole second before is not.
    assert join_request(turn, [served(3.0, 0.999)]) is not None
    assert join_request(turn, [served(2.0, 1.001)]) is not None
    assert join_request(turn, [served(2.0, 1.0)]) is None
    # Without first words: up to 2 s after the agent's end.
    silent = turn_of(
        [
            ("run-start", stamp(0), {}),
            ("intent-start", stamp(4.0), {}),
            ("intent-end", stamp(5.0), {}),
            ("run-end", stamp(9.0), None),
        ]  # type: ignore[list-item]
    )
    assert join_request(silent, [served(7.0, 1.0)]) is not None
    assert join_request(silent, [served(7.5, 1.0)]) is None


def test_a_load_that_ended_as_the_agent_started_helped() -> None:
    at_once = wake_outcome(load_started=100.0, load_ended=102.4, intent_started=102.4)
    assert (at_once.helped, at_once.hidden_seconds) == (True, 2.4)
    rounded = wake_outcome(load_started=100.0, load_ended=101.23456, intent_started=102.4)
    assert rounded.hidden_seconds == 1.235
    late = wake_outcome(load_started=100.0, load_ended=None, intent_started=101.23456)
    assert late.hidden_seconds == 1.235
    # A clock that went back is no hidden time, not a negative one (nor a second).
    backwards = wake_outcome(load_started=100.0, load_ended=99.0, intent_started=102.0)
    assert backwards.hidden_seconds == 0.0
    before = wake_outcome(load_started=100.0, load_ended=None, intent_started=99.5)
    assert before.hidden_seconds == 0.0


def test_a_wait_under_a_second_is_a_stage_of_its_own() -> None:
    turn = boundary_turn(1.0, 3.0)
    short = explain(turn, ServerSide("m", False, False, 0.5, "server"))
    assert short.stages[VoiceStage.LOAD] == 0.5
    queued = served(1.0, 2.2, prefill_seconds=1.5, generation_seconds=0.2)
    assert (
        explain(turn, ServerSide("m", True, False, request=queued)).stages[VoiceStage.QUEUE] == 0.5
    )


def test_a_wake_keeps_the_model_briefly_never_for_ever_and_never_for_nothing() -> None:
    assert WAKE_KEEP == 120.0
    assert wake_keep(None) == WAKE_KEEP  # an agent that sends no keep of its own
    assert wake_keep(-1) == WAKE_KEEP  # the Ollama agent's default: for ever
    assert wake_keep(300) == WAKE_KEEP
    assert wake_keep(WAKE_KEEP) == WAKE_KEEP
    assert wake_keep(119.5) == 119.5  # the agent's own, shorter keep
    assert wake_keep(1) == 1
    # 0 on a load is an unload on Ollama: the model would leave before its command.
    assert wake_keep(0) == WAKE_KEEP


def test_the_load_a_cold_turn_waited_for_and_who_measured_it() -> None:
    cold = ServerSide("m", False, True)
    before = (7.0, 3.0)

    def told(**kwargs: Any) -> tuple[float | None, str | None]:
        values: dict[str, Any] = {
            "loaded_at_wake": False,
            "wake_load_ended": None,
            "intent_started": 10.0,
            "figures": (7.0, 3.0, "server"),
            "figures_before": before,
        } | kwargs
        found = waited_load(cold, **values)
        assert found is not None
        assert (found.model, found.resident, found.loading) == ("m", False, True)
        return found.load_seconds, found.load_source

    # Our load at the wake: what was left of it when the agent started, timed by us.
    assert told(loaded_at_wake=True, wake_load_ended=12.3456) == (2.346, "client")
    assert told(loaded_at_wake=True, wake_load_ended=9.0) == (0.0, "client")  # done before
    assert told(loaded_at_wake=True, wake_load_ended=None) == (0.0, "client")  # not by then
    # Else a figure new since the turn began: exact by its source, a lower bound by polling.
    assert told(figures=(8.5, 3.0, "server")) == (8.5, "server")
    assert told(figures=(7.0, 4.5, "server")) == (4.5, "polling")
    assert told(figures=(8.5, 4.5, "events")) == (8.5, "events")  # the exact one first
    assert told(figures=(None, 4.5, None), figures_before=(None, None)) == (4.5, "polling")
    # Nothing new (another load's figures): only that it was cold.
    assert told() == (None, "residency")
    assert told(figures=(None, None, None)) == (None, "residency")
    assert told(loaded_at_wake=True, intent_started=None) == (None, "residency")
    # Resident, or not known: as it was.
    warm = ServerSide("m", True, False)
    found = waited_load(
        warm,
        loaded_at_wake=True,
        wake_load_ended=1.0,
        intent_started=0.0,
        figures=(1.0, None, "server"),
        figures_before=(None, None),
    )
    assert found is warm
    assert (
        waited_load(
            None,
            loaded_at_wake=False,
            wake_load_ended=None,
            intent_started=None,
            figures=(None, None, None),
            figures_before=(None, None),
        )
        is None
    )
