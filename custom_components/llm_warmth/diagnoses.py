"""The last diagnosis of each model: kept by the diagnose action, shown by a sensor."""

from __future__ import annotations

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant

from .coordinator import LlmWarmthCoordinator
from .core.diagnosis import Diagnosis
from .core.json_value import JsonValue
from .feature import ModelRecords
from .sentences import say
from .storage import EntryStore


class Diagnoses(ModelRecords[Diagnosis]):
    """The diagnoses of one server's models (stored, as answered, in "diagnoses")."""

    def __init__(
        self, entry: ConfigEntry, store: EntryStore, coordinator: LlmWarmthCoordinator
    ) -> None:
        """Start from the stored diagnoses."""
        super().__init__(
            entry,
            store,
            coordinator,
            "diagnoses",
            records=(Diagnosis.from_dict, Diagnosis.as_dict),
            what="diagnosis",
        )


def answered(hass: HomeAssistant, diagnosis: Diagnosis) -> dict[str, JsonValue]:
    """Return a diagnosis as the action answers it and its sensor shows it.

    The verdict in words first, then its codes, then the raw figures.
    """
    return {"verdict": say(hass, diagnosis.verdict.said), **diagnosis.as_dict()}
