"""Logbook: the integration's events in words ("big was loaded in 7.5 s")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from homeassistant.components.logbook.const import (
    LOGBOOK_ENTRY_ENTITY_ID,
    LOGBOOK_ENTRY_MESSAGE,
    LOGBOOK_ENTRY_NAME,
)
from homeassistant.core import Event, HomeAssistant, callback

from .const import (
    DOMAIN,
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
)

# Why a model left, as a household reads it.
_REASONS = {
    "expired": "its keep-alive ran out",
    "displaced": "another model took its place",
    "unloaded": "it left early (another client unloaded it, or the server dropped it)",
    "on_request": "on request (llm_warmth.evict)",
    "server_restarted": "the server restarted",
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
    verb = "reloaded" if data.get("reloaded") else "loaded"
    load = _seconds(data, "load")
    if load:
        return f"was {verb} in {load}"
    request = _seconds(data, "cold_request")
    return f"was {verb} (first request took {request})" if request else f"was {verb}"


def _unloaded(data: Mapping[str, Any]) -> str:
    reason = str(data.get("reason"))
    replaced_by = data.get("replaced_by") or []
    if reason == "displaced" and replaced_by:
        return f"was unloaded: {', '.join(map(str, replaced_by))} took its place"
    return f"was unloaded: {_REASONS.get(reason, reason)}"


def _cold_start(data: Mapping[str, Any]) -> str:
    ttft = data.get("ttft_ms")
    if isinstance(ttft, int | float):
        stage = str(data.get("dominant_stage", "load"))
        spent = _STAGES.get(stage, stage.replace("_", " "))
        return f"had a cold start: first token after {ttft / 1000:.1f} s, mostly {spent}"
    load = _seconds(data, "load") or _seconds(data, "cold_request")
    return f"had a cold start ({load})" if load else "had a cold start"


def _restarted(data: Mapping[str, Any]) -> str:
    if data.get("reason") == "version_changed":
        return f"restarted with version {data.get('version')} (was {data.get('previous_version')})"
    return f"is back after an outage (version {data.get('version')})"


_MESSAGES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    EVENT_MODEL_LOADED: _loaded,
    EVENT_MODEL_UNLOADED: _unloaded,
    EVENT_COLD_START: _cold_start,
    EVENT_SERVER_RESTARTED: _restarted,
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
        name = data.get("model") or data.get("server") or DOMAIN
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
