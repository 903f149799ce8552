"""The peers' models of a llama-swap, read from the entries that run them.

A llama-swap that fronts other servers (its ``peers``) cannot tell whether they hold a
model; their own entries can. This feature finds the entry that serves each peer's model
(``core/peers.py``) and hands the views to the coordinator's snapshot, again whenever this
server's models or any other entry's poll change. It owns one dispatcher subscription and
one coordinator listener, both tied to the entry.
"""

from __future__ import annotations

from typing import Final

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_connect, async_dispatcher_send

from .const import DOMAIN
from .coordinator import LlmWarmthCoordinator
from .core.peers import OtherServer, peer_views
from .data import LlmWarmthConfigEntry
from .household_entry import server_entries

# Sent with an entry id whenever that entry's snapshot changed or the entry unloads.
SIGNAL_SERVER_SEEN: Final = f"{DOMAIN}_server_seen"


class PeerWatch:
    """Keeps one entry's view of its peers' models up to date."""

    def __init__(
        self, hass: HomeAssistant, entry: LlmWarmthConfigEntry, coordinator: LlmWarmthCoordinator
    ) -> None:
        """Watch for ``entry``; nothing runs before ``async_start``."""
        self._hass = hass
        self._entry = entry
        self._coordinator = coordinator

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Follow this server's polls and the other entries'; return what stops it."""
        stops = [
            async_dispatcher_connect(self._hass, SIGNAL_SERVER_SEEN, self._seen),
            self._coordinator.async_add_listener(self._own_update),
        ]
        self._refresh()
        # The others learn of this one's arrival now, of its going when it stops.
        async_dispatcher_send(self._hass, SIGNAL_SERVER_SEEN, self._entry.entry_id)

        @callback
        def stop() -> None:
            for unsub in stops:
                unsub()
            async_dispatcher_send(self._hass, SIGNAL_SERVER_SEEN, self._entry.entry_id)

        return stop

    @callback
    def _own_update(self) -> None:
        self._refresh()
        async_dispatcher_send(self._hass, SIGNAL_SERVER_SEEN, self._entry.entry_id)

    @callback
    def _seen(self, entry_id: str) -> None:
        if entry_id != self._entry.entry_id:
            self._refresh()

    @callback
    def _refresh(self) -> None:
        snapshot = self._coordinator.data
        others = [
            OtherServer(
                entry.title,
                entry.runtime_data.coordinator.data,
                entry.runtime_data.coordinator.last_update_success,
            )
            for entry in server_entries(self._hass)
            if entry.entry_id != self._entry.entry_id
        ]
        self._coordinator.async_set_peers(peer_views(snapshot.installed, others))
