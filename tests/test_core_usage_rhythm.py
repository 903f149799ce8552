"""The usage rhythm's keeps and bounds at their figures (pure, no clock but the one given)."""

from datetime import timedelta

import pytest

from custom_components.llm_warmth.core.usage_rhythm import UsageRhythm, still_pays


@pytest.mark.parametrize(
    ("idle_minutes", "keep_minutes"),
    [(6.5, 7), (8, 10), (16, 20), (25, 30), (80, 90), (100, 120)],
)
def test_idle_times_a_little_past_a_keep_are_kept_by_the_next_one(
    idle_minutes: float, keep_minutes: int
) -> None:
    """The keeps after the server's 5 minutes: 7, 10, 20, 30, 90 and 120 among them; the
    shortest that holds the idle times pays best (a cold start is worth 2 hours held)."""
    rhythm = UsageRhythm(idles=[idle_minutes * 60.0] * 20)
    assert rhythm.idle_keep == timedelta(minutes=keep_minutes)


def test_idle_times_past_two_hours_are_cheaper_cold_than_held() -> None:
    rhythm = UsageRhythm(idles=[150 * 60.0] * 20)
    assert rhythm.idle_keep == timedelta(minutes=5)


def test_a_keep_still_pays_within_5_percent_of_the_best() -> None:
    assert still_pays(95.0, 100.0)
    assert not still_pays(94.9, 100.0)
    assert still_pays(0.0, 1.0) is False
    assert still_pays(-0.05, 0.0)


def test_a_keep_that_gains_less_than_one_cold_start_still_moves_the_keep() -> None:
    """One idle of 6.5 minutes among nine of 4 hours: 7 minutes avoid one cold start and
    cost 2 minutes held beyond 5 after each of the others (0.84 of a cold start gained)."""
    assert UsageRhythm(idles=[390.0] + [14400.0] * 9).idle_keep == timedelta(minutes=7)


def test_an_idle_exactly_at_a_keep_is_held_by_it_and_one_at_5_minutes_needs_none() -> None:
    assert UsageRhythm(idles=[420.0] * 20).idle_keep == timedelta(minutes=7)
    assert UsageRhythm(idles=[300.0] * 20).idle_keep == timedelta(minutes=5)


def test_a_new_rhythm_and_one_stored_before_forecasts_trust_their_forecasts() -> None:
    fresh = UsageRhythm()
    assert (fresh.days, fresh.hit_rate, fresh.forecasts) == (0, 1.0, 0)
    stored = fresh.as_dict()
    del stored["hit_rate"], stored["forecasts"]
    older = UsageRhythm.from_dict(stored)
    assert (older.hit_rate, older.forecasts) == (1.0, 0)
    never = UsageRhythm.from_dict({**fresh.as_dict(), "hit_rate": 0.0})
    assert never.hit_rate == 0.0


def test_the_idle_times_and_the_hit_rate_are_stored_rounded() -> None:
    stored = UsageRhythm(idles=[400.12345], hit_rate=0.123456).as_dict()
    assert (stored["idles"], stored["hit_rate"]) == ([400.123], 0.1235)
