"""The demo household's text-to-speech."""

from __future__ import annotations

from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import DemoHouseholdEntry


async def async_setup_entry(
    hass: HomeAssistant,
    entry: DemoHouseholdEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the household's text-to-speech."""
    async_add_entities([entry.runtime_data.tts])
