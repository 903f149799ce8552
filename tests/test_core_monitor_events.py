"""Which events a household sees of the monitor's changes, with what data (pure, no hass)."""

from datetime import UTC, datetime

from custom_components.llm_warmth.core.backends.llama_server import LLAMA_SERVER_CAPABILITIES
from custom_components.llm_warmth.core.backends.ollama import OLLAMA_CAPABILITIES
from custom_components.llm_warmth.core.backends.types import ResidencyState, ResidentModel
from custom_components.llm_warmth.core.load_figures import FigureSource, LoadFigures
from custom_components.llm_warmth.core.monitor import (
    ColdStartObserved,
    LoadObserved,
    ServerMonitor,
    ServerRestarted,
)
from custom_components.llm_warmth.core.monitor_events import ResidencyEvent, events_of
from custom_components.llm_warmth.core.peers import PeerReading, PeerView
from custom_components.llm_warmth.core.residency import ModelUnloaded, UnloadReason

from .test_core_monitor import reply

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
FIGURES = LoadFigures(load_seconds=4.0, load_source=FigureSource.SERVER)
FIGURE_DATA = {
    "load_seconds": 4.0,
    "load_source": "server",
    "cold_request_seconds": None,
    "cold_request_source": None,
    "reloaded": False,
}
PASSIVE = {"source": "passive", "ttft_ms": None, "queue_and_load_ms": None}


def test_a_restart_says_whether_the_version_changed() -> None:
    assert events_of(
        [ServerRestarted("0.9", "0.8", version_changed=True), ServerRestarted("0.9", None, False)]
    ) == [
        (
            ResidencyEvent.SERVER_RESTARTED,
            {"reason": "version_changed", "version": "0.9", "previous_version": "0.8"},
        ),
        (
            ResidencyEvent.SERVER_RESTARTED,
            {"reason": "reconnected", "version": "0.9", "previous_version": None},
        ),
    ]


def test_a_load_somebody_waited_for_is_also_a_cold_start_and_ours_is_not() -> None:
    waited = events_of([LoadObserved("tiny", FIGURES)])
    assert waited == [
        (
            ResidencyEvent.MODEL_LOADED,
            {"model": "tiny", "cold_start": True, **PASSIVE, "dominant_stage": "load"}
            | FIGURE_DATA,
        ),
        (
            ResidencyEvent.COLD_START,
            {"model": "tiny", **PASSIVE, "dominant_stage": "load"} | FIGURE_DATA,
        ),
    ]
    ours = events_of([LoadObserved("tiny", FIGURES, waited=False)])
    assert ours == [
        (ResidencyEvent.MODEL_LOADED, {"model": "tiny", "cold_start": False} | FIGURE_DATA)
    ]


def test_a_cold_probe_says_what_it_waited_for() -> None:
    monitor = ServerMonitor(LLAMA_SERVER_CAPABILITIES)
    monitor.observe(version="b1", resident=(), installed=(), now=T0, monotonic=0)
    monitor.probe_started("big", monotonic=1)
    probe, _changes = monitor.probe_finished(
        "big",
        reply(load_ms=900, ttft_ms=1000),
        was_resident=True,
        now=T0,
        monotonic=2,
        announce_window=10,
    )
    ((kind, data),) = events_of([ColdStartObserved("big", probe)])
    sample = probe.sample.as_response()
    assert kind is ResidencyEvent.COLD_START
    assert data == {
        "model": "big",
        "source": "probe",
        "ttft_ms": sample["ttft_ms"],
        "queue_and_load_ms": sample["queue_and_load_ms"],
        "dominant_stage": probe.verdict.dominant_stage.value,
        **LoadFigures().as_event_data(),
    }
    assert data["ttft_ms"] == 1000


def test_an_unload_names_why_and_what_came_instead() -> None:
    assert events_of([ModelUnloaded("tiny", UnloadReason.DISPLACED, ("big",))]) == [
        (
            ResidencyEvent.MODEL_UNLOADED,
            {"model": "tiny", "reason": "displaced", "replaced_by": ["big"]},
        )
    ]
    assert events_of([]) == []


def test_each_kind_is_fired_under_the_integrations_event_name() -> None:
    # The shell fires f"llm_warmth_{kind}": the names the README and automations use.
    assert [f"llm_warmth_{kind}" for kind in ResidencyEvent] == [
        "llm_warmth_server_restarted",
        "llm_warmth_model_loaded",
        "llm_warmth_cold_start",
        "llm_warmth_model_unloaded",
    ]


def test_the_peers_views_stay_on_every_snapshot_from_then() -> None:
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    view = {"lab/tiny": PeerView("lab", "tiny", PeerReading.READ)}
    assert monitor.set_peers(view) is True
    assert monitor.set_peers(dict(view)) is False  # the same views: nothing to show
    snapshot, _ = monitor.observe(version="1", resident=(), installed=(), now=T0, monotonic=0)
    assert snapshot.peers == view
    assert monitor.with_timings(snapshot).peers == view
    assert monitor.set_peers({}) is True
    assert monitor.with_timings(snapshot).peers == {}


def test_the_memory_resident_models_hold_is_known_only_when_each_ones_is() -> None:
    def resident(*sizes: int | None) -> tuple[ResidentModel, ...]:
        return tuple(
            ResidentModel(name=f"m{i}", state=ResidencyState.LOADED, size_vram=size)
            for i, size in enumerate(sizes)
        )

    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    snapshot, _ = monitor.observe(
        version="1", resident=resident(2, 3), installed=(), now=T0, monotonic=0
    )
    assert snapshot.resident_vram == 5
    snapshot, _ = monitor.observe(
        version=None, resident=resident(2, None), installed=None, now=T0, monotonic=1
    )
    assert snapshot.resident_vram is None
    snapshot, _ = monitor.observe(version=None, resident=(), installed=None, now=T0, monotonic=2)
    assert snapshot.resident_vram == 0
