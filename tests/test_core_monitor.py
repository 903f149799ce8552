"""The pure monitor: readings in, snapshot and changes out, clocks passed in (no hass)."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from custom_components.llm_warmth.core.backends.llama_server import LLAMA_SERVER_CAPABILITIES
from custom_components.llm_warmth.core.backends.llama_swap import LLAMA_SWAP_CAPABILITIES
from custom_components.llm_warmth.core.backends.ollama import OLLAMA_CAPABILITIES
from custom_components.llm_warmth.core.backends.types import (
    InstalledModel,
    ResidencyState,
    ResidentModel,
    TimedReply,
)
from custom_components.llm_warmth.core.model_timing import ModelTiming
from custom_components.llm_warmth.core.monitor import (
    INSTALLED_REFRESH_SECONDS,
    VERSION_REFRESH_SECONDS,
    ColdStartObserved,
    LoadObserved,
    ServerMonitor,
    ServerRestarted,
)
from custom_components.llm_warmth.core.residency import ModelUnloaded, UnloadReason
from custom_components.llm_warmth.core.ttft import Classification

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
LOADING, LOADED, SLEEPING = (
    ResidencyState.LOADING,
    ResidencyState.LOADED,
    ResidencyState.SLEEPING,
)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def model(name: str, state: ResidencyState = LOADED, context: int | None = 512) -> ResidentModel:
    return ResidentModel(name=name, state=state, context_length=context)


def reply(*, load_ms: float | None, ttft_ms: float = 900) -> TimedReply:
    sent = 10**12
    return TimedReply(
        sent_ns=sent,
        headers_ns=sent + 1,
        first_token_ns=sent + int(ttft_ms * 1e6),
        final_ns=sent + int((ttft_ms + 50) * 1e6),
        load_duration_ns=None if load_ms is None else int(load_ms * 1e6),
        prompt_eval_count=10,
        prompt_cached_count=0,
        prompt_eval_duration_ns=int(50e6),
        eval_count=2,
        eval_duration_ns=int(20e6),
    )


def test_the_first_poll_must_read_the_version() -> None:
    monitor = ServerMonitor(LLAMA_SERVER_CAPABILITIES)
    assert monitor.version_due(0.0)
    with pytest.raises(ValueError, match="version"):
        monitor.observe(version=None, resident=(), installed=None, now=T0, monotonic=0.0)


def test_what_a_poll_reads_and_when() -> None:
    monitor = ServerMonitor(LLAMA_SERVER_CAPABILITIES)
    snapshot, changes = monitor.observe(
        version="b1",
        resident=(model("tiny"), model("big", SLEEPING)),
        installed=(InstalledModel("tiny"), InstalledModel("big")),
        now=T0,
        monotonic=0.0,
    )
    assert changes == []  # the first poll is the baseline
    assert snapshot.models == {"tiny", "big"}
    assert set(snapshot.resident) == {"tiny", "big"}
    assert set(snapshot.held) == {"tiny"}  # asleep: its weights are gone
    assert not monitor.version_due(VERSION_REFRESH_SECONDS - 1)
    assert monitor.version_due(VERSION_REFRESH_SECONDS)
    assert not monitor.installed_due((model("tiny"),), 1.0)
    assert monitor.installed_due((model("new"),), 1.0)  # an unknown model is resident
    assert monitor.installed_due((), INSTALLED_REFRESH_SECONDS)
    monitor.poll_failed(unreachable=False)
    assert monitor.version_due(1.0)  # first thing after a failed poll


def test_a_model_first_seen_on_ollama_0_9_is_unsure_in_every_snapshot_until_told() -> None:
    """Its warmth reads loading for that poll (core/warmth.py), and after a probe too."""
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    monitor.observe(version="0.9.3", resident=(), installed=(), now=T0, monotonic=0.0)
    listed = replace(model("qwen3"), expires_at=at(300))
    snapshot, _ = monitor.observe(
        version=None, resident=(listed,), installed=None, now=at(1), monotonic=1.0
    )
    assert snapshot.unsure == {"qwen3"}
    assert snapshot.loading == frozenset()
    assert monitor.with_timings(snapshot).unsure == {"qwen3"}
    snapshot, _ = monitor.observe(
        version=None, resident=(listed,), installed=None, now=at(1.5), monotonic=1.5
    )
    assert snapshot.unsure == frozenset()  # the same expiry: it was loaded


def test_a_restart_is_a_server_that_came_back_or_changed_version() -> None:
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    monitor.observe(version="0.9.3", resident=(), installed=(), now=T0, monotonic=0.0)
    monitor.poll_failed(unreachable=False)  # slow or garbled: no restart
    _, changes = monitor.observe(version="0.9.3", resident=(), installed=None, now=T0, monotonic=1)
    assert changes == []
    monitor.poll_failed(unreachable=True)
    _, changes = monitor.observe(version="0.9.3", resident=(), installed=None, now=T0, monotonic=2)
    assert changes == [ServerRestarted("0.9.3", "0.9.3", version_changed=False)]
    _, changes = monitor.observe(version="0.10.0", resident=(), installed=None, now=T0, monotonic=3)
    assert changes == [ServerRestarted("0.10.0", "0.9.3", version_changed=True)]


def test_a_pushed_load_is_timed_by_the_events_and_a_displacement_named() -> None:
    monitor = ServerMonitor(LLAMA_SWAP_CAPABILITIES)
    monitor.observe(version="v250", resident=(model("a"),), installed=(), now=T0, monotonic=0)
    _, changes = monitor.observe(
        version=None, resident=(model("b", LOADING),), installed=None, now=at(1), monotonic=1,
        pushed=True,
    )  # fmt: skip
    assert changes == [ModelUnloaded("a", UnloadReason.DISPLACED, ("b",))]
    _, changes = monitor.observe(
        version=None, resident=(model("b"),), installed=None, now=at(3.5), monotonic=3.5,
        pushed=True,
    )  # fmt: skip
    (load,) = changes
    assert isinstance(load, LoadObserved)
    assert (load.figures.load_seconds, load.figures.load_source) == (2.5, "events")
    assert load.figures.cold_request_seconds is None
    assert monitor.timings["b"].load_seconds == 2.5


def test_an_unknown_context_on_one_side_is_no_reload() -> None:
    monitor = ServerMonitor(LLAMA_SERVER_CAPABILITIES)
    monitor.observe(version="b1", resident=(model("a"),), installed=(), now=T0, monotonic=0)
    for second, context in ((1, None), (2, 512), (3, None)):
        _, changes = monitor.observe(
            version=None,
            resident=(model("a", context=context),),
            installed=None,
            now=at(second),
            monotonic=second,
        )
        assert changes == []
    _, changes = monitor.observe(
        version=None, resident=(model("a", context=4096),), installed=None, now=at(4), monotonic=4
    )
    (reload,) = changes
    assert isinstance(reload, LoadObserved)
    assert reload.figures.reloaded


def test_a_probe_that_loaded_the_model_and_one_that_waited() -> None:
    monitor = ServerMonitor(LLAMA_SERVER_CAPABILITIES)
    monitor.observe(version="b1", resident=(), installed=(), now=T0, monotonic=0)
    monitor.probe_started("big", monotonic=1)
    monitor.observe(version=None, resident=(model("big"),), installed=None, now=at(9), monotonic=9)
    probe, changes = monitor.probe_finished(
        "big",
        reply(load_ms=7000, ttft_ms=7100),
        was_resident=False,
        now=at(9),
        monotonic=9,
        announce_window=10,
    )
    assert probe.verdict.classification is Classification.COLD
    (load,) = changes
    assert isinstance(load, LoadObserved)
    assert load.probe == probe
    # llama-server has no load figure of its own: the client's reading of its event.
    assert (load.figures.load_seconds, load.figures.load_source) == (7.0, "client")
    # Warm, but slow for a reason the server did not report, and resident all along.
    monitor.probe_started("big", monotonic=10)
    probe, changes = monitor.probe_finished(
        "big",
        reply(load_ms=900, ttft_ms=1000),
        was_resident=True,
        now=at(11),
        monotonic=11,
        announce_window=10,
    )
    assert changes == [ColdStartObserved("big", probe)]
    assert monitor.probe_failed("nothing") == []


def test_a_load_we_asked_for_is_timed_exactly_and_nobody_waited_for_it() -> None:
    monitor = ServerMonitor(LLAMA_SERVER_CAPABILITIES)
    monitor.observe(version="b1", resident=(), installed=(), now=T0, monotonic=0)
    monitor.probe_started("big", monotonic=1)
    # The poll while it loads, and the one right after: ours, not another client's.
    for second in (5, 8):
        _, changes = monitor.observe(
            version=None, resident=(model("big"),), installed=None, now=at(second), monotonic=second
        )
        assert changes == []
    (load,) = monitor.own_load_finished(
        "big", seconds=7.0004, was_resident=False, monotonic=8, announce_window=10
    )
    assert isinstance(load, LoadObserved)
    assert (load.waited, load.probe) == (False, None)
    assert (load.figures.load_seconds, load.figures.load_source) == (7.0, "client")
    assert load.figures.cold_request_seconds is None
    assert monitor.timings["big"].load_seconds == 7.0
    # Polls after it see nothing new.
    _, changes = monitor.observe(
        version=None, resident=(model("big"),), installed=None, now=at(12), monotonic=12
    )
    assert changes == []
    # Resident already, no new runner: nothing was loaded.
    monitor.probe_started("big", monotonic=13)
    assert (
        monitor.own_load_finished(
            "big", seconds=0.01, was_resident=True, monotonic=13, announce_window=10
        )
        == []
    )


def test_a_load_heard_of_shows_loading_from_then_until_the_model_is_listed() -> None:
    """Ollama 0.30+: an agent's turn began on a model the server does not list yet."""
    current = replace(OLLAMA_CAPABILITIES, lists_while_loading=False)
    monitor = ServerMonitor(current)
    monitor.observe(version="0.34.4", resident=(), installed=None, now=at(0), monotonic=0.0)
    snapshot = monitor.load_heard("qwen3:8b", now=at(10), monotonic=10.0, until=130.0)
    assert snapshot is not None
    assert snapshot.loading == frozenset({"qwen3:8b"})
    assert snapshot.loading_since["qwen3:8b"] == at(10)
    assert monitor.load_heard("qwen3:8b", now=at(11), monotonic=11.0, until=131.0) is None
    later, _ = monitor.observe(
        version=None, resident=(), installed=None, now=at(13), monotonic=13.0
    )
    assert later.loading_since["qwen3:8b"] == at(10)  # since the turn began, 3 s ago
    listed, _ = monitor.observe(
        version=None, resident=(model("qwen3:8b"),), installed=None, now=at(20), monotonic=20.0
    )
    assert listed.loading == frozenset()
    # Not listed by its end: the turn went elsewhere, or failed; no longer loading.
    monitor.load_heard("tiny", now=at(30), monotonic=30.0, until=40.0)
    gone, _ = monitor.observe(
        version=None, resident=(model("qwen3:8b"),), installed=None, now=at(41), monotonic=41.0
    )
    assert "tiny" not in gone.loading
    # A server that lists its loads itself, or a model resident: nothing to add.
    plain = ServerMonitor(OLLAMA_CAPABILITIES)
    plain.observe(version="0.9.3", resident=(), installed=None, now=at(0), monotonic=0.0)
    assert plain.load_heard("tiny", now=at(1), monotonic=1.0, until=60.0) is None
    assert monitor.load_heard("qwen3:8b", now=at(42), monotonic=42.0, until=99.0) is None
    assert ServerMonitor(current).load_heard("x", now=at(0), monotonic=0.0, until=9.0) is None


