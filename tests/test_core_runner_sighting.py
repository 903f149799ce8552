"""What a resident model's expiry says of its runner, at the edges of each tolerance (pure)."""

from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.core.runner_sighting import (
    Phase,
    Sighting,
    expired,
    expiry_floats,
    load_end,
)

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
KEY = (10, 10, 512, "d")


def seen(expires_at: datetime | None, *, at: datetime = T0, mono: float = 100.0) -> Sighting:
    return Sighting(
        Phase.LOADED, first_seen=mono, seen_at=at, seen_mono=mono, expires_at=expires_at, runner=KEY
    )


def later(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_an_expiry_that_moved_with_the_clock_floats() -> None:
    """Within 0.15 s plus 2 % of the time between the polls (10 s here: 0.35 s)."""
    before = seen(later(300))
    assert expiry_floats(before, later(310), later(10)) is True
    assert expiry_floats(before, later(310.3), later(10)) is True
    assert expiry_floats(before, later(310.45), later(10)) is False
    assert expiry_floats(before, later(309.6), later(10)) is False
    # Polls a moment apart: the fixed 0.15 s, its edge included.
    assert expiry_floats(before, later(300.15), T0) is True
    assert expiry_floats(before, later(300), later(10)) is False  # it did not move
    assert expiry_floats(before, later(300), later(0.1)) is False  # nor within the 0.15 s
    assert expiry_floats(before, None, later(10)) is False
    assert expiry_floats(seen(None), later(310), later(10)) is False


def test_a_model_that_left_2_seconds_before_its_expiry_or_later_expired() -> None:
    assert expired(seen(later(2)), T0)
    assert expired(seen(later(-5)), T0)
    assert not expired(seen(later(2.5)), T0)
    assert not expired(seen(None), T0)


def test_a_busy_runners_first_request_ended_where_its_expiry_stopped_moving() -> None:
    """Seen at 100 s, now 110 s: an expiry 3 s on dates the end at 103 s, never past now."""
    before = seen(later(300))
    assert load_end(before, later(303), 110.0) == 103.0
    assert load_end(before, later(320), 110.0) == 110.0
    assert load_end(before, later(299), 110.0) == 100.0
    assert load_end(before, None, 110.0) == 110.0


def test_a_new_sighting_is_no_reload_and_its_announcement_lasts_to_its_end() -> None:
    sighting = seen(None)
    assert sighting.reloaded is False
    assert not sighting.announced(0.0)
    sighting.announced_until = 105.0
    assert sighting.announced(105.0)
    assert not sighting.announced(105.1)
