"""A satellite's turn while it runs, and what warming at the wake holds (pure, no hass)."""

from datetime import UTC, datetime, timedelta

import pytest

from custom_components.llm_warmth.core.backends.types import (
    ResidencyState,
    ResidentModel,
    ServedRequest,
)
from custom_components.llm_warmth.core.load_figures import FigureSource, LoadFigures
from custom_components.llm_warmth.core.model_timing import ModelTiming
from custom_components.llm_warmth.core.monitor import (
    LoadObserved,
    ServerRestarted,
    ServerSnapshot,
)
from custom_components.llm_warmth.core.residency import ModelUnloaded, UnloadReason
from custom_components.llm_warmth.core.voice import VoiceStage, VoiceTurn
from custom_components.llm_warmth.core.voice_record import WakeCounts
from custom_components.llm_warmth.core.voice_stages import ServerSide
from custom_components.llm_warmth.core.wake_run import (
    GIB,
    PREFIX_FADE,
    PrefixStep,
    WakeHolds,
    WakeRun,
    WastedHold,
    faded_prefix_seconds,
)

T0 = datetime(2026, 12, 2, 7, 30, tzinfo=UTC)
MODEL = "qwen3:8b"
KITCHEN = "assist_satellite.kitchen"


def snapshot(
    held: dict[str, ResidencyState] | None = None,
    *,
    loading: frozenset[str] = frozenset(),
    timings: dict[str, ModelTiming] | None = None,
    size: int | None = 4 * GIB,
    size_vram: int | None = None,
) -> ServerSnapshot:
    """Return a poll that saw the models ``held`` in those states."""
    return ServerSnapshot(
        version="0.34.4",
        resident={
            name: ResidentModel(name, state, size=size, size_vram=size_vram)
            for name, state in (held or {}).items()
        },
        installed={},
        loading=loading,
        timings=timings or {},
        polled_at=T0,
    )


def run(**times: float | None) -> WakeRun:
    """Return a turn of the kitchen's satellite that woke at 100 s."""
    woke = WakeRun("p1", MODEL, KITCHEN, 100.0)
    for name, value in times.items():
        setattr(woke, name, value)
    return woke


def turn(*, error: str | None = None, spoken: bool = True) -> VoiceTurn:
    """Return a turn whose agent took 2 s to its first words, 3 s in all."""

    def at(seconds: float) -> datetime:
        return T0 + timedelta(seconds=seconds)

    return VoiceTurn(
        pipeline="p1",
        satellite=KITCHEN,
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
        audio_requested_at=at(4.6) if spoken else None,
        ended_at=at(5),
        streamed=False,
        error=error,
    )


def test_a_false_wake_is_one_whose_load_ended_and_no_agent_came() -> None:
    """Neither an agent's start nor a load still running."""
    assert run(load_ended=101.0).false_wake
    assert not run(load_ended=101.0, intent_started=102.0).false_wake
    assert not run().false_wake
    assert not run(intent_started=102.0).false_wake
    assert run(intent_started=102.0).agent_started
    assert not run().agent_started


def test_a_run_awaits_its_load_while_the_load_at_the_wake_runs_and_no_agent_came() -> None:
    assert run(load_started=100.5).awaits_load
    assert not run(load_started=100.5, load_ended=101.0).awaits_load
    assert not run(load_started=100.5, intent_started=102.0).awaits_load
    assert not run().awaits_load  # no load at the wake


def test_a_load_done_moves_its_start_by_its_own_time() -> None:
    """The load's own time counts from its end; never before the reading of its start."""
    started = run(load_started=100.5)
    started.load_done(110.0, 8.0)
    assert (started.load_started, started.load_ended) == (102.0, 110.0)
    early = run(load_started=100.5)
    early.load_done(110.0, 20.0)
    assert early.load_started == 100.5  # its own time would start it before we asked
    untimed = run(load_started=100.5)
    untimed.load_done(110.0, None)
    assert (untimed.load_started, untimed.load_ended) == (100.5, 110.0)
    unknown = run()
    unknown.load_done(110.0, 8.0)
    assert unknown.load_started == 102.0
    near_zero = run()
    near_zero.load_done(5.0, 4.5)
    assert near_zero.load_started == 0.5


