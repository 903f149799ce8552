"""The diagnosis's verdicts from constructed runs (pure logic, no Home Assistant)."""

import contextlib
from datetime import UTC, datetime

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.diagnose import (
    Pattern,
    Recommendation,
    Run,
    Scenario,
    cold_vs_repeat,
    context_change,
    first_expanded,
    model_switch,
    prefill_per_token,
    prompt_cost,
    runs_table,
    verdict_as_dict,
)
from custom_components.llm_warmth.core.diagnosis import Diagnosis
from custom_components.llm_warmth.core.sentence import Duration, Number, Sentence
from custom_components.llm_warmth.core.ttft import StageBreakdown

from .conftest import GIB
from .english import english


def sample(
    ttft: float,
    load: float | None = 2.0,
    prefill: float | None = 40.0,
    decode: float | None = 30.0,
    tokens: int | None = 20,
    queue: float | None = None,
) -> StageBreakdown:
    return StageBreakdown(
        ttft_ms=ttft,
        queue_and_load_ms=load,
        prefill_ms=prefill,
        first_decode_ms=decode,
        overhead_ms=None,
        decode_rate=None,
        prompt_tokens=tokens,
        eval_tokens=1,
        queue_ms=queue,
    )


def run(
    label: str, s: StageBreakdown, *, before: bool = True, model: str = "big", **kw: object
) -> Run:
    return Run(label, model, s, resident_before=before, resident_after=True, **kw)  # type: ignore[arg-type]


WARM = run("repeat", sample(80.0))


def test_evicted_load_dominates() -> None:
    verdict = cold_vs_repeat(run("cold", sample(8400.0, load=8100.0), before=False), WARM)
    assert verdict.pattern is Pattern.EVICTED
    assert verdict.stage == "load"
    assert verdict.expanded_ms == 8098.0
    assert (
        english(verdict.said)
        == "one slow request, then normal: the model was evicted (load 8.1 s of 8.4 s)"
    )
    assert verdict.recommendation is Recommendation.KEEP_RESIDENT
    assert verdict_as_dict(verdict)["recommendation"] == "keep_resident"


def test_reload_for_another_context() -> None:
    cold = run("cold", sample(3000.0, load=2800.0), num_ctx_before=4096, num_ctx_after=8192)
    verdict = cold_vs_repeat(cold, WARM)
    assert verdict.pattern is Pattern.CONTEXT_RELOAD
    assert (
        english(verdict.said)
        == "slow after a context change: reload for num_ctx 8192 vs 4096 (load 2.8 s)"
    )
    assert verdict.recommendation is Recommendation.SAME_CONTEXT
    plain = cold_vs_repeat(run("cold", sample(3000.0, load=2800.0)), WARM)
    assert english(plain.said) == "reloaded without eviction (load 2.8 s)"
    # A reload where the server does not tell the context it had: no context change said.
    unknown = cold_vs_repeat(run("cold", sample(3000.0, load=2800.0), num_ctx_after=1024), WARM)
    assert english(unknown.said) == "reloaded without eviction (load 2.8 s)"


def test_a_context_change_scenario() -> None:
    """Loaded with the server's default context, then asked for with 1024."""
    changed = run("context change", sample(3000.0, load=2800.0), num_ctx_after=1024)
    verdict = context_change(changed, WARM)
    assert (verdict.pattern, verdict.stage, verdict.recommendation) == (
        Pattern.CONTEXT_RELOAD,
        "load",
        Recommendation.SAME_CONTEXT,
    )
    assert english(verdict.said) == (
        "slow after a context change: reload for num_ctx 1024 vs the server's default (load 2.8 s)"
    )
    reported = run(
        "context change", sample(3000.0, load=2800.0), num_ctx_before=512, num_ctx_after=1024
    )
    assert "reload for num_ctx 1024 vs 512 (" in english(context_change(reported, WARM).said)
    # Reloaded, though the context it had was the one asked for: not a context change.
    other_cause = run("x", sample(3000.0, load=2800.0), num_ctx_before=1024, num_ctx_after=1024)
    assert (
        english(context_change(other_cause, WARM).said) == "reloaded without eviction (load 2.8 s)"
    )
    # The same context (no reload): nothing expanded, and that is what it says.
    same = context_change(run("context change", sample(85.0), num_ctx_after=512), WARM)
    assert same.pattern is Pattern.NO_CLEAR_STAGE
    # Not resident before (something evicted it in between): judged as a cold start.
    evicted = context_change(run("context change", sample(3000.0, load=2800.0), before=False), WARM)
    assert evicted.pattern is Pattern.EVICTED


