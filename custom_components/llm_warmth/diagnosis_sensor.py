"""A model's "Last diagnosis" sensor: the pattern of its last ``llm_warmth.diagnose``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, override

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
)

from .core.diagnose import Pattern
from .entity import ModelEntity

LAST_DIAGNOSIS = SensorEntityDescription(
    key="last_diagnosis",
    translation_key="last_diagnosis",
    device_class=SensorDeviceClass.ENUM,
    options=[pattern.value for pattern in Pattern],
)
_SHOWN = ("verdict", "stage", "expanded_ms", "recommendation", "scenario", "at", "runs")


class LastDiagnosis(ModelEntity, SensorEntity):
    """The pattern the last diagnosis found, with its verdict and its runs (the table)."""

    # The table is long and only the latest matters: not recorded.
    _unrecorded_attributes = frozenset({"runs"})

    @property
    def _diagnosis(self) -> Mapping[str, Any] | None:
        return self.coordinator.diagnoses.get(self.model)

    @property
    @override
    def native_value(self) -> str | None:
        """Return the pattern (evicted, switch_evicts, ...)."""
        diagnosis = self._diagnosis
        return diagnosis.get("pattern") if diagnosis else None

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, Any]:
        """Return the verdict in words, what to change, and the runs."""
        diagnosis = self._diagnosis or {}
        return {key: diagnosis.get(key) for key in _SHOWN}
