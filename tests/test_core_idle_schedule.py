"""When an idle profile's probes run, and which polls show a use (pure, fixed clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.core.backends.types import ResidencyState, ResidentModel
from custom_components.llm_warmth.core.idle_profile import IdleProfile, IdleResult
from custom_components.llm_warmth.core.idle_schedule import (
    MOVED,
    RETRY,
    IdleWatch,
    Sighting,
    fire_at,
    probe_due,
    probe_result,
    profiles_as_stored,
)
from custom_components.llm_warmth.core.monitor import ProbeResult
from custom_components.llm_warmth.core.ttft import Classification, Stage, StageBreakdown, Verdict

T = datetime(2026, 11, 2, 7, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
SEC = timedelta(seconds=1)


def held(expires_at: datetime | None = None) -> ResidentModel:
    return ResidentModel("m", ResidencyState.LOADED, expires_at=expires_at)


def result(minutes: int, at: datetime) -> IdleResult:
    return IdleResult(minutes, at, resident=True, ttft_ms=100.0, load_ms=None, prefill_ms=None)


def test_the_retry_and_the_move_that_is_a_use() -> None:
    assert timedelta(minutes=5) == RETRY
    assert timedelta(seconds=5) == MOVED


def test_a_sighting_shows_a_use_when_loaded_anew_or_its_expiry_moved_on() -> None:
    assert Sighting.of(None) == Sighting(resident=False, expires_at=None)
    assert Sighting.of(held(T)) == Sighting(resident=True, expires_at=T)
    gone, there = Sighting(False, None), Sighting(True, T)
    assert there.shows_a_use_since(gone)
    assert not gone.shows_a_use_since(there)
    assert not there.shows_a_use_since(there)
    assert Sighting(True, T + MOVED + SEC).shows_a_use_since(there)
    assert not Sighting(True, T + MOVED).shows_a_use_since(there)
    # The figure itself: moved on 5 s is a poll's drift, 5.5 s a use.
    assert not Sighting(True, T + timedelta(seconds=5)).shows_a_use_since(there)
    assert Sighting(True, T + timedelta(seconds=5.5)).shows_a_use_since(there)
    assert not Sighting(True, T - MIN).shows_a_use_since(there)  # moved back: no use
    assert not Sighting(True, None).shows_a_use_since(there)
    assert not there.shows_a_use_since(Sighting(True, None))


def test_the_watch_takes_a_baseline_then_restarts_the_wait_of_a_use() -> None:
    watch = IdleWatch()
    profiles = {
        "m": IdleProfile("m", T),
        "done": IdleProfile("done", T, tuple(result(m, T) for m in (0, 1, 10, 60, 480))),
        "probed": IdleProfile("probed", T),
    }
    now = T + MIN
    # The first poll is the baseline.
    assert watch.polled(profiles, {}, frozenset(), now) == {}
    # Loaded by someone since: the wait restarts from now; done or probed ones are skipped.
    models = {"m": held(), "done": held(), "probed": held()}
    used = watch.polled(profiles, models, frozenset({"probed"}), now)
    assert used == {"m": IdleProfile("m", now)}
    # The same again: no use.
    assert watch.polled(profiles, models, frozenset({"probed"}), now) == {}
    # A poll while our probe ran was not seen: the next one shows the load.
    assert watch.polled(profiles, models, frozenset(), now) == {
        "probed": IdleProfile("probed", now)
    }
    # Our own probe: a new baseline, the next poll shows nothing.
    watch.forget("m")
    assert watch.polled(profiles, {}, frozenset(), now) == {}
    assert watch.polled(profiles, {"m": held()}, frozenset(), now) == {"m": IdleProfile("m", now)}
    watch.forget("never seen")


def test_when_the_timer_fires() -> None:
    profile = IdleProfile("m", T, (result(0, T),))  # the 1-minute probe is next
    assert fire_at(profile, None, T) == T + MIN
    assert fire_at(profile, T + RETRY, T) == T + RETRY
    assert fire_at(profile, None, T + 2 * MIN) == T + 2 * MIN  # never in the past
    assert fire_at(None, None, T) is None
    assert fire_at(None, T + MIN, T) == T + MIN
    done = IdleProfile("m", T, tuple(result(m, T) for m in (0, 1, 10, 60, 480)))
    assert fire_at(done, None, T) is None


def test_a_probe_is_due_from_its_time_unless_one_of_ours_runs() -> None:
    profile = IdleProfile("m", T, (result(0, T),))
    assert not probe_due(profile, T + MIN - SEC, probing=False)
    assert probe_due(profile, T + MIN, probing=False)
    assert not probe_due(profile, T + MIN, probing=True)
    done = IdleProfile("m", T, tuple(result(m, T) for m in (0, 1, 10, 60, 480)))
    assert not probe_due(done, T + timedelta(days=1), probing=False)


def test_a_probes_result_and_the_stored_profiles() -> None:
    sample = StageBreakdown(900.0, 800.0, 50.0, 10.0, 40.0, 30.0, 10, 5)
    verdict = Verdict(Classification.COLD, Stage.LOAD)
    profile = IdleProfile("m", T, (result(0, T),))
    cold = probe_result(profile, ProbeResult(sample, verdict), T + MIN)
    assert cold == IdleResult(
        1, T + MIN, resident=False, ttft_ms=900.0, load_ms=800.0, prefill_ms=50.0
    )
    warm = probe_result(IdleProfile("m", T), ProbeResult(sample, verdict, held()), T)
    assert (warm.minutes, warm.resident) == (0, True)
    assert profiles_as_stored({"m": profile}) == {"m": profile.as_dict()}
    assert profiles_as_stored({}) == {}
