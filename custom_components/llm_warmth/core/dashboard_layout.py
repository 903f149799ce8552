"""The ready dashboard's layout: which cards, rows and graphs show the servers followed.

Entity ids differ per installation (they come from the server's and the models' names), so
the shell finds them in the entity registry: each server comes here as a ``ServerView``
(its models, GPUs and pipelines, and a lookup of its enabled entities), and this module
composes the Lovelace dashboard (one view) from what exists: a card per server, the
learned warming and voice sections, the graphs, the week, the logbook.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from .dashboard_cards import (
    Card,
    CardModel,
    Dashboard,
    EntitiesCard,
    HistoryGraph,
    NamedRow,
    ReasonRow,
    Row,
    WarmthCard,
)
from .dashboard_views import PipelineView, Platform, ServerView
from .model_readings import display_name

# The views are the layout's input: named here too, where the shell and the tests take them.
__all__ = ["CARD_HOURS", "PipelineView", "Platform", "ServerView", "dashboard", "household_card"]


# Home Assistant's state of an entity that has no value.
STATE_UNKNOWN: Final = "unknown"

# Model sensors on the graphs, by key, with a short label: a graph's legend would otherwise
# read "<server> ▸ <model> ▸ <sensor name>", cut short.
# A load's exact figure and, beside it, a newer one that polls saw only part of (as the
# card tells them: "load 4.6 s", "load at least 4.6 s"): a graph of the exact ones alone
# reads "Unknown" where the card has a figure.
_LOAD_KEYS = {
    "last_measured_load_duration": "load",
    "last_load_at_least": "load, at least",
    "last_cold_request_duration": "cold request",
    "last_cold_request_at_least": "cold request, at least",
}
_VOICE_KEYS = {
    "voice_silence": "silence",
    "voice_stt": "speech-to-text",
    "voice_agent_first_text": "agent's first words",
}
_PROBE_KEYS = {"last_ttft": "TTFT", "load_stage": "queue and load", "prefill_stage": "prefill"}

# Learned warming, per model once used: what the planner expects, auto-warm, the scoreboard.
_USAGE_ROWS = (
    ("auto_warm", Platform.SWITCH, "Auto-warm"),
    # "Next use": "Next expected use" beside "Learning (under 5 days)" was cut at 1280 px.
    ("next_expected_use", Platform.SENSOR, "Next use"),
    ("in_usage_window", Platform.BINARY_SENSOR, "In a usage window"),
    ("uses_today", Platform.SENSOR, "Uses today"),
    ("warming_signals", Platform.SENSOR, "Warming signals"),
    ("warm_thanks_to_auto_warm", Platform.SENSOR, "Warm thanks to the clock (7 days)"),
    ("warm_thanks_to_a_signal", Platform.SENSOR, "Warm thanks to a signal (7 days)"),
    ("cold_starts_7_days", Platform.SENSOR, "Cold starts (7 days)"),
    ("warming_gib_hours", Platform.SENSOR, "GiB-hours warming (7 days)"),
)
# Voice, per Assist pipeline: warming at the wake, its last turn, what warming did.
_VOICE_ROWS = (
    ("voice_warm_on_wake", Platform.SWITCH, "Warm on wake"),
    ("voice_silence", Platform.SENSOR, "Silence before the reply"),
    ("voice_dominant_stage", Platform.SENSOR, "Costliest stage"),
    ("voice_warm_helped", Platform.SENSOR, "Turns warmed in time"),
    ("voice_warm_too_late", Platform.SENSOR, "Turns warmed too late"),
)
# Rows whose sensor can be unknown: then the row says why, by the key of a sensor of the
# same subject that says it in a few words (a narrow column has no room for the reason
# attribute's sentence: the row's name was cut to "Next exp..." at 1280 px), or by its
# reason attribute (None).
_SAYS_WHY: dict[str, str | None] = {
    "next_expected_use": "usage_rhythm",
    "voice_silence": None,
    "voice_dominant_stage": None,
}

# The card's options (custom:llm-warmth-card) by the sensor's key: a model's, its last
# probe's stages, a GPU's.
_CARD_MODEL_KEYS = {
    "last_measured_load_duration": "load",
    "last_cold_request_duration": "cold_request",
    "vram": "vram",
    # Its Warming signals sensor: the card's "Warming signals" section.
    "warming_signals": "signals",
}
# The card's options by a model's switch: its pins (the Keep warm switch) on its timeline.
_CARD_MODEL_SWITCHES = {"keep_warm": "keep_warm"}
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
# the first day, and still on the hundredth (the action's ``hours_to_show`` picks another
# span: a demo's minutes). The long view is the same card over a week: each day's loads
# and cold starts side by side (the load sensors hold their last figure between loads, so
# their long-term statistics would average a held value, not loads).
CARD_HOURS = 6
WEEK_HOURS = 7 * 24


@dataclass
class _Parts:
    """What the dashboard's cards show, gathered server by server."""

    cards: list[Card] = field(default_factory=list)
    week: list[Card] = field(default_factory=list)
    logbook: list[str] = field(default_factory=list)
    loads: list[NamedRow] = field(default_factory=list)
    probes: list[NamedRow] = field(default_factory=list)
    voice_graph: list[NamedRow] = field(default_factory=list)
    gpus: list[NamedRow] = field(default_factory=list)
    keep_warm: list[str] = field(default_factory=list)
    usage: list[Row] = field(default_factory=list)
    voice: list[Row] = field(default_factory=list)


