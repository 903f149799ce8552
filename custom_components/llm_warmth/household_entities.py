"""The household device's lines: one sensor a server, on the household entry's one device.

Each line says its server's reach (``up``/``down``), host and kind, every model's warmth and
where it lives (a llama-swap peer's models on the peer), the GPUs of its host, and the
conversation agents that use its models (``core/household_view.py`` decides). A line is
unavailable while its server's entry is not loaded, and goes when that entry is removed;
it is written again whenever its server's snapshot changes (``SIGNAL_SERVER_SEEN``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, override

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
)
from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryChange,
)
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .agents import agents_of_model
from .const import CONF_SERVER_KIND, DOMAIN, GIB
from .core.household_view import Reach, ServerPart, server_part
from .data import LlmWarmthConfigEntry
from .household_entry import server_entries
from .peer_watch import SIGNAL_SERVER_SEEN

HOUSEHOLD_LINE: Final = SensorEntityDescription(
    key="household",
    translation_key="household",
    device_class=SensorDeviceClass.ENUM,
    options=[reach.value for reach in Reach],
)
# Every model's warmth and the GPUs' memory change often: kept out of the recorder.
_VOLATILE: Final = frozenset({"models", "warm_models", "gpus", "agents"})


def _gib(value: int | None) -> float | None:
    return None if value is None else round(value / GIB, 2)


async def async_setup_household_sensors(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add a line for each server, and for each server that comes later."""
    lines: dict[str, HouseholdLine] = {}

    @callback
    def add_new() -> None:
        new = [
            HouseholdLine(entry, server.entry_id, server.title)
            for server in server_entries(hass)
            if server.entry_id not in lines
        ]
        lines.update({line.server_id: line for line in new})
        if new:
            async_add_entities(new)

    @callback
    def seen(server_id: str) -> None:
        if server_id in lines:
            line = lines[server_id]
            if hass.config_entries.async_get_entry(server_id) is None:  # removed
                del lines[server_id]
                if line.entity_id:
                    er.async_get(hass).async_remove(line.entity_id)
            elif line.hass is not None:  # added already
                line.async_write_ha_state()
        else:
            add_new()

    @callback
    def changed(_change: ConfigEntryChange, changed_entry: ConfigEntry) -> None:
        # A server loaded (its own signal came while it was starting) or removed (after
        # its unload, no signal of its own comes).
        if changed_entry.domain == DOMAIN and changed_entry.entry_id != entry.entry_id:
            seen(changed_entry.entry_id)

    add_new()
    entry.async_on_unload(async_dispatcher_connect(hass, SIGNAL_SERVER_SEEN, seen))
    entry.async_on_unload(async_dispatcher_connect(hass, SIGNAL_CONFIG_ENTRY_CHANGED, changed))


class HouseholdLine(SensorEntity):
    """One server's line on the household device; it shows an outage, not "unavailable"."""

    _attr_has_entity_name = True
    _attr_should_poll = False
    _unrecorded_attributes = _VOLATILE
    entity_description = HOUSEHOLD_LINE

    def __init__(self, household: ConfigEntry, server_id: str, server_title: str) -> None:
        """Show the server ``server_id`` on the household device."""
        self.server_id = server_id
        self._attr_unique_id = f"{household.entry_id}_{server_id}_household"
        self._attr_translation_placeholders = {"server": server_title}
        self._attr_device_info = DeviceInfo(
            identifiers={(DOMAIN, household.entry_id)},
            name=household.title,
            manufacturer="LLM Warmth",
            model="Household",
            entry_type=DeviceEntryType.SERVICE,
        )

    def _server(self) -> LlmWarmthConfigEntry | None:
        """Return the server's entry while it is loaded (its runtime data is there)."""
        return next((e for e in server_entries(self.hass) if e.entry_id == self.server_id), None)

    @property
    @override
    def available(self) -> bool:
        """Return True while the server's entry is loaded."""
        return self._server() is not None

    def _part(self, server: LlmWarmthConfigEntry) -> ServerPart:
        data = server.runtime_data
        gpu = data.gpu
        readings = (
            gpu.data.gpus.values()
            if gpu is not None and gpu.last_update_success and gpu.data is not None
            else ()
        )
        return server_part(
            data.coordinator.data,
            reachable=data.coordinator.last_update_success,
            gpus=(
                (s.name or s.uuid, s.memory_total, s.memory_used, r.memory)
                for r in readings
                if (s := r.status)
            ),
        )

    @property
    @override
    def native_value(self) -> str | None:
        """Return whether the server answers."""
        server = self._server()
        return self._part(server).reach.value if server else None

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object] | None:
        """Return the host, the kind, the models with their warmth, the GPUs, the agents."""
        if (server := self._server()) is None:
            return None
        part = self._part(server)
        return {
            "host": server.runtime_data.household.host,
            "server_kind": server.data.get(CONF_SERVER_KIND),
            "warm_models": list(part.warm),
            "models": {
                model: {"warmth": warmth.value, "peer": part.peers.get(model)}
                for model, warmth in part.models.items()
            },
            "gpus": [
                {
                    "name": g.name,
                    "total_gib": _gib(g.total),
                    "used_gib": _gib(g.used),
                    "headroom_gib": _gib(g.headroom),
                }
                for g in part.gpus
            ],
            "agents": {
                agent.name: model
                for model in part.models
                for agent in agents_of_model(server, model)
            },
        }