def test_a_name_without_its_tag_is_the_latest_one() -> None:
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    assert monitor.resolve_model("llama3.2") == "llama3.2"  # nothing known yet
    monitor.observe(
        version="0.9.3",
        resident=(),
        installed=[InstalledModel(name="llama3.2:latest"), InstalledModel(name="qwen3:8b")],
        now=at(0),
        monotonic=0.0,
    )
    assert monitor.resolve_model("llama3.2") == "llama3.2:latest"
    assert monitor.resolve_model("qwen3") == "qwen3"  # no qwen3:latest
    assert monitor.resolve_model("qwen3:8b") == "qwen3:8b"


def test_the_installed_models_are_read_each_minute_and_the_version_each_five() -> None:
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    monitor.observe(version="0.9.3", resident=(), installed=(), now=at(100), monotonic=100.0)
    assert not monitor.installed_due((), 101.0)
    assert not monitor.installed_due((), 159.9)
    assert monitor.installed_due((), 160.0)
    assert not monitor.version_due(399.9)
    assert monitor.version_due(400.0)


def test_an_early_unload_reads_the_version_at_the_next_poll_not_at_every_one() -> None:
    """A model gone before its expiry may be an upgrade's restart: one version read."""
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    held = replace(model("tiny"), expires_at=at(3600))
    monitor.observe(version="0.9.3", resident=(held,), installed=(), now=at(0), monotonic=0.0)
    assert not monitor.version_due(5.0)
    monitor.observe(version=None, resident=(), installed=None, now=at(5), monotonic=5.0)
    assert monitor.version_due(6.0)  # gone at 5 s, an hour early, nothing in sight
    # The poll that read the version saw the same departure: no more reads for it.
    monitor.observe(version="0.9.3", resident=(), installed=None, now=at(6), monotonic=6.0)
    assert not monitor.version_due(7.0)
    same_poll = ServerMonitor(OLLAMA_CAPABILITIES)
    same_poll.observe(version="0.9.3", resident=(held,), installed=(), now=at(0), monotonic=0.0)
    same_poll.observe(version="0.9.3", resident=(), installed=None, now=at(5), monotonic=5.0)
    assert not same_poll.version_due(6.0)


