"""The warming signals' form suggests what is in the rooms of the satellites using the model.

A real Assist pipeline (``tests/assist.py``) whose agent uses llama on the emulator; its
satellite is in the kitchen; the form for llama ticks the kitchen's entities of a signal
kind, the satellite itself and every person, and nothing of another room or kind.
"""

from __future__ import annotations

from types import MappingProxyType

from homeassistant.config_entries import SOURCE_USER, ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import area_registry as ar, device_registry as dr, entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.const import (
    CONF_SIGNAL_ENTITIES,
    CONF_SIGNAL_MODEL,
    SUBENTRY_WARMING_SIGNALS,
)
from custom_components.llm_warmth.core.signal_edges import SIGNAL_DOMAINS
from custom_components.llm_warmth.signals_flow import _SIGNALS, refused, satellite_pipeline

from .assist import Assist, assist_fixture, hass_config_dir_fixture  # noqa: F401
from .conftest import ENTRY_ID, LLAMA, QWEN


async def test_the_satellites_rooms_are_suggested_for_the_model_their_pipeline_uses(
    hass: HomeAssistant,
    assist: Assist,
    init_integration: MockConfigEntry,
    area_registry: ar.AreaRegistry,
    device_registry: dr.DeviceRegistry,
    entity_registry: er.EntityRegistry,
) -> None:
    kitchen, garage = area_registry.async_create("Kitchen"), area_registry.async_create("Garage")
    satellite = assist.satellite.entity_id
    satellite_entry = entity_registry.async_get(satellite)
    assert satellite_entry is not None
    device = device_registry.async_get_or_create(
        config_entry_id=satellite_entry.config_entry_id,
        identifiers={("test", "kitchen-satellite")},
    )
    device_registry.async_update_device(device.id, area_id=kitchen.id)
    entity_registry.async_update_entity(satellite, device_id=device.id)
    # Another select of the device first (its voice detection), then its pipeline's: the
    # preferred pipeline, the harness's (llama's agent).
    vad = entity_registry.async_get_or_create(
        "select", "test", "kitchen-satellite-vad_sensitivity", device_id=device.id
    )
    hass.states.async_set(vad.entity_id, "aggressive")
    select = entity_registry.async_get_or_create(
        "select", "test", "kitchen-satellite-pipeline", device_id=device.id
    )
    hass.states.async_set(select.entity_id, "preferred")
    assert satellite_pipeline(hass, satellite) == assist.pipeline_id
    for object_id, area, state in (
        ("kitchen_motion", kitchen.id, "off"),
        ("garage_door", garage.id, "off"),
    ):
        entity = entity_registry.async_get_or_create(
            "binary_sensor", "test", object_id, suggested_object_id=object_id
        )
        entity_registry.async_update_entity(entity.entity_id, area_id=area)
        hass.states.async_set(entity.entity_id, state)
    light = entity_registry.async_get_or_create("light", "test", "kl", suggested_object_id="kl")
    entity_registry.async_update_entity(light.entity_id, area_id=kitchen.id)
    hass.states.async_set(light.entity_id, "on")
    hass.states.async_set("person.anna", "home")

    async def suggested(model: str) -> list[str]:
        result = await hass.config_entries.subentries.async_init(
            (ENTRY_ID, SUBENTRY_WARMING_SIGNALS), context={"source": SOURCE_USER}
        )
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"], {CONF_SIGNAL_MODEL: model}
        )
        (key,) = list(result["data_schema"].schema)
        hass.config_entries.subentries.async_abort(result["flow_id"])
        return key.description["suggested_value"]

    assert await suggested(LLAMA) == [
        satellite,
        "binary_sensor.kitchen_motion",
        "person.anna",
    ]
    # No satellite runs a pipeline that uses qwen: only the people.
    assert await suggested(QWEN) == ["person.anna"]
    # A satellite on a named pipeline: found by its name; on none we know: none.
    hass.states.async_set(select.entity_id, "Harness")
    assert satellite_pipeline(hass, satellite) == assist.pipeline_id
    hass.states.async_set(select.entity_id, "Somebody else's")
    assert satellite_pipeline(hass, satellite) is None
    hass.states.async_remove(select.entity_id)
    assert satellite_pipeline(hass, satellite) is None
    entity_registry.async_update_entity(satellite, device_id=None)
    assert satellite_pipeline(hass, satellite) is None
    assert satellite_pipeline(hass, "assist_satellite.nowhere") is None


async def test_what_the_form_refuses_and_offers(
    hass: HomeAssistant, init_integration: MockConfigEntry, entity_registry: er.EntityRegistry
) -> None:
    # 64 entities are not too many (none of them exists); 65 are.
    many = [f"input_boolean.b{i}" for i in range(65)]
    assert refused(hass, many[:64]) == "signal_not_found"
    assert refused(hass, many) == "signals_too_many"
    # A next alarm known by the registry's device class alone (no state yet) is a signal.
    alarm = entity_registry.async_get_or_create(
        "sensor", "test", "alarm", original_device_class="timestamp"
    )
    plain = entity_registry.async_get_or_create("sensor", "test", "plain")
    assert refused(hass, [alarm.entity_id]) is None
    assert refused(hass, [plain.entity_id]) == "signal_kind"
    # The picker: every kind of signal but sensors, and sensors that tell a time.
    plain_kinds, times = _SIGNALS.config["filter"]
    assert "sensor" not in plain_kinds["domain"]
    assert set(plain_kinds["domain"]) == set(SIGNAL_DOMAINS) - {"sensor"}
    assert times == {"domain": ["sensor"], "device_class": ["timestamp"]}
    # A reconfiguration refused shows what was typed, not what was kept.
    hass.states.async_set("input_boolean.hall", "off")
    hass.states.async_set("light.kitchen", "off")
    hass.config_entries.async_add_subentry(
        init_integration,
        ConfigSubentry(
            data=MappingProxyType(
                {CONF_SIGNAL_MODEL: LLAMA, CONF_SIGNAL_ENTITIES: ["input_boolean.hall"]}
            ),
            subentry_type=SUBENTRY_WARMING_SIGNALS,
            title=LLAMA,
            unique_id=None,
        ),
    )
    (subentry_id,) = list(init_integration.subentries)
    result = await init_integration.start_subentry_reconfigure_flow(hass, subentry_id)
    (key,) = list(result["data_schema"].schema)
    assert key.description == {"suggested_value": ["input_boolean.hall"]}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_SIGNAL_ENTITIES: ["light.kitchen"]}
    )
    assert result["errors"] == {CONF_SIGNAL_ENTITIES: "signal_kind"}
    (key,) = list(result["data_schema"].schema)
    assert key.description == {"suggested_value": ["light.kitchen"]}
