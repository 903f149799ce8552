"""The one sentence that says how a measured reply went (pure: key and figures)."""

from .sentence import Duration, Figure, Sentence
from .ttft import Classification, Stage, StageBreakdown, Verdict, stage_ms


def summary(sample: StageBreakdown, verdict: Verdict) -> Sentence:
    """Return the sentence that says how the reply went.

    In English: "cold start: 35.9 s, 7.5 s of it loading, 28.4 s prefill"; "warm: 349 ms";
    "warm but slow: 2.1 s, mostly prefill (1.9 s)".
    """
    ttft = Duration(sample.ttft_ms)
    if verdict.classification is Classification.COLD:
        figures: dict[str, Figure] = {"ttft": ttft}
        if sample.queue_and_load_ms is not None:
            figures["load"] = Duration(sample.queue_and_load_ms)
        if sample.prefill_ms is not None:
            figures["prefill"] = Duration(sample.prefill_ms)
        return Sentence("_".join(["probe_cold", *list(figures)[1:]]), figures)
    stage = verdict.dominant_stage
    if stage is Stage.NONE:
        return Sentence("probe_warm", {"ttft": ttft})
    value = None if stage is Stage.UNKNOWN else stage_ms(sample, stage)
    if value is None:
        return Sentence("probe_warm_slow_unreported", {"ttft": ttft})
    return Sentence(f"probe_warm_slow_{stage.value}", {"ttft": ttft, "spent": Duration(value)})
