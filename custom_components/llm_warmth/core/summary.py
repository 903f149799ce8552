"""One line that says, in words, how a measured reply went (pure)."""

from .ttft import Classification, Stage, StageBreakdown, Verdict, stage_ms

# How each stage reads in a summary.
_STAGE_WORDS = {
    Stage.LOAD: "loading",
    Stage.QUEUE: "waiting behind other requests",
    Stage.PREFILL: "prefill",
    Stage.FIRST_DECODE: "first decode",
    Stage.OVERHEAD: "overhead",
}


def _duration(ms: float) -> str:
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.0f} ms"


def summary(sample: StageBreakdown, verdict: Verdict) -> str:
    """Return one line that says how the reply went, in words.

    "cold start: 35.9 s, 7.5 s of it loading, 28.4 s prefill"; "warm: 349 ms";
    "warm but slow: 2.1 s, mostly prefill (1.9 s)".
    """
    total = _duration(sample.ttft_ms)
    if verdict.classification is Classification.COLD:
        parts = [f"cold start: {total}"]
        if sample.queue_and_load_ms is not None:
            parts.append(f"{_duration(sample.queue_and_load_ms)} of it loading")
        if sample.prefill_ms is not None:
            parts.append(f"{_duration(sample.prefill_ms)} prefill")
        return ", ".join(parts)
    stage = verdict.dominant_stage
    if stage is Stage.NONE:
        return f"warm: {total}"
    if stage is Stage.UNKNOWN:
        return f"warm but slow: {total}, in stages the server did not report"
    value = stage_ms(sample, stage)
    spent = f" ({_duration(value)})" if value is not None else ""
    return f"warm but slow: {total}, mostly {_STAGE_WORDS[stage]}{spent}"
