"""A diagnosis' plan: which steps each scenario runs, what they note, how they combine (pure).

Each scenario is a sequence of probes with the same prompt, sampling and client, so that
only the intended state changes: evict a model, probe it (noting the residency around the
probe), or load it as another client would. The shell runs the steps; the runs they note
make the verdict (``core.diagnose``'s).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from .action_fields import Refused
from .backends.types import ResidentModel
from .diagnose import (
    Run,
    Scenario,
    Verdict,
    cold_vs_repeat,
    context_change,
    model_switch,
    prefill_per_token,
    prompt_cost,
)
from .gpu.types import GpuStatus
from .json_value import JsonValue
from .monitor import ProbeResult

GIB = 1024**3


class Prompt(StrEnum):
    """The fixed prompt a probe sends (the shell holds their text)."""

    DEFAULT = "default"  # short: what is compared
    LONG = "long"  # about 1,200 tokens: a prefill long enough to measure
    WARM_UP = "warm_up"  # shares nothing with the others but the chat template


class Act(StrEnum):
    """What a step does."""

    EVICT = "evict"  # unload the model now
    PROBE = "probe"  # one measured request, the residency noted around it
    PRELOAD = "preload"  # load the model without a question, as another client would


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a scenario, on the target model or (``other``) the other one.

    ``label``: the run a probe notes (and a noted load). A preload ``as_asked`` asks for
    the model's context (its agent's, or the call's), else for none (the server's); a
    ``noted`` preload is a run of its own, carrying the reply of the probe before it.
    """

    act: Act
    label: str = ""
    other: bool = False
    prompt: Prompt = Prompt.DEFAULT
    as_asked: bool = False
    noted: bool = False


# The steps of each scenario, in order.
STEPS: Mapping[Scenario, tuple[Step, ...]] = {
    Scenario.COLD_VS_REPEAT: (Step(Act.EVICT), Step(Act.PROBE, "cold"), Step(Act.PROBE, "repeat")),
    # Loaded first, with a prompt of its own: the short one is not cached.
    Scenario.SHORT_VS_LONG: (
        Step(Act.PROBE, "warm-up", prompt=Prompt.WARM_UP),
        Step(Act.PROBE, "short"),
        Step(Act.PROBE, "long", prompt=Prompt.LONG),
    ),
    Scenario.MODEL_SWITCH: (
        Step(Act.PROBE, "A warm-up"),
        Step(Act.PROBE, "A warm"),
        Step(Act.PROBE, "B", other=True),
        Step(Act.PROBE, "A again"),
    ),
    # The other model loaded (no question), then A again.
    Scenario.COMPETING_LOAD: (
        Step(Act.PROBE, "A warm-up"),
        Step(Act.PROBE, "A warm"),
        Step(Act.PRELOAD, "competing load", other=True, as_asked=True, noted=True),
        Step(Act.PROBE, "A again"),
    ),
    # Loaded as another client leaves it, then asked as the agent asks.
    Scenario.CONTEXT_CHANGE: (
        Step(Act.PRELOAD),
        Step(Act.PROBE, "context change"),
        Step(Act.PROBE, "repeat"),
    ),
}


def probes(scenario: Scenario) -> int:
    """Return how many probes a scenario runs (its progress counts them)."""
    return sum(step.act is Act.PROBE for step in STEPS[scenario])


@dataclass(frozen=True, slots=True)
class DiagnosisPlan:
    """A diagnosis as the action resolved it."""

    model: str
    other: str | None
    scenario: Scenario
    timeout: float
    # The context each model is asked for with (None: the server's), and whose it is.
    contexts: Mapping[str, int | None] = field(default_factory=dict)
    agent: str | None = None

    def models(self) -> list[str]:
        """Return the model of each step; refuse a switch without the other model.

        The action checked it: a plan without it is refused all the same, before any step.
        """
        return [self.model_of(step) for step in STEPS[self.scenario]]

    def model_of(self, step: Step) -> str:
        """Return the model ``step`` acts on (the target, or the other model)."""
        if not step.other:
            return self.model
        if self.other is None:
            raise Refused("diagnose_other_model", {"scenario": self.scenario})
        return self.other

    def context(self, step: Step, model: str) -> int | None:
        """Return the context a preload step asks for (None: the server's)."""
        return self.contexts.get(model) if step.as_asked else None


def scenario_verdict(scenario: Scenario, runs: Mapping[str, Run]) -> tuple[Verdict, float | None]:
    """Return the verdict of a scenario's runs (by label) and a prompt token's prefill (ms).

    Only short_vs_long measures the prefill of a token; the other scenarios return None.
    """
    match scenario:
        case Scenario.COLD_VS_REPEAT:
            return cold_vs_repeat(runs["cold"], runs["repeat"]), None
        case Scenario.SHORT_VS_LONG:
            short, long = runs["short"], runs["long"]
            return prompt_cost(short, long), prefill_per_token(short, long)
        case Scenario.MODEL_SWITCH:
            return model_switch(runs["A warm"], runs["B"], runs["A again"]), None
        case Scenario.COMPETING_LOAD:
            competing = runs["competing load"]
            return model_switch(runs["A warm"], competing, runs["A again"], competing=True), None
    return context_change(runs["context change"], runs["repeat"]), None


def probe_run(
    label: str,
    model: str,
    probe: ProbeResult,
    *,
    after: ResidentModel | None,
    num_ctx: int | None,
    size: int | None,
    held: Iterable[str],
    gpus: Iterable[Mapping[str, JsonValue]] = (),
) -> Run:
    """Return a probe's run: its reply and the residency around it.

    ``after``: the model as the server held it after the reply; ``num_ctx``: the context
    the probe asked for; ``held``: the models resident then; ``gpus``: each GPU then.
    """
    before = probe.resident_before
    return Run(
        label,
        model,
        probe.sample,
        resident_before=before is not None,
        resident_after=after is not None,
        num_ctx_before=before.context_length if before else None,
        # The server's figure; else, where it does not tell it, the context asked for.
        num_ctx_after=(after.context_length or num_ctx) if after else None,
        size=size,
        resident_models=tuple(sorted(held)),
        gpus=tuple(gpus),
    )


def noted_load(label: str, model: str, last: Run, *, resident_after: bool, size: int | None) -> Run:
    """Return the run of a load without a question (a competing load).

    It has no reply of its own: it carries ``last``'s, the probe before it.
    """
    return Run(
        label,
        model,
        last.sample,
        resident_before=False,
        resident_after=resident_after,
        size=size,
    )


def gpu_row(status: GpuStatus) -> dict[str, JsonValue]:
    """Return a GPU as a run notes it: memory used (GiB), performance state, SM clock."""
    return {
        "name": status.name,
        "memory_used_gib": None
        if status.memory_used is None
        else round(status.memory_used / GIB, 2),
        "performance_state": status.performance_state,
        "sm_clock_mhz": status.sm_clock,
    }


def leaves_for_agent(*, keep_alive: int, pinned: bool, household_needs_gpu: bool) -> bool:
    """Return True when a diagnosed model is loaded once more as its agent asks.

    Not while the household needs the GPU, nor over a pin made meanwhile (the pin
    decides), nor for an agent that unloads its model after each turn (keep_alive 0:
    nothing to keep).
    """
    return keep_alive != 0 and not pinned and not household_needs_gpu
