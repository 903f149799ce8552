"""A ready dashboard for the servers LLM Warmth follows, built from their entities.

Entity ids differ per installation (they come from the server's and the models' names),
so the dashboard is built from the entity registry rather than shipped with fixed ids:
the ``llm_warmth.dashboard`` action returns it, as YAML to paste into a new dashboard.
"""

from __future__ import annotations

from functools import partial
from typing import cast

from homeassistant.const import Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.util.json import JsonObjectType

from .assistant import assistant_model
from .const import DOMAIN
from .core.dashboard_layout import CARD_HOURS, PipelineView, ServerView, dashboard
from .data import LlmWarmthConfigEntry
from .devices import entity_unique_id
from .household_entry import is_household, server_entries
from .voice import voice_subject

# CARD_HOURS: the action's default span of the live view (services.py).
__all__ = ["CARD_HOURS", "build_dashboard"]


@callback
def build_dashboard(hass: HomeAssistant, hours: float = CARD_HOURS) -> JsonObjectType:
    """Return a Lovelace dashboard (one view) for every loaded LLM Warmth entry.

    ``hours``: the live view's span (the card's and the load, probe and voice graphs').
    """
    registry = er.async_get(hass)
    households = [e.entry_id for e in hass.config_entries.async_entries(DOMAIN) if is_household(e)]
    servers = [_server_view(registry, households, entry) for entry in server_entries(hass)]
    # JSON all through (typed dicts, which mypy counts apart from dict[str, JSON]).
    return cast("JsonObjectType", dashboard(servers, hours))


def _server_view(
    registry: er.EntityRegistry, households: list[str], entry: LlmWarmthConfigEntry
) -> ServerView:
    """Return what the dashboard shows of one server: its models, GPUs, pipelines, entities."""
    gpu = entry.runtime_data.gpu
    return ServerView(
        title=entry.title,
        models=entry.runtime_data.coordinator.data.models,
        assistant=assistant_model(entry)[0],
        gpus=list(gpu.data.gpus) if gpu is not None and gpu.data is not None else [],
        gpu_names={
            uuid: f"GPU {reading.status.index}"
            for uuid, reading in (gpu.data.gpus.items() if gpu and gpu.data else ())
        },
        pipelines=[
            PipelineView(voice_subject(pipeline.id), pipeline.name)
            for pipeline in entry.runtime_data.voice.pipelines.values()
        ],
        entity=partial(_enabled_entity, registry, entry.entry_id),
        household_lines=[
            line
            for household in households
            if (
                line := registry.async_get_entity_id(
                    Platform.SENSOR, DOMAIN, f"{household}_{entry.entry_id}_household"
                )
            )
        ],
        assistants=[
            e
            for subentry_id in entry.subentries
            if (e := registry.async_get_entity_id("conversation", DOMAIN, subentry_id))
        ],
    )


def _enabled_entity(
    registry: er.EntityRegistry, entry_id: str, subject: str, key: str, platform: str
) -> str | None:
    """Return the entity id of the entry's ``subject``'s ``key`` on ``platform``, if enabled.

    A sensor the user disabled would only show "not available": None, as for none.
    """
    unique_id = entity_unique_id(entry_id, subject, key)
    entity_id = registry.async_get_entity_id(platform, DOMAIN, unique_id)
    found = registry.async_get(entity_id) if entity_id else None
    return entity_id if found is not None and found.disabled_by is None else None
