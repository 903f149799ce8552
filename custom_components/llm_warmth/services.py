"""Actions: ``llm_warmth.probe`` times a request's first token; ``dashboard`` builds one."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path
from typing import Any, Final, cast

from homeassistant.const import ATTR_CONFIG_ENTRY_ID
from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import config_validation as cv, device_registry as dr, service
from homeassistant.util import dt as dt_util
from homeassistant.util.hass_dict import HassKey
from homeassistant.util.json import JsonValueType
from homeassistant.util.yaml import dump as yaml_dump, load_yaml_dict
import probatio as vol

from .agents import ollama_agents
from .const import DOMAIN
from .core.backends.base import GENERATION_TIMEOUT, KeepAlive
from .core.server_url import redact_url
from .core.summary import summary
from .dashboard import build_dashboard
from .data import LlmWarmthConfigEntry
from .devices import server_device_identifier
from .errors import translated_errors

SERVICE_PROBE: Final = "probe"
SERVICE_DASHBOARD: Final = "dashboard"
SERVICE_EVICT: Final = "evict"
SERVICE_PRELOAD: Final = "preload"
ATTR_ALL: Final = "all"
ATTR_KEEP_FOR: Final = "keep_for"
ATTR_KEEP_UNTIL: Final = "keep_until"
ATTR_KEEP_FOREVER: Final = "keep_forever"
ATTR_MODEL: Final = "model"
ATTR_PROMPT: Final = "prompt"
ATTR_LONG_PROMPT: Final = "long_prompt"
ATTR_API: Final = "api"
ATTR_NUM_CTX: Final = "num_ctx"
ATTR_OPTIONS: Final = "options"
ATTR_TIMEOUT: Final = "timeout"

DEFAULT_PROMPT: Final = "Reply with one word: ready?"
# About 1,200 tokens of ordinary prose: a prefill long enough to measure.
LONG_PROMPT: Final = " ".join(
    [
        "Summarise the following notes about the house in one sentence.",
        *(
            f"Note {i}: the heating in room {i % 7} was set to {18 + i % 5} degrees at "
            f"{6 + i % 12} o'clock, the lights stayed off, and the windows were closed."
            for i in range(48)
        ),
    ]
)
# A probe asks for a few tokens only: enough for a decode rate, quick to finish.
DEFAULT_NUM_PREDICT: Final = 16

ATTR_DEVICE_ID: Final = "device_id"

PROBE_SCHEMA = vol.Schema(
    {
        # A model's device, or a server's entry and the model's name.
        vol.Exclusive(ATTR_DEVICE_ID, "target"): cv.string,
        vol.Exclusive(ATTR_CONFIG_ENTRY_ID, "target"): cv.string,
        vol.Optional(ATTR_MODEL): vol.All(cv.string, vol.Length(min=1)),
        vol.Optional(ATTR_PROMPT): vol.All(cv.string, vol.Length(min=1)),
        vol.Optional(ATTR_LONG_PROMPT, default=False): cv.boolean,
        vol.Optional(ATTR_API, default="chat"): vol.In(["chat", "generate"]),
        vol.Optional(ATTR_NUM_CTX): vol.All(vol.Coerce(int), vol.Range(min=256, max=1_048_576)),
        vol.Optional(ATTR_OPTIONS): dict,
        vol.Optional(ATTR_TIMEOUT, default=GENERATION_TIMEOUT): vol.All(
            vol.Coerce(float), vol.Range(min=1, max=1800)
        ),
    }
)


EVICT_SCHEMA = vol.Schema(
    {
        vol.Exclusive(ATTR_DEVICE_ID, "target"): cv.string,
        vol.Exclusive(ATTR_CONFIG_ENTRY_ID, "target"): cv.string,
        vol.Optional(ATTR_MODEL): vol.All(cv.string, vol.Length(min=1)),
        vol.Optional(ATTR_ALL, default=False): cv.boolean,
        vol.Optional(ATTR_TIMEOUT, default=60): vol.All(
            vol.Coerce(float), vol.Range(min=1, max=600)
        ),
    }
)


PRELOAD_SCHEMA = vol.Schema(
    {
        vol.Exclusive(ATTR_DEVICE_ID, "target"): cv.string,
        vol.Exclusive(ATTR_CONFIG_ENTRY_ID, "target"): cv.string,
        vol.Optional(ATTR_MODEL): vol.All(cv.string, vol.Length(min=1)),
        # How long to keep it (Ollama's keep_alive): one of these, or the server's default.
        vol.Exclusive(ATTR_KEEP_FOR, "keep"): vol.All(
            cv.positive_time_period, vol.Range(min=timedelta(seconds=1))
        ),
        vol.Exclusive(ATTR_KEEP_UNTIL, "keep"): cv.datetime,
        vol.Exclusive(ATTR_KEEP_FOREVER, "keep"): vol.All(cv.boolean, True),
        # Ollama: the context to load it with (default: its agent's, so no reload follows).
        vol.Optional(ATTR_NUM_CTX): vol.All(vol.Coerce(int), vol.Range(min=256, max=1_048_576)),
        # Long: a client that gives up during a load makes Ollama abort the load.
        vol.Optional(ATTR_TIMEOUT, default=GENERATION_TIMEOUT): vol.All(
            vol.Coerce(float), vol.Range(min=1, max=1800)
        ),
    }
)

# How the servers that decide by themselves keep a model, for the error that says so.
_KEEPS_BY_ITSELF: Final = {
    KeepAlive.LRU: "until a newer model needs its place (--models-max)",
    KeepAlive.TTL: "for the ttl in its configuration",
}


# The probe's description as services.yaml gives it, and the models offered in it last.
_PROBE_DESCRIPTION: HassKey[dict[str, Any]] = HassKey(f"{DOMAIN}_probe_description")
_OFFERED_MODELS: HassKey[list[str]] = HassKey(f"{DOMAIN}_offered_models")


async def async_setup_services(hass: HomeAssistant) -> None:
    """Register the integration's actions (once, for all entries)."""
    descriptions = await hass.async_add_executor_job(
        load_yaml_dict, str(Path(__file__).parent / "services.yaml")
    )
    hass.data[_PROBE_DESCRIPTION] = descriptions[SERVICE_PROBE]
    hass.services.async_register(
        DOMAIN,
        SERVICE_PROBE,
        _async_probe,
        schema=PROBE_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    service.async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_EVICT,
        _async_evict,
        schema=EVICT_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    service.async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_PRELOAD,
        _async_preload,
        schema=PRELOAD_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_DASHBOARD,
        _async_dashboard,
        schema=vol.Schema({}),
        supports_response=SupportsResponse.ONLY,
    )


