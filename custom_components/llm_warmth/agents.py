"""Home Assistant's conversation agents that use a server's models, and how they ask.

Home Assistant's own Ollama integration sends ``keep_alive`` (default -1) and
``options.num_ctx`` (default 8192) on every turn; Ollama reloads a model loaded with
another ``num_ctx``. So a preload that should spare the agent a reload loads the model with
the agent's ``num_ctx``: these are its settings, read from the integration's entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from homeassistant.const import CONF_URL
from homeassistant.core import HomeAssistant, callback

from .core.backends.base import KeepAlive
from .core.server_url import normalize_url, unique_id_for
from .data import LlmWarmthConfigEntry

OLLAMA_DOMAIN: Final = "ollama"
_AGENT_SUBENTRY: Final = "conversation"
# Home Assistant's Ollama integration's defaults (homeassistant/components/ollama/const.py).
OLLAMA_DEFAULT_NUM_CTX: Final = 8192
OLLAMA_DEFAULT_KEEP_ALIVE: Final = -1


@dataclass(frozen=True, slots=True)
class Agent:
    """One conversation agent, the model it uses and how it asks for it."""

    name: str
    model: str
    num_ctx: int
    keep_alive: int


@callback
def ollama_agents(hass: HomeAssistant, entry: LlmWarmthConfigEntry) -> list[Agent]:
    """Return the agents of Home Assistant's Ollama integration at the entry's address.

    Entries in use only (not disabled, not ignored), in a fixed order; an agent whose
    settings cannot be read gets the integration's defaults for them.
    """
    agents: list[Agent] = []
    for ollama in hass.config_entries.async_entries(
        OLLAMA_DOMAIN, include_ignore=False, include_disabled=False
    ):
        url = ollama.data.get(CONF_URL)
        try:
            same = isinstance(url, str) and (
                unique_id_for(normalize_url(url, 11434)) == entry.unique_id
            )
        except ValueError:
            continue
        for subentry in sorted(ollama.subentries.values(), key=lambda s: s.subentry_id):
            model = subentry.data.get("model")
            if not same or subentry.subentry_type != _AGENT_SUBENTRY:
                continue
            if not isinstance(model, str) or not model:
                continue
            agents.append(
                Agent(
                    name=subentry.title,
                    model=model,
                    num_ctx=_whole(subentry.data.get("num_ctx"), OLLAMA_DEFAULT_NUM_CTX),
                    keep_alive=_whole(subentry.data.get("keep_alive"), OLLAMA_DEFAULT_KEEP_ALIVE),
                )
            )
    return agents


def _whole(value: object, default: int) -> int:
    """Return a setting as a whole number (the UI stores numbers as floats), else ``default``."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value == int(value):
        return int(value)
    return default


@callback
def agent_context(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry, model: str
) -> tuple[int | None, str | None]:
    """Return the context to load ``model`` with, and the agent it comes from.

    Ollama reloads a model loaded with another ``num_ctx``: a model one of Home Assistant's
    Ollama agents uses is loaded with that agent's. The other servers set the context in
    their own configuration: None.
    """
    runtime = entry.runtime_data
    if runtime.client.capabilities.keep_alive is not KeepAlive.IDLE_TIMER:
        return None, None
    for agent in ollama_agents(hass, entry):
        if runtime.coordinator.resolve_model(agent.model) == model:
            return agent.num_ctx, agent.name
    return None, None
