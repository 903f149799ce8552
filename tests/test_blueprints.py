"""The blueprints: loaded by Home Assistant's blueprint machinery, run against the integration."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path
import shutil
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components.automation import helpers as automation_helpers
from homeassistant.components.blueprint import models as blueprint_models
from homeassistant.const import STATE_OFF, STATE_ON
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr, entity_registry as er
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
from homeassistant.util.yaml import load_yaml
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_capture_events,
    async_fire_time_changed,
    async_mock_service,
)

from .conftest import LLAMA, QWEN, model_device, ollama_request, start_load
from .e2e import wait_until
from .ollama_emulator import OllamaEmulator
from .test_gpu import NVML_OPTIONS, nvml, setup_with  # noqa: F401 (nvml: a fixture)

BLUEPRINTS = Path(__file__).parent.parent / "blueprints" / "automation" / "llm_warmth"
PLEX = "binary_sensor.plex_transcoding"


@pytest.fixture(autouse=True)
def blueprint_folder(hass: HomeAssistant, tmp_path: Path) -> None:
    """Home Assistant's configuration folder with the blueprints where users import them."""
    hass.config.config_dir = str(tmp_path)
    shutil.copytree(BLUEPRINTS, tmp_path / "blueprints" / "automation" / "llm_warmth")


def keep_alives(emulator: OllamaEmulator, model: str) -> list[Any]:
    return [
        r.json.get("keep_alive")
        for r in emulator.requests
        if r.path == "/api/generate" and r.json.get("model") == model
    ]


def automation(path: str, **inputs: Any) -> dict[str, Any]:
    return {"use_blueprint": {"path": f"llm_warmth/{path}", "input": inputs}}


async def test_the_blueprints_are_valid(hass: HomeAssistant) -> None:
    """Home Assistant's own loader reads them with their inputs."""
    assert await async_setup_component(hass, "automation", {})
    loaded = await automation_helpers.async_get_blueprints(hass).async_get_blueprints()
    assert sorted(loaded) == [
        "llm_warmth/free_gpu_for_household.yaml",
        "llm_warmth/notify_slow_cold_start.yaml",
        "llm_warmth/one_moment_while_loading.yaml",
        "llm_warmth/warm_before_use.yaml",
        "llm_warmth/warm_on_household_context.yaml",
    ]
    for blueprint in loaded.values():
        assert isinstance(blueprint, blueprint_models.Blueprint)
        assert blueprint.metadata["source_url"].startswith("https://github.com/")


def _offered(hass: HomeAssistant, device: dr.AnyDeviceEntry, selector: dict[str, Any]) -> bool:
    """Return True when a device selector offers ``device``, as the frontend filters.

    Each ``filter`` names the device's integration (by its config entry); each ``entity``
    filter asks for one of the device's entities of that integration and domain.
    """
    entry = hass.config_entries.async_get_entry(device.config_entry_id or "")
    filters = selector.get("filter", [])
    filters = filters if isinstance(filters, list) else [filters]
    if filters and not any(entry and entry.domain == f.get("integration") for f in filters):
        return False
    wanted = selector.get("entity", [])
    wanted = wanted if isinstance(wanted, list) else [wanted]
    entities = er.async_entries_for_device(er.async_get(hass), device.id)
    return not wanted or any(
        all(
            getattr(entity, key if key != "integration" else "platform") == value
            for key, value in each.items()
        )
        for each in wanted
        for entity in entities
    )


@pytest.mark.usefixtures("nvml")
async def test_the_model_pickers_offer_the_models_only(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    device_registry: dr.DeviceRegistry,
) -> None:
    """A blueprint's model input lists the models' devices, not the server's or a GPU's."""
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    devices = [
        *dr.async_entries_for_config_entry(device_registry, mock_config_entry.entry_id),
        *dr.async_child_entries_for_config_entry(device_registry, mock_config_entry.entry_id),
    ]
    models = {model_device(device_registry, m).id for m in (LLAMA, QWEN)}  # type: ignore[union-attr]
    assert len(devices) > len(models)  # the server and two GPUs too
    for path, field in (
        ("warm_before_use.yaml", "model"),
        ("warm_on_household_context.yaml", "model"),
        ("free_gpu_for_household.yaml", "models"),
    ):
        blueprint = load_yaml(BLUEPRINTS / path)
        assert isinstance(blueprint, dict)
        selector = blueprint["blueprint"]["input"][field]["selector"]["device"]
        offered = {d.id for d in devices if _offered(hass, d, selector)}
        assert offered == models, path