@callback
def async_offer_models(hass: HomeAssistant) -> None:
    """Offer the loaded servers' installed models in the probe action's model field.

    services.yaml cannot know them, so the action's description is set again whenever they
    change; the field stays free to type another name (a model the server can pull).
    """
    models = sorted(
        {
            model
            for entry in hass.config_entries.async_loaded_entries(DOMAIN)
            for model in cast(LlmWarmthConfigEntry, entry).runtime_data.coordinator.data.installed
        }
    )
    if hass.data.get(_OFFERED_MODELS) == models:
        return
    hass.data[_OFFERED_MODELS] = models
    description = copy.deepcopy(hass.data[_PROBE_DESCRIPTION])
    description["fields"][ATTR_MODEL]["selector"] = {
        "select": {"options": models, "custom_value": True, "mode": "dropdown"}
    }
    service.async_set_service_schema(hass, DOMAIN, SERVICE_PROBE, description)


async def _async_dashboard(call: ServiceCall) -> ServiceResponse:
    """Return a dashboard for the servers LLM Warmth follows, as config and as YAML."""
    config = build_dashboard(call.hass)
    return {"yaml": yaml_dump(config), "config": config}


def _model_target(call: ServiceCall) -> tuple[LlmWarmthConfigEntry, str]:
    """Return the server's entry and the model an action acts on (one is needed)."""
    entry, model = _target(call)
    if model is None:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="no_model_target")
    return entry, model