def test_every_request_slow_is_not_eviction() -> None:
    slow_prefill = cold_vs_repeat(
        run("cold", sample(5100.0, prefill=5000.0)), run("repeat", sample(5000.0, prefill=4900.0))
    )
    assert slow_prefill.pattern is Pattern.ALWAYS_SLOW
    assert slow_prefill.recommendation is Recommendation.SHORTEN_PROMPT
    assert "prompt length, not eviction" in english(slow_prefill.said)
    slow_decode = cold_vs_repeat(
        run("cold", sample(4100.0, decode=4000.0)), run("repeat", sample(4000.0, decode=3900.0))
    )
    assert slow_decode.recommendation is Recommendation.NOTHING_TO_WARM
    assert "generation, not eviction" in english(slow_decode.said)


def test_a_cold_prompt_cache_and_a_slow_first_token() -> None:
    cache = cold_vs_repeat(run("cold", sample(1500.0, prefill=1400.0)), WARM)
    assert (cache.pattern, cache.stage) == (Pattern.PROMPT_CACHE, "prefill")
    assert cache.said.figures == {"prefill": Duration(1400.0), "cached_prefill": Duration(40.0)}
    decode = cold_vs_repeat(run("cold", sample(900.0, decode=800.0)), WARM)
    assert (decode.stage, decode.recommendation) == ("first_decode", Recommendation.NOTHING_TO_WARM)


def test_no_clear_stage_says_so_rather_than_guessing() -> None:
    verdict = cold_vs_repeat(run("cold", sample(120.0, load=60.0)), WARM)
    assert verdict.pattern is Pattern.NO_CLEAR_STAGE
    assert verdict.recommendation is None
    assert english(verdict.said) == "no clear stage expanded: 120 ms against 80 ms repeated"
    # Stages the server did not report are not compared.
    assert first_expanded(sample(9000.0, load=None), sample(80.0, load=None)) is None
    # A queue is told apart from the load where the server reports it.
    assert first_expanded(sample(3000.0, load=2900.0, queue=2800.0), sample(80.0, queue=0.0)) == (
        "queue",
        2800.0,
    )


def test_a_switch_that_evicts() -> None:
    a_warm = run("A warm", sample(80.0), model="tiny", size=int(5.1 * GIB))
    b = run("B", sample(7000.0, load=6800.0), model="big", before=False, size=7 * GIB)
    a_again = run("A again", sample(5200.0, load=5000.0), model="tiny", before=False)
    verdict = model_switch(a_warm, b, a_again, free_bytes=int(9.5 * GIB))
    assert verdict.pattern is Pattern.SWITCH_EVICTS
    assert english(verdict.said) == (
        "slow only after switching: switch evicts the other model; the two do not fit "
        "together (tiny 5.1 GiB + big 7.0 GiB > 9.5 GiB free) (load 5.0 s)"
    )
    assert verdict.recommendation is Recommendation.SMALLER_MODEL
    both = model_switch(a_warm, b, run("A again", sample(85.0), model="tiny"))
    assert both.pattern is Pattern.NO_CLEAR_STAGE
    assert "both models stayed resident" in english(both.said)


def test_prefill_per_token_and_the_table() -> None:
    short = run("short", sample(100.0, prefill=40.0, tokens=20))
    long = run("long", sample(2100.0, prefill=2040.0, tokens=1020))
    assert prefill_per_token(short, long) == 2.0
    assert prefill_per_token(long, short) is None
    assert prefill_per_token(short, run("x", sample(1.0, prefill=None))) is None
    rows = runs_table([short, long])
    assert [(r["run"], r["prompt_tokens"]) for r in rows] == [("short", 20), ("long", 1020)]