async def test_warm_before_use_pins_ahead_of_the_window_and_releases_after(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    device_registry: dr.DeviceRegistry,
    freezer: FrozenDateTimeFactory,
) -> None:
    # Tuesday 1 December 2026, 06:55 local time; the window starts at 07:00 for an hour.
    zone = dt_util.get_default_time_zone()
    freezer.move_to(datetime(2026, 12, 1, 6, 55, tzinfo=zone))
    emulator.clock.set(dt_util.utcnow())
    llama = model_device(device_registry, LLAMA)
    qwen = model_device(device_registry, QWEN)
    assert llama is not None
    assert qwen is not None
    assert await async_setup_component(
        hass,
        "automation",
        {
            "automation": [
                automation(
                    "warm_before_use.yaml",
                    model=llama.id,
                    start="07:00:00",
                    duration=60,
                    weekdays=["mon", "tue"],
                    priority=7,
                ),
                # The same window on Wednesdays only: not today.
                automation(
                    "warm_before_use.yaml", model=qwen.id, start="07:00:00", weekdays=["wed"]
                ),
            ]
        },
    )
    await hass.async_block_till_done()
    pins = init_integration.runtime_data.pins
    triggered = async_capture_events(hass, "automation_triggered")

    async def at(hour: int, minute: int) -> None:
        freezer.move_to(datetime(2026, 12, 1, hour, minute, tzinfo=zone))
        emulator.clock.set(dt_util.utcnow())
        async_fire_time_changed(hass)
        await hass.async_block_till_done()

    # Never measured: 60 s of load assumed, 60 s of margin: pinned from 06:58.
    await at(6, 57)
    assert pins.pins == {}
    await at(6, 58)
    await wait_until(lambda: pins.get(LLAMA) is not None, 5, "the pin")
    pin = pins.get(LLAMA)
    assert pin is not None
    assert pin.priority == 7
    assert pin.until == dt_util.as_utc(datetime(2026, 12, 1, 8, 0, tzinfo=zone))
    assert keep_alives(emulator, LLAMA) == [3720]  # kept by Ollama to the window's end
    assert LLAMA in emulator.loaded
    # The Keep warm switch turned on in the automation's context: the logbook says the
    # automation pinned it (issue 32: a blueprint's pin was an unattributed line).
    switch = hass.states.get("switch.ollama_test_llama3_2_3b_keep_warm")
    assert switch.state == STATE_ON
    (run,) = triggered
    assert switch.context.id == run.context.id
    assert pins.get(QWEN) is None  # Wednesdays only
    # The window ends: released.
    await at(8, 0)
    await wait_until(lambda: pins.get(LLAMA) is None, 5, "the release")
    switch = hass.states.get("switch.ollama_test_llama3_2_3b_keep_warm")
    assert switch.state == STATE_OFF
    assert switch.context.id == triggered[-1].context.id  # the release's run
    # (Their time triggers must not outlive the test.)
    await hass.services.async_call("automation", "turn_off", {"entity_id": "all"}, blocking=True)


async def test_free_gpu_unloads_then_pins_again_what_was_kept_warm(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    device_registry: dr.DeviceRegistry,
) -> None:
    emulator.clock.set(dt_util.utcnow())
    llama = model_device(device_registry, LLAMA)
    qwen = model_device(device_registry, QWEN)
    assert llama is not None
    assert qwen is not None
    hass.states.async_set(PLEX, STATE_OFF)
    assert await async_setup_component(
        hass,
        "automation",
        {
            "automation": [
                automation(
                    "free_gpu_for_household.yaml",
                    trigger_entity=PLEX,
                    models=[llama.id, qwen.id],
                    restore_after=1,
                )
            ]
        },
    )
    switch = "switch.ollama_test_llama3_2_3b_keep_warm"
    await hass.services.async_call("switch", "turn_on", {"entity_id": switch}, blocking=True)
    await hass.async_block_till_done()
    assert LLAMA in emulator.loaded
    # (No waiting for Home Assistant to be idle: the automation waits for Plex.)
    hass.states.async_set(PLEX, STATE_ON)
    await wait_until(lambda: LLAMA not in emulator.loaded, 5, "llama unloaded")
    assert hass.states.get(switch).state == STATE_OFF
    # Off for a minute: what was kept warm is pinned again (qwen was not).
    hass.states.async_set(PLEX, STATE_OFF)
    await asyncio.sleep(0.1)  # the automation's wait for "off" starts its minute
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=1, seconds=1))
    await wait_until(lambda: hass.states.get(switch).state == STATE_ON, 5, "llama pinned again")
    assert LLAMA in emulator.loaded
    assert QWEN not in emulator.loaded