def _target(call: ServiceCall) -> tuple[LlmWarmthConfigEntry, str | None]:
    """Return the server's entry and the model an action acts on, if it names one.

    A model's device names both. A server's device, or the server's entry, names the
    server; the ``model`` field then names the model.
    """
    named = call.data.get(ATTR_MODEL)
    if device_id := call.data.get(ATTR_DEVICE_ID):
        device = dr.async_get(call.hass).async_get(device_id)
        entry_id = device.config_entry_id if device else ""
        entry = call.hass.config_entries.async_get_entry(entry_id)
        if device is None or entry is None or entry.domain != DOMAIN:
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="not_a_model_device",
                translation_placeholders={"device_id": device_id},
            )
        server = cast(
            LlmWarmthConfigEntry, service.async_get_config_entry(call.hass, DOMAIN, entry_id)
        )
        # Models are their server's child devices; the server is a main device.
        if isinstance(device, dr.ChildDeviceEntry):
            model = next(
                i.removeprefix(f"{entry_id}_") for d, i in device.identifiers if d == DOMAIN
            )
            if named and server.runtime_data.coordinator.resolve_model(named) != model:
                raise ServiceValidationError(
                    translation_domain=DOMAIN,
                    translation_key="device_and_model_differ",
                    translation_placeholders={"device": device.name or model, "model": named},
                )
            return server, model
        if server_device_identifier(entry_id) not in device.identifiers:
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="not_a_model_device",
                translation_placeholders={"device_id": device_id},
            )
        return server, named
    if ATTR_CONFIG_ENTRY_ID not in call.data:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="no_model_target")
    entry = service.async_get_config_entry(call.hass, DOMAIN, call.data[ATTR_CONFIG_ENTRY_ID])
    return cast(LlmWarmthConfigEntry, entry), named


async def _async_probe(call: ServiceCall) -> ServiceResponse:
    """Run one measured request against a model and return where its TTFT went."""
    entry, requested = _model_target(call)
    coordinator = entry.runtime_data.coordinator
    model = coordinator.resolve_model(requested)
    prompt = call.data.get(ATTR_PROMPT) or (
        LONG_PROMPT if call.data[ATTR_LONG_PROMPT] else DEFAULT_PROMPT
    )
    options: dict[str, Any] = {"num_predict": DEFAULT_NUM_PREDICT}
    options.update(call.data.get(ATTR_OPTIONS) or {})
    if ATTR_NUM_CTX in call.data:
        options["num_ctx"] = call.data[ATTR_NUM_CTX]
    placeholders = {"model": model, "url": redact_url(entry.runtime_data.client.base_url)}
    with translated_errors(call.hass, entry, placeholders):
        probe = await coordinator.async_probe(
            model,
            prompt,
            api=call.data[ATTR_API],
            options=options,
            timeout=call.data[ATTR_TIMEOUT],
        )
    return {
        "model": model,
        "summary": summary(probe.sample, probe.verdict),
        "classification": probe.verdict.classification.value,
        "dominant_stage": probe.verdict.dominant_stage.value,
        **probe.sample.as_response(),
    }


async def _async_evict(call: ServiceCall) -> ServiceResponse:
    """Unload one model, or every resident one, now; say what was unloaded.

    Returns once the server no longer holds them, so that the entities already show it.
    """
    entry, requested = _target(call)
    every = call.data[ATTR_ALL]
    if every == (requested is not None):  # both, or neither
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="evict_target")
    coordinator = entry.runtime_data.coordinator
    # None: all the server holds when the controller reads it again.
    models = None if requested is None else [coordinator.resolve_model(requested)]
    placeholders = {
        "model": ", ".join(models or ["all"]),
        "url": redact_url(entry.runtime_data.client.base_url),
    }
    if models and models[0] not in coordinator.data.models:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="model_not_found",
            translation_placeholders=placeholders,
        )
    with translated_errors(call.hass, entry, placeholders):
        unloaded = await entry.runtime_data.controller.evict(
            models, timeout=call.data[ATTR_TIMEOUT]
        )
    not_resident = [model for model in models or [] if model not in unloaded]
    said = [f"unloaded {', '.join(unloaded)}"] if unloaded else []
    said += [f"not resident: {', '.join(not_resident)}"] if not_resident else []
    return {
        "unloaded": list[JsonValueType](unloaded),
        "not_resident": list[JsonValueType](not_resident),
        "summary": "; ".join(said) or "nothing was resident",
    }


