"""The residency tracker: loads, reloads, unloads and their reasons (pure, clock passed in)."""

from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.backends.types import ResidentModel
from custom_components.llm_warmth.residency import (
    ModelLoaded,
    ModelUnloaded,
    Phase,
    ResidencyTracker,
    UnloadReason,
)

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def model(name: str, expires_at: datetime | None) -> ResidentModel:
    return ResidentModel(name=name, size=100, size_vram=100, expires_at=expires_at)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_baseline_is_silent_and_loaded() -> None:
    tracker = ResidencyTracker()
    assert tracker.observe([model("a", at(300))], now=T0, monotonic=0) == []
    assert tracker.phase("a") is Phase.LOADED
    assert not tracker.settling
    assert tracker.phase("b") is None


def test_modern_load_is_timed_from_first_sight_of_the_zero_expiry() -> None:
    tracker = ResidencyTracker()
    tracker.observe([], now=T0, monotonic=0)
    assert tracker.observe([model("a", None)], now=at(1), monotonic=1) == []
    assert tracker.settling
    assert tracker.phase("a") is Phase.LOADING
    assert tracker.observe([model("a", None)], now=at(1.5), monotonic=1.5) == []
    changes = tracker.observe([model("a", at(302))], now=at(2.0), monotonic=2.0)
    assert changes == [ModelLoaded("a", 1.0)]
    assert tracker.phase("a") is Phase.LOADED
    assert not tracker.settling


def test_model_first_seen_with_an_expiry_is_confirmed_on_the_next_poll() -> None:
    tracker = ResidencyTracker()
    tracker.observe([], now=T0, monotonic=0)
    assert tracker.observe([model("a", at(300))], now=at(1), monotonic=1) == []
    assert tracker.phase("a") is Phase.UNSURE
    assert tracker.settling
    # Same expiry half a second later: it was loaded already, the load was not seen.
    changes = tracker.observe([model("a", at(300))], now=at(1.5), monotonic=1.5)
    assert changes == [ModelLoaded("a", None)]


def test_legacy_floating_expiry_counts_as_loading() -> None:
    tracker = ResidencyTracker()
    tracker.observe([], now=T0, monotonic=0)
    # Ollama 0.9 reports now + keep_alive while loading: the expiry moves with the clock.
    tracker.observe([model("a", at(10 + 300))], now=at(10), monotonic=10)
    assert tracker.observe([model("a", at(10.5 + 300))], now=at(10.5), monotonic=10.5) == []
    assert tracker.phase("a") is Phase.LOADING
    assert tracker.observe([model("a", at(11 + 300))], now=at(11), monotonic=11) == []
    # Load finished at 11.2: the expiry stops moving, and how far it moved dates the end.
    changes = tracker.observe([model("a", at(11.2 + 300))], now=at(11.5), monotonic=11.5)
    assert changes == [ModelLoaded("a", 1.2)]


def test_unsure_model_that_turns_out_loading() -> None:
    tracker = ResidencyTracker()
    tracker.observe([], now=T0, monotonic=0)
    tracker.observe([model("a", at(300))], now=at(1), monotonic=1)
    tracker.observe([model("a", None)], now=at(1.5), monotonic=1.5)
    assert tracker.phase("a") is Phase.LOADING
    assert tracker.observe([model("a", at(302))], now=at(2), monotonic=2) == [ModelLoaded("a", 1.0)]


def test_reload_in_place_is_a_new_load() -> None:
    tracker = ResidencyTracker()
    tracker.observe([model("a", at(300))], now=T0, monotonic=0)
    tracker.observe([model("a", None)], now=at(5), monotonic=5)
    assert tracker.phase("a") is Phase.LOADING
    assert tracker.observe([model("a", at(306))], now=at(6), monotonic=6) == [ModelLoaded("a", 1.0)]


def test_unload_reasons() -> None:
    tracker = ResidencyTracker()
    tracker.observe([model("a", at(300)), model("b", at(600))], now=T0, monotonic=0)
    changes = tracker.observe([], now=at(300), monotonic=300)
    assert changes == [
        ModelUnloaded("a", UnloadReason.EXPIRED),
        ModelUnloaded("b", UnloadReason.DISPLACED),
    ]


def test_unload_after_server_restart() -> None:
    tracker = ResidencyTracker()
    tracker.observe([model("a", at(300))], now=T0, monotonic=0)
    assert tracker.observe([], now=at(400), monotonic=400, server_restarted=True) == [
        ModelUnloaded("a", UnloadReason.SERVER_RESTARTED)
    ]


def test_models_never_loaded_leave_silently() -> None:
    tracker = ResidencyTracker()
    tracker.observe([], now=T0, monotonic=0)
    tracker.observe([model("a", None), model("b", at(300))], now=at(1), monotonic=1)
    assert tracker.observe([], now=at(2), monotonic=2) == []
    assert not tracker.settling


def test_in_flight_request_keeps_a_loaded_model_loaded() -> None:
    tracker = ResidencyTracker()
    tracker.observe([model("a", at(300))], now=T0, monotonic=0)
    # A request finished: the expiry jumped; the model stays loaded, nothing to report.
    assert tracker.observe([model("a", at(350))], now=at(50), monotonic=50) == []
    assert tracker.phase("a") is Phase.LOADED
