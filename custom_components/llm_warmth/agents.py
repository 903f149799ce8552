"""Home Assistant's conversation agents that use a server's models, and how they ask.

``core.agent_options`` decides which of the config entries' agents are at the server and
reads their settings (the ``num_ctx`` and ``keep_alive`` Home Assistant's Ollama agent sends
on every turn, so that a preload spares it a reload); this module reads the entries, and
renders an agent's system prompt as Home Assistant does.

Each entry keeps an ``AgentDirectory``: the agents are read from the config entries once,
and again whenever a config entry (or subentry) is added, changed or removed, not on every
poll or state write of the sensors that name them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryChange,
)
from homeassistant.core import CALLBACK_TYPE, Context, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm, template
from homeassistant.helpers.dispatcher import async_dispatcher_connect

from .const import DOMAIN
from .core.agent_options import (
    OLLAMA_DOMAIN,
    Agent,
    AgentOfModel,
    EntryView,
    OpenAICompatibleAgent,
    SubentryView,
    agent_of_entity,
    agent_using,
    agents_of_model as agents_using,
    ollama_agents,
    openai_compatible_agents,
)
from .core.backends.base import ServerKind
from .core.backends.detection import DEFAULT_PORTS

if TYPE_CHECKING:
    from .data import LlmWarmthConfigEntry

# Agent: core's record of an Ollama agent, which the directory holds (voice_wake.py).
__all__ = [
    "Agent",
    "AgentDirectory",
    "agent_context",
    "agent_system_prompt",
    "agents_of_model",
    "model_agent",
]


class AgentDirectory:
    """The conversation agents at one server, read again whenever a config entry changes."""

    def __init__(self, hass: HomeAssistant, unique_id: str | None, kind: ServerKind) -> None:
        """Follow the agents at the server ``unique_id`` names (a server of ``kind``)."""
        self._hass = hass
        self._unique_id = unique_id
        self._port = DEFAULT_PORTS[kind]
        # Home Assistant's Ollama agents at this address (read only for an Ollama server),
        # and the OpenAI-compatible agents pointed at it.
        self._ollama = kind is ServerKind.OLLAMA
        self.ollama: tuple[Agent, ...] = ()
        self.openai_compatible: tuple[OpenAICompatibleAgent, ...] = ()
        self._listeners: list[CALLBACK_TYPE] = []

    @callback
    def async_add_listener(self, listener: CALLBACK_TYPE) -> CALLBACK_TYPE:
        """Call ``listener`` when the agents change; return what stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Read the agents, and again on every entry change; return what stops it."""
        self._read()

        @callback
        def entry_changed(_change: ConfigEntryChange, changed_entry: ConfigEntry) -> None:
            # LLM Warmth's own entries hold no agents (and change as they load).
            if changed_entry.domain != DOMAIN and self._read():
                for listener in list(self._listeners):
                    listener()

        return async_dispatcher_connect(self._hass, SIGNAL_CONFIG_ENTRY_CHANGED, entry_changed)

    def agent_of_entity(
        self, entry_id: str | None, subentry_id: str | None
    ) -> tuple[str, Agent | None] | None:
        """Return the model of the agent whose entity belongs to (entry, subentry).

        With Home Assistant's Ollama agent itself (its request shape is known); None as the
        agent for an OpenAI-compatible agent. None when the entity is no agent at this server.
        """
        return agent_of_entity(self.ollama, self.openai_compatible, entry_id, subentry_id)

    def _read(self) -> bool:
        """Read the agents from the config entries; return True when they changed."""
        entries = self._hass.config_entries.async_entries(
            include_ignore=False, include_disabled=False
        )
        views = [_view(entry) for entry in entries]
        found = (
            ollama_agents((v for v in views if v.domain == OLLAMA_DOMAIN), self._unique_id)
            if self._ollama
            else (),
            openai_compatible_agents(views, self._unique_id, self._port, DOMAIN),
        )
        if found == (self.ollama, self.openai_compatible):
            return False
        self.ollama, self.openai_compatible = found
        return True


def _view(entry: ConfigEntry) -> EntryView:
    """Return what ``core.agent_options`` reads of a config entry and its subentries."""
    return EntryView(
        domain=entry.domain,
        entry_id=entry.entry_id,
        title=entry.title,
        data=entry.data,
        options=entry.options,
        subentries=tuple(
            SubentryView(s.subentry_id, s.subentry_type, s.title, s.data)
            for s in entry.subentries.values()
        ),
    )


async def agent_system_prompt(
    hass: HomeAssistant, agent: Agent, device_id: str | None = None
) -> str:
    """Return the beginning of the system prompt the agent sends, as Home Assistant builds it.

    Its instructions rendered as the conversation integration renders them, then the
    prompt of its LLM APIs (the exposed entities, and the area of ``device_id``: the
    satellite the turn comes from); the date and time that Home Assistant appends next
    change every second and are left out, so this is the prefix a server's prompt cache
    can keep for the agent's next turn.
    """
    context = llm.LLMContext(
        platform=OLLAMA_DOMAIN,
        context=Context(),
        language=hass.config.language,
        assistant="conversation",
        device_id=device_id,
    )
    parts = [
        template.Template(agent.prompt or llm.DEFAULT_INSTRUCTIONS_PROMPT, hass).async_render(
            {"ha_name": hass.config.location_name, "user_name": None, "llm_context": context},
            parse_result=False,
        )
    ]
    if agent.llm_apis:
        try:
            api = await llm.async_get_api(hass, list(agent.llm_apis), context)
        except HomeAssistantError:
            pass  # an API that is gone: the agent's own turn fails the same way
        else:
            parts.append(api.api_prompt)
    return "\n".join(parts)


@callback
def model_agent(entry: LlmWarmthConfigEntry, model: str) -> Agent | None:
    """Return the first of Home Assistant's Ollama agents that uses ``model``.

    None on llama-server and llama-swap: the directory reads these agents for an Ollama
    server alone.
    """
    runtime = entry.runtime_data
    return agent_using(runtime.agents.ollama, model, runtime.coordinator.resolve_model)


@callback
def agent_context(entry: LlmWarmthConfigEntry, model: str) -> tuple[int | None, str | None]:
    """Return the context to load ``model`` with, and the agent it comes from.

    Ollama reloads a model loaded with another ``num_ctx``: a model one of Home Assistant's
    Ollama agents uses is loaded with that agent's. The other servers set the context in
    their own configuration: None.
    """
    agent = model_agent(entry, model)
    return (agent.num_ctx, agent.name) if agent else (None, None)


@callback
def agents_of_model(entry: LlmWarmthConfigEntry, model: str) -> list[AgentOfModel]:
    """Return every recognised conversation agent that uses ``model`` on the entry's server."""
    runtime = entry.runtime_data
    agents = runtime.agents
    return agents_using(
        agents.ollama, agents.openai_compatible, model, runtime.coordinator.resolve_model
    )