async def test_one_moment_is_said_while_a_slow_load_runs(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """A load expected to take longer than the shortest wait: the satellite announces."""
    announced = async_mock_service(hass, "assist_satellite", "announce")
    warmth = "sensor.ollama_test_llama3_2_3b"
    assert await async_setup_component(
        hass,
        "automation",
        {
            "automation": automation(
                "one_moment_while_loading.yaml",
                warmth=warmth,
                satellite="assist_satellite.kitchen",
                min_wait=0.5,
            )
        },
    )
    # Never loaded with an exact figure: no expectation, no message.
    load = await start_load(emulator, LLAMA, None)
    await poll()
    assert hass.states.get(warmth).state == "loading"
    assert announced == []
    emulator.finish_loads()
    await load
    await poll()
    # Loaded once by LLM Warmth (1 s, exact), gone, then loading again for another client.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    emulator.models[LLAMA].load_delay = 1.0
    await hass.services.async_call(
        "llm_warmth",
        "preload",
        {"config_entry_id": init_integration.entry_id, "model": LLAMA},
        blocking=True,
    )
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await poll()
    emulator.clock.set(dt_util.utcnow())  # the integration's clock is the emulator's
    load = await start_load(emulator, LLAMA, None)
    await poll()
    await hass.async_block_till_done()
    assert [(c.data["entity_id"], c.data["message"]) for c in announced] == [
        (["assist_satellite.kitchen"], "One moment, I'm waking up.")
    ]
    emulator.finish_loads()
    await load


async def test_the_household_stirring_warms_the_model(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    device_registry: dr.DeviceRegistry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Arrival home, the first motion of the morning (once), and a while before the alarm."""
    zone = dt_util.get_default_time_zone()
    freezer.move_to(datetime(2026, 12, 8, 6, 30, tzinfo=zone))
    emulator.clock.set(dt_util.utcnow())
    llama = model_device(device_registry, LLAMA)
    assert llama is not None
    motion, alarm = "binary_sensor.kitchen_motion", "sensor.phone_next_alarm"
    hass.states.async_set(motion, STATE_OFF)
    hass.states.async_set("person.ann", "not_home")
    hass.states.async_set(alarm, datetime(2026, 12, 8, 7, 0, tzinfo=zone).isoformat())
    assert await async_setup_component(
        hass,
        "automation",
        {
            "automation": automation(
                "warm_on_household_context.yaml",
                model=llama.id,
                people=["person.ann"],
                motion=[motion],
                alarm=alarm,
                alarm_lead=10,
                keep=20,
            )
        },
    )
    await hass.async_block_till_done()

    def loads() -> list[Any]:
        return keep_alives(emulator, LLAMA)

    async def evicted() -> None:
        await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
        await init_integration.runtime_data.coordinator.async_refresh()

    # The first motion of the morning: loaded, kept 20 minutes; again that morning: not.
    await evicted()
    hass.states.async_set(motion, STATE_ON)
    await hass.async_block_till_done()
    await wait_until(lambda: loads()[-1] == 1200, 5, "the load at the first motion")
    count = len(loads())
    hass.states.async_set(motion, STATE_OFF)
    hass.states.async_set(motion, STATE_ON)
    await hass.async_block_till_done()
    assert len(loads()) == count
    # Ten minutes before the alarm: loaded.
    await evicted()
    count = len(loads())
    freezer.move_to(datetime(2026, 12, 8, 6, 50, 30, tzinfo=zone))
    emulator.clock.set(dt_util.utcnow())
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    await wait_until(lambda: len(loads()) > count, 5, "the load before the alarm")
    count = len(loads())
    # Someone arrives home: loaded.
    hass.states.async_set("person.ann", "home")
    await hass.async_block_till_done()
    await wait_until(lambda: len(loads()) > count, 5, "the load at the arrival")
    await hass.services.async_call("automation", "turn_off", {"entity_id": "all"}, blocking=True)


async def test_a_slow_cold_start_is_told_with_the_last_diagnosis(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    probes = async_mock_service(hass, "notify", "probes")
    household = async_mock_service(hass, "notify", "household")
    never = async_mock_service(hass, "notify", "never")
    assert await async_setup_component(
        hass,
        "automation",
        {
            "automation": [
                automation(
                    "notify_slow_cold_start.yaml",
                    threshold=0.2,
                    include_probes=True,
                    notify="notify.probes",
                ),
                automation("notify_slow_cold_start.yaml", threshold=0, notify="notify.household"),
                automation(
                    "notify_slow_cold_start.yaml",
                    threshold=600,
                    include_probes=True,
                    notify="notify.never",
                ),
            ]
        },
    )
    # A cold probe of ours: told only where probes are asked for, with its wait.
    emulator.models[LLAMA].load_delay = 0.4
    await hass.services.async_call(
        "llm_warmth",
        "probe",
        {"config_entry_id": init_integration.entry_id, "model": LLAMA},
        blocking=True,
    )
    await hass.async_block_till_done()
    assert (len(probes), len(household), len(never)) == (1, 0, 0)
    message = probes[0].data["message"]
    assert "llama3.2:3b" in probes[0].data["title"]
    assert "No diagnosis yet" in message
    assert float(message.split("waited ")[1].split(" s")[0]) >= 0.4  # the server's load
    # Another client's cold load, seen by polling: a household's cold start, told.
    load = await start_load(emulator, QWEN, 0.3)
    await poll()
    await load
    await poll()
    await hass.async_block_till_done()
    assert len(household) == 1
    assert "qwen3:8b" in household[0].data["title"]
    assert "waited at least 0.3 s" in household[0].data["message"]  # polling's lower bound