def dashboard(servers: Sequence[ServerView], hours: float = CARD_HOURS) -> Dashboard:
    """Return a Lovelace dashboard (one view) for ``servers``.

    ``hours``: the live view's span (the card's and the load, probe and voice graphs').
    """
    ordered = sorted(servers, key=lambda s: s.title)
    parts = _Parts()
    for server in ordered:
        _add_server(parts, server, hours, f"{server.title}: " if len(ordered) > 1 else "")
    cards = parts.cards
    if household := household_card(ordered):
        cards.insert(0, household)
    if parts.keep_warm:
        # Pins: on keeps the model resident (the household guard may release it), and
        # the minutes the household needed the GPU while a pin held it.
        cards.append({"type": "entities", "title": "Keep warm", "entities": parts.keep_warm})
    if parts.usage:
        # What each used model's uses taught: its next expected use (or why none is),
        # auto-warm, and the scoreboard of the last 7 days.
        cards.append(_switches_apart("Learned warming", parts.usage))
    if parts.loads:
        # One step per load: the sensors change once per load. From zero: two loads of
        # 7.4 s and 7.6 s are about the same, not the bottom and the top of the chart.
        cards.append(_graph("Load times", hours, parts.loads))
    cards += parts.week
    if parts.probes:
        # From zero, as the loads: a warm probe's tenths of a second stay near the bottom,
        # a cold start's seconds stand out (a log scale labelled its ticks "0").
        cards.append(_graph("Time to first token (probes)", hours, parts.probes))
    if parts.voice:
        # Each Assist pipeline whose agent uses a model here: warming at the wake, its
        # last turn (or why none is shown), what warming at the wake did.
        cards.append(_switches_apart("Voice", parts.voice))
    if parts.voice_graph:
        # What a household hears: the silence after a spoken command, and its main parts.
        cards.append(_graph("Voice: the silence before the reply", hours, parts.voice_graph))
    if parts.gpus:
        cards.append(
            {
                "type": "entities",
                # "(after the reserve)" made the title too long for its column.
                "title": "GPU headroom",
                "entities": parts.gpus,
            }
        )
    if parts.logbook:
        cards.append(
            {
                "type": "logbook",
                "title": "Loads, unloads, cold starts and pins",
                "hours_to_show": 48,
                "target": {"entity_id": parts.logbook},
            }
        )
    return {
        "title": "LLM Warmth",
        "views": [{"title": "Warmth", "path": "llm-warmth", "cards": cards}],
    }


