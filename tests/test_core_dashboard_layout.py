"""The ready dashboard's layout, composed from typed views of servers (core/dashboard_layout.py)."""

from collections.abc import Iterable

from custom_components.llm_warmth.core.dashboard_cards import Card
from custom_components.llm_warmth.core.dashboard_layout import (
    CARD_HOURS,
    STATE_UNKNOWN,
    WEEK_HOURS,
    dashboard,
    household_card,
)
from custom_components.llm_warmth.core.dashboard_views import (
    EntityLookup,
    PipelineView,
    Platform,
    ServerView,
)

S, B, W = Platform.SENSOR, Platform.BINARY_SENSOR, Platform.SWITCH
MODEL = "qwen3:latest"
PIPELINE = PipelineView("voice_p1", "Kitchen")


def lookup(*found: tuple[str, str, Platform]) -> EntityLookup:
    """Return a lookup that finds exactly ``found``, each as ``<platform>.<subject>_<key>``."""
    ids = {key: f"{key[2]}.{key[0] or 'server'}_{key[1]}" for key in found}
    return lambda subject, key, platform: ids.get((subject, key, platform))


def server(
    found: Iterable[tuple[str, str, Platform]],
    *,
    title: str = "Box",
    models: Iterable[str] = (MODEL,),
    assistant: str | None = None,
    gpus: Iterable[str] = (),
    pipelines: Iterable[PipelineView] = (),
    household_lines: Iterable[str] = (),
    assistants: Iterable[str] = (),
    gpu_names: dict[str, str] | None = None,
) -> ServerView:
    """Return a server's view with the entities ``found``."""
    return ServerView(
        title=title,
        models=frozenset(models),
        assistant=assistant,
        gpus=tuple(gpus),
        pipelines=tuple(pipelines),
        entity=lookup(*found),
        household_lines=tuple(household_lines),
        assistants=tuple(assistants),
        gpu_names=gpu_names or {},
    )


def cards(*servers: ServerView, hours: float = CARD_HOURS) -> list[Card]:
    """Return the cards of the dashboard of ``servers``."""
    built = dashboard(servers, hours)
    assert built["title"] == "LLM Warmth"
    (view,) = built["views"]
    assert (view["title"], view["path"]) == ("Warmth", "llm-warmth")
    return list(view["cards"])


def by_title(*servers: ServerView) -> dict[str, Card]:
    """Return the dashboard's cards by their titles."""
    return {card["title"]: card for card in cards(*servers)}


def test_no_server_no_card() -> None:
    assert dashboard([]) == {
        "title": "LLM Warmth",
        "views": [{"title": "Warmth", "path": "llm-warmth", "cards": []}],
    }


def test_a_model_with_only_its_warmth() -> None:
    warmth = "sensor.qwen3:latest_warmth"
    card = {
        "type": "custom:llm-warmth-card",
        "title": "Box: warmth, loads and memory",
        "hours_to_show": 2.5,
        "models": [{"name": "qwen3", "warmth": warmth}],
    }
    assert cards(server([(MODEL, "warmth", S)]), hours=2.5) == [
        {"type": "entities", "title": "Box", "entities": [warmth]},
        card,
        card | {"title": "Box: the last 7 days", "hours_to_show": WEEK_HOURS},
        {
            "type": "logbook",
            "title": "Loads, unloads, cold starts and pins",
            "hours_to_show": 48,
            "target": {"entity_id": [warmth]},
        },
    ]


def test_a_model_without_its_warmth_has_no_card_of_its_own() -> None:
    # Its load figure alone: a graph line, no row and no model on the card.
    shown = cards(server([(MODEL, "last_measured_load_duration", S)]))
    assert shown == [
        {"type": "entities", "title": "Box", "entities": []},
        {
            "type": "history-graph",
            "title": "Load times",
            "hours_to_show": CARD_HOURS,
            "min_y_axis": 0,
            "fit_y_data": True,
            "entities": [
                {"entity": "sensor.qwen3:latest_last_measured_load_duration", "name": "qwen3 load"}
            ],
        },
    ]


