"""The signals' sources on their own: what they follow, hand on, read and say is gone.

``SignalSources`` on a real Home Assistant (its state machine, entity registry, timers
and recorder), with the two callbacks it tells recorded: each model's edges (live or
from the past) and each model's entities kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components.recorder import Recorder
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import ATTR_DEVICE_CLASS
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er, issue_registry as ir
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed
from pytest_homeassistant_custom_component.components.recorder.common import (
    async_wait_recording_done,
)

from custom_components.llm_warmth.const import (
    CONF_SIGNAL_ENTITIES,
    CONF_SIGNAL_MODEL,
    DOMAIN,
    SUBENTRY_WARM_ASSISTANT,
    SUBENTRY_WARMING_SIGNALS,
)
from custom_components.llm_warmth.core.signal_edges import Edge
from custom_components.llm_warmth.signal_sources import (
    SignalSources,
    chosen_signals,
    device_class_of,
    gone_issue_id,
)

from .conftest import ENTRY_ID, LLAMA, QWEN

MOTION = "input_boolean.bedroom_motion"
ALARM = "sensor.phone_next_alarm"
NOW = "2026-11-23 06:00:00+00:00"
type Start = Callable[[list[str]], SignalSources]


def subentry(data: dict[str, object], kind: str = SUBENTRY_WARMING_SIGNALS) -> ConfigSubentry:
    return ConfigSubentry(
        data=MappingProxyType(data), subentry_type=kind, title="signals", unique_id=None
    )


@dataclass
class Heard:
    """What the sources told: each model's edges (with ``live``), each model's kept set."""

    edges: list[tuple[str, list[Edge], bool]] = field(default_factory=list)
    kept: list[tuple[str, frozenset[str]]] = field(default_factory=list)

    def of(self, *, live: bool) -> list[tuple[str, str, str]]:
        return [(m, e.entity, e.state) for m, edges, lv in self.edges if lv is live for e in edges]


@pytest.fixture
def entry(hass: HomeAssistant) -> MockConfigEntry:
    entry = MockConfigEntry(domain=DOMAIN, entry_id=ENTRY_ID, title="Ollama test")
    entry.add_to_hass(hass)
    return entry


@pytest.fixture
def heard() -> Heard:
    return Heard()


@pytest.fixture
def start(hass: HomeAssistant, entry: MockConfigEntry, heard: Heard) -> Iterator[Start]:
    stops = []

    def started(entities: list[str]) -> SignalSources:
        hass.config_entries.async_add_subentry(
            entry, subentry({CONF_SIGNAL_MODEL: LLAMA, CONF_SIGNAL_ENTITIES: entities})
        )
        sources = SignalSources(
            hass,
            entry,  # type: ignore[arg-type]
            on_edges=lambda model, edges, live: heard.edges.append((model, edges, live)),
            on_kept=lambda model, kept: heard.kept.append((model, kept)),
        )
        stops.append(sources.async_start())
        return sources

    yield started
    for stop in stops:
        stop()


def test_the_chosen_signals_are_those_of_the_warming_signals_subentries_that_read() -> None:
    entry = MockConfigEntry(
        domain=DOMAIN,
        subentries_data=[
            {
                "data": {CONF_SIGNAL_MODEL: LLAMA, CONF_SIGNAL_ENTITIES: [MOTION, 3]},
                "subentry_type": SUBENTRY_WARMING_SIGNALS,
                "title": LLAMA,
            },
            # Another kind of subentry with the same keys: not signals.
            {
                "data": {CONF_SIGNAL_MODEL: QWEN, CONF_SIGNAL_ENTITIES: [MOTION]},
                "subentry_type": SUBENTRY_WARM_ASSISTANT,
                "title": QWEN,
            },
            # Entities that are no list, a model that is no name: not read.
            {
                "data": {CONF_SIGNAL_MODEL: "m", CONF_SIGNAL_ENTITIES: MOTION},
                "subentry_type": SUBENTRY_WARMING_SIGNALS,
                "title": "m",
            },
            {
                "data": {CONF_SIGNAL_MODEL: 7, CONF_SIGNAL_ENTITIES: [MOTION]},
                "subentry_type": SUBENTRY_WARMING_SIGNALS,
                "title": "7",
            },
        ],
    )
    assert chosen_signals(entry) == {LLAMA: (MOTION,)}
    assert gone_issue_id("e1", LLAMA, MOTION) == f"signal_entity_gone_e1_{LLAMA}_{MOTION}"


async def test_a_device_class_is_the_states_else_the_registrys(
    hass: HomeAssistant, entity_registry: er.EntityRegistry
) -> None:
    original = entity_registry.async_get_or_create(
        "sensor", "test", "a", original_device_class="timestamp"
    )
    chosen = entity_registry.async_get_or_create("sensor", "test", "b")
    entity_registry.async_update_entity(chosen.entity_id, device_class="timestamp")
    assert device_class_of(hass, original.entity_id, None) == "timestamp"
    assert device_class_of(hass, chosen.entity_id, None) == "timestamp"
    hass.states.async_set("sensor.c", "1", {ATTR_DEVICE_CLASS: "duration"})
    assert device_class_of(hass, "sensor.c", hass.states.get("sensor.c")) == "duration"
    assert device_class_of(hass, "sensor.nowhere", None) is None


@pytest.mark.freeze_time(NOW)
async def test_changes_are_edges_of_the_models_naming_them_and_another_entrys_change_is_not(
    hass: HomeAssistant, entry: MockConfigEntry, heard: Heard, start: Start
) -> None:
    hass.states.async_set(MOTION, "off")
    sources = start([MOTION])
    await hass.async_block_till_done()
    assert set(heard.kept) == {(LLAMA, frozenset({MOTION}))}
    kept = len(heard.kept)
    hass.states.async_set(MOTION, "on")
    hass.states.async_set("input_boolean.other", "on")
    await hass.async_block_till_done()
    assert heard.of(live=True) == [(LLAMA, MOTION, "on")]
    # Another entry's subentries changed: these sources follow on as they were.
    following = sources._unfollow
    other = MockConfigEntry(domain=DOMAIN, entry_id="other")
    other.add_to_hass(hass)
    hass.config_entries.async_add_subentry(
        other, subentry({CONF_SIGNAL_MODEL: QWEN, CONF_SIGNAL_ENTITIES: [MOTION]})
    )
    await hass.async_block_till_done()
    assert sources._unfollow is following
    assert len(heard.kept) == kept


@pytest.mark.freeze_time(NOW)
async def test_a_next_alarm_named_by_the_registry_rings_and_one_that_is_no_time_does_not(
    hass: HomeAssistant,
    entity_registry: er.EntityRegistry,
    freezer: FrozenDateTimeFactory,
    heard: Heard,
    start: Start,
) -> None:
    alarm = entity_registry.async_get_or_create(
        "sensor", "test", "alarm", original_device_class="timestamp"
    ).entity_id
    now = dt_util.utcnow()
    ring = now + timedelta(minutes=30)
    start([alarm])  # no state yet: nothing to ring
    await hass.async_block_till_done()
    hass.states.async_set(alarm, ring.isoformat())  # no device class in its attributes
    await hass.async_block_till_done()

    async def at(when: datetime) -> None:
        freezer.move_to(when)
        async_fire_time_changed(hass, when)
        await hass.async_block_till_done()

    await at(ring + timedelta(seconds=1))
    assert heard.of(live=True) == [(LLAMA, alarm, "alarm")]
    # No time (unknown): no timer; a time that is this very moment: passed, none.
    heard.edges.clear()
    hass.states.async_set(alarm, (ring + timedelta(hours=1)).isoformat())
    hass.states.async_set(alarm, "unknown")
    await hass.async_block_till_done()
    await at(ring + timedelta(hours=2))
    hass.states.async_set(alarm, dt_util.utcnow().isoformat())
    await at(dt_util.utcnow() + timedelta(seconds=1))
    assert heard.edges == []


@pytest.mark.freeze_time(NOW)
async def test_an_entity_gone_from_the_registry_or_the_states_is_a_repair_and_forgotten(
    hass: HomeAssistant,
    entity_registry: er.EntityRegistry,
    issue_registry: ir.IssueRegistry,
    heard: Heard,
    start: Start,
) -> None:
    hall = entity_registry.async_get_or_create("binary_sensor", "test", "hall").entity_id
    other = entity_registry.async_get_or_create("binary_sensor", "test", "other").entity_id
    hass.states.async_set(hall, "off")
    hass.states.async_set(MOTION, "off")
    start([hall, MOTION])
    await hass.async_block_till_done()
    assert issue_registry.issues == {}
    # Changed in the registry, another entity removed: nothing is gone (each on its own: a
    # check after the second would clear what the first raised).
    entity_registry.async_update_entity(hall, name="Hall")
    await hass.async_block_till_done()
    assert issue_registry.issues == {}
    entity_registry.async_remove(other)
    await hass.async_block_till_done()
    assert issue_registry.issues == {}
    # Removed from the registry (its state goes just after): gone at once.
    heard.kept.clear()
    entity_registry.async_remove(hall)
    await hass.async_block_till_done()
    assert heard.kept == [(LLAMA, frozenset({MOTION}))]
    hass.states.async_remove(hall)
    await hass.async_block_till_done()
    issue = issue_registry.async_get_issue(DOMAIN, gone_issue_id(ENTRY_ID, LLAMA, hall))
    assert issue is not None
    assert (issue.is_fixable, issue.severity) == (False, ir.IssueSeverity.WARNING)
    assert heard.kept[-1] == (LLAMA, frozenset({MOTION}))
    # An entity of the state machine alone, removed from it while Home Assistant runs.
    hass.states.async_remove(MOTION)
    await hass.async_block_till_done()
    assert issue_registry.async_get_issue(DOMAIN, gone_issue_id(ENTRY_ID, LLAMA, MOTION))
    assert heard.kept[-1] == (LLAMA, frozenset())


@pytest.mark.recorder
async def test_the_past_read_from_the_recorder_is_handed_on_as_past_not_live(
    recorder_mock: Recorder,
    hass: HomeAssistant,
    freezer: FrozenDateTimeFactory,
    heard: Heard,
    start: Start,
) -> None:
    begin = dt_util.utcnow() - timedelta(days=2)
    # A state from before the eight weeks read: not an edge at their start.
    freezer.move_to(begin - timedelta(weeks=9))
    hass.states.async_set(MOTION, "on")
    for minutes, state in ((0, "off"), (10, "on"), (20, "off")):
        freezer.move_to(begin + timedelta(minutes=minutes))
        hass.states.async_set(MOTION, state)
    await async_wait_recording_done(hass)
    freezer.move_to(begin + timedelta(days=2))
    start([MOTION])
    await hass.async_block_till_done(wait_background_tasks=True)
    assert heard.of(live=False) == [
        (LLAMA, MOTION, "off"),
        (LLAMA, MOTION, "on"),
        (LLAMA, MOTION, "off"),
    ]
    assert heard.of(live=True) == []
