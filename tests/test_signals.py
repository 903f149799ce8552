"""Warming signals in Home Assistant: the subentry, the edges heard, the warm-ups they send.

On the Ollama emulator and the integration's own listeners and timers: a chosen entity's
change is an edge recorded beside the uses; an edge learnt to lead a use loads the model
for its hold (the server's keep), through the household guard, fires the event the
logbook tells, and a use that finds the model warm counts as warm thanks to a signal.
"""

from __future__ import annotations

from datetime import timedelta
from types import MappingProxyType
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.config_entries import SOURCE_USER, ConfigSubentry
from homeassistant.const import ATTR_DEVICE_CLASS
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import entity_registry as er, issue_registry as ir
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.llm_warmth.const import (
    CONF_PROTECTED_ENTITIES,
    CONF_SIGNAL_ENTITIES,
    CONF_SIGNAL_MODEL,
    DOMAIN,
    EVENT_AUTO_WARM,
    SUBENTRY_WARMING_SIGNALS,
)
from custom_components.llm_warmth.core.usage import SIGNAL_HELPED, UsageRecord
from custom_components.llm_warmth.signal_sources import gone_issue_id

from .conftest import ENTRY_ID, LLAMA, QWEN, at_moment, model_id, ollama_request
from .ollama_emulator import OllamaEmulator
from .signal_lessons import teach

MOTION = "input_boolean.bedroom_motion"
NOW = "2026-11-23 06:00:00+00:00"
HOLD = 330  # the hold the taught signal has: a use 5 minutes on, plus its margin


def signals_subentry(entities: list[str], model: str = LLAMA) -> ConfigSubentry:
    return ConfigSubentry(
        data=MappingProxyType({CONF_SIGNAL_MODEL: model, CONF_SIGNAL_ENTITIES: entities}),
        subentry_type=SUBENTRY_WARMING_SIGNALS,
        title=model,
        unique_id=None,
    )


async def set_up(
    hass: HomeAssistant, entry: MockConfigEntry, entities: list[str], **options: Any
) -> None:
    """Set the entry up with warming signals of llama (the entities given)."""
    entry.add_to_hass(hass)
    hass.config_entries.async_add_subentry(entry, signals_subentry(entities))
    if options:
        hass.config_entries.async_update_entry(entry, options={**entry.options, **options})
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()


def loads(emulator: OllamaEmulator, since: int) -> list[dict[str, Any]]:
    return [r.json for r in emulator.requests[since:] if r.path == "/api/generate"]


def heard(hass: HomeAssistant, event_type: str) -> list[Event]:
    events: list[Event] = []

    @callback
    def listener(event: Event) -> None:
        events.append(event)

    hass.bus.async_listen(event_type, listener)
    return events


