"""The cold-start diagnosis: runs of one fixed prompt in, a verdict out (codes, figures, sentence).

The method: send the same prompt (same sampling, same client) under controlled states,
split each reply's time to first token into stages on one clock, change one state layer
at a time, and blame the first stage that expands against the immediate repeat. Only
what the evidence supports is said; when no stage clearly expanded, the verdict says so.

Pure logic: the runs are given, nothing is measured here.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from .json_value import JsonValue
from .sentence import Duration, Figure, Number, Sentence, Size
from .ttft import Stage, StageBreakdown

# A stage expanded when it grew by at least this much (ms) and by this factor.
EXPANDED_MS = 250.0
EXPANDED_FACTOR = 2.0
# A reply this slow (ms) is slow whatever it is compared with.
SLOW_MS = 2000.0


class Pattern(StrEnum):
    """What the runs show, in one word."""

    EVICTED = "evicted"  # one slow request, then normal: the model was not resident
    CONTEXT_RELOAD = "context_reload"  # reloaded without eviction: another num_ctx
    PROMPT_CACHE = "prompt_cache"  # the prefill expanded: the prompt cache was cold
    ALWAYS_SLOW = "always_slow"  # every request slow: generation or prompt length
    SWITCH_EVICTS = "switch_evicts"  # slow only after switching: the two do not fit
    PROMPT_COST = "prompt_cost"  # what the prompt's length costs on a warm model
    NO_CLEAR_STAGE = "no_clear_stage"  # nothing expanded clearly


class Scenario(StrEnum):
    """The protocol a diagnosis runs."""

    COLD_VS_REPEAT = "cold_vs_repeat"
    SHORT_VS_LONG = "short_vs_long"
    MODEL_SWITCH = "model_switch"
    COMPETING_LOAD = "competing_load"
    CONTEXT_CHANGE = "context_change"

    @property
    def needs_other_model(self) -> bool:
        """Return True for the scenarios that switch to another model."""
        return self in (Scenario.MODEL_SWITCH, Scenario.COMPETING_LOAD)


class Recommendation(StrEnum):
    """What to change, tied to the stage that costs the time."""

    KEEP_RESIDENT = "keep_resident"
    SAME_CONTEXT = "same_context"
    SHORTEN_PROMPT = "shorten_prompt"
    SMALLER_MODEL = "smaller_model"
    NOTHING_TO_WARM = "nothing_to_warm"


@dataclass(frozen=True, slots=True)
class Run:
    """One probe of a scenario: its reply's stages and the state around it."""

    label: str
    model: str
    sample: StageBreakdown
    resident_before: bool
    resident_after: bool
    num_ctx_before: int | None = None
    num_ctx_after: int | None = None
    size: int | None = None  # the model's memory once resident (bytes)
    # The models resident after the probe, and each GPU then (where a GPU source exists):
    # memory used, performance state, SM clock.
    resident_models: tuple[str, ...] = ()
    gpus: tuple[Mapping[str, JsonValue], ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    """The stage that expanded first (and by how much), the pattern, what to change.

    ``said``: the sentence a person reads (the shell puts it in words).
    """

    pattern: Pattern
    stage: Stage | None
    expanded_ms: float | None
    said: Sentence
    recommendation: Recommendation | None


def _load(sample: StageBreakdown) -> float | None:
    """Return the load alone: queue and load less the queue, where the server told it."""
    if sample.queue_and_load_ms is None:
        return None
    return sample.queue_and_load_ms - (sample.queue_ms or 0.0)


_STAGES = (
    (Stage.QUEUE, lambda s: s.queue_ms),
    (Stage.LOAD, _load),
    (Stage.PREFILL, lambda s: s.prefill_ms),
    (Stage.FIRST_DECODE, lambda s: s.first_decode_ms),
)


def first_expanded(slow: StageBreakdown, repeat: StageBreakdown) -> tuple[Stage, float] | None:
    """Return the first stage that expanded in ``slow`` against ``repeat``, and by how much."""
    for name, value in _STAGES:
        a, b = value(slow), value(repeat)
        if a is None or b is None:
            continue
        if a - b >= EXPANDED_MS and a >= EXPANDED_FACTOR * max(b, 1.0):
            return name, a - b
    return None


def cold_vs_repeat(cold: Run, repeat: Run) -> Verdict:
    """Judge a cold probe against the immediate repeat (same prompt, model resident)."""
    expanded = first_expanded(cold.sample, repeat.sample)
    if expanded is None:
        if min(cold.sample.ttft_ms, repeat.sample.ttft_ms) >= SLOW_MS:
            return _always_slow(repeat)
        return Verdict(
            Pattern.NO_CLEAR_STAGE,
            None,
            None,
            Sentence(
                "diagnosis_no_clear_stage",
                {"cold": Duration(cold.sample.ttft_ms), "repeat": Duration(repeat.sample.ttft_ms)},
            ),
            None,
        )
    stage, grew = expanded
    if stage is Stage.LOAD and cold.resident_before:
        return _reloaded_in_place(cold, grew)
    if stage in (Stage.LOAD, Stage.QUEUE):
        load = _load(cold.sample) or grew
        return Verdict(
            Pattern.EVICTED,
            stage,
            grew,
            Sentence(
                "diagnosis_evicted",
                {"load": Duration(load), "ttft": Duration(cold.sample.ttft_ms)},
            ),
            Recommendation.KEEP_RESIDENT,
        )
    if stage is Stage.PREFILL:
        return Verdict(
            Pattern.PROMPT_CACHE,
            stage,
            grew,
            Sentence(
                "diagnosis_prompt_cache",
                {
                    "prefill": Duration(cold.sample.prefill_ms or 0),
                    "cached_prefill": Duration(repeat.sample.prefill_ms or 0),
                },
            ),
            Recommendation.SHORTEN_PROMPT,
        )
    return Verdict(
        Pattern.ALWAYS_SLOW,
        stage,
        grew,
        Sentence("diagnosis_first_token_slower", {"more": Duration(grew)}),
        Recommendation.NOTHING_TO_WARM,
    )


def _reloaded_in_place(cold: Run, grew: float) -> Verdict:
    """Judge a load of a model that was resident: its context changed, or it was reloaded."""
    if cold.num_ctx_before and cold.num_ctx_after and cold.num_ctx_before != cold.num_ctx_after:
        said = Sentence(
            "diagnosis_context_reload",
            {
                "num_ctx": cold.num_ctx_after,
                "previous_num_ctx": cold.num_ctx_before,
                "load": Duration(grew),
            },
        )
    else:
        said = Sentence("diagnosis_reloaded_in_place", {"load": Duration(grew)})
    return Verdict(Pattern.CONTEXT_RELOAD, Stage.LOAD, grew, said, Recommendation.SAME_CONTEXT)


def context_change(changed: Run, repeat: Run) -> Verdict:
    """Judge a request with another context than the resident model's, against its repeat.

    The model was loaded with the server's default context (as a client that sends none
    leaves it), then asked for with ``num_ctx_after``: a load that expanded is the reload
    that context change costs. The server may not report the context it had (Ollama
    before 0.10): then it is the server's default, by construction.
    """
    expanded = first_expanded(changed.sample, repeat.sample)
    if (
        expanded is None
        or expanded[0] is not Stage.LOAD
        or not changed.resident_before
        or changed.num_ctx_before == changed.num_ctx_after  # a reload, but not for this
        or changed.num_ctx_after is None  # not resident after it: no context to compare
    ):
        return cold_vs_repeat(changed, repeat)
    grew = expanded[1]
    figures: dict[str, Figure] = {"num_ctx": changed.num_ctx_after, "load": Duration(grew)}
    if changed.num_ctx_before:
        figures["previous_num_ctx"] = changed.num_ctx_before
        said = Sentence("diagnosis_context_reload", figures)
    else:
        said = Sentence("diagnosis_context_reload_from_default", figures)
    return Verdict(Pattern.CONTEXT_RELOAD, Stage.LOAD, grew, said, Recommendation.SAME_CONTEXT)


def _always_slow(repeat: Run) -> Verdict:
    sample = repeat.sample
    prefill, decode = sample.prefill_ms or 0.0, sample.first_decode_ms or 0.0
    stage = Stage.PREFILL if prefill >= decode else Stage.FIRST_DECODE
    recommendation = (
        Recommendation.SHORTEN_PROMPT if stage is Stage.PREFILL else Recommendation.NOTHING_TO_WARM
    )
    return Verdict(
        Pattern.ALWAYS_SLOW,
        stage,
        None,
        Sentence(
            "diagnosis_always_slow_prompt"
            if stage is Stage.PREFILL
            else "diagnosis_always_slow_generation",
            {"ttft": Duration(sample.ttft_ms)},
        ),
        recommendation,
    )


def prefill_per_token(short: Run, long: Run) -> float | None:
    """Return the prefill cost of one prompt token (ms), from a short and a long prompt."""
    a, b = short.sample, long.sample
    if None in (a.prefill_ms, b.prefill_ms, a.prompt_tokens, b.prompt_tokens):
        return None
    tokens = (b.prompt_tokens or 0) - (a.prompt_tokens or 0)
    if tokens <= 0:
        return None
    return ((b.prefill_ms or 0.0) - (a.prefill_ms or 0.0)) / tokens


def prompt_cost(short: Run, long: Run) -> Verdict:
    """Judge what prompt length costs on a warm model (a short and a long prompt)."""
    per_token = prefill_per_token(short, long)
    if per_token is None:
        return Verdict(
            Pattern.NO_CLEAR_STAGE, None, None, Sentence("diagnosis_prefill_unreported"), None
        )
    prefill = long.sample.prefill_ms or 0.0
    slow = prefill >= SLOW_MS
    return Verdict(
        Pattern.PROMPT_COST,
        Stage.PREFILL,
        prefill - (short.sample.prefill_ms or 0.0),
        Sentence(
            "diagnosis_prompt_cost",
            {
                "per_token": Number(per_token, 2),
                "long_tokens": long.sample.prompt_tokens or 0,
                "long_prefill": Duration(prefill),
                "short_tokens": short.sample.prompt_tokens or 0,
                "short_prefill": Duration(short.sample.prefill_ms or 0.0),
            },
        ),
        Recommendation.SHORTEN_PROMPT if slow else None,
    )


def model_switch(
    a_warm: Run, b: Run, a_again: Run, *, free_bytes: int | None = None, competing: bool = False
) -> Verdict:
    """Judge a switch: A warm, then B, then A again at once.

    ``competing``: B was loaded by a competing load (a preload), not asked a question.
    """
    expanded = first_expanded(a_again.sample, a_warm.sample)
    if expanded is None or a_again.resident_before:
        return Verdict(
            Pattern.NO_CLEAR_STAGE,
            None,
            None,
            Sentence(
                "diagnosis_switch_both_resident"
                if a_again.resident_before
                else "diagnosis_switch_no_clear_stage"
            ),
            None,
        )
    stage, grew = expanded
    key = "diagnosis_competing_load_evicts" if competing else "diagnosis_switch_evicts"
    figures: dict[str, Figure] = {"load": Duration(grew)}
    if a_warm.size and b.size:
        key += "_sized"
        figures |= {
            "model": a_warm.model,
            "model_size": Size(a_warm.size),
            "other_model": b.model,
            "other_size": Size(b.size),
        }
        if free_bytes:
            key += "_free"
            figures["free"] = Size(free_bytes)
    return Verdict(
        Pattern.SWITCH_EVICTS, stage, grew, Sentence(key, figures), Recommendation.SMALLER_MODEL
    )


def verdict_as_dict(verdict: Verdict) -> dict[str, JsonValue]:
    """Return the verdict's codes and figures (stored; the shell puts its words first)."""
    return {
        "pattern": verdict.pattern.value,
        "stage": verdict.stage.value if verdict.stage else None,
        "expanded_ms": None if verdict.expanded_ms is None else round(verdict.expanded_ms, 1),
        "recommendation": verdict.recommendation.value if verdict.recommendation else None,
        "said": verdict.said.as_dict(),
    }


def runs_table(runs: Sequence[Run]) -> list[JsonValue]:
    """Return the runs as table rows (a response's, a sensor's attributes)."""
    return [
        {
            "run": run.label,
            "model": run.model,
            "resident_before": run.resident_before,
            "resident_after": run.resident_after,
            "resident_models": list(run.resident_models),
            "gpus": [dict(gpu) for gpu in run.gpus],
            **run.sample.as_response(),
        }
        for run in runs
    ]
