"""The demo household's wake word."""

from __future__ import annotations

from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import DemoHouseholdEntry


async def async_setup_entry(
    hass: HomeAssistant,
    entry: DemoHouseholdEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the household's wake word."""
    async_add_entities([entry.runtime_data.wake_word])