@pytest.mark.freeze_time(NOW)
async def test_an_edge_that_leads_a_use_warms_the_model_and_the_use_counts_for_the_signal(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    now = dt_util.utcnow()
    emulator.clock.set(now)
    hass.states.async_set(MOTION, "off", {"friendly_name": "Bedroom motion"})
    await set_up(hass, mock_config_entry, [MOTION])
    usage = mock_config_entry.runtime_data.usage
    teach(mock_config_entry, LLAMA, {MOTION: 300}, now=now)
    switch = model_id(mock_config_entry, "switch.llama3_2_3b_auto_warm")
    await hass.services.async_call("switch", "turn_on", {"entity_id": switch}, blocking=True)
    fired = heard(hass, EVENT_AUTO_WARM)
    before = len(emulator.requests)
    # The motion: an edge; the model is cold, so it is loaded for the signal's hold.
    hass.states.async_set(MOTION, "on", {"friendly_name": "Bedroom motion"})
    await hass.async_block_till_done(wait_background_tasks=True)
    (load,) = loads(emulator, before)
    assert not load.get("prompt")
    assert load["keep_alive"] == HOLD  # the server's keep is the signal's hold
    (event,) = fired
    assert event.data | {"until": None} == {
        "server": "Ollama test",
        "config_entry_id": ENTRY_ID,
        "entity_id": model_id(mock_config_entry, "sensor.llama3_2_3b"),
        "device_id": event.data["device_id"],
        "model": LLAMA,
        "reason": "signal",
        "until": None,
        "signal_entity_id": MOTION,
        "signal_state": "on",
        "signal_name": "Bedroom motion",
        "within_minutes": 6,
        "share_percent": 100,
    }
    assert dt_util.parse_datetime(event.data["until"]) == now + timedelta(seconds=HOLD)
    state = hass.states.get(switch)
    assert state.attributes["kept_for"] == "signal"
    assert state.attributes["signal"]["entity_id"] == MOTION
    assert state.attributes["warmed_by"] == "signals"
    assert state.attributes["warm_ups"] == 1
    # The motion again while the model is warm: recorded (after the quiet), nothing sent.
    await at_moment(hass, freezer, emulator, now + timedelta(minutes=1))
    hass.states.async_set(MOTION, "off", {"friendly_name": "Bedroom motion"})
    await hass.async_block_till_done(wait_background_tasks=True)
    assert len(loads(emulator, before)) == 1
    # The household's use finds it warm: counted for the signal, not the clock.
    await at_moment(hass, freezer, emulator, now + timedelta(minutes=4))
    coordinator = mock_config_entry.runtime_data.coordinator
    await coordinator.async_refresh()
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "prompt": "hi"})
    await coordinator.async_refresh()
    await hass.async_block_till_done()
    assert usage.scoreboard(LLAMA, SIGNAL_HELPED) == (1.0, 1.0)
    signal = hass.states.get(
        model_id(mock_config_entry, "sensor.llama3_2_3b_warm_thanks_to_a_signal_7_days")
    )
    clock = hass.states.get(
        model_id(mock_config_entry, "sensor.llama3_2_3b_warm_thanks_to_the_clock_7_days")
    )
    assert (signal.state, signal.attributes["today"], clock.state) == ("1", 1, "0")
    cold = hass.states.get(model_id(mock_config_entry, "sensor.llama3_2_3b_cold_starts_7_days"))
    assert cold.state == "0"
    # The signals sensor: one signal warms it, what it learnt, its name.
    sensor = hass.states.get(model_id(mock_config_entry, "sensor.llama3_2_3b_warming_signals"))
    assert sensor.state == "1"
    (row,) = sensor.attributes["signals"]
    assert row == {
        "entity_id": MOTION,
        "name": "Bedroom motion",
        "edge": "on",
        "within_minutes": 6,
        "share_percent": 100,
        "led": 20,
        "wrong": 0,
        "lift": 10.0,
        "acts": True,
    }
    assert (sensor.attributes["chosen"], sensor.attributes["warmed_by"]) == (1, "signals")
    # The edges heard are kept beside the uses.
    record = usage.get(LLAMA)
    assert record is not None
    assert record.planner.edges.as_dict()[MOTION].keys() == {"on", "off"}


