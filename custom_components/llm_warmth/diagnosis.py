"""``llm_warmth.diagnose``: run the cold-start protocol on a model and say which layer went cold.

Each scenario is a sequence of probes with the same prompt, sampling and client, so that
only the intended state changes; the verdict is ``core.diagnose``'s.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any, Final

from homeassistant.core import ServiceCall, ServiceResponse
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.util import dt as dt_util
from homeassistant.util.hass_dict import HassKey
import probatio as vol

from .agents import agent_context, model_agent
from .const import DOMAIN, EVENT_DIAGNOSIS_PROGRESS, LOGGER
from .core.backends.errors import LlmServerError
from .core.diagnose import (
    Run,
    Scenario,
    Verdict,
    cold_vs_repeat,
    context_change,
    model_switch,
    prefill_per_token,
    prompt_cost,
)
from .core.diagnosis import Diagnosis
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
)

SERVICE_DIAGNOSE: Final = "diagnose"
ATTR_SCENARIO: Final = "scenario"
ATTR_OTHER_MODEL: Final = "other_model"
# The probes of each scenario.
_STEPS: Final = {
    Scenario.COLD_VS_REPEAT: 2,
    Scenario.SHORT_VS_LONG: 3,
    Scenario.MODEL_SWITCH: 4,
    Scenario.COMPETING_LOAD: 3,
    Scenario.CONTEXT_CHANGE: 2,
}
SERVICE_CANCEL_DIAGNOSIS: Final = "cancel_diagnosis"
# The diagnoses running, by entry and model.
_RUNNING: HassKey[dict[tuple[str, str], asyncio.Task[dict[str, Any]]]] = HassKey(
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
        before, after = result.resident_before, coordinator.data.held.get(model)
        gpus: list[dict[str, Any]] = []
        if (gpu := self._entry.runtime_data.gpu) is not None:
            await gpu.async_refresh()  # the GPU as this reply left it
            if gpu.last_update_success and gpu.data is not None:
                gpus = [
                    {
                        "name": r.status.name,
                        "memory_used_gib": None
                        if r.status.memory_used is None
                        else round(r.status.memory_used / 1024**3, 2),
                        "performance_state": r.status.performance_state,
                        "sm_clock_mhz": r.status.sm_clock,
                    }
                    for r in gpu.data.gpus.values()
                ]
        run = Run(
            label,
            model,
            result.sample,
            resident_before=before is not None,
            resident_after=after is not None,
            num_ctx_before=before.context_length if before else None,
            # The server's figure; else, where it does not tell it, the context asked for.
            num_ctx_after=(after.context_length or num_ctx) if after else None,
            size=coordinator.last_sizes.get(model),
            resident_models=tuple(sorted(coordinator.data.held)),
            gpus=tuple(gpus),
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
    for name in (model, other):
        if name is not None and entry.runtime_data.pins.get(name) is not None:
            # The scenarios evict: that would unpin it.
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="diagnose_pinned",
                translation_placeholders={"model": name},
            )
    if scenario.needs_other_model and (other is None or other == model):
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="diagnose_other_model",
            translation_placeholders={"scenario": scenario},
        )
    num_ctx, agent = model_context(call, entry, model)
    contexts = {model: num_ctx}
    if other is not None:
        contexts[other] = agent_context(entry, other)[0]
    if scenario is Scenario.CONTEXT_CHANGE and num_ctx is None:
        # Only Ollama loads a model with the context a request asks for.
        ollama = entry.runtime_data.client.capabilities.requests_set_keep_and_context
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="diagnose_no_context" if ollama else "context_change_not_supported",
            translation_placeholders={"model": model} if ollama else {"server": entry.title},
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
        _async_run(entry, _Plan(model, other, scenario, call.data[ATTR_TIMEOUT], contexts, agent)),
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


@dataclass(frozen=True, slots=True)
class _Plan:
    """A diagnosis as the action resolved it."""

    model: str
    other: str | None
    scenario: Scenario
    timeout: float
    # The context each model is asked for with (None: the server's), and whose it is.
    contexts: dict[str, int | None]
    agent: str | None


async def _async_run(entry: LlmWarmthConfigEntry, plan: _Plan) -> dict[str, Any]:
    """Run the scenario's probes; keep and return the answer.

    Then, or when the runs fail or are cancelled, the model is left as its agent asks.
    """
    model = plan.model
    prober = _Prober(entry, plan.timeout, steps=_STEPS[plan.scenario], contexts=plan.contexts)
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


def _other_model(plan: _Plan) -> str:
    """Return the other model of a switch or a competing load (the action checked it)."""
    if plan.other is None:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="diagnose_other_model",
            translation_placeholders={"scenario": plan.scenario},
        )
    return plan.other


async def _async_scenario(
    entry: LlmWarmthConfigEntry, plan: _Plan, prober: _Prober
) -> tuple[Verdict, float | None]:
    """Run the scenario's probes; return the verdict and a prompt token's prefill (ms).

    Only short_vs_long measures the prefill of a token; the other scenarios return None.
    """
    model, other, scenario, timeout = plan.model, plan.other, plan.scenario, plan.timeout
    contexts = plan.contexts
    coordinator = entry.runtime_data.coordinator
    controller = entry.runtime_data.controller
    per_token: float | None = None
    if scenario is Scenario.COLD_VS_REPEAT:
        await prober.evict(model)
        cold = await prober.probe("cold", model)
        verdict = cold_vs_repeat(cold, await prober.probe("repeat", model))
    elif scenario is Scenario.SHORT_VS_LONG:
        # Loaded first, with a prompt of its own: the short one is not cached.
        await prober.probe("warm-up", model, WARM_UP_PROMPT)
        short = await prober.probe("short", model)
        long = await prober.probe("long", model, LONG_PROMPT)
        per_token = prefill_per_token(short, long)
        verdict = prompt_cost(short, long)
    elif scenario is Scenario.MODEL_SWITCH:
        other = _other_model(plan)
        await prober.probe("A warm-up", model)
        a_warm = await prober.probe("A warm", model)
        b = await prober.probe("B", other)
        verdict = model_switch(a_warm, b, await prober.probe("A again", model))
    elif scenario is Scenario.COMPETING_LOAD:  # the other model loaded (no question), then A again
        other = _other_model(plan)
        await prober.probe("A warm-up", model)
        a_warm = await prober.probe("A warm", model)
        await controller.preload(
            other, keep_seconds=None, num_ctx=contexts.get(other), timeout=timeout
        )
        competing = Run(
            "competing load",
            other,
            a_warm.sample,
            resident_before=False,
            resident_after=other in coordinator.data.held,
            size=coordinator.last_sizes.get(other),
        )
        verdict = model_switch(
            a_warm, competing, await prober.probe("A again", model), competing=True
        )
    else:  # context_change: loaded as another client leaves it, then asked as the agent asks
        await controller.preload(model, keep_seconds=None, num_ctx=None, timeout=timeout)
        changed = await prober.probe("context change", model)
        verdict = context_change(changed, await prober.probe("repeat", model))
    return verdict, per_token


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
    if (
        agent is None
        or agent.keep_alive == 0
        or entry.runtime_data.pins.get(model) is not None
        or entry.runtime_data.household.need() is not None
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
