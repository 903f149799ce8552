"""TTFT stage math and the cold/warm verdict (pure, no server)."""

from datetime import UTC, datetime

import pytest

from custom_components.llm_warmth.core.backends.types import TimedReply
from custom_components.llm_warmth.core.load_figures import FigureSource, LoadFigures
from custom_components.llm_warmth.core.model_timing import ModelTiming
from custom_components.llm_warmth.core.summary import summary
from custom_components.llm_warmth.core.ttft import (
    BASELINE_SIZE,
    Classification,
    Stage,
    StageBreakdown,
    Verdict,
    WarmBaseline,
    _costliest_stage,
    breakdown,
    expanded_stages,
    judge,
    stage_ms,
)

from .english import english

MS = 1_000_000


def reply(
    *,
    ttft_ms: float,
    load_ms: float,
    prefill_ms: float,
    eval_count: int = 10,
    eval_ms: float = 100,
    prompt_tokens: int = 20,
) -> TimedReply:
    sent = 1_000 * MS
    return TimedReply(
        sent_ns=sent,
        headers_ns=sent + int(ttft_ms * MS) - 1,
        first_token_ns=sent + int(ttft_ms * MS),
        final_ns=sent + int((ttft_ms + eval_ms) * MS),
        load_duration_ns=int(load_ms * MS),
        prompt_eval_count=prompt_tokens,
        prompt_eval_duration_ns=int(prefill_ms * MS),
        eval_count=eval_count,
        eval_duration_ns=int(eval_ms * MS),
        total_duration_ns=int((load_ms + prefill_ms + eval_ms) * MS),
    )


def sample(load: float = 5, prefill: float = 40, decode: float = 10, overhead: float = 2,
           prompt_tokens: int = 20) -> StageBreakdown:  # fmt: skip
    return StageBreakdown(
        ttft_ms=load + prefill + decode + overhead,
        queue_and_load_ms=load,
        prefill_ms=prefill,
        first_decode_ms=decode,
        overhead_ms=overhead,
        decode_rate=100.0,
        prompt_tokens=prompt_tokens,
        eval_tokens=10,
    )


def test_breakdown_adds_up() -> None:
    stages = breakdown(reply(ttft_ms=1500, load_ms=1200, prefill_ms=250, eval_ms=200))
    assert stages.ttft_ms == 1500
    assert stages.queue_and_load_ms == 1200
    assert stages.prefill_ms == 250
    assert stages.first_decode_ms == 20  # 200 ms over 10 tokens
    # The first token leaves with the end of the prefill: the residual is the rest.
    assert stages.overhead_ms == 50
    assert stages.decode_rate == 50.0
    assert stages.prompt_tokens == 20
    assert stages.eval_tokens == 10


def test_breakdown_of_a_reply_without_tokens() -> None:
    stages = breakdown(reply(ttft_ms=10, load_ms=3, prefill_ms=5, eval_count=0, eval_ms=0))
    assert stages.first_decode_ms is None  # no token decoded: unknown, not 0
    assert stages.decode_rate is None
    assert stages.overhead_ms == 2


def test_without_baseline_residency_and_absolute_threshold_decide() -> None:
    empty = WarmBaseline()
    assert judge(sample(), was_resident=False, baseline=empty) == Verdict(
        Classification.COLD, Stage.LOAD
    )
    assert judge(sample(), was_resident=True, baseline=empty) == Verdict(
        Classification.WARM, Stage.NONE
    )
    assert judge(sample(load=800), was_resident=True, baseline=empty) == Verdict(
        Classification.COLD, Stage.LOAD
    )


def test_expanded_stages_against_the_baseline() -> None:
    baseline = WarmBaseline()
    for _ in range(3):
        baseline = baseline.add(sample())
    assert expanded_stages(sample(), baseline) == []
    # A long prompt prefills longer but at the same rate per token: not expanded.
    assert expanded_stages(sample(prefill=400, prompt_tokens=200), baseline) == []
    assert expanded_stages(sample(prefill=400), baseline) == [Stage.PREFILL]
    assert expanded_stages(sample(load=900, overhead=500), baseline) == [
        Stage.LOAD,
        Stage.OVERHEAD,
    ]
    # Three times as long but within the margin: noise, not an expansion.
    assert expanded_stages(sample(load=20), baseline) == []


