"""What the server's and the models' sensors read from a snapshot (core/model_readings.py)."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.backends.types import (
    KEPT_FOREVER_AFTER,
    InstalledModel,
    ResidencyState,
    ResidentModel,
)
from custom_components.llm_warmth.core.load_figures import FigureSource
from custom_components.llm_warmth.core.model_readings import (
    Unknown,
    classification,
    classification_attrs,
    context_length,
    display_name,
    gpu_share,
    kept_forever_attrs,
    last_figure,
    load_figure_attrs,
    load_figure_unknown,
    lower_bound_unknown,
    make,
    make_attrs,
    model_details,
    ready_expected_at,
    timing,
    total,
    unloads_at,
    unloads_at_unknown,
    vram,
    warmth_attrs,
    warmth_state,
)
from custom_components.llm_warmth.core.model_timing import ModelTiming
from custom_components.llm_warmth.core.monitor import ServerSnapshot
from custom_components.llm_warmth.core.peers import PeerReading, PeerView
from custom_components.llm_warmth.core.ttft import (
    Classification,
    Stage,
    StageBreakdown,
    Verdict,
)
from custom_components.llm_warmth.core.warmth import Warmth

NOW = datetime(2026, 3, 4, 8, 30, tzinfo=UTC)
MODEL = "qwen3:8b"
SAMPLE = StageBreakdown(
    ttft_ms=900.0,
    queue_and_load_ms=600.0,
    prefill_ms=200.0,
    first_decode_ms=50.0,
    overhead_ms=50.0,
    decode_rate=42.5,
    prompt_tokens=31,
    eval_tokens=12,
    prompt_cache_reuse=75.0,
)


def resident(
    *,
    expires_in: timedelta | None = timedelta(minutes=5),
    state: ResidencyState = ResidencyState.LOADED,
    size: int | None = 4_000,
    size_vram: int | None = 3_000,
    family: str | None = None,
    parameter_size: str | None = None,
    context_length: int | None = None,
) -> ResidentModel:
    """Return ``MODEL`` as a poll at ``NOW`` saw it held."""
    return ResidentModel(
        name=MODEL,
        state=state,
        size=size,
        size_vram=size_vram,
        expires_at=None if expires_in is None else NOW + expires_in,
        family=family,
        parameter_size=parameter_size,
        context_length=context_length,
    )


def snapshot(
    *,
    held: ResidentModel | None = None,
    installed: InstalledModel | None = None,
    loading: bool = False,
    since: datetime | None = None,
    measured: ModelTiming | None = None,
    probing: bool = False,
    peer: PeerView | None = None,
) -> ServerSnapshot:
    """Return a snapshot at ``NOW`` with what it says of ``MODEL``."""
    return ServerSnapshot(
        version="0.9.0",
        resident={MODEL: held} if held else {},
        installed={MODEL: installed} if installed else {},
        loading=frozenset({MODEL}) if loading else frozenset(),
        timings={MODEL: measured} if measured else {},
        polled_at=NOW,
        probing=frozenset({MODEL}) if probing else frozenset(),
        loading_since={MODEL: since} if since else {},
        peers={MODEL: peer} if peer else {},
    )


def test_display_name_drops_only_the_default_tag() -> None:
    assert display_name("llama3.2:latest") == "llama3.2"
    assert display_name("qwen3:8b") == "qwen3:8b"
    # Only at the end: a name that merely holds it stays as it is.
    assert display_name("a:latest-b") == "a:latest-b"


def test_model_details_read_installed_or_resident() -> None:
    installed = InstalledModel(
        name=MODEL, family="qwen3", parameter_size="8.2B", quantization_level="Q4_K_M"
    )
    assert model_details(installed) == {
        "family": "qwen3",
        "parameter_size": "8.2B",
        "quantization": "Q4_K_M",
    }
    assert model_details(None) == {"family": None, "parameter_size": None, "quantization": None}


def test_make_joins_what_was_told_installed_first() -> None:
    installed = InstalledModel(name=MODEL, family="qwen3", quantization_level="Q4_K_M")
    held = resident(family="other", parameter_size="1B")
    both = snapshot(held=held, installed=installed)
    assert make(both, MODEL) == "qwen3 · Q4_K_M"
    assert make_attrs(both, MODEL) == {
        "family": "qwen3",
        "parameter_size": None,
        "quantization": "Q4_K_M",
    }
    # Not installed (a model loaded by a path): as it is resident.
    assert make(snapshot(held=held), MODEL) == "other · 1B"
    assert make(snapshot(), MODEL) is None
    assert make_attrs(snapshot(), MODEL) == model_details(None)


def test_timing_is_empty_before_anything_was_measured() -> None:
    measured = ModelTiming(load_seconds=3.0)
    assert timing(snapshot(measured=measured), MODEL) is measured
    assert timing(snapshot(), MODEL) == ModelTiming()


def test_last_probe_figures_and_verdict() -> None:
    probed = snapshot(
        measured=ModelTiming(last=SAMPLE, last_verdict=Verdict(Classification.COLD, Stage.PREFILL))
    )
    assert last_figure(probed, MODEL, lambda b: b.decode_rate) == 42.5
    assert classification(probed, MODEL) == "cold"
    assert classification_attrs(probed, MODEL) == {"dominant_stage": "prefill", "prompt_tokens": 31}
    never = snapshot()
    assert last_figure(never, MODEL, lambda b: b.decode_rate) is None
    assert classification(never, MODEL) is None
    assert classification_attrs(never, MODEL) == {"dominant_stage": None, "prompt_tokens": None}


def test_load_figure_attributes_and_why_it_is_unknown() -> None:
    assert load_figure_attrs(FigureSource.SERVER, None) == {
        "source": "server",
        "at_least_seconds": None,
    }
    assert load_figure_attrs(None, 12.5) == {"source": None, "at_least_seconds": 12.5}
    assert load_figure_unknown(None) is Unknown.NOT_TIMED_YET
    # A lower bound of 0 seconds is a lower bound all the same.
    assert load_figure_unknown(0.0) is Unknown.LOWER_BOUND_ONLY
    assert load_figure_unknown(12.5) is Unknown.LOWER_BOUND_ONLY
    # The lower bound's own sensor: unknown only while there is none (0 s is one).
    assert lower_bound_unknown(None) is Unknown.NO_PARTLY_SEEN_LOAD
    assert lower_bound_unknown(0.0) is None


@given(st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=2**40))))
def test_a_total_is_known_only_when_every_part_is(values: list[int | None]) -> None:
    result = total(values)
    if None in values:
        assert result is None
    else:
        assert result == sum(v for v in values if v is not None)


def test_total_of_nothing_is_zero() -> None:
    assert total([]) == 0
    assert total([1, 2]) == 3


def test_unloads_at_while_loaded_with_an_end() -> None:
    held = snapshot(held=resident())
    assert unloads_at(held, MODEL) == NOW + timedelta(minutes=5)
    assert unloads_at_unknown(held, MODEL) is None
    assert kept_forever_attrs(held, MODEL) == {"kept_forever": False}


def test_unloads_at_is_unknown_when_not_loaded() -> None:
    cold = snapshot()
    assert unloads_at(cold, MODEL) is None
    assert unloads_at_unknown(cold, MODEL) is Unknown.NOT_LOADED
    assert kept_forever_attrs(cold, MODEL) == {"kept_forever": False}


def test_unloads_at_is_unknown_while_loading() -> None:
    # Loading wins, also over an end far ahead.
    loading = snapshot(held=resident(expires_in=KEPT_FOREVER_AFTER * 2), loading=True)
    assert unloads_at(loading, MODEL) is None
    assert unloads_at_unknown(loading, MODEL) is Unknown.LOADING
    assert kept_forever_attrs(loading, MODEL) == {"kept_forever": False}
    # Not yet listed as resident, but loading.
    assert unloads_at_unknown(snapshot(loading=True), MODEL) is Unknown.LOADING


@pytest.mark.parametrize(
    ("expires_in", "forever"),
    [
        (KEPT_FOREVER_AFTER, False),
        (KEPT_FOREVER_AFTER + timedelta(seconds=1), True),
    ],
)
def test_unloads_at_is_unknown_when_kept_forever(expires_in: timedelta, forever: bool) -> None:
    pinned = snapshot(held=resident(expires_in=expires_in))
    assert unloads_at(pinned, MODEL) == (None if forever else NOW + expires_in)
    assert unloads_at_unknown(pinned, MODEL) is (Unknown.KEPT_FOREVER if forever else None)
    assert kept_forever_attrs(pinned, MODEL) == {"kept_forever": forever}


def test_warmth_of_own_and_peer_models() -> None:
    assert warmth_state(snapshot(), MODEL) == Warmth.COLD
    assert warmth_state(snapshot(held=resident()), MODEL) == Warmth.WARM
    read = PeerView(
        peer="gpu-box", model="qwen3", reading=PeerReading.READ, warmth=Warmth.KEPT_WARM
    )
    # A peer's model reads as its own entry reads it, whatever this server holds.
    assert warmth_state(snapshot(peer=read), MODEL) == Warmth.KEPT_WARM
    unread = PeerView(peer="gpu-box", model="qwen3", reading=PeerReading.UNREACHABLE)
    assert warmth_state(snapshot(held=resident(), peer=unread), MODEL) is None


def test_a_model_first_seen_whose_load_is_not_told_yet_reads_loading() -> None:
    """Ollama 0.9 lists a loading model with an expiry: first seen, it is not known warm."""
    unsure = replace(snapshot(held=resident()), unsure=frozenset({MODEL}))
    assert warmth_state(unsure, MODEL) == Warmth.LOADING
    other = replace(snapshot(held=resident()), unsure=frozenset({"other"}))
    assert warmth_state(other, MODEL) == Warmth.WARM


def test_ready_expected_at_is_the_start_plus_the_last_load() -> None:
    since = NOW - timedelta(seconds=4)
    measured = ModelTiming(load_seconds=10.5)
    loading = snapshot(loading=True, since=since, measured=measured)
    assert ready_expected_at(loading, MODEL) == since + timedelta(seconds=10.5)
    # Not loading, its start not seen, or no exact figure yet: no time.
    assert ready_expected_at(snapshot(since=since, measured=measured), MODEL) is None
    assert ready_expected_at(snapshot(loading=True, measured=measured), MODEL) is None
    assert ready_expected_at(snapshot(loading=True, since=since), MODEL) is None


def test_warmth_attributes() -> None:
    since = NOW - timedelta(seconds=4)
    loading = snapshot(
        held=resident(state=ResidencyState.LOADING, family="qwen3"),
        loading=True,
        since=since,
        measured=ModelTiming(load_seconds=10.0),
        probing=True,
    )
    assert warmth_attrs(loading, MODEL) == {
        "server_state": "loading",
        "probe_running": True,
        "ready_expected_at": (since + timedelta(seconds=10)).isoformat(),
        "family": "qwen3",
        "parameter_size": None,
        "quantization": None,
    }
    installed = InstalledModel(name=MODEL, family="qwen3")
    peer = PeerView(
        peer="gpu-box",
        model="qwen3",
        reading=PeerReading.READ,
        server="GPU box",
        warmth=Warmth.WARM,
    )
    assert warmth_attrs(snapshot(installed=installed, peer=peer), MODEL) == {
        "server_state": None,
        "probe_running": False,
        "ready_expected_at": None,
        "family": "qwen3",
        "parameter_size": None,
        "quantization": None,
        "peer": "gpu-box",
        "peer_model": "qwen3",
        "peer_server": "GPU box",
        "peer_reading": "read",
    }


def test_memory_readings_of_a_resident_model() -> None:
    held = snapshot(held=resident(size=4_000, size_vram=3_000, context_length=8192))
    assert context_length(held, MODEL) == 8192
    assert vram(held, MODEL) == 3_000
    assert gpu_share(held, MODEL) == 75.0
    # Not told: unknown, not zero.
    unknown = snapshot(held=resident(size=None, size_vram=None))
    assert vram(unknown, MODEL) is None
    assert gpu_share(unknown, MODEL) is None


def test_memory_readings_of_a_model_not_resident() -> None:
    # Nothing of it is on the GPU; its context is not known.
    cold = snapshot()
    assert context_length(cold, MODEL) is None
    assert vram(cold, MODEL) == 0
    assert gpu_share(cold, MODEL) == 0
