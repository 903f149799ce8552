"""A model's "Last diagnosis" and "Idle profile" sensors: what the diagnosis tools found."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import override

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
)

from .core.diagnose import Pattern
from .core.diagnosis import Diagnosis
from .core.idle_profile import verdict as idle_verdict
from .diagnoses import answered
from .entity import Followed, ModelEntity
from .sentences import say

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

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the diagnoses."""
        return (self.coordinator.config_entry.runtime_data.diagnoses,)

    @property
    def _diagnosis(self) -> Diagnosis | None:
        return self.coordinator.config_entry.runtime_data.diagnoses.get(self.model)

    @property
    @override
    def native_value(self) -> str | None:
        """Return the pattern (evicted, switch_evicts, ...)."""
        diagnosis = self._diagnosis
        return diagnosis.verdict.pattern.value if diagnosis else None

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return the verdict in words, what to change, and the runs."""
        diagnosis = self._diagnosis
        if diagnosis is None:
            return dict.fromkeys(_SHOWN)
        shown = answered(self.hass, diagnosis)
        return {key: shown.get(key) for key in _SHOWN}


IDLE_PROFILE = SensorEntityDescription(
    key="idle_profile",
    translation_key="idle_profile",
    device_class=SensorDeviceClass.ENUM,
    options=["running", "done"],
)


class IdleProfileSensor(ModelEntity, SensorEntity):
    """The model's idle profile: running or done, its results and their verdict."""

    _unrecorded_attributes = frozenset({"results"})

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the profiles and the TTFT targets (the verdict compares with them)."""
        data = self.coordinator.config_entry.runtime_data
        return (data.profiler, data.ttft_targets)

    @property
    @override
    def native_value(self) -> str | None:
        """Return whether the profile still has intervals to measure."""
        profile = self.coordinator.config_entry.runtime_data.profiler.profiles.get(self.model)
        if profile is None:
            return None
        return "done" if profile.done else "running"

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return the next probe's time, the results and the verdict."""
        data = self.coordinator.config_entry.runtime_data
        profile = data.profiler.profiles.get(self.model)
        if profile is None:
            return {"next_probe_at": None, "results": [], "verdict": None}
        due = profile.due_at()
        target = data.ttft_targets.seconds(self.model)
        return {
            "next_probe_at": due.isoformat() if due else None,
            "results": [r.as_dict() for r in profile.results],
            "verdict": say(
                self.hass,
                *idle_verdict(
                    profile.results,
                    target_ms=1000 * target,
                    size=self.coordinator.last_sizes.get(self.model),
                ),
            ),
        }
