"""Time to first token, split into stages, and whether a reply was a cold start (pure logic).

One streamed request gives a client-observed TTFT and the server's own durations. For
Ollama ``load_duration`` runs from the request's arrival to the runner being ready: it
includes any wait in the scheduler's queue, so the first stage is ``queue_and_load``.

The first token is sampled from the logits the prompt's prefill computed: it leaves the
server when the prefill ends, and ``eval_duration`` covers the decode passes of the tokens
after it. Measured on Ollama 0.9.3 (big model, CPU): warm TTFT 397 ms against load 1 ms +
prefill 390 ms, with 199 ms per decoded token. So ``first_decode`` (``eval_duration /
eval_count``, the time one more token costs) is reported beside the TTFT, and the
``overhead`` residual is TTFT - queue_and_load - prefill: network, HTTP and templating.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
import math
from statistics import median

from .backends.types import TimedReply

# A stage "expanded" when it exceeds both this factor and this margin over its warm baseline.
EXPANSION_FACTOR = 3.0
EXPANSION_MARGIN_MS = 100.0
# Without a warm baseline yet, a load stage above this is a cold start.
COLD_LOAD_WITHOUT_BASELINE_MS = 500.0
# Without a warm baseline yet, a time to first token above this is slow: a voice assistant
# feels anything longer.
SLOW_TTFT_WITHOUT_BASELINE_MS = 1000.0
# How many warm measurements the baseline keeps (their median is the baseline).
BASELINE_SIZE = 5

_NS_PER_MS = 1_000_000


class Classification(StrEnum):
    """Whether the model had to be loaded for the reply."""

    COLD = "cold"
    WARM = "warm"


class Stage(StrEnum):
    """The stage a slow reply is attributed to."""

    LOAD = "load"
    # Waiting behind requests already in flight (where the server tells it: llama-swap).
    QUEUE = "queue"
    PREFILL = "prefill"
    FIRST_DECODE = "first_decode"
    OVERHEAD = "overhead"
    # Slow, but the server did not report the stages that could say where.
    UNKNOWN = "unknown"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class StageBreakdown:
    """Where one request's time to first token went, in milliseconds.

    A stage the server did not report is None, never 0: ``overhead_ms`` (the rest of the
    TTFT) is only known when every stage before the first token is.
    ``prompt_cache_reuse``: the percentage of prompt tokens served from the prompt cache.
    """

    ttft_ms: float
    queue_and_load_ms: float | None
    prefill_ms: float | None
    first_decode_ms: float | None
    overhead_ms: float | None
    decode_rate: float | None
    prompt_tokens: int | None
    eval_tokens: int | None
    prompt_cache_reuse: float | None = None
    # The part of queue_and_load spent behind other requests, where the server tells it.
    queue_ms: float | None = None

    def as_dict(self) -> dict[str, float | int | None]:
        """Return the breakdown with its field names (for action responses and storage)."""
        return {
            "ttft_ms": self.ttft_ms,
            "queue_and_load_ms": self.queue_and_load_ms,
            "prefill_ms": self.prefill_ms,
            "first_decode_ms": self.first_decode_ms,
            "overhead_ms": self.overhead_ms,
            "decode_rate": self.decode_rate,
            "prompt_tokens": self.prompt_tokens,
            "eval_tokens": self.eval_tokens,
            "prompt_cache_reuse": self.prompt_cache_reuse,
            "queue_ms": self.queue_ms,
        }

    def as_response(self) -> dict[str, float | int | None]:
        """Return the breakdown for people: to 0.1, and below 1 to two significant digits."""
        return {
            key: _shown(value) if isinstance(value, float) else value
            for key, value in self.as_dict().items()
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> StageBreakdown:
        """Rebuild a stored breakdown; raise ``ValueError`` when it is not one."""
        try:
            return cls(
                ttft_ms=_float(data["ttft_ms"]),
                queue_and_load_ms=optional_float(data["queue_and_load_ms"]),
                prefill_ms=optional_float(data["prefill_ms"]),
                first_decode_ms=optional_float(data["first_decode_ms"]),
                overhead_ms=optional_float(data["overhead_ms"]),
                decode_rate=optional_float(data["decode_rate"]),
                prompt_tokens=_optional_count(data["prompt_tokens"]),
                eval_tokens=_optional_count(data["eval_tokens"]),
                prompt_cache_reuse=optional_float(data.get("prompt_cache_reuse")),
                queue_ms=optional_float(data.get("queue_ms")),
            )
        except (KeyError, TypeError) as err:
            raise ValueError(f"not a stage breakdown: {err}") from err


def _ms(ns: int | None) -> float | None:
    return None if ns is None else round(ns / _NS_PER_MS, 3)


def breakdown(reply: TimedReply) -> StageBreakdown:
    """Split one reply's client-observed TTFT into the server's stages plus the rest."""
    ttft = round((reply.first_token_ns - reply.sent_ns) / _NS_PER_MS, 3)
    load = _ms(reply.load_duration_ns)
    prefill = _ms(reply.prompt_eval_duration_ns)
    tokens, decoding = reply.eval_count, reply.eval_duration_ns
    first_decode = (
        round(decoding / tokens / _NS_PER_MS, 3) if tokens and decoding is not None else None
    )
    rate = round(tokens / decoding * 1e9, 2) if tokens and decoding else None
    overhead = round(ttft - load - prefill, 3) if load is not None and prefill is not None else None
    prompt, cached = reply.prompt_eval_count, reply.prompt_cached_count
    reuse = round(100.0 * cached / prompt, 1) if prompt and cached is not None else None
    return StageBreakdown(
        ttft_ms=ttft,
        queue_and_load_ms=load,
        prefill_ms=prefill,
        first_decode_ms=first_decode,
        overhead_ms=overhead,
        decode_rate=rate,
        prompt_tokens=prompt,
        eval_tokens=tokens,
        prompt_cache_reuse=reuse,
        queue_ms=_ms(reply.queue_ns),
    )


@dataclass(frozen=True, slots=True)
class WarmBaseline:
    """The last warm measurements of a model; their medians are what "normal" looks like."""

    samples: tuple[StageBreakdown, ...] = ()

    def add(self, sample: StageBreakdown) -> WarmBaseline:
        """Return the baseline with one more warm sample (the oldest one dropped)."""
        return WarmBaseline((*self.samples, sample)[-BASELINE_SIZE:])

    def stage_ms(self, stage: Stage) -> float | None:
        """Return the median of a stage over the warm samples, None without samples.

        Prefill is compared per prompt token, so that a long prompt is not mistaken for a
        slow prefill: the median is scaled to the prompt length by ``expanded_stages``.
        """
        values = [v for s in self.samples if (v := stage_ms(s, stage)) is not None]
        return median(values) if values else None

    def prefill_ms_per_token(self) -> float | None:
        """Return the median prefill time per prompt token of the warm samples."""
        rates = [
            s.prefill_ms / s.prompt_tokens
            for s in self.samples
            if s.prompt_tokens and s.prefill_ms is not None
        ]
        return median(rates) if rates else None


def stage_ms(sample: StageBreakdown, stage: Stage) -> float | None:
    """Return how long ``stage`` took in ``sample`` (None: not reported)."""
    match stage:
        case Stage.LOAD:  # the load alone, where the server tells the queue apart
            if sample.queue_and_load_ms is None or sample.queue_ms is None:
                return sample.queue_and_load_ms
            return sample.queue_and_load_ms - sample.queue_ms
        case Stage.QUEUE:
            return sample.queue_ms
        case Stage.PREFILL:
            return sample.prefill_ms
        case Stage.FIRST_DECODE:
            return sample.first_decode_ms
        case _:
            return sample.overhead_ms


def _expanded(value: float, baseline: float) -> bool:
    return value > baseline * EXPANSION_FACTOR and value > baseline + EXPANSION_MARGIN_MS


# The stages inside the time to first token (the first decode is reported beside it).
_TTFT_STAGES = (Stage.LOAD, Stage.PREFILL, Stage.OVERHEAD)


def _normal_ms(sample: StageBreakdown, baseline: WarmBaseline, stage: Stage) -> float | None:
    """Return what ``stage`` of ``sample`` would take warm; prefill scales with the prompt."""
    if (
        stage is Stage.PREFILL
        and sample.prompt_tokens
        and (per_token := baseline.prefill_ms_per_token())
    ):
        return per_token * sample.prompt_tokens
    return baseline.stage_ms(stage)


def expanded_stages(sample: StageBreakdown, baseline: WarmBaseline) -> list[Stage]:
    """Return the stages of ``sample`` that grew beyond the warm baseline, in stage order."""
    stages: list[Stage] = []
    for stage in (Stage.LOAD, Stage.PREFILL, Stage.FIRST_DECODE, Stage.OVERHEAD):
        normal = _normal_ms(sample, baseline, stage)
        value = stage_ms(sample, stage)
        if normal is not None and value is not None and _expanded(value, normal):
            stages.append(stage)
    return stages


def _slow(sample: StageBreakdown, baseline: WarmBaseline) -> bool:
    """Return True when the time to first token is far beyond what is normal for the model."""
    if not baseline.samples:
        return sample.ttft_ms > SLOW_TTFT_WITHOUT_BASELINE_MS
    normals = [_normal_ms(sample, baseline, stage) for stage in _TTFT_STAGES]
    if all(normal is not None for normal in normals):
        normal = sum(n for n in normals if n is not None)
    else:  # the server does not split the TTFT: compare it whole
        normal = median(sample.ttft_ms for sample in baseline.samples)
    return _expanded(sample.ttft_ms, normal)


def _costliest_stage(sample: StageBreakdown, baseline: WarmBaseline) -> Stage:
    """Return the stage that took the most time beyond normal (beyond zero without baseline)."""

    def excess(stage: Stage) -> float:
        value = stage_ms(sample, stage)
        if value is None:
            return -math.inf
        return value - (_normal_ms(sample, baseline, stage) or 0.0)

    # The queue, where the server tells it apart, is a stage of its own.
    candidates = (*_TTFT_STAGES, Stage.QUEUE) if sample.queue_ms is not None else _TTFT_STAGES
    costliest = max(candidates, key=excess)
    if all(stage_ms(sample, stage) is not None for stage in _TTFT_STAGES):
        return costliest
    # Some stages are unknown: name a known one only when it explains most of the delay.
    normal = median(s.ttft_ms for s in baseline.samples) if baseline.samples else 0.0
    return costliest if excess(costliest) > (sample.ttft_ms - normal) / 2 else Stage.UNKNOWN


@dataclass(frozen=True, slots=True)
class Verdict:
    """How one reply is read against the model's history."""

    classification: Classification
    dominant_stage: Stage