def test_the_agent_start_notes_the_model_resident() -> None:
    """Held and not loading: resident; the figures from before the turn are kept."""
    timing = ModelTiming(load_seconds=7.5, load_at_least_seconds=3.0)
    counts = WakeCounts()
    woke = run()
    seen = snapshot({MODEL: ResidencyState.LOADED}, timings={MODEL: timing})
    woke.start_intent(104.25, seen, counts)
    assert woke.intent_started == 104.25
    assert woke.server == ServerSide(MODEL, resident=True, loading=False)
    assert woke.figures_before == (7.5, 3.0)
    assert counts.wake_to_intent == [4.25]
    assert counts.prefix_overlapped == 0


@pytest.mark.parametrize(
    ("held", "loading", "load_started", "load_ended", "resident", "is_loading"),
    [
        ({}, frozenset(), None, None, False, False),  # cold
        ({MODEL: ResidencyState.LOADING}, frozenset({MODEL}), None, None, False, True),
        ({MODEL: ResidencyState.LOADED}, frozenset(), 100.5, None, False, True),  # ours runs
        ({MODEL: ResidencyState.LOADED}, frozenset(), 100.5, 103.0, True, False),  # ours ended
        ({MODEL: ResidencyState.LOADED}, frozenset(), None, None, True, False),
    ],
)
def test_the_agent_start_notes_a_load(
    held: dict[str, ResidencyState],
    loading: frozenset[str],
    load_started: float | None,
    load_ended: float | None,
    resident: bool,
    is_loading: bool,
) -> None:
    """Loading: the server says so, or our load at the wake has not ended."""
    woke = run(load_started=load_started, load_ended=load_ended)
    woke.start_intent(104.0, snapshot(held, loading=loading), WakeCounts())
    assert woke.server == ServerSide(MODEL, resident=resident, loading=is_loading)
    assert woke.figures_before == (None, None)


def test_the_agent_start_counts_a_prompt_warm_up_still_running() -> None:
    """Started and not ended: overlapped; ended, or never sent: not."""
    for prefix_ended, overlapped in ((None, 1), (103.0, 0)):
        counts = WakeCounts()
        run(prefix_started=101.0, prefix_ended=prefix_ended).start_intent(104.0, snapshot(), counts)
        assert counts.prefix_overlapped == overlapped
    counts = WakeCounts()
    run().start_intent(104.0, snapshot(), counts)
    assert counts.prefix_overlapped == 0


def test_a_prompt_warm_up_is_not_sent_once_the_agent_asked() -> None:
    """The agent's own request warms it: nothing counted."""
    counts = WakeCounts()
    woke = run(intent_started=101.0)
    assert woke.prefix_step(WakeHolds(), counts, 101.5) is PrefixStep.ASKED
    assert counts == WakeCounts()
    assert not woke.prefix_held


def test_a_prompt_the_server_holds_is_not_warmed_again() -> None:
    """This satellite's last turn on this load, or a warm-up running: held."""
    holds = WakeHolds(prefix_held={MODEL: ("p1", KITCHEN)})
    counts = WakeCounts()
    woke = run()
    assert woke.prefix_step(holds, counts, 100.1) is PrefixStep.HELD
    assert (counts.prefix_held, woke.prefix_held) == (1, True)
    running = WakeHolds(prefix_running={MODEL})
    assert run().prefix_step(running, WakeCounts(), 100.1) is PrefixStep.HELD
    # Another satellite's, or another pipeline's prompt: this one is sent.
    for other in (("p1", "assist_satellite.hall"), ("p2", KITCHEN)):
        holds = WakeHolds(prefix_held={MODEL: other})
        assert run().prefix_step(holds, WakeCounts(), 100.1) is PrefixStep.SEND


