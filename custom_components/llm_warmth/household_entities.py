"""Each server's line of the household view: one sensor on the server's device.

It says the server's reach (``up``/``down``), host and kind, every model's warmth and where
it lives (a llama-swap peer's models on the peer), the GPUs of its host, and the
conversation agents that use its models; the card's household section shows every
server's line together. The entry owns its line: removing, losing or slowing one server
changes only its own (``core/household_view.py`` decides).

(Not one shared "Household" device: since Home Assistant 2026.x a device identifier is
unique per config entry only, so every entry would make a device of its own.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, override

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
)

from .agents import agents_of_model
from .const import CONF_SERVER_KIND, GIB
from .core.household_view import Reach, ServerPart, server_part
from .entity import Followed, ServerEntity

HOUSEHOLD_SERVER: Final = SensorEntityDescription(
    key="household",
    translation_key="household",
    device_class=SensorDeviceClass.ENUM,
    options=[reach.value for reach in Reach],
)


def _gib(value: int | None) -> float | None:
    return None if value is None else round(value / GIB, 2)


class HouseholdServer(ServerEntity, SensorEntity):
    """One server's line of the household view; it shows the outage, never unavailable."""

    # Every model's warmth and the GPUs' memory change often: kept out of the recorder.
    _unrecorded_attributes = frozenset({"models", "warm_models", "gpus", "agents"})

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the GPU readings and the agents as well as the polls."""
        data = self.coordinator.config_entry.runtime_data
        return (data.agents, *((data.gpu,) if data.gpu is not None else ()))

    @property
    @override
    def available(self) -> bool:
        """Return True: the line says the server is down instead of going unavailable."""
        return True

    def _part(self) -> ServerPart:
        data = self.coordinator.config_entry.runtime_data
        gpu = data.gpu
        readings = (
            gpu.data.gpus.values()
            if gpu is not None and gpu.last_update_success and gpu.data is not None
            else ()
        )
        return server_part(
            self.coordinator.data,
            reachable=self.coordinator.last_update_success,
            gpus=(
                (
                    r.status.name or r.status.uuid,
                    r.status.memory_total,
                    r.status.memory_used,
                    r.memory,
                )
                for r in readings
            ),
        )

    @property
    @override
    def native_value(self) -> str:
        """Return whether the server answers."""
        return self._part().reach.value

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, Any]:
        """Return the host, the kind, the models with their warmth, the GPUs, the agents."""
        entry = self.coordinator.config_entry
        part = self._part()
        return {
            "host": entry.runtime_data.household.host,
            "server_kind": entry.data.get(CONF_SERVER_KIND),
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
                for agent in agents_of_model(entry, model)
            },
        }
