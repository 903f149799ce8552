"""The demo household's speech-to-text."""

from __future__ import annotations

from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import DemoHouseholdEntry


async def async_setup_entry(
    hass: HomeAssistant,
    entry: DemoHouseholdEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the household's speech-to-text."""
    async_add_entities([entry.runtime_data.stt])