def test_a_deleted_model_is_forgotten_and_the_memory_held_is_remembered() -> None:
    monitor = ServerMonitor(OLLAMA_CAPABILITIES, timings={"a": ModelTiming(), "b": ModelTiming()})
    monitor.observe(
        version="0.9.3",
        resident=(
            replace(model("a"), size=5 * 2**30, size_vram=3 * 2**30),
            replace(model("b"), size=2 * 2**30, size_vram=None),
            replace(model("c", SLEEPING), size=7 * 2**30),
            replace(model("d"), size=None, size_vram=None),
        ),
        installed=(InstalledModel("a"), InstalledModel("b"), InstalledModel("gone")),
        now=at(0),
        monotonic=0.0,
    )
    # What the GPU holds, else the whole size; a sleeping model holds nothing.
    assert monitor.last_sizes == {"a": 3 * 2**30, "b": 2 * 2**30}
    monitor.probe_started("gone", monotonic=1.0)
    monitor.observe(
        version=None, resident=(model("gone"),), installed=None, now=at(2), monotonic=2.0
    )
    monitor.probe_finished(
        "gone", reply(load_ms=900), was_resident=False, now=at(2), monotonic=2.0,
        announce_window=10,
    )  # fmt: skip
    assert set(monitor.timings) == {"a", "b", "gone"}
    # "gone" was deleted: neither installed nor resident at the next listing.
    monitor.observe(
        version=None,
        resident=(replace(model("a"), size_vram=3 * 2**30),),
        installed=(InstalledModel("a"), InstalledModel("b")),
        now=at(70),
        monotonic=70.0,
    )
    assert set(monitor.timings) == {"a", "b"}
    assert set(monitor.last_sizes) == {"a", "b"}


