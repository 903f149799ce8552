"""The residency tracker: loads, reloads, unloads and their reasons (pure, clock passed in)."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.core.backends.llama_server import LLAMA_SERVER_CAPABILITIES
from custom_components.llm_warmth.core.backends.llama_swap import LLAMA_SWAP_CAPABILITIES
from custom_components.llm_warmth.core.backends.ollama import (
    OLLAMA_CAPABILITIES,
    ollama_capabilities,
)
from custom_components.llm_warmth.core.backends.types import ResidencyState, ResidentModel
from custom_components.llm_warmth.core.load_figures import LoadFigures
from custom_components.llm_warmth.core.residency import (
    ModelLoaded,
    ModelUnloaded,
    OwnRequestEnd,
    ResidencyTracker,
    UnloadReason,
)
from custom_components.llm_warmth.core.runner_sighting import Phase

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def model(
    name: str, expires_at: datetime | None, *, size: int = 100, context_length: int | None = None
) -> ResidentModel:
    return ResidentModel(
        name=name,
        state=ResidencyState.LOADING if expires_at is None else ResidencyState.LOADED,
        size=size,
        size_vram=size,
        expires_at=expires_at,
        context_length=context_length,
    )


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def observe(tracker: ResidencyTracker, t: float, *models: ResidentModel, **kwargs: bool) -> list:
    return tracker.observe(models, now=at(t), monotonic=t, **kwargs)


def test_baseline_is_silent_and_loaded() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    assert observe(tracker, 0, model("a", at(300))) == []
    assert tracker.phase("a") is Phase.LOADED
    assert not tracker.settling
    assert tracker.phase("b") is None


def test_zero_expiry_is_timed_from_its_first_sighting() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    assert observe(tracker, 1, model("a", None)) == []
    assert tracker.settling
    assert tracker.loading() == {"a"}
    assert observe(tracker, 1.5, model("a", None)) == []
    assert observe(tracker, 2.0, model("a", at(302))) == [ModelLoaded("a", 1.0)]
    assert tracker.phase("a") is Phase.LOADED
    assert not tracker.settling


def test_model_first_seen_with_an_expiry_is_confirmed_on_the_next_poll() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    assert observe(tracker, 1, model("a", at(300))) == []
    assert tracker.phase("a") is Phase.UNSURE
    assert tracker.settling
    # Another client's: unsure, not loading for the decisions taken at a use (a load
    # between two polls is common), but not known warm either: the warmth reads loading.
    assert tracker.loading() == frozenset()
    assert tracker.unsure() == {"a"}
    # Same expiry half a second later: it was loaded already, the load was not seen.
    assert observe(tracker, 1.5, model("a", at(300))) == [ModelLoaded("a", None)]
    assert tracker.loading() == frozenset()
    assert tracker.unsure() == frozenset()


def test_a_model_first_seen_while_our_request_to_it_runs_is_loading() -> None:
    """Ollama 0.9 lists our cold preload with an expiry at once: it read warm at first."""
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    tracker.request_started("a", monotonic=0.5)
    observe(tracker, 1, model("a", at(300)))
    assert tracker.phase("a") is Phase.UNSURE
    assert tracker.loading() == {"a"}
    assert tracker.unsure() == frozenset()  # loading, and said once


def test_floating_expiry_of_a_new_runner_is_its_cold_request() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    # Ollama 0.9 reports now + keep_alive while the runner is busy: the expiry moves.
    observe(tracker, 10, model("a", at(10 + 300)))
    assert observe(tracker, 10.5, model("a", at(10.5 + 300))) == []
    assert tracker.phase("a") is Phase.LOADING
    assert observe(tracker, 11, model("a", at(11 + 300))) == []
    # The request ended at 11.2: the expiry stops moving, and how far it moved dates the end.
    assert observe(tracker, 11.5, model("a", at(11.2 + 300))) == [ModelLoaded("a", 1.2)]


def test_a_first_sighting_on_ollama_0_30_is_the_end_of_a_load() -> None:
    """0.34.4 lists a model only once loaded: the load is over, its length unknown.

    The time its expiry then moves is the rest of the request, not the load: no figure
    (recorded: tests/fixtures/ollama_current/ps_during_load.json, ps_after_load.json).
    """
    tracker = ResidencyTracker(ollama_capabilities("0.34.4"))
    observe(tracker, 0)
    assert observe(tracker, 10, model("a", at(10 + 300))) == [ModelLoaded("a", None)]
    assert tracker.phase("a") is Phase.LOADED
    assert not tracker.settling
    for t in (10.5, 11):
        assert observe(tracker, t, model("a", at(t + 300))) == []
    assert observe(tracker, 11.5, model("a", at(11.2 + 300))) == []


def test_a_reload_in_place_on_ollama_0_30_has_no_figure() -> None:
    tracker = ResidencyTracker(ollama_capabilities("0.34.4"))
    observe(tracker, 0, model("a", at(300), size=100))
    # Listed again with another size (num_ctx): the new runner is up; the request runs on.
    assert observe(tracker, 2, model("a", at(2 + 300), size=200)) == []
    assert observe(tracker, 2.5, model("a", at(2.5 + 300), size=200)) == []
    assert observe(tracker, 3, model("a", at(2.7 + 300), size=200)) == [
        ModelLoaded("a", None, reloaded=True)
    ]


def test_the_tracker_follows_the_capabilities_of_the_version_it_learns() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    tracker.use_capabilities(ollama_capabilities("0.34.4"))
    observe(tracker, 0)
    assert observe(tracker, 1, model("a", at(301))) == [ModelLoaded("a", None)]
    tracker.use_capabilities(ollama_capabilities("0.9.3"))
    observe(tracker, 2)
    observe(tracker, 3, model("b", at(303)))
    assert tracker.phase("b") is Phase.UNSURE


def test_ollama_capabilities_by_release() -> None:
    for old in ("0.9.3", "0.12.6", "0.29.9", "0.0.0", "not a version", ""):
        assert ollama_capabilities(old) == OLLAMA_CAPABILITIES, old
        assert ollama_capabilities(old).lists_while_loading
        assert not ollama_capabilities(old).reports_prompt_cache
    for new in ("0.30.0", "0.34.4", "0.34.4-rc1", "1.2.3"):
        capabilities = ollama_capabilities(new)
        assert not capabilities.lists_while_loading, new
        assert capabilities.reports_prompt_cache
        assert capabilities.expiry_moves_while_busy
    assert not OLLAMA_CAPABILITIES.reports_loading


def test_a_loaded_model_in_use_is_not_loading() -> None:
    """On Ollama 0.9 the expiry of a loaded model moves while a request runs."""
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)))
    for t in (1, 1.5, 2, 2.5):
        assert observe(tracker, t, model("a", at(t + 300))) == []
        assert tracker.phase("a") is Phase.LOADED
        assert not tracker.settling


def test_unsure_model_that_turns_out_busy() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    observe(tracker, 1, model("a", at(300)))
    observe(tracker, 1.5, model("a", None))
    assert tracker.phase("a") is Phase.LOADING
    assert observe(tracker, 2, model("a", at(302))) == [ModelLoaded("a", 1.0)]


def test_zero_expiry_again_is_a_reload_in_place() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)))
    observe(tracker, 5, model("a", None))
    assert tracker.phase("a") is Phase.LOADING
    assert observe(tracker, 6, model("a", at(306))) == [ModelLoaded("a", 1.0, reloaded=True)]


def test_a_changed_size_is_a_reload_even_with_a_moving_expiry() -> None:
    """Another client's num_ctx made Ollama 0.9 reload: only the size shows it."""
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300), size=100))
    observe(tracker, 5, model("a", at(305), size=200))
    assert tracker.phase("a") is Phase.LOADING
    assert tracker.settling
    observe(tracker, 5.5, model("a", at(305.5), size=200))
    assert observe(tracker, 6, model("a", at(305.7), size=200)) == [
        ModelLoaded("a", 0.7, reloaded=True)
    ]


