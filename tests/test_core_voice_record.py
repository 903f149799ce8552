"""What became of a turn's prompt warm-up, and the record a turn keeps (pure, no hass)."""

import pytest

from custom_components.llm_warmth.core.voice_record import prefix_outcome


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