def test_a_load_polling_saw_is_one_a_request_waited_for() -> None:
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    monitor.observe(version="0.9.3", resident=(), installed=(), now=at(0), monotonic=0.0)
    monitor.observe(
        version=None, resident=(model("a", LOADING),), installed=None, now=at(1), monotonic=1.0
    )
    _, (load,) = monitor.observe(
        version=None, resident=(model("a"),), installed=None, now=at(4), monotonic=4.0
    )
    assert isinstance(load, LoadObserved)
    assert load.waited
    # Ollama lists a model while its request loads it: the request's time, not the load's.
    assert (load.figures.cold_request_seconds, load.figures.load_seconds) == (3.0, None)


def test_a_model_we_unload_is_gone_on_request() -> None:
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    held = replace(model("a"), expires_at=at(3600))
    monitor.observe(version="0.9.3", resident=(held,), installed=(), now=at(0), monotonic=0.0)
    monitor.evicting("a")
    _, changes = monitor.observe(
        version=None, resident=(), installed=None, now=at(1), monotonic=1.0
    )
    assert changes == [ModelUnloaded("a", UnloadReason.ON_REQUEST)]


def test_a_load_we_announced_gives_no_second_event_within_its_window() -> None:
    """Our load answered before any poll saw the model; the polls after it are ours."""
    monitor = ServerMonitor(LLAMA_SERVER_CAPABILITIES)
    monitor.observe(version="b1", resident=(), installed=(), now=at(0), monotonic=0.0)
    monitor.probe_started("big", monotonic=1.0)
    (load,) = monitor.own_load_finished(
        "big", seconds=4.0, was_resident=False, monotonic=5.0, announce_window=10
    )
    assert isinstance(load, LoadObserved)
    _, changes = monitor.observe(
        version=None, resident=(model("big", LOADING),), installed=None, now=at(6), monotonic=6
    )
    assert changes == []
    _, changes = monitor.observe(
        version=None, resident=(model("big"),), installed=None, now=at(8), monotonic=8.0
    )
    assert changes == []
    # The same for a probe's load.
    monitor.probe_started("tiny", monotonic=9.0)
    _, (load,) = monitor.probe_finished(
        "tiny", reply(load_ms=1234.5678, ttft_ms=1300.25), was_resident=False, now=at(11),
        monotonic=11.0, announce_window=10,
    )  # fmt: skip
    assert isinstance(load, LoadObserved)
    assert load.figures.load_seconds == 1.235
    assert load.figures.cold_request_seconds == 1.35  # sent to its last byte: 1300.25 + 50 ms
    assert load.figures.cold_request_source == "client"
    _, changes = monitor.observe(
        version=None,
        resident=(model("big"), model("tiny", LOADING)),
        installed=None,
        now=at(12),
        monotonic=12.0,
    )
    assert changes == []
    _, changes = monitor.observe(
        version=None,
        resident=(model("big"), model("tiny")),
        installed=None,
        now=at(13),
        monotonic=13.0,
    )
    assert changes == []