def test_judge_with_baseline() -> None:
    baseline = WarmBaseline().add(sample())
    # Resident, but the load stage grew: reloaded (e.g. another num_ctx), a cold start.
    assert judge(sample(load=2000), was_resident=True, baseline=baseline) == Verdict(
        Classification.COLD, Stage.LOAD
    )
    # Warm, slow because of a long prefill.
    assert judge(sample(prefill=500), was_resident=True, baseline=baseline) == Verdict(
        Classification.WARM, Stage.PREFILL
    )
    assert judge(sample(), was_resident=True, baseline=baseline) == Verdict(
        Classification.WARM, Stage.NONE
    )
    # Not resident before: cold even when the load was quick (e.g. from the page cache).
    assert judge(sample(), was_resident=False, baseline=baseline).classification is (
        Classification.COLD
    )


def test_a_slow_warm_reply_without_baseline_names_its_costliest_stage() -> None:
    """Queued behind another request: 23.6 s of prefill, no warm probe yet (issue 7)."""
    empty = WarmBaseline()
    queued = sample(load=1, prefill=23_600, decode=180, overhead=5)
    assert judge(queued, was_resident=True, baseline=empty) == Verdict(
        Classification.WARM, Stage.PREFILL
    )
    lagging = sample(load=300, prefill=200, decode=10, overhead=900)
    assert judge(lagging, was_resident=True, baseline=empty) == Verdict(
        Classification.WARM, Stage.OVERHEAD
    )
    # Under a second without a baseline: not slow.
    assert judge(sample(load=100, prefill=700), was_resident=True, baseline=empty) == Verdict(
        Classification.WARM, Stage.NONE
    )


def test_a_reply_slow_overall_but_no_stage_alone_is_named_by_its_largest_growth() -> None:
    baseline = WarmBaseline().add(sample(load=10, prefill=10, overhead=10))
    # Each stage six times its normal but within the 100 ms margin: no stage expanded.
    # Together 180 ms against 30 ms: slow, and the prefill grew the most.
    spread = sample(load=60, prefill=70, overhead=50, decode=0)
    assert expanded_stages(spread, baseline) == []
    assert judge(spread, was_resident=True, baseline=baseline) == Verdict(
        Classification.WARM, Stage.PREFILL
    )
    # Under three times normal as a whole: not slow.
    assert judge(sample(load=25, prefill=25, overhead=25, decode=0), was_resident=True,
                 baseline=baseline).dominant_stage is Stage.NONE  # fmt: skip


def test_baseline_keeps_the_last_samples() -> None:
    baseline = WarmBaseline()
    for load in range(BASELINE_SIZE + 3):
        baseline = baseline.add(sample(load=load))
    assert len(baseline.samples) == BASELINE_SIZE
    assert baseline.stage_ms(Stage.LOAD) == 5  # median of 3..7
    assert WarmBaseline().stage_ms(Stage.LOAD) is None
    assert WarmBaseline().prefill_ms_per_token() is None


def test_model_timing_records_probes() -> None:
    at = datetime(2026, 11, 29, 7, 0, tzinfo=UTC)
    timing = ModelTiming(load_seconds=4.2)
    cold = sample(load=4000)
    timing = timing.with_probe(cold, Verdict(Classification.COLD, Stage.LOAD), at)
    assert timing.last_cold_ttft_ms == cold.ttft_ms
    assert timing.last_warm_ttft_ms is None
    assert timing.baseline.samples == ()  # cold samples do not shape "normal"
    warm = sample()
    timing = timing.with_probe(warm, Verdict(Classification.WARM, Stage.NONE), at)
    assert timing.last == warm
    assert timing.last_cold_ttft_ms == cold.ttft_ms
    assert timing.last_warm_ttft_ms == warm.ttft_ms
    assert timing.baseline.samples == (warm,)
    assert ModelTiming.from_dict(timing.as_dict()) == timing
    assert ModelTiming.from_dict(ModelTiming().as_dict()) == ModelTiming()


