"""Actions on residency: ``evict``, ``preload``, ``pin`` and ``unpin`` a model.

Thin: they check the call, act through the entry's ``ResidencyController`` and answer in
Home Assistant's words (``errors.translated_errors``). All change what the server holds, so
only administrators may call them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.helpers import config_validation as cv, service
from homeassistant.util import dt as dt_util
import probatio as vol

from .agents import agent_system_prompt, model_agent
from .const import DOMAIN
from .core.action_fields import check_evict_target, keep_seconds, pin_end
from .core.action_reply import (
    evict_reply,
    next_turn,
    pin_reply,
    preload_reply,
    unpin_reply,
    warm_up_reply,
    warm_up_wanted,
)
from .core.json_value import JsonValue
from .core.pins import PRIORITY_MAX, PRIORITY_MIN, Pin
from .core.residency_control import kept_until
from .core.server_url import redact_url
from .data import LlmWarmthConfigEntry
from .errors import translated_errors
from .probe_prompts import AGENT_WARM_UP_PROMPT, probe_options
from .sentences import local_time, local_timestamp, say
from .targets import (
    ATTR_NUM_CTX,
    ATTR_TIMEOUT,
    LOAD_TIMEOUT_FIELD,
    NUM_CTX,
    TARGET_FIELDS,
    UNLOAD_TIMEOUT_FIELD,
    known_model,
    known_model_target,
    model_context,
    model_target,
    refusals_in_words,
    target,
)

SERVICE_EVICT: Final = "evict"
SERVICE_PRELOAD: Final = "preload"
SERVICE_PIN: Final = "pin"
SERVICE_UNPIN: Final = "unpin"
ATTR_ALL: Final = "all"
ATTR_EVICT: Final = "evict"
ATTR_KEEP_FOR: Final = "keep_for"
ATTR_KEEP_UNTIL: Final = "keep_until"
ATTR_KEEP_FOREVER: Final = "keep_forever"
ATTR_PRIORITY: Final = "priority"
ATTR_UNTIL: Final = "until"
ATTR_FOR: Final = "for"
ATTR_FORCE: Final = "force"
ATTR_WARM_UP: Final = "warm_up"
ATTR_PROMPT: Final = "prompt"
ATTR_SYSTEM_PROMPT: Final = "system_prompt"
# The turn after it, where the server reports what its prompt cache kept.
NEXT_TURN_PROMPT: Final = "What time is it?"


# The longest text of a time kept to say it back (a call may send any length).
_SHOWN_TIME: Final = 64


def _time(value: object) -> datetime | str:
    """Read a time in Home Assistant's forms; one it cannot read is said back in words later.

    Home Assistant's reader answers a time past what Python holds (``10000-01-01``) with an
    untranslated "Invalid datetime specified": the text goes on, and the call is refused
    in words (``time_not_read``) before anything is sent.
    """
    try:
        moment: datetime = cv.datetime(value)
    except vol.Invalid:
        return str(value)[:_SHOWN_TIME]
    return moment


def _duration(value: object) -> timedelta:
    """Read a duration in any of Home Assistant's forms; its range is checked in words later.

    One beyond what Python can count (10**15 s, 10**9 days) reads as ``timedelta.max``:
    Home Assistant's reader builds the ``timedelta`` first and raises ``OverflowError``.
    """
    try:
        duration: timedelta = cv.time_period(value)
    except OverflowError:
        return timedelta.max
    return duration


EVICT_SCHEMA = vol.Schema(
    {
        **TARGET_FIELDS,
        vol.Optional(ATTR_ALL, default=False): cv.boolean,
        **UNLOAD_TIMEOUT_FIELD,
    }
)


PRELOAD_SCHEMA = vol.Schema(
    {
        **TARGET_FIELDS,
        # How long to keep it (Ollama's keep_alive): one of these, or the server's default.
        vol.Exclusive(ATTR_KEEP_FOR, "keep"): _duration,
        vol.Exclusive(ATTR_KEEP_UNTIL, "keep"): _time,
        vol.Exclusive(ATTR_KEEP_FOREVER, "keep"): vol.All(cv.boolean, True),
        vol.Optional(ATTR_NUM_CTX): NUM_CTX,
        # Load even when the household guard says the house needs the GPU.
        vol.Optional(ATTR_FORCE, default=False): cv.boolean,
        # Then a request shaped like the agent's (its system prompt), timed by stage.
        vol.Optional(ATTR_WARM_UP, default=False): cv.boolean,
        vol.Optional(ATTR_PROMPT): vol.All(cv.string, vol.Length(min=1)),
        vol.Optional(ATTR_SYSTEM_PROMPT): vol.All(cv.string, vol.Length(min=1)),
        **LOAD_TIMEOUT_FIELD,
    }
)

PIN_SCHEMA = vol.Schema(
    {
        **TARGET_FIELDS,
        # Until unpinned, or until a time (or for a while from now).
        vol.Exclusive(ATTR_UNTIL, "end"): _time,
        vol.Exclusive(ATTR_FOR, "end"): _duration,
        # The household guard releases the lowest priority first.
        vol.Optional(ATTR_PRIORITY, default=0): vol.All(
            vol.Coerce(int), vol.Range(min=PRIORITY_MIN, max=PRIORITY_MAX)
        ),
        vol.Optional(ATTR_NUM_CTX): NUM_CTX,
        vol.Optional(ATTR_FORCE, default=False): cv.boolean,
        **LOAD_TIMEOUT_FIELD,
    }
)

UNPIN_SCHEMA = vol.Schema(
    {
        **TARGET_FIELDS,
        # Unload it now rather than hand it back to the server's own idle time.
        vol.Optional(ATTR_EVICT, default=False): cv.boolean,
        **UNLOAD_TIMEOUT_FIELD,
    }
)


def async_register_residency_actions(hass: HomeAssistant) -> None:
    """Register the actions that change residency (administrators only)."""
    for name, handler, schema in (
        (SERVICE_EVICT, _async_evict, EVICT_SCHEMA),
        (SERVICE_PRELOAD, _async_preload, PRELOAD_SCHEMA),
        (SERVICE_PIN, _async_pin, PIN_SCHEMA),
        (SERVICE_UNPIN, _async_unpin, UNPIN_SCHEMA),
    ):
        service.async_register_admin_service(
            hass, DOMAIN, name, handler, schema=schema, supports_response=SupportsResponse.OPTIONAL
        )


async def _async_evict(call: ServiceCall) -> ServiceResponse:
    """Unload one model, or every resident one, now; say what was unloaded.

    Returns once the server no longer holds them, so that the entities already show it.
    """
    entry, requested = target(call)
    with refusals_in_words():
        check_evict_target(every=call.data[ATTR_ALL], model=requested)
    # None: all the server holds when the controller reads it again.
    if requested is None:
        models = None
        placeholders = {"model": "all", "url": redact_url(entry.runtime_data.client.base_url)}
    else:
        model, placeholders = known_model(entry, requested)
        models = [model]
    pinned = set(entry.runtime_data.pins.pins)
    with (
        translated_errors(call.hass, entry, placeholders),
        entry.runtime_data.pins.changed_by(call.context),
    ):
        unloaded = await entry.runtime_data.controller.evict(
            models, timeout=call.data[ATTR_TIMEOUT]
        )
    for model in unloaded:
        entry.runtime_data.pins.preloaded(model, None)  # what it asked to keep is gone
    reply = evict_reply(models, unloaded, pinned)
    return reply.answer(say(call.hass, *reply.said))


def _keep_seconds(call: ServiceCall, entry: LlmWarmthConfigEntry) -> float | None:
    """Return how long the preload keeps the model (-1: for ever; None: as the server does)."""
    with refusals_in_words():
        return keep_seconds(
            forever=ATTR_KEEP_FOREVER in call.data,
            keep_for=call.data.get(ATTR_KEEP_FOR),
            keep_until=call.data.get(ATTR_KEEP_UNTIL),
            now=dt_util.utcnow(),
            zone=dt_util.get_default_time_zone(),
            capabilities=entry.runtime_data.client.capabilities,
            server=entry.title,
        )


async def _async_preload(call: ServiceCall) -> ServiceResponse:
    """Load a model now (or find it loaded); say how long its load took."""
    entry, model, placeholders = known_model_target(call)
    keep_seconds = _keep_seconds(call, entry)
    num_ctx, agent = model_context(call, entry, model)
    _guard_check(entry, model, force=call.data[ATTR_FORCE])
    with translated_errors(call.hass, entry, placeholders):
        done = await entry.runtime_data.controller.preload(
            model, keep_seconds=keep_seconds, num_ctx=num_ctx, timeout=call.data[ATTR_TIMEOUT]
        )
        # The keep asked for, for the keep_alive repair (for ever, or the server's: none).
        entry.runtime_data.pins.preloaded(
            model,
            # On the polls' clock, which the repair reads it on.
            kept_until(keep_seconds, entry.runtime_data.coordinator.utcnow()),
        )
        warm_up = await _warm_up(call, entry, model, num_ctx)
    reply = preload_reply(done, num_ctx=num_ctx, agent=agent, warm_up=warm_up)
    return reply.answer(say(call.hass, *reply.said))


async def _warm_up(
    call: ServiceCall, entry: LlmWarmthConfigEntry, model: str, num_ctx: int | None
) -> dict[str, JsonValue] | None:
    """Send the warm-up request, if the call asks for one; return its stage split.

    With the agent's system prompt (unless the call gives one), so that the server's
    prompt cache holds its prefix for the agent's next turn; with the context the model
    was loaded with (another one would reload it). It carries no keep_alive: the model
    keeps the preload's.
    """
    if not warm_up_wanted(
        warm_up=call.data[ATTR_WARM_UP],
        prompt=call.data.get(ATTR_PROMPT),
        system_prompt=call.data.get(ATTR_SYSTEM_PROMPT),
    ):
        return None
    system: str | None = call.data.get(ATTR_SYSTEM_PROMPT)
    source: str | None = "call" if system else None
    agent = model_agent(entry, model)
    if system is None and agent is not None:
        system, source = await agent_system_prompt(call.hass, agent), agent.name
    think = agent.think if agent else None
    # One token: the prefill is what a warm-up is for.
    options = probe_options(num_ctx, {"num_predict": 1})
    own = entry.runtime_data.own_requests
    probe = await own.async_probe(
        model,
        call.data.get(ATTR_PROMPT, AGENT_WARM_UP_PROMPT),
        options=options,
        timeout=call.data[ATTR_TIMEOUT],
        system=system,
        think=think,
    )
    following: dict[str, JsonValue] | None = None
    if entry.runtime_data.client.capabilities.reports_prompt_cache:
        # A turn like the agent's next one (same system prompt, another question): the
        # server says how much of its prompt came from the cache.
        after = await own.async_probe(
            model,
            NEXT_TURN_PROMPT,
            options=options,
            timeout=call.data[ATTR_TIMEOUT],
            system=system,
            think=think,
        )
        following = next_turn(after.sample)
    reply = warm_up_reply(probe, system_prompt_from=source, next_turn=following)
    return reply.answer(say(call.hass, *reply.said))


def _guard_check(entry: LlmWarmthConfigEntry, model: str, *, force: bool) -> None:
    """Refuse (translated, with the numbers) a load that would starve the household."""
    entry.runtime_data.household.check(model, force=force)


async def _async_pin(call: ServiceCall) -> ServiceResponse:
    """Keep a model resident until unpinned or until a time; load it now."""
    entry, model, placeholders = known_model_target(call)
    with refusals_in_words():
        until = pin_end(
            pin_for=call.data.get(ATTR_FOR),
            until=call.data.get(ATTR_UNTIL),
            now=dt_util.utcnow(),
            zone=dt_util.get_default_time_zone(),
        )
    num_ctx, agent = model_context(call, entry, model)
    pin = Pin(
        model=model,
        priority=call.data[ATTR_PRIORITY],
        until=until,
        num_ctx=num_ctx,
        since=dt_util.utcnow(),
    )
    _guard_check(entry, model, force=call.data[ATTR_FORCE])
    # The Keep warm switch turns on in the call's context: the logbook tells who pinned.
    with (
        translated_errors(call.hass, entry, placeholders),
        entry.runtime_data.pins.changed_by(call.context),
    ):
        done = await entry.runtime_data.controller.pin(pin, timeout=call.data[ATTR_TIMEOUT])
    reply = pin_reply(
        pin,
        done,
        agent=agent,
        keep_alive=entry.runtime_data.client.capabilities.keep_alive,
        until_words=local_time(until) if until else None,
        until_stamp=local_timestamp(until),
    )
    return reply.answer(say(call.hass, *reply.said))


async def _async_unpin(call: ServiceCall) -> ServiceResponse:
    """Stop keeping a model resident; hand it back to the server (or unload it)."""
    entry, requested = model_target(call)
    model = entry.runtime_data.coordinator.resolve_model(requested)
    placeholders = {"model": model, "url": redact_url(entry.runtime_data.client.base_url)}
    with (
        translated_errors(call.hass, entry, placeholders),
        entry.runtime_data.pins.changed_by(call.context),
    ):
        pin, residency = await entry.runtime_data.controller.unpin(
            model, evict=call.data[ATTR_EVICT], timeout=call.data[ATTR_TIMEOUT]
        )
    reply = unpin_reply(model, pin, residency)
    return reply.answer(say(call.hass, *reply.said))