def test_a_reload_between_two_polls_is_reported_at_once() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300), context_length=512))
    assert observe(tracker, 10, model("a", at(900), context_length=1024)) == [
        ModelLoaded("a", None, reloaded=True)
    ]
    assert not tracker.settling


def test_a_runner_gone_for_one_poll_and_back_is_a_reload() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)))
    assert observe(tracker, 5) == []  # left early, nothing in sight: wait for a replacement
    assert tracker.unexplained_since == 5
    assert observe(tracker, 5.5, model("a", None)) == []
    assert tracker.unexplained_since is None
    assert observe(tracker, 6, model("a", at(306))) == [ModelLoaded("a", 0.5, reloaded=True)]


def test_a_reload_is_reported_once_then_the_model_is_like_any_other() -> None:
    """After its reload, a model coming in no longer explains another's early unload."""
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300), size=100), model("b", at(600)))
    assert observe(tracker, 5, model("a", at(900), size=200), model("b", at(600))) == [
        ModelLoaded("a", None, reloaded=True)
    ]
    assert observe(tracker, 60, model("a", at(900), size=200)) == []
    assert observe(tracker, 63, model("a", at(900), size=200)) == [
        ModelUnloaded("b", UnloadReason.UNLOADED)
    ]


def test_expired_at_or_after_its_expiry() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)), model("b", at(301)))
    assert observe(tracker, 300) == [
        ModelUnloaded("a", UnloadReason.EXPIRED),
        ModelUnloaded("b", UnloadReason.EXPIRED),  # one second early: clocks differ
    ]


