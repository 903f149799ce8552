"""A voice turn as the bus tells it, and the voice section as stored (pure, no hass)."""

from datetime import UTC, datetime

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.voice import VoiceTurn
from custom_components.llm_warmth.core.voice_record import VoiceRecord, WakeCounts
from custom_components.llm_warmth.core.voice_stages import Explained
from custom_components.llm_warmth.core.voice_turn import (
    SatelliteStep,
    counts_of_stored,
    is_satellite,
    route_of,
    satellite_step,
    stored_counts,
    turn_event_data,
)

T0 = datetime(2026, 12, 2, 7, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("new", "old", "step"),
    [
        (None, "idle", SatelliteStep.GONE),
        (None, None, SatelliteStep.GONE),
        ("listening", "idle", SatelliteStep.WAKE),
        ("listening", None, SatelliteStep.WAKE),
        ("processing", "listening", SatelliteStep.INTENT),
        ("idle", "responding", SatelliteStep.FINISH),
        ("idle", "processing", SatelliteStep.FINISH),
        ("idle", "idle", None),  # an attribute changed: no turn ended
        ("idle", None, None),  # it had no state: no turn to end
        ("responding", "processing", None),
        ("unavailable", "idle", None),
    ],
)
def test_what_a_satellites_state_means(
    new: str | None, old: str | None, step: SatelliteStep | None
) -> None:
    assert satellite_step(new, old) is step


def test_which_entities_are_satellites() -> None:
    assert is_satellite("assist_satellite.kitchen")
    assert not is_satellite("media_player.assist_satellite")
    assert not is_satellite("assist_satellite")
    assert not is_satellite(None)
    assert not is_satellite(42)


def test_a_route_keeps_the_agent_and_why() -> None:
    """The assistant it names, and the agent, reason and where it ran; nothing else."""
    data: dict[str, object] = {
        "assistant": "conversation.warm",
        "agent": "conversation.fast",
        "reason": "warm",
        "agent_server": "Ollama",
        "agent_model": "qwen3:8b",
        "other": 1,
    }
    assert route_of(data) == (
        "conversation.warm",
        {
            "agent": "conversation.fast",
            "reason": "warm",
            "agent_server": "Ollama",
            "agent_model": "qwen3:8b",
        },
    )
    # Its fields missing: kept as unknown; no assistant named: no route at all.
    assert route_of({"assistant": "conversation.warm"}) == (
        "conversation.warm",
        {"agent": None, "reason": None, "agent_server": None, "agent_model": None},
    )
    for nameless in ({}, {"assistant": None}, {"assistant": ""}, {"assistant": 3}):
        assert route_of(nameless) is None


def kept() -> VoiceRecord:
    turn = VoiceTurn("p1", "assist_satellite.kitchen", "c1", None, T0, *([None] * 9), False, None)
    return VoiceRecord(turn, "qwen3:8b", None, Explained({}, None), False, None)


def test_the_turn_events_data() -> None:
    """Whose turn, filed under which entity; a warm assistant's turn says its route."""
    record = kept()
    base = {
        "server": "Ollama",
        "config_entry_id": "e1",
        "pipeline": "p1",
        "pipeline_name": "Home",
    }
    common = {"server": "Ollama", "entry_id": "e1", "pipeline_id": "p1", "pipeline_name": "Home"}
    data = turn_event_data(record, **common, entity_id="sensor.x", assistant=None, route=None)
    assert data == {**base, "entity_id": "sensor.x", **record.details()}
    assert list(data)[:3] == ["server", "config_entry_id", "entity_id"]
    unfiled = turn_event_data(record, **common, entity_id=None, assistant=None, route=None)
    assert unfiled == {**base, **record.details()}
    route = {"agent": "conversation.fast"}
    routed = turn_event_data(
        record, **common, entity_id=None, assistant="conversation.warm", route=route
    )
    assert routed == {**base, **record.details(), "assistant_route": route}
    unheard = turn_event_data(
        record, **common, entity_id=None, assistant="conversation.warm", route=None
    )
    assert unheard["assistant_route"] is None
    ignored = turn_event_data(record, **common, entity_id=None, assistant=None, route=route)
    assert "assistant_route" not in ignored


def test_the_stored_counts_read_back() -> None:
    """Each pipeline's counts as stored, read back the same."""
    counts = {"p1": WakeCounts(enabled=True, helped=2, wake_to_intent=[1.5]), "p2": WakeCounts()}
    stored = stored_counts(counts)
    assert stored == {"p1": counts["p1"].as_dict(), "p2": WakeCounts().as_dict()}
    assert counts_of_stored(stored) == counts


def test_a_damaged_voice_section_reads_as_far_as_it_can() -> None:
    """Not a mapping: nothing; a key that is no text: left out; bad counts: from nothing."""
    assert counts_of_stored(None) == {}
    assert counts_of_stored(["p1"]) == {}
    assert counts_of_stored({1: {"helped": 3}, "p1": "bad"}) == {"p1": WakeCounts()}
    assert counts_of_stored({"p1": {"helped": 3}}) == {"p1": WakeCounts(helped=3)}


json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@given(st.one_of(json, st.dictionaries(st.text(max_size=4), json)))
def test_any_stored_section_reads(stored: object) -> None:
    """Whatever the store holds, it reads into counts that store again the same."""
    counts = counts_of_stored(stored)
    assert all(isinstance(pid, str) for pid in counts)
    assert counts_of_stored(stored_counts(counts)) == counts


whole = st.integers(0, 10**6)
thousandths = st.integers(0, 10**9).map(lambda n: n / 1000)
wake_counts = st.builds(
    WakeCounts,
    enabled=st.booleans(),
    helped=whole,
    hidden_seconds=thousandths,
    too_late=whole,
    refused=whole,
    prefix_sent=whole,
    prefix_skipped=whole,
    prefix_overlapped=whole,
    prefix_held=whole,
    wasted=whole,
    wasted_gib_seconds=thousandths,
    prefix_seconds=st.none() | st.integers(1, 600_000).map(lambda n: n / 1000),
    wake_to_intent=st.lists(st.integers(0, 60_000).map(lambda n: n / 1000), max_size=5),
)


@given(st.dictionaries(st.text(min_size=1, max_size=8), wake_counts, min_size=1, max_size=3))
def test_counts_as_stored_read_back_whole(counts: dict[str, WakeCounts]) -> None:
    """Every pipeline's counts, every figure of them, as they were written (a reader that
    dropped what it read would pass the test above: not this one)."""
    assert counts_of_stored(stored_counts(counts)) == counts