def test_a_prompt_warm_up_that_would_end_late_is_left_out() -> None:
    """It must end before the quickest recent agent start after the wake."""
    counts = WakeCounts(prefix_seconds=1.0, wake_to_intent=[3.0, 5.0])
    woke = run()
    assert woke.prefix_step(WakeHolds(), counts, 102.0) is PrefixStep.SEND  # ends at 3.0
    late = run()
    assert late.prefix_step(WakeHolds(), counts, 102.01) is PrefixStep.SKIPPED
    assert (counts.prefix_skipped, late.prefix_skipped, counts.prefix_held) == (1, True, 0)


def test_a_prompt_warm_up_sent_and_its_figure() -> None:
    """Sent: counted and timed; warmed: the cache holds it, its time fades in."""
    counts = WakeCounts(prefix_seconds=5.0)
    holds = WakeHolds()
    woke = run()
    woke.prefix_sent(100.5, counts)
    assert (counts.prefix_sent, woke.prefix_started) == (1, 100.5)
    woke.prefix_ended = 102.5
    woke.prefix_warmed(holds, counts)
    assert holds.prefix_held == {MODEL: ("p1", KITCHEN)}
    assert counts.prefix_seconds == 4.0  # 5.0 faded beats 2.0
    asked = run(intent_started=101.0, prefix_started=100.5, prefix_ended=106.0)
    asked.prefix_warmed(holds := WakeHolds(), counts)
    assert holds.prefix_held == {}  # the agent's own request is what the cache holds
    assert counts.prefix_seconds == 5.5


def test_the_prompt_warm_up_figure_fades() -> None:
    """The slowest recent one, times the fade, until a slower one comes."""
    assert faded_prefix_seconds(2.0, None) == 2.0
    assert faded_prefix_seconds(2.0, 0.0) == 2.0
    assert faded_prefix_seconds(2.0, 5.0) == round(5.0 * PREFIX_FADE, 3)
    assert faded_prefix_seconds(4.5, 5.0) == 4.5
    assert faded_prefix_seconds(1.23456, None) == 1.235
    assert faded_prefix_seconds(0.5, None) == 0.5


def test_a_false_wake_holds_the_model_it_loaded() -> None:
    """Held after our load ended: since its end, its size in GPU memory first."""
    woke = run(load_ended=103.0)
    held = snapshot({MODEL: ResidencyState.LOADED}, size=4 * GIB, size_vram=3 * GIB)
    assert woke.wasted_hold(held) == WastedHold(103.0, 3 * GIB, "p1")
    no_vram = snapshot({MODEL: ResidencyState.LOADED}, size=4 * GIB)
    assert woke.wasted_hold(no_vram) == WastedHold(103.0, 4 * GIB, "p1")
    unsized = snapshot({MODEL: ResidencyState.LOADED}, size=None)
    assert woke.wasted_hold(unsized) == WastedHold(103.0, 0, "p1")
    assert woke.wasted_hold(snapshot()) is None  # already gone
    assert run().wasted_hold(held) is None  # its load never ended
    asleep = snapshot({MODEL: ResidencyState.SLEEPING})
    assert woke.wasted_hold(asleep) is None


def test_a_false_wakes_hold_in_gib_seconds() -> None:
    """Size in GiB times the seconds held; never below nothing."""
    hold = WastedHold(100.0, 2 * GIB, "p1")
    assert hold.gib_seconds(110.0) == 20.0
    assert hold.gib_seconds(90.0) == 0.0


def test_a_turn_served_leaves_its_prompt_in_the_cache() -> None:
    """The agent's request ran without error on this load."""
    holds = WakeHolds()
    run(intent_started=101.0).turn_served(holds, turn())
    assert holds.prefix_held == {MODEL: ("p1", KITCHEN)}
    for woke, told in ((run(intent_started=101.0), turn(error="x")), (run(), turn())):
        holds = WakeHolds()
        woke.turn_served(holds, told)
        assert holds.prefix_held == {}


