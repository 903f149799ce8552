"""Which model is the household's assistant on a server: its agent's, or the chosen one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import override

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
)
from homeassistant.core import callback

from .const import CONF_ASSISTANT_MODEL
from .core.model_readings import ready_expected_at
from .core.warmth import Warmth, model_warmth
from .data import LlmWarmthConfigEntry
from .entity import Followed, ServerEntity


@callback
def assistant_model(entry: LlmWarmthConfigEntry) -> tuple[str | None, str]:
    """Return the assistant model of the entry's server and where that comes from.

    ``option``: the one the user chose in the options (an explicit choice wins);
    ``agent``: else the model of the first conversation agent of Home Assistant's Ollama
    integration at the same address; ``none``: neither.
    """
    if chosen := entry.options.get(CONF_ASSISTANT_MODEL):
        return str(chosen), "option"
    if agents := entry.runtime_data.agents.ollama:
        return agents[0].model, "agent"
    return None, "none"


ASSISTANT_WARMTH = SensorEntityDescription(
    key="assistant_warmth",
    translation_key="assistant_warmth",
    device_class=SensorDeviceClass.ENUM,
    options=[w.value for w in Warmth],
)


class AssistantWarmth(ServerEntity, SensorEntity):
    """The warmth of the household's assistant model, on the server's device.

    One entity per server for a dashboard: the model chosen in the options, else the
    model of Home Assistant's Ollama agent that uses this server. It follows the
    agents as they change.
    """

    # A time only while the model loads.
    _unrecorded_attributes = frozenset({"ready_expected_at"})

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the agents."""
        return (self.coordinator.config_entry.runtime_data.agents,)

    @property
    @override
    def native_value(self) -> str | None:
        """Return the assistant model's warmth (unknown without an assistant model)."""
        model = self._model()[0]
        return model_warmth(self.coordinator.data, model).value if model else None

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return which model that is, and why."""
        model, source = self._model()
        ready = ready_expected_at(self.coordinator.data, model) if model else None
        return {
            "model": model,
            "chosen_by": source,
            # While its model loads: when the household can expect it.
            "ready_expected_at": ready.isoformat() if ready else None,
        }

    def _model(self) -> tuple[str | None, str]:
        """Return the assistant model as the server names it ("x" is "x:latest")."""
        model, source = assistant_model(self.coordinator.config_entry)
        return (self.coordinator.resolve_model(model) if model else None), source
