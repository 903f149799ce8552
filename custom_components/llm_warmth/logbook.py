"""Logbook: the integration's events in words, one line per thing that happened.

A line is filed under the model's main entity (its warmth), which is named as the model:
"qwen3:8b · loaded in 7.0 s; a request waited 7.8 s for it (a cold start)". A cold start
is told on the line of the load it waited for: its own event (for automations) has no
line of its own, so that one load is one line, in the Activity panel too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from homeassistant.components.logbook.const import (
    LOGBOOK_ENTRY_ENTITY_ID,
    LOGBOOK_ENTRY_MESSAGE,
    LOGBOOK_ENTRY_NAME,
)
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.util import dt as dt_util

from .const import (
    DOMAIN,
    EVENT_AUTO_WARM,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
    EVENT_VOICE_TURN,
)

# Why a model left memory, as a household reads it.
_REASONS = {
    "expired": "left memory: its keep-alive ran out",
    "displaced": "was pushed out of memory by another model",
    "unloaded": "left memory early (another client unloaded it, or the server dropped it)",
    "on_request": "was unloaded on request (llm_warmth.evict)",
    "server_restarted": "left memory: the server restarted",
}


# Where a slow first token's time went.
_STAGES = {
    "load": "loading",
    "queue": "waiting behind other requests",
    "prefill": "reading the prompt",
    "first_decode": "the first decode",
    "unknown": "in stages the server did not report",
}


def _seconds(data: Mapping[str, Any], figure: str) -> str | None:
    """Return ``<figure>_seconds`` in words; "at least" when polling saw only part of it."""
    value = data.get(f"{figure}_seconds")
    if not isinstance(value, int | float):
        return None
    # Polling sees a load or a cold request from its first sighting on: a lower bound.
    bound = "at least " if data.get(f"{figure}_source") == "polling" else ""
    return f"{bound}{value:.1f} s"


def _loaded(data: Mapping[str, Any]) -> str:
    """Tell one load: how long it took, and whether a request waited for it."""
    verb = "reloaded" if data.get("reloaded") else "loaded"
    load = _seconds(data, "load")
    said = f"{verb} in {load}" if load else verb
    if data.get("cold_start") is False:  # a preload, a pin: LLM Warmth's own load
        return f"{said}; no request waited for it"
    request = _seconds(data, "cold_request")
    ttft = data.get("ttft_ms")
    if data.get("cold_start") and isinstance(ttft, int | float):  # our probe waited
        stage = str(data.get("dominant_stage", "load"))
        spent = _STAGES.get(stage, stage.replace("_", " "))
        return (
            f"{said}; a probe's first token came after {ttft / 1000:.1f} s, mostly {spent} "
            "(a cold start)"
        )
    if data.get("cold_start"):
        waited = f"a request waited {request} for it" if request else "a request waited for it"
        return f"{said}; {waited} (a cold start)"
    if request:
        return f"{said}; its first request took {request}"
    return said if load else f"{said} (how long it took was not seen)"


def _unloaded(data: Mapping[str, Any]) -> str:
    reason = str(data.get("reason"))
    replaced_by = data.get("replaced_by") or []
    if reason == "displaced" and replaced_by:
        return f"was pushed out of memory by {', '.join(map(str, replaced_by))}"
    return _REASONS.get(reason, f"left memory ({reason})")


def _restarted(data: Mapping[str, Any]) -> str:
    if data.get("reason") == "version_changed":
        return f"restarted with version {data.get('version')} (was {data.get('previous_version')})"
    return f"is back after an outage (version {data.get('version')})"


# What a voice turn's silence went to, as a household reads it.
_VOICE_STAGES = {
    "stt": "speech-to-text",
    "queue": "the model busy with other requests",
    "load": "the model loading",
    "prefill": "the model reading the prompt",
    "generation": "the reply written in full before it was spoken",
    "tts": "waiting for the reply's audio",
}


def _voice_turn(data: Mapping[str, Any]) -> str:
    """Tell a voice turn: the silence, and what it waited for most."""
    model, load = data.get("model"), data.get("load_seconds")
    if data.get("error"):
        return f"a voice turn ended with an error ({data.get('error')})"
    if data.get("dominant_stage") == "load" and isinstance(load, int | float):
        bound = "at least " if data.get("load_source") == "polling" else ""
        return f"the reply waited {bound}{load:.1f} s for {model} to load"
    stages = data.get("stages")
    waited = stages.get("load") if isinstance(stages, Mapping) else None
    if data.get("dominant_stage") == "load" and isinstance(waited, int | float):
        # Cold at the agent's start, no figure of the load: load and prompt together.
        return f"the reply waited {waited:.1f} s for {model}, cold, to load and read the prompt"
    silence = data.get("silence_seconds")
    stage = _VOICE_STAGES.get(str(data.get("dominant_stage")))
    if isinstance(silence, int | float) and stage:
        return f"{silence:.1f} s of silence before the reply, mostly {stage}"
    return "a voice turn (its stages were not timed)"


def _clock(value: object) -> str | None:
    """Return an event's ISO time as the household's clock shows it (HH:MM)."""
    when = dt_util.parse_datetime(value) if isinstance(value, str) else None
    return dt_util.as_local(when).strftime("%H:%M") if when else None


def _auto_warm(data: Mapping[str, Any]) -> str:
    """Tell why auto-warm loaded a model: a signal that leads a use, or the clock."""
    until = _clock(data.get("until"))
    held = f" (held until {until} unless used)" if until else ""
    if data.get("reason") == "signal":
        name = data.get("signal_name") or data.get("signal_entity_id")
        state = data.get("signal_state")
        what = f"{name}'s time came" if state == "alarm" else f"{name} {state}"
        return (
            f"warmed on a signal: {what}: a use follows within {data.get('within_minutes')}"
            f" min {data.get('share_percent')} % of the time{held}"
        )
    expected = _clock(data.get("expected_at"))
    return (
        f"warmed ahead of its expected use at {expected}{held}"
        if expected
        else f"warmed ahead{held}"
    )


_MESSAGES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    EVENT_MODEL_LOADED: _loaded,
    EVENT_MODEL_UNLOADED: _unloaded,
    EVENT_SERVER_RESTARTED: _restarted,
    EVENT_VOICE_TURN: _voice_turn,
    EVENT_AUTO_WARM: _auto_warm,
}


@callback
def async_describe_events(
    hass: HomeAssistant,
    async_describe_event: Callable[[str, str, Callable[[Event], dict[str, str]]], None],
) -> None:
    """Describe the integration's events for the logbook."""

    @callback
    def describe(event: Event) -> dict[str, str]:
        data = event.data
        name = data.get("pipeline_name") or data.get("model") or data.get("server") or DOMAIN
        described = {
            LOGBOOK_ENTRY_NAME: str(name),
            LOGBOOK_ENTRY_MESSAGE: _MESSAGES[str(event.event_type)](data),
        }
        # The event names the model's warmth sensor (the coordinator looked it up), so
        # that the logbook files it there, on the model's device page too.
        if isinstance(entity_id := data.get("entity_id"), str):
            described[LOGBOOK_ENTRY_ENTITY_ID] = entity_id
        return described

    for event_type in _MESSAGES:
        async_describe_event(DOMAIN, event_type, describe)