def _add_server(parts: _Parts, server: ServerView, hours: float, prefix: str) -> None:
    """Gather one server's part of each card (``prefix``: its name, in a house of several)."""
    models = sorted(server.models)
    # Each model's warmth is its main entity: the row reads as the model's name.
    model_warmth = [e for m in models if (e := server.find(m, "warmth"))]
    parts.cards.append(
        {
            "type": "entities",
            "title": server.title,
            "entities": [*_assistant_rows(server), *model_warmth],
        }
    )
    # The logbook of the models, and of the server's outages and restarts (its
    # connectivity): the assistant's warmth would repeat one of the models' lines.
    parts.logbook += [
        *model_warmth,
        *([c] if (c := server.find("", "connectivity", Platform.BINARY_SENSOR)) else []),
    ]
    gpu_uuids = sorted(server.gpus)
    if card := _card(server.title, models, gpu_uuids, server, hours):
        parts.cards.append(card)
        parts.week.append(
            {**card, "title": f"{server.title}: the last 7 days", "hours_to_show": WEEK_HOURS}
        )
    switches = [e for m in models if (e := server.find(m, "keep_warm", Platform.SWITCH))]
    contention = server.find("", "gpu_contention") if switches else None
    parts.keep_warm += [*switches, *([contention] if contention else [])]
    # The pins too: a pin an automation made is a line of its own ("turned on triggered
    # by automation ..."), also when the model was warm already (then no load is told).
    parts.logbook += switches
    pipelines = sorted(server.pipelines, key=lambda p: p.name)
    parts.voice_graph += [
        {"entity": entity_id, "name": f"{pipeline.name} {label}"}
        for pipeline in pipelines
        for key, label in _VOICE_KEYS.items()
        if (entity_id := server.find(pipeline.subject, key))
    ]
    for model in models:
        parts.usage += _section(f"{prefix}{display_name(model)}", _USAGE_ROWS, server, model)
    for pipeline in pipelines:
        parts.voice += _section(f"{prefix}{pipeline.name}", _VOICE_ROWS, server, pipeline.subject)
    parts.loads += _graphed(models, _LOAD_KEYS, server)
    parts.probes += _graphed(models, _PROBE_KEYS, server)
    for uuid in gpu_uuids:
        gpu = server.gpu_names.get(uuid, "GPU")
        parts.gpus += [
            {"entity": e, "name": f"{prefix}{gpu} {label}"}
            for key, platform, label in (
                ("gpu_headroom", Platform.SENSOR, "after the reserve"),
                ("gpu_headroom_low", Platform.BINARY_SENSOR, "low"),
            )
            if (e := server.find(f"gpu_{uuid}", key, platform))
        ]


def _assistant_rows(server: ServerView) -> list[str | Row]:
    """Return the server's assistant row, named by its model, under a heading of its own.

    The server's Assistant warmth follows whichever model the assistant uses; "Assistant
    (llama3.2:3b)" as one row's name was cut beside "Warm, no expiry" in a 1280 px column.
    Without an assistant model (no agent found, none chosen) the row would read "Unknown":
    none.
    """
    assistant = server.assistant
    server_warmth = server.find("", "assistant_warmth") if assistant else None
    if not server_warmth or not assistant:
        return []
    return [
        {"type": "section", "label": "Assistant"},
        {"entity": server_warmth, "name": display_name(assistant)},
        {"type": "section", "label": "Models"},
    ]


def _switches_apart(title: str, rows: list[Row]) -> EntitiesCard:
    """Return an entities card of ``rows`` with no toggle in its header.

    Its switches (auto-warm, warm on wake) are each model's or pipeline's own choice: one
    toggle for all of them would be a click away from turning every one on or off.
    """
    return {"type": "entities", "title": title, "show_header_toggle": False, "entities": rows}


