"""Actions: ``probe`` times a request's first token; ``dashboard`` builds one.

The residency actions (``residency_actions``) are registered here too.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Final

from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.helpers import config_validation as cv, service
from homeassistant.util.hass_dict import HassKey
from homeassistant.util.yaml import dump as yaml_dump, load_yaml_dict
import probatio as vol

from .const import DOMAIN
from .core.action_reply import dashboard_hours, model_selector, offered_models, probe_reply
from .core.server_url import redact_url
from .dashboard import CARD_HOURS, build_dashboard
from .diagnosis import (
    CANCEL_SCHEMA,
    DIAGNOSE_SCHEMA,
    SERVICE_CANCEL_DIAGNOSIS,
    SERVICE_DIAGNOSE,
    SERVICE_START_IDLE_PROFILE,
    SERVICE_STOP_IDLE_PROFILE,
    async_cancel_diagnosis,
    async_diagnose,
    async_start_idle_profile,
    async_stop_idle_profile,
)
from .errors import translated_errors
from .household_entry import server_entries
from .probe_prompts import DEFAULT_PROMPT, LONG_PROMPT, probe_options
from .residency_actions import (
    SERVICE_EVICT,
    SERVICE_PIN,
    SERVICE_PRELOAD,
    SERVICE_UNPIN,
    async_register_residency_actions,
)
from .sentences import say
from .targets import (
    ATTR_MODEL,
    ATTR_NUM_CTX,
    ATTR_TIMEOUT,
    LOAD_TIMEOUT_FIELD,
    NUM_CTX,
    TARGET_FIELDS,
    model_context,
    model_target,
)

SERVICE_PROBE: Final = "probe"
SERVICE_DASHBOARD: Final = "dashboard"
ATTR_HOURS_TO_SHOW: Final = "hours_to_show"
ATTR_PROMPT: Final = "prompt"
ATTR_LONG_PROMPT: Final = "long_prompt"
ATTR_API: Final = "api"
ATTR_OPTIONS: Final = "options"

# The live view's span: from three minutes (a demo's fast-forwarded morning) to a year.
DASHBOARD_SCHEMA = vol.Schema(
    {
        vol.Optional(ATTR_HOURS_TO_SHOW, default=CARD_HOURS): vol.All(
            vol.Coerce(float), vol.Range(min=0.05, max=366 * 24)
        )
    }
)

PROBE_SCHEMA = vol.Schema(
    {
        **TARGET_FIELDS,
        vol.Optional(ATTR_PROMPT): vol.All(cv.string, vol.Length(min=1)),
        vol.Optional(ATTR_LONG_PROMPT, default=False): cv.boolean,
        vol.Optional(ATTR_API, default="chat"): vol.In(["chat", "generate"]),
        vol.Optional(ATTR_NUM_CTX): NUM_CTX,
        vol.Optional(ATTR_OPTIONS): dict,
        **LOAD_TIMEOUT_FIELD,
    }
)

# The actions that name a model, as services.yaml describes them, and the models offered
# in their model field last.
_MODEL_ACTIONS: Final = (
    SERVICE_PROBE,
    SERVICE_PRELOAD,
    SERVICE_EVICT,
    SERVICE_PIN,
    SERVICE_UNPIN,
    SERVICE_DIAGNOSE,
    SERVICE_CANCEL_DIAGNOSIS,
    SERVICE_START_IDLE_PROFILE,
    SERVICE_STOP_IDLE_PROFILE,
)
_DESCRIPTIONS: HassKey[dict[str, Any]] = HassKey(f"{DOMAIN}_descriptions")
_OFFERED_MODELS: HassKey[list[str]] = HassKey(f"{DOMAIN}_offered_models")


async def async_setup_services(hass: HomeAssistant) -> None:
    """Register the integration's actions (once, for all entries)."""
    hass.data[_DESCRIPTIONS] = await hass.async_add_executor_job(
        load_yaml_dict, str(Path(__file__).parent / "services.yaml")
    )
    # Every action that loads or unloads a model is an administrator's: a probe loads
    # the model it times.
    service.async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_PROBE,
        _async_probe,
        schema=PROBE_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    async_register_residency_actions(hass)
    # It evicts and loads models: administrators only.
    service.async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_DIAGNOSE,
        async_diagnose,
        schema=DIAGNOSE_SCHEMA,
        supports_response=SupportsResponse.ONLY,
    )
    for name, handler in (
        (SERVICE_START_IDLE_PROFILE, async_start_idle_profile),
        (SERVICE_STOP_IDLE_PROFILE, async_stop_idle_profile),
    ):
        service.async_register_admin_service(
            hass,
            DOMAIN,
            name,
            handler,
            schema=CANCEL_SCHEMA,
            supports_response=SupportsResponse.OPTIONAL,
        )
    service.async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_CANCEL_DIAGNOSIS,
        async_cancel_diagnosis,
        schema=CANCEL_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_DASHBOARD,
        _async_dashboard,
        schema=DASHBOARD_SCHEMA,
        supports_response=SupportsResponse.ONLY,
    )


@callback
def async_offer_models(hass: HomeAssistant) -> None:
    """Offer the loaded servers' installed models in the model field of the actions.

    services.yaml cannot know them, so the actions' descriptions are set again whenever
    they change; the field stays free to type another name (a model the server can pull).
    """
    models = offered_models(
        entry.runtime_data.coordinator.data.installed for entry in server_entries(hass)
    )
    if hass.data.get(_OFFERED_MODELS) == models:
        return
    hass.data[_OFFERED_MODELS] = models
    for action in _MODEL_ACTIONS:
        description = copy.deepcopy(hass.data[_DESCRIPTIONS][action])
        description["fields"][ATTR_MODEL]["selector"] = model_selector(models)
        service.async_set_service_schema(hass, DOMAIN, action, description)


async def _async_dashboard(call: ServiceCall) -> ServiceResponse:
    """Return a dashboard for the servers LLM Warmth follows, as config and as YAML."""
    config = build_dashboard(call.hass, dashboard_hours(call.data[ATTR_HOURS_TO_SHOW]))
    return {"yaml": yaml_dump(config), "config": config}


async def _async_probe(call: ServiceCall) -> ServiceResponse:
    """Run one measured request against a model and return where its TTFT went."""
    entry, requested = model_target(call)
    coordinator = entry.runtime_data.coordinator
    model = coordinator.resolve_model(requested)
    prompt = call.data.get(ATTR_PROMPT) or (
        LONG_PROMPT if call.data[ATTR_LONG_PROMPT] else DEFAULT_PROMPT
    )
    given = call.data.get(ATTR_OPTIONS) or {}
    # Asked as the agent asks (its num_ctx): a probe that reloads the model would measure
    # a load the agent never sees, and leave the agent's next turn a reload.
    num_ctx, agent = model_context(call, entry, model, given.get("num_ctx"))
    options = probe_options(num_ctx, given)
    placeholders = {"model": model, "url": redact_url(entry.runtime_data.client.base_url)}
    with translated_errors(call.hass, entry, placeholders):
        probe = await entry.runtime_data.own_requests.async_probe(
            model,
            prompt,
            api=call.data[ATTR_API],
            options=options,
            timeout=call.data[ATTR_TIMEOUT],
        )
    reply = probe_reply(model, probe, num_ctx=num_ctx, agent=agent)
    return reply.answer(say(call.hass, *reply.said))