def test_what_a_load_at_the_wake_did_is_counted() -> None:
    """Helped when it ended by the agent's start; too late else; the time it hid."""
    counts = WakeCounts()
    helped = run(load_started=100.0, load_ended=103.0, intent_started=104.0)
    helped.count_outcome(counts)
    late = run(load_started=100.0, load_ended=106.0, intent_started=104.0)
    late.count_outcome(counts)
    assert (counts.helped, counts.too_late, counts.hidden_seconds) == (1, 1, 7.0)
    assert (helped.hidden, late.hidden) == (3.0, 4.0)
    for untold in (run(load_started=100.0), run(intent_started=104.0)):
        untold.count_outcome(counts)
        assert untold.hidden is None
    assert (counts.helped, counts.too_late) == (1, 1)


def test_what_the_server_did_for_a_cold_turn() -> None:
    """A new exact figure of the model's load is this turn's, by its source."""
    cold = run(intent_started=104.0, figures_before=(5.0, None))
    cold.server = ServerSide(MODEL, resident=False, loading=False)
    timing = ModelTiming(load_seconds=6.0, load_source=FigureSource.EVENTS)
    assert cold.server_side(timing) == ServerSide(MODEL, False, False, 6.0, "events")
    assert cold.server_side(None) == ServerSide(MODEL, False, False, None, "residency")
    unsourced = ModelTiming(load_seconds=6.0)
    assert cold.server_side(unsourced) == ServerSide(MODEL, False, False, 6.0, None)
    at_least = ModelTiming(load_at_least_seconds=2.0)
    assert cold.server_side(at_least) == ServerSide(MODEL, False, False, 2.0, "polling")
    warmed = run(load_started=100.0, load_ended=105.0, intent_started=104.0)
    warmed.server = ServerSide(MODEL, resident=False, loading=True)
    assert warmed.server_side(timing) == ServerSide(MODEL, False, True, 1.0, "client")
    assert run().server_side(timing) is None


def request(*, seconds: float = 9.0) -> ServedRequest:
    """Return the server's record of a request that waited 5 s before its prefill."""
    return ServedRequest(
        id=7,
        model=MODEL,
        ended_at=T0,
        seconds=seconds,
        status=200,
        prefill_seconds=1.0,
        generation_seconds=3.0,
    )


def test_the_servers_record_of_the_request_joins_what_it_did() -> None:
    """Cold, with no load at the wake: its wait before the prefill is the load."""
    cold = ServerSide(MODEL, resident=False, loading=False, load_source="residency")
    served = request()
    assert run().with_request(cold, served) == ServerSide(
        MODEL, False, False, 5.0, "server", served
    )
    assert run().with_request(cold, None) == cold
    warmed = run(load_started=100.0)
    assert warmed.with_request(cold, served) == ServerSide(
        MODEL, False, False, None, "residency", served
    )
    resident = ServerSide(MODEL, resident=True, loading=False)
    assert run().with_request(resident, served) == ServerSide(MODEL, True, False, request=served)
    unknown = ServerSide(MODEL, resident=None, loading=False)
    assert run().with_request(unknown, served).load_source is None
    untimed = ServedRequest(id=8, model=MODEL, ended_at=T0, seconds=9.0, status=200)
    assert run().with_request(cold, untimed) == ServerSide(
        MODEL, False, False, None, "residency", untimed
    )


def test_the_record_a_turn_keeps() -> None:
    """Explained, warmed or not, what the load hid, the prompt warm-up's fate."""
    told = turn()
    server = ServerSide(MODEL, resident=False, loading=False, load_seconds=1.5)
    warmed = run(load_started=100.0, intent_started=104.0, prefix_started=100.5)
    warmed.hidden = 4.0
    record = warmed.record(told, server)
    assert (record.turn, record.model, record.server) == (told, MODEL, server)
    assert (record.warmed, record.hidden_seconds, record.prefix) == (True, 4.0, "overlapped")
    assert record.explained.stages[VoiceStage.LOAD] == 1.5
    plain = run(prefix_skipped=True).record(told, None)
    assert (plain.warmed, plain.hidden_seconds, plain.prefix) == (False, None, "skipped")
    assert run().record(told, None).prefix is None  # not sent: warm on wake is off
    held = run(prefix_held=True).record(told, None)
    assert held.prefix == "held"
    ready = run(prefix_started=100.5, prefix_ended=101.0, intent_started=104.0)
    assert ready.record(told, None).prefix == "ready"