def test_the_assistant_row_needs_a_model_and_its_sensor() -> None:
    found = [("", "assistant_warmth", S)]
    # Under a heading of its own, named by its model ("Assistant (llama3.2)" as one name
    # was cut beside its state at 1280 px); the models under theirs.
    row = {"entity": "sensor.server_assistant_warmth", "name": "llama3.2"}
    assert cards(server(found, models=(), assistant="llama3.2:latest"))[0] == {
        "type": "entities",
        "title": "Box",
        "entities": [
            {"type": "section", "label": "Assistant"},
            row,
            {"type": "section", "label": "Models"},
        ],
    }
    # No assistant model: no "Assistant (Unknown)" row, though its sensor exists.
    assert cards(server(found, models=()))[0]["entities"] == []
    # No sensor (disabled): no row.
    assert cards(server([], models=(), assistant="llama3.2"))[0]["entities"] == []


def test_the_logbook_follows_the_models_the_connectivity_and_the_pins() -> None:
    found = [(MODEL, "warmth", S), ("", "connectivity", B), (MODEL, "keep_warm", W)]
    logbook = by_title(server(found))["Loads, unloads, cold starts and pins"]
    assert logbook["target"] == {
        "entity_id": [
            "sensor.qwen3:latest_warmth",
            "binary_sensor.server_connectivity",
            "switch.qwen3:latest_keep_warm",
        ]
    }
    # The connectivity alone is enough for a logbook.
    only = cards(server([("", "connectivity", B)]))
    assert only[-1]["target"] == {"entity_id": ["binary_sensor.server_connectivity"]}


def test_a_models_sensors_on_the_card() -> None:
    stages = ["last_ttft", "last_cold_ttft", "load_stage", "queue_stage", "prefill_stage"]
    stages += ["first_decode_stage", "overhead_stage"]
    found = [(MODEL, key, S) for key in ["warmth", "last_measured_load_duration", "vram"]]
    found += [(MODEL, "last_cold_request_duration", S), (MODEL, "keep_warm", W)]
    found += [(MODEL, key, S) for key in stages]
    (model,) = by_title(server(found))["Box: warmth, loads and memory"]["models"]
    p = "sensor.qwen3:latest_"
    assert model == {
        "name": "qwen3",
        "warmth": f"{p}warmth",
        "load": f"{p}last_measured_load_duration",
        "cold_request": f"{p}last_cold_request_duration",
        "vram": f"{p}vram",
        "keep_warm": "switch.qwen3:latest_keep_warm",
        "probe": {
            "ttft": f"{p}last_ttft",
            "cold_ttft": f"{p}last_cold_ttft",
            "load": f"{p}load_stage",
            "queue": f"{p}queue_stage",
            "prefill": f"{p}prefill_stage",
            "first_decode": f"{p}first_decode_stage",
            "overhead": f"{p}overhead_stage",
        },
    }


def test_a_probe_without_its_ttft_is_left_off_the_card() -> None:
    found = [(MODEL, "warmth", S), (MODEL, "prefill_stage", S), (MODEL, "keep_warm", S)]
    (model,) = by_title(server(found))["Box: warmth, loads and memory"]["models"]
    # A keep_warm sensor is not the switch either.
    assert model == {"name": "qwen3", "warmth": "sensor.qwen3:latest_warmth"}


def test_gpus_on_the_card_need_their_total() -> None:
    found = [(MODEL, "warmth", S)]
    found += [("gpu_a", "gpu_memory_total", S), ("gpu_a", "gpu_memory_other", S)]
    found += [("gpu_a", "gpu_headroom_low", B), ("gpu_b", "gpu_memory_other", S)]
    found += [("gpu_a", "gpu_headroom", S), ("gpu_b", "gpu_headroom_low", B)]
    shown = by_title(server(found, gpus=("b", "a")))
    assert shown["Box: warmth, loads and memory"]["gpus"] == [
        {
            "total": "sensor.gpu_a_gpu_memory_total",
            "other": "sensor.gpu_a_gpu_memory_other",
            "headroom_low": "binary_sensor.gpu_a_gpu_headroom_low",
        }
    ]
    # Each row under the GPU's short name (its device's, with the make, was cut at 1280 px).
    assert shown["GPU headroom"] == {
        "type": "entities",
        "title": "GPU headroom",
        "entities": [
            {"entity": "sensor.gpu_a_gpu_headroom", "name": "GPU after the reserve"},
            {"entity": "binary_sensor.gpu_a_gpu_headroom_low", "name": "GPU low"},
            {"entity": "binary_sensor.gpu_b_gpu_headroom_low", "name": "GPU low"},
        ],
    }
    named = by_title(server(found, gpus=("b", "a"), gpu_names={"a": "GPU 0", "b": "GPU 1"}))
    assert [row["name"] for row in named["GPU headroom"]["entities"]] == [
        "GPU 0 after the reserve",
        "GPU 0 low",
        "GPU 1 low",
    ]
    # Without a GPU's total: no gpus on the card at all.
    alone = by_title(server([(MODEL, "warmth", S), ("gpu_b", "gpu_memory_other", S)], gpus=["b"]))
    assert "gpus" not in alone["Box: warmth, loads and memory"]