def _graph(title: str, hours: float, entities: list[NamedRow]) -> HistoryGraph:
    """Return a history graph of ``entities`` over ``hours``, from zero."""
    return {
        "type": "history-graph",
        "title": title,
        "hours_to_show": hours,
        "min_y_axis": 0,
        "fit_y_data": True,
        "entities": entities,
    }


def household_card(servers: Sequence[ServerView]) -> WarmthCard | None:
    """Return the household's card: the household device's lines, the warm assistants.

    Only for a house with its household entry (two servers or more), or a warm assistant.
    """
    household = {
        "servers": [line for server in servers for line in server.household_lines],
        "assistants": [e for server in servers for e in server.assistants],
    }
    if not any(household.values()):
        return None
    return {
        "type": "custom:llm-warmth-card",
        "title": "Household",
        "household": {key: ids for key, ids in household.items() if ids},
    }


def _section(
    label: str,
    rows: tuple[tuple[str, Platform, str], ...],
    server: ServerView,
    subject: str,
) -> list[Row]:
    """Return an entities card's rows for one subject (a model, a pipeline), under a label.

    None when the subject has none of them (a model never used has no usage entities). A
    sensor that can be unknown shows, while it is, why (a sensor of the same subject that
    says it in a few words, or its ``reason`` attribute; in the user's language) instead
    of "Unknown".
    """
    found = [
        (key, entity_id, name)
        for key, platform, name in rows
        if (entity_id := server.find(subject, key, platform))
    ]
    if not found:
        return []
    shown: list[Row] = [{"type": "section", "label": label}]
    for key, entity_id, name in found:
        row: NamedRow = {"entity": entity_id, "name": name}
        if key not in _SAYS_WHY:
            shown.append(row)
            continue
        words = _SAYS_WHY[key]
        says_why: NamedRow | ReasonRow = (
            {"entity": short, "name": name}
            if words is not None and (short := server.find(subject, words, Platform.SENSOR))
            else {"type": "attribute", "attribute": "reason", **row}
        )
        shown += [
            {
                "type": "conditional",
                "conditions": [{"entity": entity_id, "state_not": STATE_UNKNOWN}],
                "row": row,
            },
            {
                "type": "conditional",
                "conditions": [{"entity": entity_id, "state": STATE_UNKNOWN}],
                "row": says_why,
            },
        ]
    return shown


def _card(
    title: str,
    models: list[str],
    gpu_uuids: list[str],
    server: ServerView,
    hours: float,
) -> WarmthCard | None:
    """Return the server's custom:llm-warmth-card: its models' sensors, its GPUs'."""
    card_models: list[CardModel] = []
    for model in models:
        if (warmth := server.find(model, "warmth", Platform.SENSOR)) is None:
            continue
        options: CardModel = {"name": display_name(model), "warmth": warmth}
        for key, option in _CARD_MODEL_KEYS.items():
            if found := server.find(model, key, Platform.SENSOR):
                options[option] = found
        for key, option in _CARD_MODEL_SWITCHES.items():
            if found := server.find(model, key, Platform.SWITCH):
                options[option] = found
        probe = {
            option: found
            for key, option in _CARD_PROBE_KEYS.items()
            if (found := server.find(model, key, Platform.SENSOR))
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
            if (found := server.find(f"gpu_{uuid}", key, platform))
        }
        if "total" in gpu:  # the scale of its chart
            gpus.append(gpu)
    card: WarmthCard = {
        "type": "custom:llm-warmth-card",
        "title": f"{title}: warmth, loads and memory",
        "hours_to_show": hours,
        "models": card_models,
    }
    if gpus:
        card["gpus"] = gpus
    return card


def _graphed(models: list[str], keys: dict[str, str], server: ServerView) -> list[NamedRow]:
    """Return a graph's lines: each model's sensors of ``keys``, named model and label."""
    return [
        {"entity": entity_id, "name": f"{display_name(model)} {label}"}
        for model in models
        for key, label in keys.items()
        if (entity_id := server.find(model, key))
    ]