def test_evicted_for_the_model_that_came_in() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)))
    assert observe(tracker, 5, model("b", None)) == [
        ModelUnloaded("a", UnloadReason.DISPLACED, ("b",))
    ]


def test_evicted_when_the_replacement_shows_up_later() -> None:
    """Ollama unloads first, then lists the new runner once the memory is back (0.5-1.5 s)."""
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)))
    assert observe(tracker, 5) == []
    assert tracker.settling
    assert observe(tracker, 5.5) == []
    assert observe(tracker, 7.0, model("b", None)) == [
        ModelUnloaded("a", UnloadReason.DISPLACED, ("b",))
    ]


def test_unloaded_early_without_a_replacement() -> None:
    """keep_alive 0 from another client, out of memory, a crash: nothing came in."""
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)), model("b", at(600)))
    assert observe(tracker, 5, model("b", at(600))) == []
    assert observe(tracker, 7.5, model("b", at(600))) == []  # a replacement may still come
    assert observe(tracker, 8, model("b", at(600))) == [ModelUnloaded("a", UnloadReason.UNLOADED)]
    assert not tracker.settling


def test_a_model_already_resident_is_no_replacement() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)), model("b", at(600)))
    observe(tracker, 5, model("b", at(605)))  # b in use: still no newcomer
    assert observe(tracker, 8, model("b", at(608))) == [ModelUnloaded("a", UnloadReason.UNLOADED)]


def test_unload_after_server_restart() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)))
    assert observe(tracker, 400, server_restarted=True) == [
        ModelUnloaded("a", UnloadReason.SERVER_RESTARTED)
    ]


def test_an_early_unload_then_a_restart_is_the_restart() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)))
    observe(tracker, 5)
    assert observe(tracker, 30, server_restarted=True) == [
        ModelUnloaded("a", UnloadReason.SERVER_RESTARTED)
    ]


def test_a_model_that_leaves_right_after_its_first_sighting_gets_both_events() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    observe(tracker, 1, model("a", None), model("b", at(300)))
    # a: its request ran with keep_alive 0; b: expired at once. Both were resident.
    assert observe(tracker, 1.5) == [ModelLoaded("a", None), ModelLoaded("b", None)]
    assert observe(tracker, 4.5) == [
        ModelUnloaded("a", UnloadReason.UNLOADED),
        ModelUnloaded("b", UnloadReason.UNLOADED),
    ]


def own_request(tracker: ResidencyTracker, model: str, t: float) -> None:
    tracker.request_started(model, monotonic=t)


def test_a_load_held_while_an_own_request_runs() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    own_request(tracker, "a", 0.5)
    observe(tracker, 1, model("a", None))
    # Polling sees the load end while the request still runs: held for the caller.
    assert observe(tracker, 1.5, model("a", at(301))) == []
    assert tracker.request_finished("a") == OwnRequestEnd(
        new_runner=True, held=ModelLoaded("a", 0.5), covered=False
    )
    tracker.announce_load("a", expect_until=100)
    assert observe(tracker, 2, model("a", at(301))) == []


