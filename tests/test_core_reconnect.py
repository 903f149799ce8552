"""The wait before following a dropped event stream again."""

import pytest

from custom_components.llm_warmth.core.reconnect import reconnect_delay


def _waits(outcomes: list[float | None]) -> list[float]:
    """The waits after each drop, given how long each stream had worked (None: never)."""
    waits: list[float] = []
    delay: float | None = None
    for worked_for in outcomes:
        delay = reconnect_delay(delay, worked_for, shortest=1.0, longest=60.0)
        waits.append(delay)
    return waits


def test_the_wait_doubles_up_to_the_longest() -> None:
    assert _waits([None] * 9) == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]


def test_a_stream_that_worked_longer_than_the_longest_wait_starts_afresh() -> None:
    assert _waits([None, None, None, 60.5, None]) == [1.0, 2.0, 4.0, 1.0, 2.0]


@pytest.mark.parametrize("worked_for", [0.0, 59.9, 60.0])
def test_a_stream_that_worked_briefly_keeps_the_backoff(worked_for: float) -> None:
    """A server that accepts and drops at once is not hammered: the wait still doubles."""
    assert _waits([None, None, worked_for]) == [1.0, 2.0, 4.0]


def test_the_first_wait_is_the_shortest_whatever_came_before() -> None:
    assert reconnect_delay(None, 0.5, shortest=0.25, longest=8.0) == 0.25
    assert reconnect_delay(None, 100.0, shortest=0.25, longest=8.0) == 0.25
    assert reconnect_delay(5.0, None, shortest=0.25, longest=8.0) == 8.0