def test_keep_warm_lists_the_pins_and_then_the_contention() -> None:
    found = [(MODEL, "keep_warm", W), ("", "gpu_contention", S)]
    assert by_title(server(found))["Keep warm"] == {
        "type": "entities",
        "title": "Keep warm",
        "entities": ["switch.qwen3:latest_keep_warm", "sensor.server_gpu_contention"],
    }
    # No pin to switch: no card, the contention alone is not one.
    assert "Keep warm" not in by_title(server([("", "gpu_contention", S)]))


def test_learned_warming_says_why_a_sensor_is_unknown() -> None:
    found = [(MODEL, "auto_warm", W), (MODEL, "next_expected_use", S), (MODEL, "uses_today", S)]
    found += [(MODEL, "in_usage_window", B), ("llama", "uses_today", W)]
    card = by_title(server(found, models=(MODEL, "llama")))["Learned warming"]
    expected_use = {"entity": "sensor.qwen3:latest_next_expected_use", "name": "Next use"}
    assert card == {
        "type": "entities",
        "title": "Learned warming",
        "show_header_toggle": False,
        # "llama" has no usage entity (its uses_today is no switch): no section.
        "entities": [
            {"type": "section", "label": "qwen3"},
            {"entity": "switch.qwen3:latest_auto_warm", "name": "Auto-warm"},
            {
                "type": "conditional",
                "conditions": [{"entity": expected_use["entity"], "state_not": STATE_UNKNOWN}],
                "row": expected_use,
            },
            {
                "type": "conditional",
                "conditions": [{"entity": expected_use["entity"], "state": STATE_UNKNOWN}],
                "row": {"type": "attribute", "attribute": "reason", **expected_use},
            },
            {"entity": "binary_sensor.qwen3:latest_in_usage_window", "name": "In a usage window"},
            {"entity": "sensor.qwen3:latest_uses_today", "name": "Uses today"},
        ],
    }
    assert STATE_UNKNOWN == "unknown"
    # With its usage rhythm sensor, the row says why in its few words (the reason's
    # sentence cut the row's name to "Next exp..." in a 1280 px dashboard's column).
    card = by_title(server([*found, (MODEL, "usage_rhythm", S)], models=(MODEL,)))
    rhythm = {"entity": "sensor.qwen3:latest_usage_rhythm", "name": "Next use"}
    assert card["Learned warming"]["entities"][3] == {
        "type": "conditional",
        "conditions": [{"entity": expected_use["entity"], "state": STATE_UNKNOWN}],
        "row": rhythm,
    }


def test_voice_per_pipeline_sorted_by_name() -> None:
    hall = PipelineView("voice_p2", "Hall")
    found = [(s, "voice_silence", S) for s in ("voice_p1", "voice_p2")]
    found += [("voice_p1", "voice_warm_on_wake", W), ("voice_p1", "voice_stt", S)]
    found += [("voice_p2", "voice_agent_first_text", S), ("voice_p2", "voice_warm_helped", S)]
    shown = by_title(server(found, models=(), pipelines=(PIPELINE, hall)))
    assert shown["Voice: the silence before the reply"]["entities"] == [
        {"entity": "sensor.voice_p2_voice_silence", "name": "Hall silence"},
        {"entity": "sensor.voice_p2_voice_agent_first_text", "name": "Hall agent's first words"},
        {"entity": "sensor.voice_p1_voice_silence", "name": "Kitchen silence"},
        {"entity": "sensor.voice_p1_voice_stt", "name": "Kitchen speech-to-text"},
    ]
    voice = shown["Voice"]
    assert voice["show_header_toggle"] is False
    rows = voice["entities"]
    assert [r.get("label") for r in rows if r.get("type") == "section"] == ["Hall", "Kitchen"]
    assert {"entity": "sensor.voice_p2_voice_warm_helped", "name": "Turns warmed in time"} in rows
    assert {"entity": "switch.voice_p1_voice_warm_on_wake", "name": "Warm on wake"} in rows
    # The silence says why it is unknown: two conditional rows, no plain one.
    assert {
        "entity": "sensor.voice_p1_voice_silence",
        "name": "Silence before the reply",
    } not in rows
    assert sum(r.get("type") == "conditional" for r in rows) == 4