def test_two_requests_of_ours_that_load_the_same_model_announce_one_load() -> None:
    monitor = ServerMonitor(LLAMA_SERVER_CAPABILITIES)
    monitor.observe(version="b1", resident=(), installed=(), now=at(0), monotonic=0.0)
    monitor.probe_started("big", monotonic=1.0)
    monitor.probe_started("big", monotonic=1.5)
    monitor.probe_started("big", monotonic=1.7)
    first = monitor.own_load_finished(
        "big", seconds=4.0, was_resident=False, monotonic=5.0, announce_window=10
    )
    assert [type(c) for c in first] == [LoadObserved]
    # Both waited for the same load and answered after it: no second or third load.
    assert (
        monitor.own_load_finished(
            "big", seconds=3.5, was_resident=False, monotonic=5.1, announce_window=10
        )
        == []
    )
    _, changes = monitor.probe_finished(
        "big", reply(load_ms=3300, ttft_ms=3400), was_resident=False, now=at(5.2),
        monotonic=5.2, announce_window=10,
    )  # fmt: skip
    assert changes == []


def test_a_warm_probe_of_a_resident_model_changes_nothing() -> None:
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    monitor.observe(version="0.9.3", resident=(model("a"),), installed=(), now=at(0), monotonic=0)
    monitor.probe_started("a", monotonic=1.0)
    probe, changes = monitor.probe_finished(
        "a", reply(load_ms=1, ttft_ms=80), was_resident=True, now=at(1.1), monotonic=1.1,
        announce_window=10,
    )  # fmt: skip
    assert probe.verdict.classification is not Classification.COLD
    assert changes == []


