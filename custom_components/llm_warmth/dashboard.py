"""A ready dashboard for the servers LLM Warmth follows, built from their entities.

Entity ids differ per installation (they come from the server's and the models' names),
so the dashboard is built from the entity registry rather than shipped with fixed ids:
the ``llm_warmth.dashboard`` action returns it, as YAML to paste into a new dashboard.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from homeassistant.const import Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er

from .assistant import assistant_model
from .const import DOMAIN
from .data import LlmWarmthConfigEntry
from .devices import display_name, entity_unique_id
from .household_entry import is_household, server_entries
from .voice import voice_subject

# Model sensors on the graphs, by key, with a short label: a graph's legend would otherwise
# read "<server> ▸ <model> ▸ <sensor name>", cut short.
_LOAD_KEYS = {"last_measured_load_duration": "load", "last_cold_request_duration": "cold request"}
_VOICE_KEYS = {
    "voice_silence": "silence",
    "voice_stt": "speech-to-text",
    "voice_agent_first_text": "agent's first words",
}
_PROBE_KEYS = {"last_ttft": "TTFT", "load_stage": "queue and load", "prefill_stage": "prefill"}

# The card's options (custom:llm-warmth-card) by the sensor's key: a model's, its last
# probe's stages, a GPU's.
_CARD_MODEL_KEYS = {
    "last_measured_load_duration": "load",
    "last_cold_request_duration": "cold_request",
    "vram": "vram",
}
_CARD_PROBE_KEYS = {
    "last_ttft": "ttft",
    # When it changed: the last cold probe, whose stages the card reads from the history.
    "last_cold_ttft": "cold_ttft",
    "load_stage": "load",
    "queue_stage": "queue",
    "prefill_stage": "prefill",
    "first_decode_stage": "first_decode",
    "overhead_stage": "overhead",
}
_CARD_GPU_KEYS = {
    ("gpu_memory_total", Platform.SENSOR): "total",
    ("gpu_memory_other", Platform.SENSOR): "other",
    # Its reserve_bytes attribute: the household's reserve.
    ("gpu_headroom_low", Platform.BINARY_SENSOR): "headroom_low",
}

# The live view, the card's and the graphs': a morning's loads are wide enough to read on
# the first day, and still on the hundredth. The long view is the same card over a week:
# each day's loads and cold starts side by side (the load sensors hold their last figure
# between loads, so their long-term statistics would average a held value, not loads).
CARD_HOURS = 6
GRAPH_HOURS = CARD_HOURS
WEEK_HOURS = 7 * 24


@callback
def build_dashboard(hass: HomeAssistant) -> dict[str, Any]:
    """Return a Lovelace dashboard (one view) for every loaded LLM Warmth entry."""
    registry = er.async_get(hass)
    entries = server_entries(hass)
    cards: list[dict[str, Any]] = []
    warmth: list[str] = []
    loads: list[dict[str, str]] = []
    probes: list[dict[str, str]] = []
    gpus: list[str] = []
    keep_warm: list[str] = []
    week: list[dict[str, Any]] = []
    voice: list[dict[str, str]] = []
    for entry in sorted(entries, key=lambda e: e.title):

        def entity(
            subject: str, key: str, platform: str = Platform.SENSOR, entry_id: str = entry.entry_id
        ) -> str | None:
            unique_id = entity_unique_id(entry_id, subject, key)
            entity_id = registry.async_get_entity_id(platform, DOMAIN, unique_id)
            found = registry.async_get(entity_id) if entity_id else None
            # A sensor the user disabled would only show "not available".
            return entity_id if found is not None and found.disabled_by is None else None

        models = sorted(entry.runtime_data.coordinator.data.models)
        # Without an assistant model (no agent found, none chosen) the row would read "Unknown".
        assistant = assistant_model(entry)[0]
        server_warmth = entity("", "assistant_warmth") if assistant else None
        # Each model's warmth is its main entity: the row reads as the model's name.
        model_warmth = [e for m in models if (e := entity(m, "warmth"))]
        cards.append(
            {
                "type": "entities",
                "title": entry.title,
                "entities": [
                    *(
                        [
                            {
                                "entity": server_warmth,
                                "name": f"Assistant ({display_name(assistant)})",
                            }
                        ]
                        if server_warmth and assistant
                        else []
                    ),
                    *model_warmth,
                ],
            }
        )
        # The logbook of the models, and of the server's outages and restarts (its
        # connectivity): the assistant's warmth would repeat one of the models' lines.
        warmth += [
            *model_warmth,
            *([c] if (c := entity("", "connectivity", Platform.BINARY_SENSOR)) else []),
        ]
        gpu = entry.runtime_data.gpu
        gpu_uuids = sorted(gpu.data.gpus) if gpu is not None and gpu.data is not None else []
        if card := _card(entry.title, models, gpu_uuids, entity):
            cards.append(card)
            week.append(
                card | {"title": f"{entry.title}: the last 7 days", "hours_to_show": WEEK_HOURS}
            )
        switches = [e for m in models if (e := entity(m, "keep_warm", Platform.SWITCH))]
        contention = entity("", "gpu_contention") if switches else None
        keep_warm += [*switches, *([contention] if contention else [])]
        voice += [
            {"entity": entity_id, "name": f"{pipeline.name} {label}"}
            for pipeline in entry.runtime_data.voice.pipelines.values()
            for key, label in _VOICE_KEYS.items()
            if (entity_id := entity(voice_subject(pipeline.id), key))
        ]
        loads += _graphed(models, _LOAD_KEYS, entity)
        probes += _graphed(models, _PROBE_KEYS, entity)
        for uuid in gpu_uuids:
            gpus += [
                e
                for key, platform in (
                    ("gpu_headroom", Platform.SENSOR),
                    ("gpu_headroom_low", Platform.BINARY_SENSOR),
                )
                if (e := entity(f"gpu_{uuid}", key, platform))
            ]
    if household := _household_card(hass, registry, entries):
        cards.insert(0, household)
    if keep_warm:
        # Pins: on keeps the model resident (the household guard may release it), and
        # the minutes the household needed the GPU while a pin held it.
        cards.append({"type": "entities", "title": "Keep warm", "entities": keep_warm})
    if loads:
        # One step per load: the sensors change once per load. From zero: two loads of
        # 7.4 s and 7.6 s are about the same, not the bottom and the top of the chart.
        cards.append(
            {
                "type": "history-graph",
                "title": "Load times",
                "hours_to_show": GRAPH_HOURS,
                "min_y_axis": 0,
                "fit_y_data": True,
                "entities": loads,
            }
        )
    cards += week
    if probes:
        # From zero, as the loads: a warm probe's tenths of a second stay near the bottom,
        # a cold start's seconds stand out (a log scale labelled its ticks "0").
        cards.append(
            {
                "type": "history-graph",
                "title": "Time to first token (probes)",
                "hours_to_show": GRAPH_HOURS,
                "min_y_axis": 0,
                "fit_y_data": True,
                "entities": probes,
            }
        )
    if voice:
        # What a household hears: the silence after a spoken command, and its main parts.
        cards.append(
            {
                "type": "history-graph",
                "title": "Voice: the silence before the reply",
                "hours_to_show": GRAPH_HOURS,
                "min_y_axis": 0,
                "fit_y_data": True,
                "entities": voice,
            }
        )
    if gpus:
        cards.append(
            {"type": "entities", "title": "GPU headroom (after the reserve)", "entities": gpus}
        )
    if warmth:
        cards.append(
            {
                "type": "logbook",
                "title": "Loads, unloads and cold starts",
                "hours_to_show": 48,
                "target": {"entity_id": warmth},
            }
        )
    return {
        "title": "LLM Warmth",
        "views": [{"title": "Warmth", "path": "llm-warmth", "cards": cards}],
    }


def _household_card(
    hass: HomeAssistant, registry: er.EntityRegistry, entries: list[LlmWarmthConfigEntry]
) -> dict[str, Any] | None:
    """Return the household's card: the household device's lines, the warm assistants.

    Only for a house with its household entry (two servers or more), or a warm assistant.
    """
    servers = [
        line
        for household in hass.config_entries.async_entries(DOMAIN)
        if is_household(household)
        for server in sorted(entries, key=lambda e: e.title)
        if (
            line := registry.async_get_entity_id(
                Platform.SENSOR, DOMAIN, f"{household.entry_id}_{server.entry_id}_household"
            )
        )
    ]
    assistants = [
        e
        for entry in sorted(entries, key=lambda e: e.title)
        for subentry_id in entry.subentries
        if (e := registry.async_get_entity_id("conversation", DOMAIN, subentry_id))
    ]
    if not servers and not assistants:
        return None
    household = {"servers": servers, "assistants": assistants}
    return {
        "type": "custom:llm-warmth-card",
        "title": "Household",
        "household": {key: ids for key, ids in household.items() if ids},
    }


def _card(
    title: str,
    models: list[str],
    gpu_uuids: list[str],
    entity: Callable[[str, str, str], str | None],
) -> dict[str, Any] | None:
    """Return the server's custom:llm-warmth-card: its models' sensors, its GPUs'."""
    card_models: list[dict[str, Any]] = []
    for model in models:
        if (warmth := entity(model, "warmth", Platform.SENSOR)) is None:
            continue
        options: dict[str, Any] = {"name": display_name(model), "warmth": warmth}
        for key, option in _CARD_MODEL_KEYS.items():
            if found := entity(model, key, Platform.SENSOR):
                options[option] = found
        probe = {
            option: found
            for key, option in _CARD_PROBE_KEYS.items()
            if (found := entity(model, key, Platform.SENSOR))
        }
        if "ttft" in probe:
            options["probe"] = probe
        card_models.append(options)
    if not card_models:
        return None
    gpus: list[dict[str, str]] = []
    for uuid in gpu_uuids:
        gpu = {
            option: found
            for (key, platform), option in _CARD_GPU_KEYS.items()
            if (found := entity(f"gpu_{uuid}", key, platform))
        }
        if "total" in gpu:  # the scale of its chart
            gpus.append(gpu)
    return {
        "type": "custom:llm-warmth-card",
        "title": f"{title}: warmth, loads and memory",
        "hours_to_show": CARD_HOURS,
        "models": card_models,
        **({"gpus": gpus} if gpus else {}),
    }


def _graphed(
    models: list[str], keys: dict[str, str], entity: Callable[[str, str], str | None]
) -> list[dict[str, str]]:
    """Return a graph's lines: each model's sensors of ``keys``, named model and label."""
    return [
        {"entity": entity_id, "name": f"{display_name(model)} {label}"}
        for model in models
        for key, label in keys.items()
        if (entity_id := entity(model, key))
    ]