def test_an_announced_load_polling_sees_later_is_silent() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    own_request(tracker, "a", 0.5)
    observe(tracker, 1, model("a", None))
    end = tracker.request_finished("a")
    assert (end.new_runner, end.held) == (True, None)
    tracker.announce_load("a", expect_until=100)
    assert observe(tracker, 1.5, model("a", at(301))) == []
    assert tracker.phase("a") is Phase.LOADED


def test_an_announced_load_no_poll_saw_is_silent_when_it_shows_up() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    own_request(tracker, "a", 0.5)
    assert tracker.request_finished("a") == OwnRequestEnd(
        new_runner=False, held=None, covered=False
    )
    tracker.announce_load("a", expect_until=100)
    assert observe(tracker, 1, model("a", at(301))) == []
    assert tracker.phase("a") is Phase.LOADED


def test_two_own_requests_at_once_announce_one_load() -> None:
    """The cold one ends first and announces; the other adds nothing, nor does polling."""
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    own_request(tracker, "a", 0.5)
    own_request(tracker, "a", 0.6)
    observe(tracker, 1, model("a", None))
    first = tracker.request_finished("a")
    assert (first.new_runner, first.covered) == (True, False)
    tracker.announce_load("a", expect_until=100)
    observe(tracker, 1.5, model("a", None))
    assert tracker.request_finished("a") == OwnRequestEnd(new_runner=False, held=None, covered=True)
    assert observe(tracker, 2, model("a", at(302))) == []


def test_two_own_requests_warm_one_first() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    own_request(tracker, "a", 0.5)
    own_request(tracker, "a", 0.6)
    observe(tracker, 1, model("a", None))
    assert tracker.request_finished("a").covered is False
    assert tracker.request_finished("a").new_runner is True
    tracker.announce_load("a", expect_until=100)
    assert observe(tracker, 2, model("a", at(302))) == []


def test_an_announcement_expires() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    own_request(tracker, "a", 0)
    tracker.request_finished("a")
    tracker.announce_load("a", expect_until=10)
    observe(tracker, 11, model("a", at(311)))
    assert observe(tracker, 11.5, model("a", at(311))) == [ModelLoaded("a", None)]


def test_a_reload_announced_by_an_own_request_is_silent() -> None:
    """The probe's num_ctx made the server reload a resident model: the probe tells it."""
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300), size=100))
    own_request(tracker, "a", 1)
    observe(tracker, 2, model("a", None, size=200))
    end = tracker.request_finished("a")
    assert end.new_runner
    tracker.announce_load("a", expect_until=10)
    assert observe(tracker, 5, model("a", at(600), size=200)) == []
    assert tracker.phase("a") is Phase.LOADED
    # The announcement covers that load only: a later reload is somebody else's.
    assert observe(tracker, 6, model("a", at(900), size=300)) == [
        ModelLoaded("a", None, reloaded=True)
    ]


def test_a_model_already_loaded_before_an_own_request_is_no_new_runner() -> None:
    """Queued behind another request, a probe waited: no load of its own to announce."""
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)))
    own_request(tracker, "a", 1)
    observe(tracker, 2, model("a", at(302)))  # in use
    assert tracker.request_finished("a") == OwnRequestEnd(
        new_runner=False, held=None, covered=False
    )


def test_another_clients_load_under_way_before_an_own_request_is_not_its_own() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    observe(tracker, 1, model("a", None))  # another client's load
    own_request(tracker, "a", 1.2)
    observe(tracker, 1.5, model("a", None))
    end = tracker.request_finished("a")
    assert (end.new_runner, end.held) == (False, None)
    # Not announced: polling reports it when it settles.
    assert observe(tracker, 2, model("a", at(302))) == [ModelLoaded("a", 1.0)]


def test_an_announced_reload_that_never_shows_expires() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300), size=100))
    own_request(tracker, "a", 1)
    tracker.request_finished("a")
    tracker.announce_load("a", expect_until=10)
    assert observe(tracker, 5, model("a", at(300), size=100)) == []
    assert observe(tracker, 20, model("a", at(900), size=200)) == [
        ModelLoaded("a", None, reloaded=True)
    ]


