"""Home Assistant's conversation agents' turns with a server's models (pure, clock passed in).

An agent's entity state is the time of its latest message: a move to a new time is a
turn, a use of its model by the household (and not another client's request, which the
server may show too). ``agent_turns.py`` reads the states and the agents; this log keeps
each model's latest turns and tells whether the server's sighting of a request was one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from .usage import agent_heard, on_this_clock

# The agent messages kept per model (to tell their turns on the server).
AGENT_USES_KEPT: Final = 16
# The entity domain of Home Assistant's conversation agents.
CONVERSATION: Final = "conversation."


def is_conversation(entity_id: object) -> bool:
    """Return True when ``entity_id`` names a conversation agent's entity."""
    return isinstance(entity_id, str) and entity_id.startswith(CONVERSATION)


def message_time(new_state: str, old_state: str, at: datetime | None) -> datetime | None:
    """Return the time of an agent's message, or None when the state change is no turn.

    ``at``: ``new_state`` read as a time. Only a move to a new time is a turn; an unknown,
    unavailable or zone-less state is not the time of a message.
    """
    if new_state == old_state or at is None or at.tzinfo is None:
        return None
    return at


@dataclass(slots=True)
class AgentTurnLog:
    """When Home Assistant's agents began their latest turns with each model (the latest last)."""

    _used: dict[str, list[datetime]] = field(default_factory=dict)

    def turn(self, model: str, at: datetime, now: datetime) -> bool:
        """Note a turn with ``model`` begun ``at``; return True when it begins ``now``.

        The agent's state is on this clock: a turn that begins now sends its request now
        (a model not resident loads for it).
        """
        self._used[model] = [*self._used.get(model, []), at][-AGENT_USES_KEPT:]
        return on_this_clock(at, now)

    def heard(self, model: str, begin: datetime, end: datetime) -> bool:
        """Return True when an agent's message to ``model`` began its turn by then."""
        return agent_heard(self._used.get(model, []), begin, end)

    def last(self, model: str) -> datetime | None:
        """Return when an agent last began a turn with ``model``."""
        used = self._used.get(model)
        return used[-1] if used else None
