"""Home Assistant's agents' turns (pure, fixed clock): which state change is one, the log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, strategies as st

from custom_components.llm_warmth.core.agent_turn import (
    AGENT_USES_KEPT,
    AgentTurnLog,
    is_conversation,
    message_time,
)

T = datetime(2026, 11, 2, 7, 0, tzinfo=UTC)
SEC = timedelta(seconds=1)


def test_a_conversation_agents_entity() -> None:
    assert is_conversation("conversation.ollama")
    assert not is_conversation("sensor.conversation")
    assert not is_conversation("conversation")
    assert not is_conversation(None)
    assert not is_conversation(["conversation.ollama"])


@given(st.one_of(st.text(), st.none(), st.integers(), st.lists(st.text())))
def test_any_entity_id_reads_as_a_conversation_only_when_it_names_one(value: object) -> None:
    assert is_conversation(value) is (isinstance(value, str) and value.startswith("conversation."))


def test_only_a_move_to_a_new_time_is_a_turn() -> None:
    iso = T.isoformat()
    assert message_time(iso, "unknown", T) == T
    assert message_time(iso, iso, T) is None  # no move
    assert message_time("unknown", iso, None) is None  # not a time
    assert message_time("2026-11-02T07:00:00", iso, T.replace(tzinfo=None)) is None


def test_the_log_keeps_the_latest_turns_and_tells_one_begun_now() -> None:
    log = AgentTurnLog()
    assert log.last("m") is None
    assert not log.heard("m", T, T)
    assert log.turn("m", T, T + 2 * SEC)  # within the clocks' slack: it begins now
    assert not log.turn("m", T, T + 3 * SEC)  # an older message read late
    assert log.last("m") == T
    assert log.heard("m", T, T)
    assert not log.heard("other", T, T)
    for index in range(AGENT_USES_KEPT):
        log.turn("m", T + (index + 10) * SEC, T)
    # The latest 16 are kept: the first turns are forgotten.
    assert AGENT_USES_KEPT == 16
    assert not log.heard("m", T, T)
    assert log.heard("m", T + 10 * SEC, T + 10 * SEC)
    assert log.last("m") == T + (AGENT_USES_KEPT + 9) * SEC
