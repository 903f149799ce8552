"""A diagnosis' plan without Home Assistant: each scenario's steps, its runs, its verdict."""

import pytest

from custom_components.llm_warmth.core.action_fields import Refused
from custom_components.llm_warmth.core.backends.types import ResidencyState, ResidentModel
from custom_components.llm_warmth.core.diagnose import (
    Run,
    Scenario,
    cold_vs_repeat,
    context_change,
    model_switch,
    prefill_per_token,
    prompt_cost,
)
from custom_components.llm_warmth.core.diagnosis_plan import (
    STEPS,
    Act,
    DiagnosisPlan,
    Prompt,
    Step,
    gpu_row,
    leaves_for_agent,
    noted_load,
    probe_run,
    probes,
    scenario_verdict,
)
from custom_components.llm_warmth.core.gpu.types import GpuStatus
from custom_components.llm_warmth.core.monitor import ProbeResult
from custom_components.llm_warmth.core.ttft import (
    Classification,
    Stage,
    StageBreakdown,
    Verdict,
)


def sample(
    ttft: float, load: float = 2.0, prefill: float = 40.0, tokens: int = 20
) -> StageBreakdown:
    return StageBreakdown(
        ttft_ms=ttft,
        queue_and_load_ms=load,
        prefill_ms=prefill,
        first_decode_ms=30.0,
        overhead_ms=None,
        decode_rate=None,
        prompt_tokens=tokens,
        eval_tokens=1,
    )


def run(
    label: str,
    ttft: float,
    *,
    model: str = "a",
    before: bool = True,
    load: float = 2.0,
    prefill: float = 40.0,
    tokens: int = 20,
) -> Run:
    return Run(
        label,
        model,
        sample(ttft, load, prefill, tokens),
        resident_before=before,
        resident_after=True,
    )


def resident(name: str, context: int | None = None) -> ResidentModel:
    return ResidentModel(name=name, state=ResidencyState.LOADED, context_length=context)


def plan(scenario: Scenario, other: str | None = "b") -> DiagnosisPlan:
    return DiagnosisPlan("a", other, scenario, 30.0, {"a": 4096, "b": 8192}, "Kitchen")


def test_each_scenario_runs_its_steps_in_order() -> None:
    shown = {
        scenario: [(step.act.value, step.label, step.other) for step in steps]
        for scenario, steps in STEPS.items()
    }
    assert shown == {
        Scenario.COLD_VS_REPEAT: [
            ("evict", "", False),
            ("probe", "cold", False),
            ("probe", "repeat", False),
        ],
        Scenario.SHORT_VS_LONG: [
            ("probe", "warm-up", False),
            ("probe", "short", False),
            ("probe", "long", False),
        ],
        Scenario.MODEL_SWITCH: [
            ("probe", "A warm-up", False),
            ("probe", "A warm", False),
            ("probe", "B", True),
            ("probe", "A again", False),
        ],
        Scenario.COMPETING_LOAD: [
            ("probe", "A warm-up", False),
            ("probe", "A warm", False),
            ("preload", "competing load", True),
            ("probe", "A again", False),
        ],
        Scenario.CONTEXT_CHANGE: [
            ("preload", "", False),
            ("probe", "context change", False),
            ("probe", "repeat", False),
        ],
    }


def test_the_short_vs_long_prompts_share_nothing_with_the_warm_up() -> None:
    prompts = [step.prompt for step in STEPS[Scenario.SHORT_VS_LONG]]
    assert prompts == [Prompt.WARM_UP, Prompt.DEFAULT, Prompt.LONG]
    others = [
        step.prompt
        for s, steps in STEPS.items()
        if s is not Scenario.SHORT_VS_LONG
        for step in steps
    ]
    assert set(others) == {Prompt.DEFAULT}


def test_a_step_is_on_the_target_with_the_short_prompt_unless_it_says_otherwise() -> None:
    step = Step(Act.PROBE, "x")
    assert (step.other, step.prompt, step.as_asked, step.noted) == (
        False,
        Prompt.DEFAULT,
        False,
        False,
    )
    assert Step(Act.EVICT).label == ""


def test_the_progress_counts_the_probes() -> None:
    assert {scenario: probes(scenario) for scenario in Scenario} == {
        Scenario.COLD_VS_REPEAT: 2,
        Scenario.SHORT_VS_LONG: 3,
        Scenario.MODEL_SWITCH: 4,
        Scenario.COMPETING_LOAD: 3,
        Scenario.CONTEXT_CHANGE: 2,
    }


def test_a_competing_load_asks_as_its_agent_a_context_change_as_another_client() -> None:
    competing = STEPS[Scenario.COMPETING_LOAD][2]
    assert competing.as_asked
    assert competing.noted
    assert plan(Scenario.COMPETING_LOAD).context(competing, "b") == 8192
    change = STEPS[Scenario.CONTEXT_CHANGE][0]
    assert not change.as_asked
    assert not change.noted
    assert plan(Scenario.CONTEXT_CHANGE).context(change, "a") is None
    assert plan(Scenario.COMPETING_LOAD).context(competing, "unknown") is None


def test_each_step_acts_on_the_target_or_the_other_model() -> None:
    assert plan(Scenario.MODEL_SWITCH).models() == ["a", "a", "b", "a"]
    assert plan(Scenario.COLD_VS_REPEAT, None).models() == ["a", "a", "a"]
    assert plan(Scenario.COLD_VS_REPEAT).model_of(Step(Act.EVICT)) == "a"


