"""The controller's decisions without Home Assistant: what a load asks for, what it did."""

from datetime import UTC, datetime, timedelta

from hypothesis import given, strategies as st

from custom_components.llm_warmth.core.backends.llama_server import LLAMA_SERVER_CAPABILITIES
from custom_components.llm_warmth.core.backends.llama_swap import LLAMA_SWAP_CAPABILITIES
from custom_components.llm_warmth.core.backends.ollama import OLLAMA_CAPABILITIES
from custom_components.llm_warmth.core.backends.types import InstalledModel
from custom_components.llm_warmth.core.pins import Pin
from custom_components.llm_warmth.core.residency_control import (
    Unpinned,
    asked_for,
    kept_until,
    load_seconds,
    on_peers,
    pushed_out,
    to_unload,
    unpin_outcome,
)

NOW = datetime(2026, 12, 5, 9, 30, tzinfo=UTC)


def test_a_pins_load_asks_ollama_for_its_keep_and_context() -> None:
    until = Pin(model="a", until=NOW + timedelta(hours=2), num_ctx=8192, since=NOW)
    assert asked_for(until, NOW, OLLAMA_CAPABILITIES) == (7200, 8192)
    forever = Pin(model="a", since=NOW)
    assert asked_for(forever, NOW, OLLAMA_CAPABILITIES) == (-1, None)


def test_a_pins_load_asks_the_other_servers_for_nothing() -> None:
    pin = Pin(model="a", until=NOW + timedelta(hours=2), num_ctx=8192, since=NOW)
    assert asked_for(pin, NOW, LLAMA_SERVER_CAPABILITIES) == (None, None)
    assert asked_for(pin, NOW, LLAMA_SWAP_CAPABILITIES) == (None, None)


def test_a_load_keeps_its_model_until_now_and_its_keep() -> None:
    assert kept_until(300, NOW) == NOW + timedelta(minutes=5)
    assert kept_until(0.5, NOW) == NOW + timedelta(milliseconds=500)
    # For ever, an unload, or the server's own keep: no end to wait for.
    for keep in (-1, 0, None):
        assert kept_until(keep, NOW) is None


def test_what_a_load_pushed_out() -> None:
    assert pushed_out({"a", "b", "c"}, {"c", "m"}, "m") == ("a", "b")
    # The loaded model is never its own push (a reload in place).
    assert pushed_out({"m", "b"}, {"b"}, "m") == ()
    assert pushed_out([], {"m"}, "m") == ()


def test_a_load_took_its_time_unless_the_model_was_resident() -> None:
    assert load_seconds(7.12345, already_resident=False) == 7.123
    assert load_seconds(7.12345, already_resident=True) is None


def test_an_eviction_unloads_the_named_models_it_holds_or_all() -> None:
    assert to_unload(["c", "a", "b"], None) == ["a", "b", "c"]
    assert to_unload(["c", "a", "b"], ["b", "x"]) == ["b"]
    assert to_unload(["a"], []) == []


def test_which_models_a_peer_runs() -> None:
    installed = {
        "own": InstalledModel(name="own"),
        "far": InstalledModel(name="far", peer="upstairs"),
    }
    assert on_peers(["own", "far", "unknown"], installed) == ["far"]
    assert on_peers([], installed) == []


def test_what_becomes_of_an_unpinned_model() -> None:
    assert unpin_outcome(resident=False, pinned=True, idle_timer=True) is Unpinned.NOT_RESIDENT
    assert unpin_outcome(resident=True, pinned=False, idle_timer=True) is Unpinned.UNCHANGED
    assert unpin_outcome(resident=True, pinned=True, idle_timer=False) is Unpinned.KEPT
    assert unpin_outcome(resident=True, pinned=True, idle_timer=True) is Unpinned.HANDED_BACK


@given(st.booleans(), st.booleans(), st.booleans())
def test_only_a_resident_pinned_model_on_ollama_is_handed_back(
    resident: bool, pinned: bool, idle_timer: bool
) -> None:
    outcome = unpin_outcome(resident=resident, pinned=pinned, idle_timer=idle_timer)
    assert (outcome is Unpinned.HANDED_BACK) == (resident and pinned and idle_timer)
    assert (outcome is Unpinned.NOT_RESIDENT) == (not resident)


def test_the_outcomes_are_the_answers_words() -> None:
    assert [outcome.value for outcome in Unpinned] == [
        "unloaded",
        "handed_back",
        "kept",
        "not_resident",
        "unchanged",
    ]