def test_a_load_seen_during_an_own_request_that_failed() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    own_request(tracker, "a", 0.5)
    observe(tracker, 1, model("a", None))
    observe(tracker, 1.5, model("a", at(301)))
    assert tracker.request_finished("a").held == ModelLoaded("a", 0.5)
    assert tracker.request_finished("b") == OwnRequestEnd(
        new_runner=False, held=None, covered=False
    )


def test_a_model_leaving_during_an_own_request_keeps_the_event_order() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0)
    own_request(tracker, "a", 0.5)
    observe(tracker, 1, model("a", None))
    assert observe(tracker, 1.5, model("b", None)) == [
        ModelLoaded("a", None),
        ModelUnloaded("a", UnloadReason.DISPLACED, ("b",)),
    ]


def test_load_figures_say_where_they_come_from() -> None:
    seen = LoadFigures.from_polling(ModelLoaded("a", 16.2, reloaded=True))
    assert seen.as_event_data() == {
        "load_seconds": None,
        "load_source": None,
        "cold_request_seconds": 16.2,
        "cold_request_source": "polling",
        "reloaded": True,
    }
    assert LoadFigures.from_polling(ModelLoaded("a", None)).cold_request_source is None


def test_a_model_evicted_on_request_leaves_for_that_reason_at_once() -> None:
    """Gone after the caller unloaded it: ``on_request`` in that poll, no 3 s wait."""
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)), model("b", at(300)))
    tracker.evicting("a")
    assert observe(tracker, 1, model("b", at(300))) == [ModelUnloaded("a", UnloadReason.ON_REQUEST)]
    # An eviction given up on: what leaves later is explained as usual.
    tracker.evicting("b")
    tracker.evicting("b", now=False)
    assert observe(tracker, 2) == []  # left early, nothing in sight: wait for a replacement
    assert observe(tracker, 6) == [ModelUnloaded("b", UnloadReason.UNLOADED)]


def test_an_eviction_is_on_request_even_while_another_model_loads() -> None:
    tracker = ResidencyTracker(OLLAMA_CAPABILITIES)
    observe(tracker, 0, model("a", at(300)))
    tracker.evicting("a")
    # b is loading in the same poll: a's leaving is still the eviction, not a displacement.
    assert observe(tracker, 1, model("b", None)) == [ModelUnloaded("a", UnloadReason.ON_REQUEST)]


def test_a_load_of_ours_is_over_when_its_request_answers() -> None:
    """Ollama 0.9: the expiry floats while the request runs; its answer ends the load.

    Without this the model read "loading" for one more poll after the preload returned
    (about half a second on the real Ollama 0.9.3, 4 runs of 4).
    """
    tracker = ResidencyTracker(ollama_capabilities("0.9.3"))
    observe(tracker, 0)
    own_request(tracker, "a", 0.5)
    observe(tracker, 1, model("a", at(301)))  # first seen: now + keep_alive
    observe(tracker, 2, model("a", at(302)))  # moved with the clock: busy with our request
    assert "a" in tracker.loading()
    assert tracker.request_finished("a").new_runner
    tracker.announce_load("a", expect_until=100)
    assert tracker.phase("a") is Phase.LOADED
    assert "a" not in tracker.loading()
    # The poll right after: its expiry stopped with the answer; nothing new to say.
    assert observe(tracker, 2.5, model("a", at(302.4))) == []
    assert tracker.phase("a") is Phase.LOADED


# ---------------------------------------------------------------- each rule at its edge


def resident(name: str, state: ResidencyState = ResidencyState.LOADED) -> ResidentModel:
    """A model as llama-server and llama-swap list it: a state, no expiry."""
    return ResidentModel(name=name, state=state)


def test_a_load_end_is_seen_only_where_the_server_names_a_loading_state() -> None:
    """A server that names none and whose expiry does not float: the end is the request's."""
    quiet = replace(OLLAMA_CAPABILITIES, expiry_moves_while_busy=False, reports_loading=False)
    tracker = ResidencyTracker(quiet)
    observe(tracker, 0)
    ((loaded,),) = [observe(tracker, 1, model("a", at(300)))]
    assert loaded == ModelLoaded("a", None, load_end_seen=False)
    swap = ResidencyTracker(LLAMA_SWAP_CAPABILITIES)
    observe(swap, 0)
    assert observe(swap, 1, resident("a")) == [ModelLoaded("a", None, load_end_seen=True)]