def test_a_diagnosis_is_stored_as_answered_and_read_back_the_same() -> None:
    """The store keeps the action's answer; reading it gives the same typed diagnosis."""
    cold = run("cold", sample(7000.0, load=6500.0), before=False)
    repeat = run("repeat", sample(300.0))
    diagnosis = Diagnosis(
        model="m",
        scenario=Scenario.COLD_VS_REPEAT,
        verdict=cold_vs_repeat(cold, repeat),
        at=datetime(2026, 12, 1, 6, 0, tzinfo=UTC),
        runs=(cold, repeat),
        num_ctx=8192,
        agent="Kitchen",
        left_for_agent="Kitchen",
    )
    answer = diagnosis.as_dict()
    # The verdict's codes first (the shell puts its words before them).
    assert list(answer)[:5] == ["pattern", "stage", "expanded_ms", "recommendation", "said"]
    assert english(Sentence.from_dict(answer["said"])) == (
        "one slow request, then normal: the model was evicted (load 6.5 s of 7.0 s)"
    )
    assert (answer["pattern"], answer["stage"], answer["scenario"]) == (
        "evicted",
        "load",
        "cold_vs_repeat",
    )
    assert "prefill_ms_per_token" not in answer  # short_vs_long's alone
    again = Diagnosis.from_dict(answer)
    assert again.verdict == diagnosis.verdict
    assert again.as_dict() == answer
    assert [r.sample for r in again.runs] == [cold.sample, repeat.sample]


_VALID = Diagnosis(
    model="m",
    scenario=Scenario.MODEL_SWITCH,
    verdict=model_switch(
        run("A warm", sample(80.0)),
        run("B", sample(900.0), model="small", before=False, size=GIB),
        run("A again", sample(7000.0, load=6500.0), before=False),
    ),
    at=datetime(2026, 12, 1, 6, 0, tzinfo=UTC),
    runs=(run("cold", sample(7000.0, load=6500.0), before=False), run("repeat", sample(300.0))),
    num_ctx=8192,
).as_dict()
_JUNK = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)


@given(
    where=st.lists(st.sampled_from(sorted(_VALID)), min_size=1, max_size=3, unique=True),
    junk=st.lists(_JUNK, min_size=3, max_size=3),
    run_field=st.sampled_from(sorted(_VALID["runs"][0])),
    run_junk=_JUNK,
)
def test_a_damaged_stored_diagnosis_is_refused_with_value_error(
    where: list[str], junk: list[object], run_field: str, run_junk: object
) -> None:
    """A stored diagnosis with fields damaged gives a diagnosis or a ValueError, nothing else.

    Each case starts from a valid one, so every field's reader is reached: the verdict's
    codes, its sentence and figures, the time, the runs and each run's fields.
    """
    damaged = {**_VALID, **dict(zip(where, junk, strict=False))}
    with contextlib.suppress(ValueError):
        Diagnosis.from_dict(damaged)
    runs = [{**_VALID["runs"][0], run_field: run_junk}]
    with contextlib.suppress(ValueError):
        Diagnosis.from_dict({**_VALID, "runs": runs})
    said = {**_VALID["said"], "figures": {"load": run_junk}}
    with contextlib.suppress(ValueError):
        Diagnosis.from_dict({**_VALID, "said": said})


@pytest.mark.parametrize(
    ("key", "bad", "why"),
    [
        ("pattern", "haunted", "not a valid Pattern"),
        ("stage", "teleport", "not a valid Stage"),
        ("scenario", "guess", "not a valid Scenario"),
        ("at", "2026-12-01T06:00:00", "without zone"),
        ("num_ctx", -1, "not a count"),
        ("expanded_ms", float("nan"), "not a number"),
        ("runs", [{"run": "cold"}], "without 'model'"),
        ("model", 3, "not a text"),
    ],
)
def test_each_field_of_a_stored_diagnosis_is_checked(key: str, bad: object, why: str) -> None:
    answer = Diagnosis(
        model="m",
        scenario=Scenario.COLD_VS_REPEAT,
        verdict=cold_vs_repeat(
            run("cold", sample(7000.0, load=6500.0), before=False), run("repeat", sample(300.0))
        ),
        at=datetime(2026, 12, 1, 6, 0, tzinfo=UTC),
        runs=(),
    ).as_dict()
    Diagnosis.from_dict(answer)
    with pytest.raises(ValueError, match=why):
        Diagnosis.from_dict({**answer, key: bad})