def judge(sample: StageBreakdown, *, was_resident: bool, baseline: WarmBaseline) -> Verdict:
    """Classify a reply as cold or warm and name the stage that made it slow.

    Cold: the model was not resident right before the request, or its load stage expanded
    compared with its warm baseline (with no baseline yet: exceeded
    ``COLD_LOAD_WITHOUT_BASELINE_MS``). The dominant stage is the first that expanded, in
    the order load, prefill, first decode, overhead; a cold reply without an expanded
    stage is attributed to the load. A warm reply that is slow all the same (its TTFT far
    beyond the baseline's, or beyond ``SLOW_TTFT_WITHOUT_BASELINE_MS`` without one: it
    waited behind another request, say) is attributed to the stage that took the most time
    beyond normal. ``none`` is for a reply that is not slow.
    """
    expanded = expanded_stages(sample, baseline)
    if baseline.samples:
        load_expanded = Stage.LOAD in expanded
    else:
        load = stage_ms(sample, Stage.LOAD)
        load_expanded = load is not None and load > COLD_LOAD_WITHOUT_BASELINE_MS
    cold = not was_resident or load_expanded
    if expanded:
        dominant = expanded[0]
    elif cold:
        dominant = Stage.LOAD
    elif _slow(sample, baseline):
        dominant = _costliest_stage(sample, baseline)
    else:
        dominant = Stage.NONE
    return Verdict(Classification.COLD if cold else Classification.WARM, dominant)


def optional_float(value: object) -> float | None:
    """Return a stored number as a float (None stays None); raise ``ValueError`` otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"not a number: {value!r}")
    try:
        number = float(value)
    except OverflowError as err:
        raise ValueError(f"not a finite number: {value!r}") from err
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return number


def _shown(value: float) -> float:
    """Return a figure rounded as people read it: 35877.2, 344.1, 2.8, 0.043."""
    return round(value, 1) if abs(value) >= 1 else float(f"{value:.2g}")


def _float(value: object) -> float:
    number = optional_float(value)
    if number is None:
        raise ValueError("a number is missing")
    return number


def _optional_count(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise ValueError(f"not a token count: {value!r}")
    return value