def loaded(model: str) -> LoadObserved:
    """Return a load of ``model`` the monitor saw."""
    return LoadObserved(model, LoadFigures())


def test_a_restart_forgets_every_prompt_and_ends_every_hold() -> None:
    """A restarted server holds nothing: every false wake's hold ends."""
    holds = WakeHolds(
        prefix_held={MODEL: ("p1", KITCHEN), "llama": ("p2", KITCHEN)},
        wasted={MODEL: WastedHold(1.0, 1, "p1"), "llama": WastedHold(2.0, 1, "p2")},
    )
    assert holds.after_changes([ServerRestarted("0.34.5", "0.34.4", True)]) == [MODEL, "llama"]
    assert holds.prefix_held == {}
    assert set(holds.wasted) == {MODEL, "llama"}  # the shell ends them, with the time


def test_a_model_gone_or_loaded_again_forgets_its_prompt() -> None:
    """Unloaded: its prompt and its hold; loaded again: its prompt, unless ours loads it."""
    holds = WakeHolds(
        prefix_held={MODEL: ("p1", KITCHEN), "llama": ("p2", KITCHEN), "phi": ("p3", KITCHEN)},
        prefix_running={"phi"},
    )
    unloaded = ModelUnloaded(MODEL, UnloadReason.EXPIRED)
    assert holds.after_changes([unloaded]) == [MODEL]
    assert set(holds.prefix_held) == {"llama", "phi"}
    assert holds.after_changes([loaded("llama"), loaded("phi")]) == []
    assert set(holds.prefix_held) == {"phi"}
    running = WakeHolds(prefix_held={"phi": ("p3", KITCHEN)}, prefix_running={"phi"})
    assert running.after_changes([ModelUnloaded("phi", UnloadReason.EXPIRED)]) == ["phi"]
    assert running.prefix_held == {}


def test_holds_a_poll_no_longer_sees_and_clearing() -> None:
    """A hold ends once its model is no longer held; clearing keeps warm-ups running."""
    holds = WakeHolds(
        prefix_held={MODEL: ("p1", KITCHEN)},
        prefix_running={MODEL},
        wasted={MODEL: WastedHold(1.0, 1, "p1"), "llama": WastedHold(2.0, 1, "p2")},
    )
    assert holds.gone({MODEL}) == ["llama"]
    assert holds.gone(set()) == [MODEL, "llama"]
    holds.clear()
    assert (holds.prefix_held, holds.wasted, holds.prefix_running) == ({}, {}, {MODEL})


def test_a_gib_is_two_to_the_thirtieth_bytes() -> None:
    """A false wake's hold of a model of 1 GiB for 3 s is 3 GiB-seconds."""
    assert WastedHold(0.0, 1_073_741_824, "p1").gib_seconds(3.0) == 3.0


def test_a_warm_up_without_both_times_leaves_the_figure() -> None:
    """Not timed at both ends: the last figure is kept as it is."""
    counts = WakeCounts(prefix_seconds=5.0)
    for times in ({"prefix_started": 100.5}, {"prefix_ended": 102.0}, {}):
        run(**times).prefix_warmed(WakeHolds(), counts)
        assert counts.prefix_seconds == 5.0


def test_a_prompt_warm_up_let_go_keeps_how_long_it_ran_as_a_lower_bound() -> None:
    counts = WakeCounts(prefix_seconds=0.5)
    woke = run(prefix_started=101.0)
    woke.prefix_let_go(102.25, counts)
    assert (woke.prefix_ended, counts.prefix_seconds) == (102.25, 1.25)
    # Shorter than the last one measured: the last one, faded, is kept.
    counts = WakeCounts(prefix_seconds=4.0)
    run(prefix_started=101.0).prefix_let_go(101.5, counts)
    assert counts.prefix_seconds == 3.2  # 4.0 x PREFIX_FADE
    # Never sent: nothing is learnt.
    counts = WakeCounts(prefix_seconds=None)
    run().prefix_let_go(101.5, counts)
    assert counts.prefix_seconds is None