def test_the_probe_graph() -> None:
    found = [(MODEL, "last_ttft", S), (MODEL, "load_stage", S), (MODEL, "prefill_stage", S)]
    found += [(MODEL, "queue_stage", S)]
    graph = by_title(server(found, models=(MODEL,)))["Time to first token (probes)"]
    assert graph["entities"] == [
        {"entity": "sensor.qwen3:latest_last_ttft", "name": "qwen3 TTFT"},
        {"entity": "sensor.qwen3:latest_load_stage", "name": "qwen3 queue and load"},
        {"entity": "sensor.qwen3:latest_prefill_stage", "name": "qwen3 prefill"},
    ]


def test_the_order_of_the_cards() -> None:
    found = [(MODEL, "warmth", S), (MODEL, "keep_warm", W), (MODEL, "uses_today", S)]
    found += [(MODEL, "last_measured_load_duration", S), (MODEL, "last_ttft", S)]
    found += [("voice_p1", "voice_silence", S), ("gpu_a", "gpu_headroom", S)]
    one = server(found, pipelines=[PIPELINE], gpus=["a"], household_lines=["sensor.house_box"])
    assert [card["title"] for card in cards(one)] == [
        "Household",
        "Box",
        "Box: warmth, loads and memory",
        "Keep warm",
        "Learned warming",
        "Load times",
        "Box: the last 7 days",
        "Time to first token (probes)",
        "Voice",
        "Voice: the silence before the reply",
        "GPU headroom",
        "Loads, unloads, cold starts and pins",
    ]


def test_several_servers_by_title_each_section_named_with_its_server() -> None:
    found = [(MODEL, "warmth", S), (MODEL, "uses_today", S), ("voice_p1", "voice_silence", S)]
    zed = server(found, title="Zed", pipelines=[PIPELINE])
    abe = server(found, title="Abe")
    titles = [card["title"] for card in cards(zed, abe)]
    assert titles[:4] == [
        "Abe",
        "Abe: warmth, loads and memory",
        "Zed",
        "Zed: warmth, loads and memory",
    ]
    usage = by_title(zed, abe)["Learned warming"]["entities"]
    assert [r["label"] for r in usage if r.get("type") == "section"] == ["Abe: qwen3", "Zed: qwen3"]
    voice = by_title(zed, abe)["Voice"]["entities"]
    assert voice[0] == {"type": "section", "label": "Zed: Kitchen"}
    # One server: no prefix.
    alone = by_title(zed)["Learned warming"]["entities"]
    assert alone[0] == {"type": "section", "label": "qwen3"}


def test_the_household_card() -> None:
    nas = server([], title="NAS", household_lines=["sensor.h_nas"], assistants=["conversation.a"])
    box = server([], title="Box", household_lines=["sensor.h_box"])
    assert household_card([box, nas]) == {
        "type": "custom:llm-warmth-card",
        "title": "Household",
        "household": {
            "servers": ["sensor.h_box", "sensor.h_nas"],
            "assistants": ["conversation.a"],
        },
    }
    # A warm assistant alone: the card, with its assistants only.
    alone = server([], assistants=["conversation.b"])
    assert household_card([alone]) == {
        "type": "custom:llm-warmth-card",
        "title": "Household",
        "household": {"assistants": ["conversation.b"]},
    }
    assert household_card([server([], household_lines=["sensor.h"])]) == {
        "type": "custom:llm-warmth-card",
        "title": "Household",
        "household": {"servers": ["sensor.h"]},
    }
    assert household_card([server([])]) is None
    assert household_card([]) is None
    # On the dashboard: first, with its servers by title.
    assert cards(nas, box)[0] == household_card([box, nas])


def test_the_default_span() -> None:
    assert CARD_HOURS == 6
    assert WEEK_HOURS == 168
    built = dashboard([server([(MODEL, "warmth", S)])])
    card = built["views"][0]["cards"][1]
    assert card["hours_to_show"] == CARD_HOURS
