"""When Home Assistant's conversation agents began their turns with this server's models.

An agent's entity state is the time of its latest message: a move to a new time is a
turn, a use of its model by the household (and not another client's request, which the
server may show too). Its request goes out then: a model not resident loads for it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from homeassistant.const import EVENT_STATE_CHANGED
from homeassistant.core import CALLBACK_TYPE, Event, EventStateChangedData, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.util import dt as dt_util

from .agents import AgentDirectory
from .coordinator import LlmWarmthCoordinator
from .core.agent_turn import AgentTurnLog, is_conversation, message_time


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
        self._log = AgentTurnLog()

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Follow the agents' states; return what stops it."""
        return self._coordinator.hass.bus.async_listen(
            EVENT_STATE_CHANGED, self._agent_state, event_filter=_is_conversation
        )

    @property
    def log(self) -> AgentTurnLog:
        """Return the turns heard so far."""
        return self._log

    @callback
    def _agent_state(self, event: Event[EventStateChangedData]) -> None:
        """Record a use of the agent's model when its state moves to a new time (a message)."""
        new, old = event.data["new_state"], event.data["old_state"]
        if new is None or old is None:
            return
        at = message_time(new.state, old.state, dt_util.parse_datetime(new.state))
        if at is None:
            return  # unknown, unavailable, or not the time of a message
        entity = er.async_get(self._coordinator.hass).async_get(event.data["entity_id"])
        used = (
            self._agents.agent_of_entity(entity.config_entry_id, entity.config_subentry_id)
            if entity
            else None
        )
        if used is not None:
            model = self._coordinator.resolve_model(used[0])
            if self._log.turn(model, at, dt_util.utcnow()):
                # Its request goes out now: a model not resident loads for it.
                self._coordinator.async_note_agent_turn(model)
            self._on_use(model, at)


@callback
def _is_conversation(event_data: EventStateChangedData) -> bool:
    """Return True for a state change of a conversation agent's entity."""
    return is_conversation(event_data.get("entity_id"))
