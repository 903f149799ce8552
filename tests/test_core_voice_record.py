"""What became of a turn's prompt warm-up, and the record a turn keeps (pure, no hass)."""

from datetime import UTC, datetime

import pytest

from custom_components.llm_warmth.core.backends.types import ServedRequest
from custom_components.llm_warmth.core.voice_record import (
    WakeCounts,
    prefix_outcome,
    request_details,
)


@pytest.mark.parametrize(
    ("started", "ended", "intent", "held", "skipped", "outcome"),
    [
        (None, None, 5.0, False, False, None),  # not sent: warm on wake is off
        (None, None, 5.0, True, False, "held"),  # the server holds the prompt already
        (None, None, 5.0, True, True, "held"),
        (None, None, 5.0, False, True, "skipped"),  # it would not have ended in time
        (1.0, 4.0, 5.0, False, False, "ready"),  # ended before the agent started
        (1.0, 5.0, 5.0, False, False, "ready"),  # ended as it started
        (1.0, 5.5, 5.0, False, False, "overlapped"),  # the agent came while it ran
        (1.0, None, 5.0, False, False, "overlapped"),  # still running at the agent's start
        (1.0, 4.0, None, False, False, "ready"),  # ended; the agent never started
        (1.0, None, None, False, False, "overlapped"),
    ],
)
def test_what_became_of_the_prompt_warm_up(
    started: float | None,
    ended: float | None,
    intent: float | None,
    held: bool,
    skipped: bool,
    outcome: str | None,
) -> None:
    assert (
        prefix_outcome(
            started=started, ended=ended, intent_started=intent, held=held, skipped=skipped
        )
        == outcome
    )


def test_wake_counts_keep_eight_turns_a_millisecond_and_under_a_trillion_gib_seconds() -> None:
    stored = WakeCounts(enabled=True, hidden_seconds=1.23456).as_dict()
    assert stored["hidden_seconds"] == 1.235
    read = WakeCounts.from_dict({**stored, "wake_to_intent": [float(n) for n in range(10)]})
    assert read.wake_to_intent == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    under = WakeCounts.from_dict({**stored, "wasted_gib_seconds": 999_999_999_999.0})
    assert under.wasted_gib_seconds == 999_999_999_999.0
    assert WakeCounts.from_dict({**stored, "wasted_gib_seconds": 1.5e12}).wasted_gib_seconds == 0.0


def test_the_servers_record_of_a_turns_request_is_told_whole() -> None:
    ended = datetime(2026, 3, 1, 9, tzinfo=UTC)
    request = ServedRequest(
        id=7,
        model="qwen",
        ended_at=ended,
        seconds=2.0,
        status=200,
        prompt_tokens=120,
        cached_tokens=30,
        prefill_seconds=0.3,
        generation_seconds=0.5,
    )
    assert request_details(request) == {
        "source": "llama-swap activity",
        "id": 7,
        "started_at": "2026-03-01T08:59:58+00:00",
        "seconds": 2.0,
        "waited_seconds": 1.2,
        "prefill_seconds": 0.3,
        "generation_seconds": 0.5,
        "prompt_tokens": 120,
        "cached_tokens": 30,
    }
    assert request_details(None) is None
