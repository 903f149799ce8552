"""When Home Assistant's conversation agents began their turns with this server's models.

An agent's entity state is the time of its latest message: a move to a new time is a
turn, a use of its model by the household (and not another client's request, which the
server may show too). Its request goes out then: a model not resident loads for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from homeassistant.const import EVENT_STATE_CHANGED
from homeassistant.core import CALLBACK_TYPE, Event, EventStateChangedData, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.util import dt as dt_util

from .agents import AgentDirectory
from .coordinator import LlmWarmthCoordinator
from .core.usage import agent_heard, on_this_clock

# The agent messages kept per model (to tell their turns on the server).
AGENT_USES_KEPT: Final = 16


class AgentTurns:
    """Hears the turns of the agents that use one server's models."""

    def __init__(
        self,
        coordinator: LlmWarmthCoordinator,
        agents: AgentDirectory,
        *,
        on_use: Callable[[str, datetime], None],
    ) -> None:
        """Tell ``on_use`` each turn's model and time; note it to ``coordinator``."""
        self._coordinator = coordinator
        self._agents = agents
        self._on_use = on_use
        self._used: dict[str, list[datetime]] = {}

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Follow the agents' states; return what stops it."""
        return self._coordinator.hass.bus.async_listen(
            EVENT_STATE_CHANGED, self._agent_state, event_filter=_is_conversation
        )

    def heard(self, model: str, begin: datetime, end: datetime) -> bool:
        """Return True when an agent's message to ``model`` began its turn by then."""
        return agent_heard(self._used.get(model, []), begin, end)

    def last(self, model: str) -> datetime | None:
        """Return when an agent last began a turn with ``model``."""
        used = self._used.get(model)
        return used[-1] if used else None

    @callback
    def _agent_state(self, event: Event[EventStateChangedData]) -> None:
        """Record a use of the agent's model when its state moves to a new time (a message)."""
        new, old = event.data["new_state"], event.data["old_state"]
        if new is None or old is None or new.state == old.state:
            return
        at = dt_util.parse_datetime(new.state)
        if at is None or at.tzinfo is None:
            return  # unknown, unavailable, or not the time of a message
        entity = er.async_get(self._coordinator.hass).async_get(event.data["entity_id"])
        used = (
            self._agents.agent_of_entity(entity.config_entry_id, entity.config_subentry_id)
            if entity
            else None
        )
        if used is not None:
            model = self._coordinator.resolve_model(used[0])
            self._used[model] = [*self._used.get(model, []), at][-AGENT_USES_KEPT:]
            if on_this_clock(at, dt_util.utcnow()):  # the agent's state is on this clock
                # Its request goes out now: a model not resident loads for it.
                self._coordinator.async_note_agent_turn(model)
            self._on_use(model, at)


@callback
def _is_conversation(event_data: Mapping[str, Any]) -> bool:
    entity_id = event_data.get("entity_id")
    return isinstance(entity_id, str) and entity_id.startswith("conversation.")