def test_the_oldest_unexplained_unload_is_the_one_decided_first() -> None:
    tracker = ResidencyTracker(LLAMA_SWAP_CAPABILITIES)
    observe(tracker, 0, resident("a"), resident("b"))
    observe(tracker, 1, resident("b"))
    observe(tracker, 2)
    assert tracker.unexplained_since == 1


def test_on_a_server_that_lists_a_model_once_loaded_our_request_loads_it_until_listed() -> None:
    tracker = ResidencyTracker(ollama_capabilities("0.34.4"))
    observe(tracker, 0)
    tracker.request_started("a", monotonic=1.0)
    assert tracker.requesting() == {"a"}
    assert tracker.loading() == {"a"}
    assert tracker.loading_for(3.5) == {"a": 2.5}
    assert tracker.loading_for(1.0) == {"a": 0.0}
    observe(tracker, 4, model("a", at(304)))
    assert tracker.loading() == set()


def test_how_long_a_model_has_been_loading_from_its_first_sighting() -> None:
    tracker = ResidencyTracker(LLAMA_SERVER_CAPABILITIES)
    observe(tracker, 0, resident("done"))
    observe(tracker, 1, resident("done"), resident("a", ResidencyState.LOADING))
    assert tracker.loading_for(3.0) == {"a": 2.0}


def test_a_load_heard_of_holds_until_its_end_inclusive() -> None:
    tracker = ResidencyTracker(ollama_capabilities("0.34.4"))
    observe(tracker, 0)
    assert tracker.load_heard("a", monotonic=1.0, until=5.0) is True
    assert tracker.load_heard("a", monotonic=2.0, until=9.0) is False  # heard already
    observe(tracker, 5)
    assert tracker.loading() == {"a"}
    observe(tracker, 5.5)
    assert tracker.loading() == set()
    listed = ResidencyTracker(LLAMA_SERVER_CAPABILITIES)
    assert listed.load_heard("a", monotonic=1.0, until=5.0) is False


def test_a_load_we_announced_is_ours_when_first_seen_at_its_last_moment() -> None:
    tracker = ResidencyTracker(LLAMA_SERVER_CAPABILITIES)
    observe(tracker, 0)
    tracker.announce_load("a", expect_until=5.0)
    assert observe(tracker, 5, resident("a")) == []
    late = ResidencyTracker(LLAMA_SERVER_CAPABILITIES)
    observe(late, 0)
    late.announce_load("a", expect_until=5.0)
    assert observe(late, 5.5, resident("a")) == [ModelLoaded("a", None, load_end_seen=True)]


def test_a_sleeping_model_holds_no_weights() -> None:
    tracker = ResidencyTracker(LLAMA_SERVER_CAPABILITIES)
    observe(tracker, 0, resident("a"))
    observe(tracker, 1, resident("a", ResidencyState.SLEEPING))
    assert tracker.phase("a") is None


def test_a_model_still_loading_displaces_the_one_that_left() -> None:
    tracker = ResidencyTracker(LLAMA_SWAP_CAPABILITIES)
    observe(tracker, 0, resident("a"))
    observe(tracker, 1, resident("a"), resident("b", ResidencyState.LOADING))
    changes = observe(tracker, 2, resident("b", ResidencyState.LOADING))
    assert changes == [ModelUnloaded("a", UnloadReason.DISPLACED, ("b",))]


def test_a_load_is_timed_to_the_millisecond() -> None:
    tracker = ResidencyTracker(LLAMA_SERVER_CAPABILITIES)
    observe(tracker, 0)
    observe(tracker, 1, resident("a", ResidencyState.LOADING))
    assert observe(tracker, 2.00049, resident("a")) == [ModelLoaded("a", 1.0, load_end_seen=True)]


def test_a_runner_first_seen_as_our_request_starts_is_its_new_runner() -> None:
    tracker = ResidencyTracker(LLAMA_SERVER_CAPABILITIES)
    observe(tracker, 0)
    tracker.request_started("a", monotonic=2.0)
    observe(tracker, 2, resident("a", ResidencyState.LOADING))
    assert tracker.request_finished("a").new_runner
