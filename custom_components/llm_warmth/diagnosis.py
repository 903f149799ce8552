"""``llm_warmth.diagnose``: run the cold-start protocol on a model and say which layer went cold.

Each scenario is a sequence of probes with the same prompt, sampling and client, so that
only the intended state changes; the verdict is ``core.diagnose``'s.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Final

from homeassistant.core import ServiceCall, ServiceResponse
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.util import dt as dt_util
from homeassistant.util.hass_dict import HassKey
import probatio as vol

from .agents import agent_context, model_agent
from .const import DOMAIN, EVENT_DIAGNOSIS_PROGRESS, LOGGER
from .core.action_fields import check_context_change, check_diagnosis_models
from .core.backends.errors import LlmServerError
from .core.diagnose import Run, Scenario, Verdict
from .core.diagnosis import Diagnosis
from .core.diagnosis_plan import (
    STEPS,
    Act,
    DiagnosisPlan,
    Prompt,
    gpu_row,
    leaves_for_agent,
    noted_load,
    probe_run,
    probes,
    scenario_verdict,
)
from .core.json_value import JsonValue
from .data import LlmWarmthConfigEntry
from .devices import fire_event
from .diagnoses import answered
from .errors import translated_errors
from .probe_prompts import DEFAULT_PROMPT, LONG_PROMPT, WARM_UP_PROMPT, probe_options
from .sentences import local_timestamp
from .targets import (
    ATTR_NUM_CTX,
    ATTR_TIMEOUT,
    LOAD_TIMEOUT_FIELD,
    NUM_CTX,
    TARGET_FIELDS,
    known_model,
    known_model_target,
    model_context,
    model_target,
    refusals_in_words,
)

SERVICE_DIAGNOSE: Final = "diagnose"
ATTR_SCENARIO: Final = "scenario"
ATTR_OTHER_MODEL: Final = "other_model"
# The text of the fixed prompts the steps name.
_PROMPTS: Final = {
    Prompt.DEFAULT: DEFAULT_PROMPT,
    Prompt.LONG: LONG_PROMPT,
    Prompt.WARM_UP: WARM_UP_PROMPT,
}
SERVICE_CANCEL_DIAGNOSIS: Final = "cancel_diagnosis"
# The diagnoses running, by entry and model.
_RUNNING: HassKey[dict[tuple[str, str], asyncio.Task[dict[str, JsonValue]]]] = HassKey(
    f"{DOMAIN}_diagnoses_running"
)

DIAGNOSE_SCHEMA = vol.Schema(
    {
        **TARGET_FIELDS,
        vol.Optional(ATTR_SCENARIO, default=Scenario.COLD_VS_REPEAT.value): vol.All(
            vol.In([scenario.value for scenario in Scenario]), Scenario
        ),
        # The model B of a switch (A is the target).
        vol.Optional(ATTR_OTHER_MODEL): vol.All(str, vol.Length(min=1)),
        # Ollama: the context every probe of the model asks for (default: its agent's).
        vol.Optional(ATTR_NUM_CTX): NUM_CTX,
        **LOAD_TIMEOUT_FIELD,
    }
)


class _Prober:
    """Probes one server with the fixed prompt, noting the residency around each probe.

    Each model is asked for with one context (``contexts``: its agent's ``num_ctx``, or
    None for the server's), so that only the state the scenario changes changes.
    """

    def __init__(
        self,
        entry: LlmWarmthConfigEntry,
        timeout: float,
        *,
        steps: int,
        contexts: dict[str, int | None],
    ) -> None:
        self._entry = entry
        self._timeout = timeout
        self._steps = steps
        self.contexts = contexts
        self.runs: list[Run] = []

    async def probe(self, label: str, model: str, prompt: str = DEFAULT_PROMPT) -> Run:
        coordinator = self._entry.runtime_data.coordinator
        # Progress: which run starts now, of how many.
        fire_event(
            coordinator.hass,
            coordinator.config_entry,
            EVENT_DIAGNOSIS_PROGRESS,
            model=model,
            run=label,
            step=len(self.runs) + 1,
            steps=self._steps,
        )
        num_ctx = self.contexts.get(model)
        result = await self._entry.runtime_data.own_requests.async_probe(
            model, prompt, options=probe_options(num_ctx), timeout=self._timeout
        )
        after = coordinator.data.held.get(model)
        gpus: list[dict[str, JsonValue]] = []
        if (gpu := self._entry.runtime_data.gpu) is not None:
            await gpu.async_refresh()  # the GPU as this reply left it
            if gpu.last_update_success and gpu.data is not None:
                gpus = [gpu_row(reading.status) for reading in gpu.data.gpus.values()]
        run = probe_run(
            label,
            model,
            result,
            after=after,
            num_ctx=num_ctx,
            size=coordinator.last_sizes.get(model),
            held=coordinator.data.held,
            gpus=gpus,
        )
        self.runs.append(run)
        return run

    async def evict(self, model: str) -> None:
        await self._entry.runtime_data.controller.evict([model], timeout=self._timeout)


async def async_diagnose(call: ServiceCall) -> ServiceResponse:
    """Run a scenario on a model; answer its runs and the verdict."""
    entry, model, placeholders = known_model_target(call)
    scenario: Scenario = call.data[ATTR_SCENARIO]
    # The other model of a switch or a competing load (the other scenarios have none).
    other = call.data.get(ATTR_OTHER_MODEL) if scenario.needs_other_model else None
    if other:
        other = known_model(entry, other)[0]
    with refusals_in_words():
        check_diagnosis_models(scenario, model, other, entry.runtime_data.pins.pins)
    num_ctx, agent = model_context(call, entry, model)
    contexts = {model: num_ctx}
    if other is not None:
        contexts[other] = agent_context(entry, other)[0]
    with refusals_in_words():
        check_context_change(
            scenario,
            num_ctx,
            model=model,
            capabilities=entry.runtime_data.client.capabilities,
            server=entry.title,
        )
    key = (entry.entry_id, model)
    running = call.hass.data.setdefault(_RUNNING, {})
    if key in running:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="diagnosis_running",
            translation_placeholders={"model": model},
        )
    # The entry's task: it goes on (and is stored) if the caller gives up, stops when the
    # entry unloads, and llm_warmth.cancel_diagnosis cancels it.
    task = entry.async_create_background_task(
        call.hass,
        _async_run(
            entry,
            DiagnosisPlan(model, other, scenario, call.data[ATTR_TIMEOUT], contexts, agent),
        ),
        f"llm_warmth diagnose {model}",
    )
    running[key] = task
    task.add_done_callback(lambda _task: running.pop(key, None))
    with translated_errors(call.hass, entry, placeholders):
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and not (current and current.cancelling()):
                raise HomeAssistantError(
                    translation_domain=DOMAIN,
                    translation_key="diagnosis_cancelled",
                    translation_placeholders={"model": model},
                ) from None
            raise


async def _async_run(entry: LlmWarmthConfigEntry, plan: DiagnosisPlan) -> dict[str, JsonValue]:
    """Run the scenario's probes; keep and return the answer.

    Then, or when the runs fail or are cancelled, the model is left as its agent asks.
    """
    model = plan.model
    prober = _Prober(entry, plan.timeout, steps=probes(plan.scenario), contexts=dict(plan.contexts))
    try:
        verdict, per_token = await _async_scenario(entry, plan, prober)
    except BaseException:
        await _async_leave_for_agent(entry, model, plan.timeout)
        raise
    diagnosis = Diagnosis(
        model=model,
        scenario=plan.scenario,
        verdict=verdict,
        at=dt_util.utcnow(),
        runs=tuple(prober.runs),
        num_ctx=plan.contexts[model],
        agent=plan.agent,
        prefill_ms_per_token=per_token,
    )
    # The model's "Last diagnosis" sensor shows it, and it is kept across restarts: kept
    # before the model is left for its agent (a cancel then loses no run).
    diagnoses = entry.runtime_data.diagnoses
    diagnoses.set(model, diagnosis)
    left_for = await _async_leave_for_agent(entry, model, plan.timeout)
    if left_for is not None:
        diagnosis = replace(diagnosis, left_for_agent=left_for)
        diagnoses.set(model, diagnosis)
    return answered(entry.runtime_data.coordinator.hass, diagnosis)


async def _async_scenario(
    entry: LlmWarmthConfigEntry, plan: DiagnosisPlan, prober: _Prober
) -> tuple[Verdict, float | None]:
    """Run the scenario's steps (``core.diagnosis_plan``); return its verdict and prefill.

    A prompt token's prefill (ms): only short_vs_long measures it; the other scenarios
    return None.
    """
    coordinator = entry.runtime_data.coordinator
    with refusals_in_words():
        models = plan.models()
    runs: dict[str, Run] = {}
    for step, model in zip(STEPS[plan.scenario], models, strict=True):
        if step.act is Act.EVICT:
            await prober.evict(model)
        elif step.act is Act.PROBE:
            runs[step.label] = await prober.probe(step.label, model, _PROMPTS[step.prompt])
        else:
            await entry.runtime_data.controller.preload(
                model, keep_seconds=None, num_ctx=plan.context(step, model), timeout=plan.timeout
            )
            if step.noted:
                runs[step.label] = noted_load(
                    step.label,
                    model,
                    prober.runs[-1],
                    resident_after=model in coordinator.data.held,
                    size=coordinator.last_sizes.get(model),
                )
    return scenario_verdict(plan.scenario, runs)


async def _async_leave_for_agent(
    entry: LlmWarmthConfigEntry, model: str, timeout: float
) -> str | None:
    """Load the model once more as its Ollama agent asks (its num_ctx and keep_alive).

    The runs loaded it with no keep_alive (the server's default: 5 minutes on Ollama),
    perhaps with another context, or evicted it: without this, an agent that keeps its
    model for ever would find it gone, or reload it, at its next turn. Same context: no
    reload, only the keep. Not while the household guard says the house needs the GPU,
    nor over a pin made meanwhile (the pin decides), nor for an agent that unloads its
    model after each turn (keep_alive 0: nothing to keep). Return the agent's name; None
    when nothing was loaded for it.
    """
    agent = model_agent(entry, model)
    controller = entry.runtime_data.controller
    if agent is None or not leaves_for_agent(
        keep_alive=agent.keep_alive,
        pinned=entry.runtime_data.pins.get(model) is not None,
        household_needs_gpu=entry.runtime_data.household.need() is not None,
    ):
        return None
    try:
        await controller.preload(
            model, keep_seconds=agent.keep_alive, num_ctx=agent.num_ctx, timeout=timeout
        )
    except (LlmServerError, HomeAssistantError) as err:
        LOGGER.warning("%s: could not leave %s as %s asks: %s", entry.title, model, agent.name, err)
        return None
    return agent.name


CANCEL_SCHEMA = vol.Schema(TARGET_FIELDS)
SERVICE_START_IDLE_PROFILE: Final = "start_idle_profile"
SERVICE_STOP_IDLE_PROFILE: Final = "stop_idle_profile"


async def async_start_idle_profile(call: ServiceCall) -> ServiceResponse:
    """Start a model's idle profile: probes after 0, 1, 10, 60 and 480 minutes unused."""
    entry, model, _ = known_model_target(call)
    profile = entry.runtime_data.profiler.start(model)
    due = profile.due_at()
    return {"model": model, "next_probe_at": local_timestamp(due)}


async def async_stop_idle_profile(call: ServiceCall) -> ServiceResponse:
    """Stop a model's idle profile; answer what it measured."""
    entry, requested = model_target(call)
    model = entry.runtime_data.coordinator.resolve_model(requested)
    profile = entry.runtime_data.profiler.stop(model)
    return {
        "model": model,
        "results": [r.as_dict() for r in profile.results] if profile else [],
    }


async def async_cancel_diagnosis(call: ServiceCall) -> ServiceResponse:
    """Stop the diagnosis running on a model (its action answers "cancelled")."""
    entry, requested = model_target(call)
    model = entry.runtime_data.coordinator.resolve_model(requested)
    task = call.hass.data.get(_RUNNING, {}).get((entry.entry_id, model))
    if task is not None:
        task.cancel()
    return {"model": model, "cancelled": task is not None}