@pytest.mark.freeze_time(NOW)
async def test_an_unused_hold_lets_the_model_go_and_counts_its_memory_not_a_warm_use(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    now = dt_util.utcnow()
    emulator.clock.set(now)
    hass.states.async_set(MOTION, "off")
    await set_up(hass, mock_config_entry, [MOTION])
    usage = mock_config_entry.runtime_data.usage
    teach(mock_config_entry, LLAMA, {MOTION: 300}, now=now)
    usage.set_auto_warm(LLAMA, True)
    hass.states.async_set(MOTION, "on")
    await hass.async_block_till_done(wait_background_tasks=True)
    coordinator = mock_config_entry.runtime_data.coordinator
    await coordinator.async_refresh()
    assert LLAMA in coordinator.data.held
    # The hold passes with no use: the server lets the model go at its end.
    await at_moment(hass, freezer, emulator, now + timedelta(seconds=HOLD + 5))
    await coordinator.async_refresh()
    await hass.async_block_till_done()
    assert LLAMA not in coordinator.data.held
    record = usage.get(LLAMA)
    assert record is not None
    assert record.holding_since is None
    assert usage.scoreboard(LLAMA, SIGNAL_HELPED) == (0.0, 0.0)
    spent = hass.states.get(
        model_id(mock_config_entry, "sensor.llama3_2_3b_gib_hours_spent_warming_7_days")
    )
    assert float(spent.state) > 0
    switch = hass.states.get(model_id(mock_config_entry, "switch.llama3_2_3b_auto_warm"))
    assert (switch.attributes["kept_for"], switch.attributes["signal"]) == (None, None)


@pytest.mark.freeze_time(NOW)
async def test_the_guard_refuses_a_signals_warm_up_and_auto_warm_off_sends_none(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    now = dt_util.utcnow()
    emulator.clock.set(now)
    plex = "binary_sensor.plex_transcoding"
    hass.states.async_set(plex, "on")
    hass.states.async_set(MOTION, "off")
    await set_up(hass, mock_config_entry, [MOTION], **{CONF_PROTECTED_ENTITIES: [plex]})
    usage = mock_config_entry.runtime_data.usage
    teach(mock_config_entry, LLAMA, {MOTION: 300}, now=now)
    before = len(emulator.requests)
    # Auto-warm off: the edge is learnt from, nothing is sent.
    hass.states.async_set(MOTION, "on")
    await hass.async_block_till_done(wait_background_tasks=True)
    assert loads(emulator, before) == []
    record = usage.get(LLAMA)
    assert record is not None
    assert record.planner.edges.count() == 1
    # On, while the household needs the GPU: refused, counted (the motion again after
    # its quiet minutes: a new edge).
    usage.set_auto_warm(LLAMA, True)
    await at_moment(hass, freezer, emulator, now + timedelta(minutes=10))
    hass.states.async_set(MOTION, "off")
    hass.states.async_set(MOTION, "on")
    await hass.async_block_till_done(wait_background_tasks=True)
    assert loads(emulator, before) == []
    assert record.refused == 1
    switch = hass.states.get(model_id(mock_config_entry, "switch.llama3_2_3b_auto_warm"))
    assert switch.attributes["refused_by_the_guard"] == 1
    # The household's need over: the next edge warms it.
    hass.states.async_set("binary_sensor.plex_transcoding", "off")
    await at_moment(hass, freezer, emulator, now + timedelta(minutes=20))
    hass.states.async_set(MOTION, "off")
    hass.states.async_set(MOTION, "on")
    await hass.async_block_till_done(wait_background_tasks=True)
    assert len(loads(emulator, before)) == 1


@pytest.mark.freeze_time(NOW)
async def test_a_next_alarm_is_an_edge_when_its_time_comes(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    now = dt_util.utcnow()
    emulator.clock.set(now)
    alarm = "sensor.phone_next_alarm"
    ring = now + timedelta(minutes=30)
    hass.states.async_set(alarm, ring.isoformat(), {ATTR_DEVICE_CLASS: "timestamp"})
    await set_up(hass, mock_config_entry, [alarm])
    usage = mock_config_entry.runtime_data.usage
    usage.set(LLAMA, UsageRecord())

    def edges() -> dict[str, Any]:
        record = usage.get(LLAMA)
        assert record is not None
        return record.planner.edges.as_dict()

    assert edges() == {}
    # Moved 10 minutes later before it came: the first time never comes.
    moved = ring + timedelta(minutes=10)
    hass.states.async_set(alarm, moved.isoformat(), {ATTR_DEVICE_CLASS: "timestamp"})
    await at_moment(hass, freezer, emulator, ring + timedelta(minutes=1))
    assert edges() == {}
    await at_moment(hass, freezer, emulator, moved + timedelta(seconds=1))
    assert edges() == {alarm: {"alarm": [int(moved.timestamp())]}}


@pytest.mark.freeze_time(NOW)
async def test_a_removed_entity_is_forgotten_and_a_repair_says_so_until_it_is_unchosen(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    entity_registry: er.EntityRegistry,
    issue_registry: ir.IssueRegistry,
) -> None:
    emulator.clock.set(dt_util.utcnow())
    entry = entity_registry.async_get_or_create(
        "binary_sensor", "test", "hall", suggested_object_id="hall"
    )
    hall = entry.entity_id
    hass.states.async_set(hall, "off")
    hass.states.async_set(MOTION, "off")
    await set_up(hass, mock_config_entry, [hall, MOTION])
    usage = mock_config_entry.runtime_data.usage
    hass.states.async_set(hall, "on")
    hass.states.async_set(MOTION, "on")
    await hass.async_block_till_done()
    record = usage.get(LLAMA)
    assert record is not None
    assert record.planner.edges.entities() == {hall, MOTION}
    assert usage.chosen_signals(LLAMA) == (hall, MOTION)
    teach(mock_config_entry, LLAMA, {hall: 300, MOTION: 300}, now=dt_util.utcnow())
    usage.async_changed()
    sensor = model_id(mock_config_entry, "sensor.llama3_2_3b_warming_signals")
    assert hass.states.get(sensor).state == "2"
    # The entity is removed from Home Assistant: what it taught goes (the sensor says so
    # at once, no poll needed), a repair says so.
    entity_registry.async_remove(hall)
    await hass.async_block_till_done()
    assert hass.states.get(sensor).state == "0"  # learnt again without it: no lesson yet
    hass.states.async_remove(hall)
    await hass.async_block_till_done()
    assert record.planner.edges.entities() == {MOTION}
    issue = issue_registry.async_get_issue(DOMAIN, gone_issue_id(ENTRY_ID, LLAMA, hall))
    assert issue is not None
    assert issue.translation_key == "signal_entity_gone"
    assert issue.translation_placeholders == {
        "model": LLAMA,
        "entity_id": hall,
        "server": "Ollama test",
    }
    # Unchosen (the subentry reconfigured, no reload): the repair goes.
    (subentry,) = mock_config_entry.subentries.values()
    hass.config_entries.async_update_subentry(
        mock_config_entry, subentry, data={**subentry.data, CONF_SIGNAL_ENTITIES: [MOTION]}
    )
    await hass.async_block_till_done()
    assert issue_registry.async_get_issue(DOMAIN, gone_issue_id(ENTRY_ID, LLAMA, hall)) is None
    assert usage.chosen_signals(LLAMA) == (MOTION,)
    assert mock_config_entry.runtime_data.usage is usage  # not reloaded


@pytest.mark.freeze_time(NOW)
async def test_an_entity_dropped_from_the_signals_is_forgotten_and_unload_leaves_nothing(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    issue_registry: ir.IssueRegistry,
) -> None:
    emulator.clock.set(dt_util.utcnow())
    alarm = "sensor.phone_next_alarm"
    ring = dt_util.utcnow() + timedelta(hours=1)
    hass.states.async_set(alarm, ring.isoformat(), {ATTR_DEVICE_CLASS: "timestamp"})
    hass.states.async_set(MOTION, "off")
    # A third entity that does not exist: a repair at once (Home Assistant runs).
    await set_up(hass, mock_config_entry, [MOTION, alarm, "binary_sensor.nowhere"])
    gone = gone_issue_id(ENTRY_ID, LLAMA, "binary_sensor.nowhere")
    assert issue_registry.async_get_issue(DOMAIN, gone) is not None
    hass.states.async_set(MOTION, "on")
    await hass.async_block_till_done()
    usage = mock_config_entry.runtime_data.usage
    record = usage.get(LLAMA)
    assert record is not None
    assert record.planner.edges.entities() == {MOTION}
    (subentry,) = mock_config_entry.subentries.values()
    hass.config_entries.async_update_subentry(
        mock_config_entry, subentry, data={**subentry.data, CONF_SIGNAL_ENTITIES: [alarm]}
    )
    await hass.async_block_till_done()
    assert record.planner.edges.entities() == set()
    assert issue_registry.async_get_issue(DOMAIN, gone) is None
    # Unloaded while the alarm's timer waits: no timer, no listener, no issue left.
    assert await hass.config_entries.async_unload(ENTRY_ID)
    await hass.async_block_till_done()
    hass.states.async_set(MOTION, "off")
    await hass.async_block_till_done()
    async_fire_time_changed(hass, ring + timedelta(seconds=1))
    await hass.async_block_till_done()
    assert record.planner.edges.entities() == set()


async def test_the_subentry_flow_adds_a_models_signals_then_reconfigures_them(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    hass.states.async_set("person.anna", "home")
    hass.states.async_set(MOTION, "off")
    hass.states.async_set("light.kitchen", "off")
    result = await hass.config_entries.subentries.async_init(
        (ENTRY_ID, SUBENTRY_WARMING_SIGNALS), context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_SIGNAL_MODEL: LLAMA}
    )
    assert result["step_id"] == "entities"
    assert result["description_placeholders"] == {"model": LLAMA}
    # Suggested: every person (no satellite uses llama here).
    schema = result["data_schema"].schema
    (key,) = list(schema)
    assert key.description == {"suggested_value": ["person.anna"]}
    for entities, error in (
        ([], "signals_none"),
        (["light.kitchen"], "signal_kind"),
        (["binary_sensor.nowhere"], "signal_not_found"),
        ([f"input_boolean.b{i}" for i in range(65)], "signals_too_many"),
    ):
        for index in range(65):
            hass.states.async_set(f"input_boolean.b{index}", "off")
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"], {CONF_SIGNAL_ENTITIES: entities}
        )
        assert result["errors"] == {CONF_SIGNAL_ENTITIES: error}, entities
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_SIGNAL_ENTITIES: ["person.anna", MOTION]}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == LLAMA
    assert result["data"] == {
        CONF_SIGNAL_MODEL: LLAMA,
        CONF_SIGNAL_ENTITIES: ["person.anna", MOTION],
    }
    await hass.async_block_till_done()
    usage = init_integration.runtime_data.usage
    assert usage.chosen_signals(LLAMA) == ("person.anna", MOTION)
    # A second model may have its own; llama no more, it has some.
    result = await hass.config_entries.subentries.async_init(
        (ENTRY_ID, SUBENTRY_WARMING_SIGNALS), context={"source": SOURCE_USER}
    )
    options = result["data_schema"].schema[CONF_SIGNAL_MODEL].config["options"]
    assert options == [QWEN]
    # Reconfigured: the entities changed, the entry not reloaded.
    (subentry_id,) = [
        s.subentry_id
        for s in init_integration.subentries.values()
        if s.subentry_type == SUBENTRY_WARMING_SIGNALS
    ]
    result = await init_integration.start_subentry_reconfigure_flow(hass, subentry_id)
    assert result["step_id"] == "reconfigure"
    assert result["description_placeholders"] == {"model": LLAMA}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_SIGNAL_ENTITIES: []}
    )
    assert result["errors"] == {CONF_SIGNAL_ENTITIES: "signals_none"}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_SIGNAL_ENTITIES: [MOTION]}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert usage.chosen_signals(LLAMA) == (MOTION,)
    assert init_integration.runtime_data.usage is usage