def test_a_lower_bound_never_replaces_an_exact_figure() -> None:
    """Polls see another client's load from its first sighting on: "at least", kept apart."""
    exact = ModelTiming().with_load(
        LoadFigures(
            load_seconds=7.0,
            load_source=FigureSource.SERVER,
            cold_request_seconds=7.8,
            cold_request_source=FigureSource.CLIENT,
        )
    )
    polled = exact.with_load(
        LoadFigures(
            load_seconds=0.5,
            load_source=FigureSource.POLLING,
            cold_request_seconds=0.6,
            cold_request_source=FigureSource.POLLING,
        )
    )
    assert (polled.load_seconds, polled.load_source, polled.load_at_least_seconds) == (
        7.0,
        FigureSource.SERVER,
        0.5,
    )
    assert (polled.cold_request_seconds, polled.cold_request_at_least_seconds) == (7.8, 0.6)
    assert ModelTiming.from_dict(polled.as_dict()) == polled
    # A newer exact figure is the newest thing known: the older lower bound goes.
    newer = polled.with_load(LoadFigures(load_seconds=6.5, load_source=FigureSource.EVENTS))
    assert (newer.load_seconds, newer.load_at_least_seconds) == (6.5, None)
    assert newer.cold_request_at_least_seconds == 0.6  # no newer cold request was timed


STORED_SAMPLE = sample().as_dict()