def test_a_switch_without_the_other_model_is_refused_before_any_step() -> None:
    for scenario in (Scenario.MODEL_SWITCH, Scenario.COMPETING_LOAD):
        with pytest.raises(Refused) as err:
            plan(scenario, None).models()
        assert (err.value.key, dict(err.value.placeholders)) == (
            "diagnose_other_model",
            {"scenario": scenario},
        )


def test_the_verdict_combines_the_scenarios_runs() -> None:
    cold, repeat = run("cold", 9000.0, before=False, load=8000.0), run("repeat", 80.0)
    assert scenario_verdict(Scenario.COLD_VS_REPEAT, {"cold": cold, "repeat": repeat}) == (
        cold_vs_repeat(cold, repeat),
        None,
    )
    short, long = run("short", 80.0), run("long", 900.0, prefill=850.0, tokens=1200)
    assert scenario_verdict(Scenario.SHORT_VS_LONG, {"short": short, "long": long}) == (
        prompt_cost(short, long),
        prefill_per_token(short, long),
    )
    warm, b = run("A warm", 80.0), run("B", 5000.0, model="b", before=False, load=4000.0)
    again = run("A again", 6000.0, before=False, load=5000.0)
    switch = {"A warm": warm, "B": b, "A again": again}
    assert scenario_verdict(Scenario.MODEL_SWITCH, switch) == (
        model_switch(warm, b, again),
        None,
    )
    competing = noted_load("competing load", "b", warm, resident_after=True, size=None)
    load = {"A warm": warm, "competing load": competing, "A again": again}
    assert scenario_verdict(Scenario.COMPETING_LOAD, load) == (
        model_switch(warm, competing, again, competing=True),
        None,
    )
    assert scenario_verdict(Scenario.COMPETING_LOAD, load) != scenario_verdict(
        Scenario.MODEL_SWITCH, {**load, "B": competing}
    )
    changed = run("context change", 3000.0, load=2500.0)
    assert scenario_verdict(
        Scenario.CONTEXT_CHANGE, {"context change": changed, "repeat": repeat}
    ) == (context_change(changed, repeat), None)


def test_a_probes_run_notes_the_residency_around_it() -> None:
    probe = ProbeResult(
        sample(90.0), Verdict(Classification.WARM, Stage.NONE), resident_before=resident("a", 2048)
    )
    noted = probe_run(
        "repeat",
        "a",
        probe,
        after=resident("a", 4096),
        num_ctx=8192,
        size=5 * 1024**3,
        held=["c", "a"],
        gpus=[{"name": "GPU 0"}],
    )
    assert noted == Run(
        "repeat",
        "a",
        sample(90.0),
        resident_before=True,
        resident_after=True,
        num_ctx_before=2048,
        num_ctx_after=4096,
        size=5 * 1024**3,
        resident_models=("a", "c"),
        gpus=({"name": "GPU 0"},),
    )


def test_a_probes_context_after_is_the_one_asked_where_the_server_does_not_tell() -> None:
    probe = ProbeResult(sample(9000.0), Verdict(Classification.COLD, Stage.LOAD))
    noted = probe_run("cold", "a", probe, after=resident("a"), num_ctx=8192, size=None, held=["a"])
    assert (noted.resident_before, noted.num_ctx_before) == (False, None)
    assert (noted.resident_after, noted.num_ctx_after) == (True, 8192)
    assert noted.gpus == ()
    gone = probe_run("cold", "a", probe, after=None, num_ctx=8192, size=None, held=[])
    assert (gone.resident_after, gone.num_ctx_after, gone.resident_models) == (False, None, ())


def test_a_noted_load_carries_the_reply_before_it() -> None:
    warm = run("A warm", 80.0)
    assert noted_load("competing load", "b", warm, resident_after=False, size=7) == Run(
        "competing load", "b", warm.sample, resident_before=False, resident_after=False, size=7
    )


def test_a_gpu_as_a_run_notes_it() -> None:
    status = GpuStatus(
        index=0,
        uuid="GPU-1",
        name="RTX",
        memory_used=3 * 1024**3 + 1024**3 // 3,
        performance_state=2,
        sm_clock=1800.0,
    )
    assert gpu_row(status) == {
        "name": "RTX",
        "memory_used_gib": 3.33,
        "performance_state": 2,
        "sm_clock_mhz": 1800.0,
    }
    unread = gpu_row(GpuStatus(index=1, uuid="GPU-2", name=None))
    assert unread == {
        "name": None,
        "memory_used_gib": None,
        "performance_state": None,
        "sm_clock_mhz": None,
    }


def test_a_model_is_left_for_its_agent_unless_something_else_decides() -> None:
    assert leaves_for_agent(keep_alive=-1, pinned=False, household_needs_gpu=False)
    assert leaves_for_agent(keep_alive=300, pinned=False, household_needs_gpu=False)
    assert not leaves_for_agent(keep_alive=0, pinned=False, household_needs_gpu=False)
    assert not leaves_for_agent(keep_alive=300, pinned=True, household_needs_gpu=False)
    assert not leaves_for_agent(keep_alive=300, pinned=False, household_needs_gpu=True)