def test_a_context_change_with_no_context_after_is_judged_as_a_cold_start() -> None:
    """Not resident after the run: no context to compare, so no context change is claimed."""
    gone = run(
        "context change", sample(3000.0, load=2800.0), num_ctx_before=512, num_ctx_after=None
    )
    verdict = context_change(gone, WARM)
    assert verdict == cold_vs_repeat(gone, WARM)
    assert english(verdict.said) == "reloaded without eviction (load 2.8 s)"


# ---------------------------------------------------------------- the edges of each rule


def test_a_stage_expanded_by_exactly_250_ms_and_twice_its_repeat_expanded() -> None:
    """Both edges are in: +250 ms and a factor of 2 (the figures the module states)."""
    assert first_expanded(sample(600.0, load=500.0), sample(80.0, load=250.0)) == ("load", 250.0)
    assert first_expanded(sample(600.0, load=499.9), sample(80.0, load=250.0)) is None
    # 260 ms more, but less than twice the repeat's 340 ms: not expanded.
    assert first_expanded(sample(900.0, load=600.0), sample(400.0, load=340.0)) is None
    # Twice the repeat, but only 140 ms more: not expanded.
    assert first_expanded(sample(300.0, load=200.0), sample(80.0, load=60.0)) is None


def test_a_stage_one_side_did_not_report_is_not_compared() -> None:
    assert first_expanded(sample(9000.0, load=None), sample(80.0, load=2.0)) is None
    assert first_expanded(sample(9000.0, load=9000.0), sample(80.0, load=None)) is None


def test_the_load_is_what_the_queue_leaves_of_queue_and_load() -> None:
    """A 200 ms queue did not expand; the load did, by the load less its queue."""
    cold = sample(3100.0, load=3000.0, queue=200.0)
    assert first_expanded(cold, sample(80.0, load=50.0, queue=None)) == ("load", 2750.0)


def test_the_evicted_sentence_gives_the_whole_load_not_what_it_grew_by() -> None:
    verdict = cold_vs_repeat(
        run("cold", sample(8400.0, load=8100.0), before=False),
        run("repeat", sample(3100.0, load=3000.0)),
    )
    assert verdict.expanded_ms == 5100.0
    assert verdict.said == Sentence(
        "diagnosis_evicted", {"load": Duration(8100.0), "ttft": Duration(8400.0)}
    )


def test_both_replies_at_2_s_are_slow_and_one_under_it_is_not() -> None:
    both = cold_vs_repeat(run("cold", sample(2000.0)), run("repeat", sample(2000.0)))
    assert both.pattern is Pattern.ALWAYS_SLOW
    one = cold_vs_repeat(run("cold", sample(2100.0)), run("repeat", sample(1999.0)))
    assert one.pattern is Pattern.NO_CLEAR_STAGE


@pytest.mark.parametrize(
    ("prefill", "decode", "stage"),
    [(1000.0, 1000.0, "prefill"), (None, 0.5, "first_decode"), (0.5, None, "prefill")],
)
def test_an_always_slow_reply_blames_the_larger_stage_prefill_on_a_tie(
    prefill: float | None, decode: float | None, stage: str
) -> None:
    """A stage the server did not report counts as none of the time."""
    slow = sample(3000.0, prefill=prefill, decode=decode)
    verdict = cold_vs_repeat(run("cold", slow), run("repeat", slow))
    assert (verdict.pattern, verdict.stage) == (Pattern.ALWAYS_SLOW, stage)


def test_a_cold_prompt_cache_says_both_prefills() -> None:
    verdict = cold_vs_repeat(
        run("cold", sample(1500.0, prefill=1400.0)), run("r", sample(80.0, prefill=0.0))
    )
    assert verdict.said == Sentence(
        "diagnosis_prompt_cache", {"prefill": Duration(1400.0), "cached_prefill": Duration(0.0)}
    )


def test_the_prefill_per_token_at_its_edges() -> None:
    def per_token(short: tuple[float, int], long: tuple[float, int]) -> float | None:
        return prefill_per_token(
            run("short", sample(1.0, prefill=short[0], tokens=short[1])),
            run("long", sample(1.0, prefill=long[0], tokens=long[1])),
        )

    assert per_token((0.0, 0), (2000.0, 1000)) == 2.0
    assert per_token((40.0, 20), (42.5, 21)) == 2.5  # one token more
    assert per_token((40.0, 20), (0.0, 21)) == -40.0
    assert per_token((40.0, 20), (900.0, 20)) is None  # as many tokens
    assert per_token((0.0, 0), (0.0, 0)) is None


