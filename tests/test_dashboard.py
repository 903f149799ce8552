"""The dashboard the integration builds: every card shows entities that exist and answer."""

from pathlib import Path
from typing import Any

from homeassistant.const import STATE_UNAVAILABLE
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.util.yaml import parse_yaml
import probatio as vol
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.const import CONF_ASSISTANT_MODEL, DOMAIN

from .conftest import LLAMA, ollama_request
from .ollama_emulator import OllamaEmulator
from .test_gpu import NVML_OPTIONS, nvml, setup_with  # noqa: F401 (nvml: a fixture)


def referenced(config: dict[str, Any]) -> list[str]:
    """Return every entity id the dashboard's cards name."""
    found: list[str] = []
    for card in config["views"][0]["cards"]:
        for item in card.get("entities", []):
            if isinstance(item, dict):
                # A conditional row names its entity in its row; a section names none.
                found += [e for e in (item.get("row", item).get("entity"),) if e]
            else:
                found.append(item)
        found += card.get("target", {}).get("entity_id", [])
        # custom:llm-warmth-card: its models' sensors (and their probes'), its GPUs'.
        for part in (*card.get("models", []), *card.get("gpus", [])):
            found += [v for k, v in part.items() if k not in ("name", "probe")]
            found += part.get("probe", {}).values()
    return found


async def build(hass: HomeAssistant) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN, "dashboard", {}, blocking=True, return_response=True
    )
    assert response is not None
    # The YAML to paste is the same dashboard.
    assert parse_yaml(str(response["yaml"])) == response["config"]
    config: dict[str, Any] = dict(response["config"])
    return config


@pytest.mark.usefixtures("entity_registry_enabled_by_default", "nvml")
async def test_the_dashboard_shows_what_exists(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
) -> None:
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": "1h"})
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    await hass.services.async_call(
        DOMAIN,
        "probe",
        {"config_entry_id": mock_config_entry.entry_id, "model": LLAMA},
        blocking=True,
        return_response=True,
    )
    await hass.async_block_till_done()
    # A sensor the user disabled is left out (it would only say "not available").
    er.async_get(hass).async_update_entity(
        "sensor.ollama_test_llama3_2_3b_prefill_stage", disabled_by=er.RegistryEntryDisabler.USER
    )
    config = await build(hass)
    assert "sensor.ollama_test_llama3_2_3b_prefill_stage" not in referenced(config)
    titles = [card.get("title") for card in config["views"][0]["cards"]]
    assert titles == [
        mock_config_entry.title,
        f"{mock_config_entry.title}: warmth, loads and memory",
        "Keep warm",
        "Load times",
        f"{mock_config_entry.title}: the last 7 days",
        "Time to first token (probes)",
        "GPU headroom",
        "Loads, unloads, cold starts and pins",
    ]
    entities = referenced(config)
    # No assistant model (no agent, none chosen): no "Assistant: Unknown" row.
    assert "sensor.ollama_test_assistant_warmth" not in entities
    assert hass.states.get("sensor.ollama_test_assistant_warmth") is not None
    assert "sensor.ollama_test_llama3_2_3b" in entities
    assert "sensor.ollama_test_qwen3_8b" in entities
    # The pins, to switch; the guard's contended minutes beside the GPU headroom.
    assert "switch.ollama_test_llama3_2_3b_keep_warm" in entities
    assert "sensor.ollama_test_gpu_contention" in entities
    assert "sensor.ollama_test_llama3_2_3b_last_time_to_first_token" in entities
    assert not any(
        e.startswith("sensor.ollama_test_qwen3_8b_last_time") for e in entities
    )  # not probed
    for entity_id in entities:
        state = hass.states.get(entity_id)
        assert state is not None, entity_id
        assert state.state != STATE_UNAVAILABLE, entity_id

    cards = {card.get("title"): card for card in config["views"][0]["cards"]}
    # The card of our own: a live view of the last hours, each model with what it draws.
    card = cards[f"{mock_config_entry.title}: warmth, loads and memory"]
    assert card["type"] == "custom:llm-warmth-card"
    assert card["hours_to_show"] == 6
    llama, qwen = card["models"]
    assert llama == {
        "name": LLAMA,
        "warmth": "sensor.ollama_test_llama3_2_3b",
        # Its pins on its timeline (one with an end is warm, not "no expiry", there).
        "keep_warm": "switch.ollama_test_llama3_2_3b_keep_warm",
        "load": "sensor.ollama_test_llama3_2_3b_last_measured_load_duration",
        "cold_request": "sensor.ollama_test_llama3_2_3b_last_cold_request_duration",
        "vram": "sensor.ollama_test_llama3_2_3b_gpu_memory",
        # The disabled prefill sensor is left out; the card says what the stages miss.
        "probe": {
            "ttft": "sensor.ollama_test_llama3_2_3b_last_time_to_first_token",
            # The last cold probe's stages stay in sight after warm ones.
            "cold_ttft": "sensor.ollama_test_llama3_2_3b_last_cold_time_to_first_token",
            "load": "sensor.ollama_test_llama3_2_3b_queue_and_load_stage",
            "first_decode": "sensor.ollama_test_llama3_2_3b_first_decode_stage",
            "overhead": "sensor.ollama_test_llama3_2_3b_overhead_stage",
        },
    }
    assert "probe" not in qwen  # never probed
    # Both GPUs, each with its total, the other processes and the reserve's sensor.
    assert [set(gpu) for gpu in card["gpus"]] == [{"total", "other", "headroom_low"}] * 2
    for gpu in card["gpus"]:
        reserve = hass.states.get(gpu["headroom_low"])
        assert reserve is not None
        assert reserve.attributes["reserve_bytes"] == 10 * 1024**3
    # The graphs: the live view's hours, from zero; and a month of loads by day.
    assert cards["Load times"] | {"entities": None} == {
        "type": "history-graph",
        "title": "Load times",
        "hours_to_show": 6,
        "min_y_axis": 0,
        "fit_y_data": True,
        "entities": None,
    }
    # The long view: the same card over a week.
    week = cards[f"{mock_config_entry.title}: the last 7 days"]
    live = cards[f"{mock_config_entry.title}: warmth, loads and memory"]
    assert week == live | {"title": week["title"], "hours_to_show": 168}
    assert live["hours_to_show"] == 6
    assert cards["Time to first token (probes)"] | {"entities": None} == {
        "type": "history-graph",
        "title": "Time to first token (probes)",
        "hours_to_show": 6,
        "min_y_axis": 0,
        "fit_y_data": True,
        "entities": None,
    }