def _keep_seconds(call: ServiceCall, entry: LlmWarmthConfigEntry) -> float | None:
    """Return how long the preload keeps the model (-1: for ever; None: as the server does)."""
    if ATTR_KEEP_FOREVER in call.data:
        seconds: float | None = -1
    elif ATTR_KEEP_FOR in call.data:
        seconds = call.data[ATTR_KEEP_FOR].total_seconds()
    elif ATTR_KEEP_UNTIL in call.data:
        until = dt_util.as_utc(dt_util.as_local(call.data[ATTR_KEEP_UNTIL]))
        seconds = (until - dt_util.utcnow()).total_seconds()
        if seconds < 1:
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="keep_until_past",
                translation_placeholders={"until": until.isoformat()},
            )
    else:
        return None
    if _decides_by_itself(entry):
        how = _KEEPS_BY_ITSELF[entry.runtime_data.client.capabilities.keep_alive]
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="keep_not_supported",
            translation_placeholders={"server": entry.title, "how": how},
        )
    return seconds


def _decides_by_itself(entry: LlmWarmthConfigEntry) -> bool:
    """Return True when the server's configuration sets keep and context (not a request).

    llama-server (``--models-max``, ``--ctx-size``) and llama-swap (``ttl``, its commands).
    """
    return entry.runtime_data.client.capabilities.keep_alive is not KeepAlive.IDLE_TIMER


def _context(
    call: ServiceCall, entry: LlmWarmthConfigEntry, model: str
) -> tuple[int | None, str | None]:
    """Return the context to load with, and the agent it comes from.

    Ollama reloads a model loaded with another ``num_ctx``: unless the call says otherwise,
    the model is loaded with the context of Home Assistant's Ollama agent that uses it.
    """
    if ATTR_NUM_CTX in call.data:
        if _decides_by_itself(entry):
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="num_ctx_not_supported",
                translation_placeholders={"server": entry.title},
            )
        return call.data[ATTR_NUM_CTX], None
    if _decides_by_itself(entry):
        return None, None
    resolve = entry.runtime_data.coordinator.resolve_model
    for agent in ollama_agents(call.hass, entry):
        if resolve(agent.model) == model:
            return agent.num_ctx, agent.name
    return None, None


async def _async_preload(call: ServiceCall) -> ServiceResponse:
    """Load a model now (or find it loaded); say how long its load took."""
    entry, requested = _model_target(call)
    coordinator = entry.runtime_data.coordinator
    model = coordinator.resolve_model(requested)
    placeholders = {"model": model, "url": redact_url(entry.runtime_data.client.base_url)}
    if model not in coordinator.data.models:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="model_not_found",
            translation_placeholders=placeholders,
        )
    keep_seconds = _keep_seconds(call, entry)
    num_ctx, agent = _context(call, entry, model)
    with translated_errors(call.hass, entry, placeholders):
        done = await entry.runtime_data.controller.preload(
            model, keep_seconds=keep_seconds, num_ctx=num_ctx, timeout=call.data[ATTR_TIMEOUT]
        )
    return {
        "model": model,
        "already_resident": done.already_resident,
        "load_seconds": done.seconds,
        "num_ctx": num_ctx,
        "agent": agent,
        "summary": f"{model} was resident already"
        if done.already_resident
        else f"{model} loaded in {done.seconds:.1f} s",
    }