def test_a_load_that_began_before_our_probe_is_handed_out_when_the_probe_ends() -> None:
    """Another client's load ran on when our probe started: its figure is polling's."""
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    monitor.observe(version="0.9.3", resident=(), installed=(), now=at(0), monotonic=0.0)
    monitor.observe(
        version=None, resident=(model("a", LOADING),), installed=None, now=at(1), monotonic=1.0
    )
    monitor.probe_started("a", monotonic=2.0)
    _, changes = monitor.observe(
        version=None, resident=(model("a"),), installed=None, now=at(4), monotonic=4.0
    )
    assert changes == []  # perhaps ours: held until the probe ends
    _, changes = monitor.probe_finished(
        "a", reply(load_ms=2000, ttft_ms=2100), was_resident=True, now=at(4.2), monotonic=4.2,
        announce_window=10,
    )  # fmt: skip
    (load,) = changes
    assert isinstance(load, LoadObserved)
    assert load.probe is None
    assert (load.figures.cold_request_seconds, load.figures.cold_request_source) == (
        3.0,
        "polling",
    )


def test_a_probe_that_answered_before_any_poll_saw_its_load_reports_the_load() -> None:
    monitor = ServerMonitor(OLLAMA_CAPABILITIES)
    monitor.observe(version="0.9.3", resident=(), installed=(), now=at(0), monotonic=0.0)
    monitor.probe_started("a", monotonic=1.0)
    _, (load,) = monitor.probe_finished(
        "a", reply(load_ms=2000, ttft_ms=2100), was_resident=False, now=at(3.2), monotonic=3.2,
        announce_window=10,
    )  # fmt: skip
    assert isinstance(load, LoadObserved)
    assert (load.figures.load_seconds, load.figures.load_source) == (2.0, "server")


def test_a_model_that_left_unexplained_is_decided_3_seconds_after_it_left() -> None:
    """No other model came in its place within 3 s: a poll from then on calls it unloaded;
    the coordinator's timer is set for exactly then."""
    monitor = ServerMonitor(LLAMA_SWAP_CAPABILITIES)
    monitor.observe(version="v1", resident=(model("a"),), installed=(), now=at(0), monotonic=10.0)
    assert monitor.undecided_until is None
    monitor.observe(version=None, resident=(), installed=None, now=at(2), monotonic=12.0)
    assert monitor.undecided_until == 15.0


def test_the_same_reading_at_a_later_poll_is_the_same_snapshot() -> None:
    """The coordinator tells its entities only of a snapshot that differs: the poll's
    time and a loading model's worked-out start are no difference."""
    monitor = ServerMonitor(LLAMA_SERVER_CAPABILITIES)
    reading = (model("a"), model("b", LOADING))
    first, _ = monitor.observe(
        version="b1", resident=reading, installed=(), now=at(0), monotonic=0.0
    )
    again, changes = monitor.observe(
        version=None, resident=reading, installed=None, now=at(5), monotonic=5.0
    )
    assert changes == []
    assert first.polled_at != again.polled_at
    assert again == first