def options_of(config: dict[str, Any], server: str) -> list[dict[str, Any]]:
    """Return each card's options but its entities, the server's title as <server>."""
    shapes: list[dict[str, Any]] = []
    for card in config["views"][0]["cards"]:
        shape = {k: v for k, v in card.items() if k not in ("entities", "target", "models", "gpus")}
        shape["title"] = shape["title"].replace(server, "<server>")
        # The card's options per model, per probe and per GPU (which of them appear).
        for part in ("models", "gpus"):
            if part in card:
                shape[part] = sorted({key for item in card[part] for key in item})
        shapes.append(shape)
    return shapes


@pytest.mark.usefixtures("nvml")
async def test_the_example_shows_what_the_action_returns(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """dashboards/example.yaml: the cards and options the action gives (ids differ)."""
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": "1h"})
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    hass.config_entries.async_update_entry(
        mock_config_entry, options={**mock_config_entry.options, CONF_ASSISTANT_MODEL: LLAMA}
    )
    await hass.async_block_till_done()
    await hass.services.async_call(
        DOMAIN,
        "probe",
        {"config_entry_id": mock_config_entry.entry_id, "model": LLAMA},
        blocking=True,
        return_response=True,
    )
    await hass.async_block_till_done()
    example = parse_yaml((Path(__file__).parent.parent / "dashboards/example.yaml").read_text())
    assert isinstance(example, dict)
    assert options_of(example, "Ollama gpu-box:11434") == options_of(
        await build(hass), mock_config_entry.title
    )


async def test_the_assistant_row_names_its_model_and_the_logbook_the_models(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """ "Assistant: Warm" does not say which model; its logbook would repeat the model's."""
    await setup_with(
        hass, mock_config_entry, {**mock_config_entry.options, CONF_ASSISTANT_MODEL: LLAMA}
    )
    cards = (await build(hass))["views"][0]["cards"]
    # Under its own heading, named by its model: the row follows the assistant's model.
    assert cards[0]["entities"][:3] == [
        {"type": "section", "label": "Assistant"},
        {"entity": "sensor.ollama_test_assistant_warmth", "name": "llama3.2:3b"},
        {"type": "section", "label": "Models"},
    ]
    logbook = next(card for card in cards if card["type"] == "logbook")
    assert logbook["target"]["entity_id"] == [
        "sensor.ollama_test_llama3_2_3b",
        "sensor.ollama_test_qwen3_8b",
        "binary_sensor.ollama_test_connectivity",  # the server's outages and restarts
        # The pins: one an automation made is told even when it loaded nothing.
        "switch.ollama_test_llama3_2_3b_keep_warm",
        "switch.ollama_test_qwen3_8b_keep_warm",
    ]


def rows_of(card: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Return an entities card's rows under each section's label."""
    sections: dict[str, list[dict[str, Any]]] = {}
    label = ""
    for row in card["entities"]:
        if row.get("type") == "section":
            label = row["label"]
            sections[label] = []
        else:
            sections[label].append(row)
    return sections


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_learned_warming_has_a_section_that_says_why_nothing_is_expected(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Its entities were on the model's device page only (issue 32): now a card of their own."""
    await setup_with(hass, mock_config_entry, {**mock_config_entry.options})
    assert "Learned warming" not in [
        c.get("title") for c in (await build(hass))["views"][0]["cards"]
    ]
    mock_config_entry.runtime_data.usage.record(LLAMA, emulator.clock.now())
    await hass.async_block_till_done()
    cards = {c.get("title"): c for c in (await build(hass))["views"][0]["cards"]}
    card = cards["Learned warming"]
    assert card["type"] == "entities"
    assert card["show_header_toggle"] is False  # auto-warm is each model's own choice
    (rows,) = rows_of(card).values()  # the model used; qwen never was
    assert list(rows_of(card)) == [LLAMA]
    prefix = "ollama_test_llama3_2_3b"
    next_use = f"sensor.{prefix}_next_expected_use"
    assert rows[0] == {"entity": f"switch.{prefix}_auto_warm", "name": "Auto-warm"}
    # While no use is expected, the row says why (its reason, translated) instead of
    # "Unknown"; once one is, the time.
    assert rows[1:3] == [
        {
            "type": "conditional",
            "conditions": [{"entity": next_use, "state_not": "unknown"}],
            "row": {"entity": next_use, "name": "Next use"},
        },
        {
            "type": "conditional",
            "conditions": [{"entity": next_use, "state": "unknown"}],
            # The usage rhythm's few words (the reason's sentence cut the row's name).
            "row": {"entity": f"sensor.{prefix}_usage_rhythm", "name": "Next use"},
        },
    ]
    assert hass.states.get(next_use).attributes["reason"] == "learning"
    assert [row["entity"] for row in rows[3:]] == [
        f"binary_sensor.{prefix}_in_a_usage_window",
        f"sensor.{prefix}_uses_today",
        f"sensor.{prefix}_warming_signals",
        f"sensor.{prefix}_warm_thanks_to_the_clock_7_days",
        f"sensor.{prefix}_warm_thanks_to_a_signal_7_days",
        f"sensor.{prefix}_cold_starts_7_days",
        f"sensor.{prefix}_gib_hours_spent_warming_7_days",
    ]
    for row in rows[3:]:
        state = hass.states.get(row["entity"])
        assert state is not None, row
        assert state.state not in ("unknown", "unavailable"), row


async def test_the_live_views_span_is_the_actions_to_choose(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """A demo's minutes fill its charts; the week stays a week; a span of nothing is refused."""
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": "1h"})
    await setup_with(hass, mock_config_entry, {**mock_config_entry.options})
    await hass.services.async_call(
        DOMAIN,
        "probe",
        {"config_entry_id": mock_config_entry.entry_id, "model": LLAMA},
        blocking=True,
        return_response=True,
    )
    response = await hass.services.async_call(
        DOMAIN, "dashboard", {"hours_to_show": 0.1}, blocking=True, return_response=True
    )
    assert response is not None
    spans = {c["title"]: c.get("hours_to_show") for c in response["config"]["views"][0]["cards"]}  # type: ignore[index]
    title = mock_config_entry.title
    assert spans[f"{title}: warmth, loads and memory"] == 0.1
    assert spans["Load times"] == 0.1
    assert spans["Time to first token (probes)"] == 0.1
    assert spans[f"{title}: the last 7 days"] == 168
    assert spans["Loads, unloads, cold starts and pins"] == 48
    with pytest.raises(vol.Invalid):
        await hass.services.async_call(
            DOMAIN, "dashboard", {"hours_to_show": 0}, blocking=True, return_response=True
        )


async def test_without_servers_the_dashboard_is_empty(hass: HomeAssistant) -> None:
    from homeassistant.setup import async_setup_component  # noqa: PLC0415

    assert await async_setup_component(hass, DOMAIN, {})
    config = await build(hass)
    assert config["views"][0]["cards"] == []