async def test_the_flow_asks_for_no_model_when_each_has_signals_or_the_server_is_not_set_up(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry
) -> None:
    mock_config_entry.add_to_hass(hass)
    result = await hass.config_entries.subentries.async_init(
        (ENTRY_ID, SUBENTRY_WARMING_SIGNALS), context={"source": SOURCE_USER}
    )
    assert (result["type"], result["reason"]) == (FlowResultType.ABORT, "server_not_loaded")
    hass.states.async_set(MOTION, "off")
    for model in (LLAMA, QWEN):
        hass.config_entries.async_add_subentry(mock_config_entry, signals_subentry([MOTION], model))
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    result = await hass.config_entries.subentries.async_init(
        (ENTRY_ID, SUBENTRY_WARMING_SIGNALS), context={"source": SOURCE_USER}
    )
    assert (result["type"], result["reason"]) == (FlowResultType.ABORT, "every_model_has_signals")


async def test_the_planner_judges_signals_against_the_models_measured_cold_load(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """On real time: the emulator's load takes its 50 ms."""
    emulator.clock.set(dt_util.utcnow())
    hass.states.async_set(MOTION, "off")
    await set_up(hass, mock_config_entry, [MOTION])
    usage = mock_config_entry.runtime_data.usage
    assert usage.load(LLAMA) is None  # none measured yet
    emulator.models[LLAMA].load_delay = 0.05
    await hass.services.async_call(
        DOMAIN, "probe", {"config_entry_id": ENTRY_ID, "model": LLAMA}, blocking=True
    )
    timing = mock_config_entry.runtime_data.coordinator.data.timings[LLAMA]
    assert timing.load_seconds
    assert usage.load(LLAMA) == timedelta(seconds=timing.load_seconds)
    hass.states.async_set(MOTION, "on")  # an edge: the model's record begins
    await hass.async_block_till_done()
    usage.plan(LLAMA)
    record = usage.get(LLAMA)
    assert record is not None
    assert record.planner.load == pytest.approx(timing.load_seconds, abs=0.001)