def test_what_the_prompts_length_costs() -> None:
    short = run("short", sample(100.0, prefill=0.0, tokens=0))
    long = run("long", sample(2100.0, prefill=2000.0, tokens=1000))
    verdict = prompt_cost(short, long)
    assert (verdict.pattern, verdict.stage, verdict.expanded_ms) == (
        Pattern.PROMPT_COST,
        "prefill",
        2000.0,
    )
    assert verdict.said == Sentence(
        "diagnosis_prompt_cost",
        {
            "per_token": Number(2.0, 2),
            "long_tokens": 1000,
            "long_prefill": Duration(2000.0),
            "short_tokens": 0,
            "short_prefill": Duration(0.0),
        },
    )
    # A 2 s prefill is slow: shorten the prompt; under it, nothing to change.
    assert verdict.recommendation is Recommendation.SHORTEN_PROMPT
    quicker = prompt_cost(short, run("long", sample(1999.0, prefill=1999.0, tokens=1000)))
    assert quicker.recommendation is None
    assert quicker.expanded_ms == 1999.0
    measured = prompt_cost(run("short", sample(100.0, prefill=40.0, tokens=20)), long)
    assert measured.expanded_ms == 1960.0
    assert measured.said.figures["short_tokens"] == 20
    assert measured.said.figures["short_prefill"] == Duration(40.0)
    # No prefill at all (a server that reports 0): nothing is made up.
    free = prompt_cost(short, run("long", sample(1.0, prefill=0.0, tokens=10)))
    assert free.expanded_ms == 0.0
    assert free.said.figures["long_prefill"] == Duration(0.0)


def test_what_a_prompts_length_costs_unreported() -> None:
    unreported = prompt_cost(run("short", sample(1.0, prefill=None)), run("long", sample(2.0)))
    assert unreported == prompt_cost(
        run("short", sample(1.0)), run("long", sample(2.0, tokens=None))
    )
    assert (unreported.pattern, unreported.said, unreported.recommendation) == (
        Pattern.NO_CLEAR_STAGE,
        Sentence("diagnosis_prefill_unreported"),
        None,
    )


def test_a_switch_is_sized_only_when_both_models_sizes_are_known() -> None:
    a_warm = run("A warm", sample(80.0), model="tiny", size=int(5.1 * GIB))
    a_again = run("A again", sample(5200.0, load=5000.0), model="tiny", before=False)
    unsized = model_switch(a_warm, run("B", sample(7000.0), model="big"), a_again)
    assert unsized.said == Sentence("diagnosis_switch_evicts", {"load": Duration(4998.0)})


def test_a_verdicts_growth_is_stored_to_a_tenth_of_a_millisecond() -> None:
    verdict = cold_vs_repeat(run("cold", sample(9000.0, load=8123.456), before=False), WARM)
    assert verdict_as_dict(verdict)["expanded_ms"] == 8121.5


@pytest.mark.parametrize(("per_token", "stored"), [(2.34567, 2.346), (None, None)])
def test_a_prompt_costs_per_token_figure_is_stored_to_three_decimals(
    per_token: float | None, stored: float | None
) -> None:
    short = run("short", sample(100.0, prefill=40.0, tokens=20))
    long = run("long", sample(2100.0, prefill=2040.0, tokens=1020))
    answer = Diagnosis(
        model="m",
        scenario=Scenario.SHORT_VS_LONG,
        verdict=prompt_cost(short, long),
        at=datetime(2026, 12, 1, 6, 0, tzinfo=UTC),
        runs=(short, long),
        prefill_ms_per_token=per_token,
    ).as_dict()
    assert answer["prefill_ms_per_token"] == stored
    assert Diagnosis.from_dict(answer).prefill_ms_per_token == stored


def test_a_stored_count_of_zero_is_read() -> None:
    answer = Diagnosis(
        model="m",
        scenario=Scenario.COLD_VS_REPEAT,
        verdict=cold_vs_repeat(WARM, WARM),
        at=datetime(2026, 12, 1, 6, 0, tzinfo=UTC),
        runs=(),
        num_ctx=0,
    ).as_dict()
    assert Diagnosis.from_dict(answer).num_ctx == 0
