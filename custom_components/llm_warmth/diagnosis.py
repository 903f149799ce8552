"""``llm_warmth.diagnose``: run the cold-start protocol on a model and say which layer went cold.

Each scenario is a sequence of probes with the same prompt, sampling and client, so that
only the intended state changes; the verdict is ``core.diagnose``'s.
"""

from __future__ import annotations

from typing import Any, Final

from homeassistant.core import ServiceCall, ServiceResponse
from homeassistant.exceptions import ServiceValidationError
from homeassistant.util import dt as dt_util
import probatio as vol

from .const import DOMAIN
from .core.backends.base import GENERATION_TIMEOUT
from .core.diagnose import (
    Run,
    cold_vs_repeat,
    model_switch,
    prefill_per_token,
    prompt_cost,
    runs_table,
    verdict_as_dict,
)
from .core.server_url import redact_url
from .data import LlmWarmthConfigEntry
from .errors import translated_errors
from .probe_prompts import DEFAULT_NUM_PREDICT, DEFAULT_PROMPT, LONG_PROMPT
from .targets import TARGET_FIELDS, model_target

SERVICE_DIAGNOSE: Final = "diagnose"
ATTR_SCENARIO: Final = "scenario"
ATTR_OTHER_MODEL: Final = "other_model"
SCENARIOS: Final = ("cold_vs_repeat", "short_vs_long", "model_switch")

DIAGNOSE_SCHEMA = vol.Schema(
    {
        **TARGET_FIELDS,
        vol.Optional(ATTR_SCENARIO, default="cold_vs_repeat"): vol.In(SCENARIOS),
        # The model B of a switch (A is the target).
        vol.Optional(ATTR_OTHER_MODEL): vol.All(str, vol.Length(min=1)),
        vol.Optional("timeout", default=GENERATION_TIMEOUT): vol.All(
            vol.Coerce(float), vol.Range(min=1, max=1800)
        ),
    }
)


class _Prober:
    """Probes one server with the fixed prompt, noting the residency around each probe."""

    def __init__(self, entry: LlmWarmthConfigEntry, timeout: float) -> None:
        self._entry = entry
        self._timeout = timeout
        self.runs: list[Run] = []

    async def probe(self, label: str, model: str, prompt: str = DEFAULT_PROMPT) -> Run:
        coordinator = self._entry.runtime_data.coordinator
        await coordinator.async_refresh()
        before = coordinator.data.held.get(model)
        result = await coordinator.async_probe(
            model, prompt, options={"num_predict": DEFAULT_NUM_PREDICT}, timeout=self._timeout
        )
        after = coordinator.data.held.get(model)
        run = Run(
            label,
            model,
            result.sample,
            resident_before=before is not None,
            resident_after=after is not None,
            num_ctx_before=before.context_length if before else None,
            num_ctx_after=after.context_length if after else None,
            size=coordinator.last_sizes.get(model),
        )
        self.runs.append(run)
        return run

    async def evict(self, model: str) -> None:
        await self._entry.runtime_data.controller.evict([model], timeout=self._timeout)


async def async_diagnose(call: ServiceCall) -> ServiceResponse:
    """Run a scenario on a model; answer its runs and the verdict."""
    entry, requested = model_target(call)
    coordinator = entry.runtime_data.coordinator
    model = coordinator.resolve_model(requested)
    scenario = call.data[ATTR_SCENARIO]
    other = call.data.get(ATTR_OTHER_MODEL)
    other = coordinator.resolve_model(other) if other else None
    placeholders = {"model": model, "url": redact_url(entry.runtime_data.client.base_url)}
    for name in (model, other):
        if name is not None and name not in coordinator.data.models:
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="model_not_found",
                translation_placeholders={**placeholders, "model": name},
            )
        if name is not None and coordinator.pins.get(name) is not None:
            # The scenarios evict: that would unpin it.
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="diagnose_pinned",
                translation_placeholders={"model": name},
            )
    if scenario == "model_switch" and (other is None or other == model):
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key="diagnose_other_model"
        )
    prober = _Prober(entry, call.data["timeout"])
    extra: dict[str, Any] = {}
    with translated_errors(call.hass, entry, placeholders):
        if scenario == "cold_vs_repeat":
            await prober.evict(model)
            cold = await prober.probe("cold", model)
            verdict = cold_vs_repeat(cold, await prober.probe("repeat", model))
        elif scenario == "short_vs_long":
            await prober.probe("warm-up", model)
            short = await prober.probe("short", model)
            long = await prober.probe("long", model, LONG_PROMPT)
            per_token = prefill_per_token(short, long)
            extra["prefill_ms_per_token"] = None if per_token is None else round(per_token, 3)
            verdict = prompt_cost(short, long)
        else:
            assert other is not None
            await prober.probe("A warm-up", model)
            a_warm = await prober.probe("A warm", model)
            b = await prober.probe("B", other)
            verdict = model_switch(a_warm, b, await prober.probe("A again", model))
    answer: dict[str, Any] = {
        "model": model,
        "scenario": scenario,
        "at": dt_util.utcnow().isoformat(),
        "runs": runs_table(prober.runs),
        **verdict_as_dict(verdict),
        **extra,
    }
    # The model's "Last diagnosis" sensor shows it, and it is kept across restarts.
    coordinator.diagnoses[model] = answer
    coordinator.async_save_soon()
    coordinator.async_update_listeners()
    return answer