@pytest.mark.parametrize(
    "stored",
    [
        {"last": {"ttft_ms": 1}},
        {"last_cold_ttft_ms": "fast"},
        {"last_warm_ttft_ms": True},
        {"classification": "tepid", "dominant_stage": "load"},
        {"classification": "cold"},
        {"baseline": [3]},
        # Each part checked for its type where it is read: a breakdown that is no mapping,
        # a baseline that is no list, a time that is no text.
        {"last": ["ttft_ms", 1]},
        {"baseline": {"ttft_ms": 1}},
        {"baseline": "samples"},
        {"last_probe_at": 1764576000},
        {"last_probe_at": "yesterday"},
        {"last_probe_at": "2026-11-29T08:00:00"},
        {"last_cold_ttft_ms": 10**400},
        {"last_warm_ttft_ms": float("nan")},
        {"last": STORED_SAMPLE | {"ttft_ms": None}},
        {"last": STORED_SAMPLE | {"prompt_tokens": 2**64 + 1}},
        {"last": STORED_SAMPLE | {"eval_tokens": 1.5}},
        {"cold_request_seconds": 1.0, "cold_request_source": "guess"},
        # A polled figure is a lower bound: stored apart since 1.7, never as exact.
        {"load_seconds": 1.0, "load_source": "polling"},
        {"cold_request_seconds": 1.0, "cold_request_source": "polling"},
        {"load_at_least_seconds": "soon"},
    ],
)
def test_damaged_stored_timing(stored: dict[str, object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011
        ModelTiming.from_dict(stored)


def unmeasured(ttft: float, prefill: float) -> StageBreakdown:
    """A reply whose server reported the prefill but not the load (nor so the overhead)."""
    return StageBreakdown(
        ttft_ms=ttft,
        queue_and_load_ms=None,
        prefill_ms=prefill,
        first_decode_ms=10,
        overhead_ms=None,
        decode_rate=None,
        prompt_tokens=20,
        eval_tokens=1,
    )


def test_a_slow_reply_with_unreported_stages_names_only_what_explains_it() -> None:
    baseline = WarmBaseline((unmeasured(100, 60),) * 3)
    # The prefill grew: it is named.
    assert judge(unmeasured(2000, 1900), was_resident=True, baseline=baseline) == Verdict(
        Classification.WARM, Stage.PREFILL
    )
    # Slow, but what the server reported does not explain it: unknown, not "overhead".
    assert judge(unmeasured(2000, 70), was_resident=True, baseline=baseline) == Verdict(
        Classification.WARM, Stage.UNKNOWN
    )
    assert judge(unmeasured(120, 60), was_resident=True, baseline=baseline).dominant_stage is (
        Stage.NONE
    )
    # Without a baseline: above 1 s is slow, and 100 ms of prefill explains none of it.
    assert judge(unmeasured(1500, 100), was_resident=True, baseline=WarmBaseline()) == Verdict(
        Classification.WARM, Stage.UNKNOWN
    )
    # An unknown load is no cold start by itself; not being resident is.
    assert judge(unmeasured(1500, 100), was_resident=False, baseline=baseline) == Verdict(
        Classification.COLD, Stage.LOAD
    )


def test_a_summary_says_how_the_reply_went() -> None:
    cold = StageBreakdown(
        ttft_ms=35877.2,
        queue_and_load_ms=7463.1,
        prefill_ms=28402.3,
        first_decode_ms=170.0,
        overhead_ms=11.8,
        decode_rate=5.9,
        prompt_tokens=67,
        eval_tokens=4,
    )
    assert (
        english(summary(cold, Verdict(Classification.COLD, Stage.LOAD)))
        == "cold start: 35.9 s, 7.5 s of it loading, 28.4 s prefill"
    )
    assert english(summary(sample(), Verdict(Classification.WARM, Stage.NONE))) == "warm: 57 ms"
    slow = sample(prefill=1900)
    assert (
        english(summary(slow, Verdict(Classification.WARM, Stage.PREFILL)))
        == "warm but slow: 1.9 s, mostly prefill (1.9 s)"
    )
    assert english(summary(unmeasured(2000, 70), Verdict(Classification.WARM, Stage.UNKNOWN))) == (
        "warm but slow: 2.0 s, in stages the server did not report"
    )
    assert english(summary(unmeasured(2000, 70), Verdict(Classification.COLD, Stage.LOAD))) == (
        "cold start: 2.0 s, 70 ms prefill"
    )


def test_a_response_rounds_figures_as_people_read_them() -> None:
    """Milliseconds to 0.1, and below 1 ms two significant digits (never a false 0)."""
    sample = StageBreakdown(
        ttft_ms=35877.2134,
        queue_and_load_ms=7512.0491,
        prefill_ms=344.118,
        first_decode_ms=0.04321,
        overhead_ms=2.7649,
        decode_rate=5.91234,
        prompt_tokens=78,
        eval_tokens=16,
    )
    shown = sample.as_response()
    assert (shown["ttft_ms"], shown["queue_and_load_ms"], shown["prefill_ms"]) == (
        35877.2,
        7512.0,
        344.1,
    )
    assert (shown["first_decode_ms"], shown["overhead_ms"], shown["decode_rate"]) == (
        0.043,
        2.8,
        5.9,
    )
    assert (shown["prompt_tokens"], shown["queue_ms"]) == (78, None)
    # Stored figures keep their precision.
    assert sample.as_dict()["ttft_ms"] == 35877.2134


# ---------------------------------------------------------------- each rule at its figure


def staged(
    ttft: float,
    *,
    load: float | None,
    prefill: float | None,
    overhead: float | None,
    decode: float = 100.0,
    queue: float | None = None,
) -> StageBreakdown:
    return StageBreakdown(
        ttft_ms=ttft,
        queue_and_load_ms=load,
        prefill_ms=prefill,
        first_decode_ms=decode,
        overhead_ms=overhead,
        decode_rate=10.0,
        prompt_tokens=20,
        eval_tokens=10,
        queue_ms=queue,
    )


def test_each_figure_of_a_breakdown_is_rounded_as_stated() -> None:
    """Milliseconds to the microsecond, the rate to 0.01 token/s, the reuse to 0.1 %."""
    sent = 10**12
    stages = breakdown(
        TimedReply(
            sent_ns=sent,
            headers_ns=sent + 1,
            first_token_ns=sent + 123_456_789,
            final_ns=sent + 4_000_000_000,
            load_duration_ns=1_234_567,
            prompt_eval_count=3,
            prompt_cached_count=1,
            prompt_eval_duration_ns=2_345_678,
            eval_count=7,
            eval_duration_ns=3_000_000_000,
        )
    )
    assert (stages.ttft_ms, stages.queue_and_load_ms, stages.prefill_ms) == (
        123.457,
        1.235,
        2.346,
    )
    assert (stages.first_decode_ms, stages.decode_rate) == (428.571, 2.33)
    assert stages.overhead_ms == pytest.approx(119.876, abs=1e-9)
    assert stages.prompt_cache_reuse == 33.3


def test_the_load_alone_is_what_the_queue_leaves_and_each_stage_reads_its_own() -> None:
    queued = staged(2500.0, load=2100.0, prefill=300.0, overhead=100.0, queue=2000.0)
    assert stage_ms(queued, Stage.LOAD) == 100.0
    assert stage_ms(queued, Stage.QUEUE) == 2000.0
    assert stage_ms(queued, Stage.FIRST_DECODE) == 100.0
    assert stage_ms(staged(1.0, load=7.0, prefill=1.0, overhead=1.0), Stage.LOAD) == 7.0
    assert (
        stage_ms(staged(1.0, load=None, prefill=1.0, overhead=1.0, queue=5.0), Stage.LOAD) is None
    )


@pytest.mark.parametrize(
    ("value", "normal", "grew"),
    [
        (300.0, 100.0, False),
        (300.1, 100.0, True),
        (250.0, 100.0, False),
        (120.0, 20.0, False),
        (120.1, 20.0, True),
    ],
)
def test_a_stage_expanded_past_three_times_and_100_ms_over_its_normal(
    value: float, normal: float, grew: bool
) -> None:
    baseline = WarmBaseline((staged(normal + 200, load=normal, prefill=100.0, overhead=100.0),))
    sample = staged(value + 200, load=value, prefill=100.0, overhead=100.0)
    assert (Stage.LOAD in expanded_stages(sample, baseline)) is grew


def test_without_a_baseline_a_first_token_after_exactly_a_second_is_not_slow() -> None:
    at_edge = staged(1000.0, load=10.0, prefill=900.0, overhead=90.0)
    assert judge(at_edge, was_resident=True, baseline=WarmBaseline()).dominant_stage is Stage.NONE
    past = staged(1000.5, load=10.0, prefill=900.5, overhead=90.0)
    assert judge(past, was_resident=True, baseline=WarmBaseline()).dominant_stage is Stage.PREFILL
    # A load of exactly 500 ms without a baseline is no cold start; a little more is.
    loaded = staged(700.0, load=500.0, prefill=100.0, overhead=100.0)
    assert judge(loaded, was_resident=True, baseline=WarmBaseline()).classification == "warm"
    longer = staged(700.5, load=500.5, prefill=100.0, overhead=100.0)
    assert judge(longer, was_resident=True, baseline=WarmBaseline()).classification == "cold"


def test_a_reply_slow_in_sum_of_its_stages_is_slow_though_none_expanded() -> None:
    """Normal: load 100, prefill 400, overhead 20 (520 ms in all before the first token).
    Each stage at 2.9 times: none expanded, but the 1608 ms are past three times 520."""
    normal = staged(620.0, load=100.0, prefill=400.0, overhead=20.0)
    baseline = WarmBaseline((normal,) * 3)
    slow = staged(1608.0, load=290.0, prefill=1160.0, overhead=58.0)
    assert judge(slow, was_resident=True, baseline=baseline).dominant_stage is Stage.PREFILL
    assert judge(normal, was_resident=True, baseline=baseline).dominant_stage is Stage.NONE
    # Where the server does not split the first token's time, it is compared whole.
    unsplit = WarmBaseline((staged(200.0, load=None, prefill=40.0, overhead=None),) * 3)
    same_split = staged(400.0, load=None, prefill=40.0, overhead=None)
    assert judge(same_split, was_resident=True, baseline=unsplit).dominant_stage is Stage.NONE


def test_the_costliest_stage_is_the_one_most_over_its_normal() -> None:
    queued = staged(2500.0, load=2100.0, prefill=300.0, overhead=100.0, queue=2000.0)
    assert _costliest_stage(queued, WarmBaseline()) is Stage.QUEUE
    # The load's normal unknown (counted as 0), the prefill's 400: equal excess, the load first.
    baseline = WarmBaseline((staged(600.0, load=None, prefill=400.0, overhead=None),))
    tie = staged(2500.0, load=1000.0, prefill=1400.0, overhead=100.0)
    assert _costliest_stage(tie, baseline) is Stage.LOAD


@pytest.mark.parametrize(("prefill", "stage"), [(1500.0, Stage.UNKNOWN), (1600.0, Stage.PREFILL)])
def test_with_stages_unknown_a_known_one_is_named_when_it_explains_most_of_the_delay(
    prefill: float, stage: Stage
) -> None:
    """Normal 200 ms (prefill 100): 3000 ms is 2800 over it; a prefill 1400 over its own
    explains half (not most), 1500 over it most."""
    baseline = WarmBaseline((staged(200.0, load=None, prefill=100.0, overhead=None),) * 3)
    sample = staged(3000.0, load=None, prefill=prefill, overhead=None)
    assert _costliest_stage(sample, baseline) is stage


def test_with_stages_unknown_and_no_baseline_half_the_time_is_not_most() -> None:
    half = staged(3000.0, load=None, prefill=1500.0, overhead=None)
    assert _costliest_stage(half, WarmBaseline()) is Stage.UNKNOWN


def test_a_stored_token_count_is_under_2_31() -> None:
    stored = staged(1.0, load=1.0, prefill=1.0, overhead=1.0).as_dict()
    assert (
        StageBreakdown.from_dict({**stored, "prompt_tokens": 2**31 - 1}).prompt_tokens == 2**31 - 1
    )
    with pytest.raises(ValueError, match="token count"):
        StageBreakdown.from_dict({**stored, "prompt_tokens": 2**31})
