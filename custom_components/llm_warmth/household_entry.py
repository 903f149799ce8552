"""The household entry: one device that shows every server of the house.

Home Assistant (2026.x) gives each device one config entry, so a device that shows every
server cannot belong to the servers' entries: the household is an entry of its own,
made by the integration once a house has two servers (no step of the user's), with one
device and, on it, a line per server (``household_entities.py``). It reads the servers'
entries through their public runtime data and follows ``SIGNAL_SERVER_SEEN``: a server
added, removed, down or slow changes its own line alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from homeassistant.config_entries import SOURCE_SYSTEM, ConfigEntry
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant, callback

from .const import CONF_HOUSEHOLD, DOMAIN

if TYPE_CHECKING:
    from .data import LlmWarmthConfigEntry

HOUSEHOLD_PLATFORMS = (Platform.SENSOR,)
# A house with this many servers gets its household entry.
SERVERS_FOR_A_HOUSEHOLD = 2


def is_household(entry: ConfigEntry) -> bool:
    """Return True for the household entry (not a server)."""
    return bool(entry.data.get(CONF_HOUSEHOLD))


@callback
def server_entries(hass: HomeAssistant, *, loaded: bool = True) -> list[LlmWarmthConfigEntry]:
    """Return the entries of servers (loaded ones only, unless ``loaded`` is False)."""
    entries = (
        hass.config_entries.async_loaded_entries(DOMAIN)
        if loaded
        else hass.config_entries.async_entries(DOMAIN, include_ignore=False)
    )
    servers = [entry for entry in entries if not is_household(entry)]
    return cast("list[LlmWarmthConfigEntry]", servers)


@callback
def async_ensure_household(hass: HomeAssistant) -> None:
    """Start the household entry's flow once the house has two servers and no household."""
    entries = hass.config_entries.async_entries(DOMAIN, include_ignore=False)
    if any(is_household(entry) for entry in entries):
        return
    if len([e for e in entries if not is_household(e)]) < SERVERS_FOR_A_HOUSEHOLD:
        return
    if hass.config_entries.flow.async_progress_by_handler(
        DOMAIN, match_context={"source": SOURCE_SYSTEM}
    ):
        return
    hass.async_create_task(
        hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_SYSTEM}),
        "llm_warmth household entry",
        eager_start=True,
    )
