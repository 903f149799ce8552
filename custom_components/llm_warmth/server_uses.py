"""The uses another client's requests show on one server: Ollama's expiries, llama-swap's log.

- Ollama: every request moves the model's expiry to its end plus its keep; an expiry that
  moved between two polls, or a model loaded since the last poll, is a use, seen at the
  poll (``core.auto_warm.ExpiryWatch``).
- llama-swap: its activity log (``/api/metrics/activity``) tells every request with its
  end and length: each new entry is a use at its start, read at each poll.

Neither the integration's own requests (``OwnRequests``) nor a turn of Home Assistant's
agent heard already (``AgentTurnLog``) is a use. The usage feature owns this and is told
each use (``on_use``) and each model the server no longer holds (``on_gone``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Final

from homeassistant.core import callback

from .const import LOGGER
from .coordinator import LlmWarmthCoordinator
from .core.agent_turn import AgentTurnLog
from .core.auto_warm import ExpiryWatch, activity_uses
from .core.backends.base import ReportsRequests
from .core.backends.errors import LlmServerError
from .core.usage import new_activity
from .data import LlmWarmthConfigEntry
from .own_requests import OwnRequests

# How many of llama-swap's latest activity entries are read at each poll.
ACTIVITY_PAGE: Final = 50


class ServerUses:
    """Reads, at each poll, the uses the server shows of other clients' requests."""

    def __init__(
        self,
        entry: LlmWarmthConfigEntry,
        coordinator: LlmWarmthCoordinator,
        *,
        own_requests: OwnRequests,
        turns: AgentTurnLog,
        on_use: Callable[[str, datetime], None],
        on_gone: Callable[[frozenset[str], datetime], None],
    ) -> None:
        """Tell ``on_use`` each use, ``on_gone`` the models held at each poll."""
        self.entry = entry
        self._coordinator = coordinator
        self._own = own_requests
        self._turns = turns
        self._on_use = on_use
        self._on_gone = on_gone
        # What the last poll saw: each model's expiry, and when.
        self.expiries = ExpiryWatch()
        # The latest llama-swap activity entry read (None: none yet, read the page once).
        self._activity_seen: int | None = None
        # A read of llama-swap's activity is running (one at a time).
        self._reading = False

    @callback
    def baseline(self) -> None:
        """Take the setup's poll as the one the next is compared with."""
        coordinator = self._coordinator
        if coordinator.last_update_success and coordinator.data is not None:
            self.expiries.baseline(coordinator.utcnow(), coordinator.data.held)

    @callback
    def polled(self) -> None:
        """Compare the expiries with the last poll's (Ollama); read llama-swap's activity."""
        coordinator = self._coordinator
        if not coordinator.last_update_success:
            return
        now = coordinator.utcnow()  # the server's expiries are read on this clock
        uses = self.expiries.polled(
            now,
            coordinator.data.held,
            reports_expiry=coordinator.client.capabilities.reports_expiry,
            ours=self._own,
            agents=self._turns,
        )
        self._on_gone(frozenset(coordinator.data.held), now)
        if isinstance(coordinator.client, ReportsRequests) and not self._reading:
            self._reading = True
            self.entry.async_create_background_task(
                coordinator.hass,
                self._read_activity(coordinator.client),
                "llm_warmth usage activity",
            )
        for model in uses:
            self._on_use(model, now)

    async def _read_activity(self, client: ReportsRequests) -> None:
        """Tell the requests llama-swap served since the last poll (not ours)."""
        try:
            served = await client.served_requests(limit=ACTIVITY_PAGE)
        except LlmServerError as err:
            LOGGER.debug("%s: llama-swap's activity: %s", self.entry.title, err)
            return
        finally:
            self._reading = False
        read = new_activity(served, self._activity_seen)
        self._activity_seen = read.newest
        for request in activity_uses(read.new, ours=self._own, agents=self._turns):
            self._on_use(self._coordinator.resolve_model(request.model), request.started_at)
