"""Home Assistant's conversation agents that use a server's models, and how they ask.

Home Assistant's own Ollama integration sends ``keep_alive`` (default -1) and
``options.num_ctx`` (default 8192) on every turn; Ollama reloads a model loaded with
another ``num_ctx``. So a preload that should spare the agent a reload loads the model with
the agent's ``num_ctx``: these are its settings, read from the integration's entries.

Agents of OpenAI-compatible integrations (for example Extended OpenAI Conversation)
pointed at the server are recognised too, where their entry names a base URL and a model
in the usual keys: they are listed on the model's device, with no settings to follow.

Each entry keeps an ``AgentDirectory``: the agents are read from the config entries once,
and again whenever a config entry (or subentry) is added, changed or removed, not on every
poll or state write of the sensors that name them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryChange,
)
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT, CONF_URL
from homeassistant.core import CALLBACK_TYPE, Context, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm, template
from homeassistant.helpers.dispatcher import async_dispatcher_connect

from .const import DOMAIN
from .core.backends.base import ServerKind
from .core.backends.detection import DEFAULT_PORTS
from .core.server_url import normalize_url, unique_id_for

if TYPE_CHECKING:
    from .data import LlmWarmthConfigEntry

OLLAMA_DOMAIN: Final = "ollama"
_AGENT_SUBENTRY: Final = "conversation"
# Home Assistant's Ollama integration's defaults (homeassistant/components/ollama/const.py).
OLLAMA_DEFAULT_NUM_CTX: Final = 8192
OLLAMA_DEFAULT_KEEP_ALIVE: Final = -1
# Where OpenAI-compatible integrations keep their server's URL and their model.
_URL_KEYS: Final = ("base_url", "api_base", "url")
_MODEL_KEYS: Final = ("chat_model", "model")


@dataclass(frozen=True, slots=True)
class Agent:
    """One conversation agent, the model it uses and how it asks for it."""

    name: str
    model: str
    num_ctx: int
    keep_alive: int
    # Its instructions (None: Home Assistant's default) and the LLM APIs it may use.
    prompt: str | None = None
    llm_apis: tuple[str, ...] = ()
    # Whether it asks a thinking model to think (None: the model's default).
    think: bool | None = None
    # Its config subentry: its conversation entity's, so that a pipeline's agent is found.
    subentry_id: str | None = None


@dataclass(frozen=True, slots=True)
class OpenAICompatibleAgent:
    """An agent of another integration pointed at the server: its model, and where it is."""

    name: str
    model: str
    integration: str
    entry_id: str
    # The conversation subentry it is (None: the entry itself is the agent).
    subentry_id: str | None = None


@dataclass(frozen=True, slots=True)
class AgentOfModel:
    """A conversation agent that uses a model, and the integration it belongs to."""

    name: str
    integration: str


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
        for agent in self.ollama:
            if subentry_id is not None and agent.subentry_id == subentry_id:
                return agent.model, agent
        for wanted in (subentry_id, None):
            for other in self.openai_compatible:
                if other.entry_id == entry_id and other.subentry_id == wanted:
                    return other.model, None
        return None

    def _read(self) -> bool:
        """Read the agents from the config entries; return True when they changed."""
        found = (
            _ollama_agents(self._hass, self._unique_id) if self._ollama else (),
            _openai_compatible_agents(self._hass, self._unique_id, self._port),
        )
        if found == (self.ollama, self.openai_compatible):
            return False
        self.ollama, self.openai_compatible = found
        return True


def _ollama_agents(hass: HomeAssistant, unique_id: str | None) -> tuple[Agent, ...]:
    """Return the agents of Home Assistant's Ollama integration at the server's address.

    Entries in use only (not disabled, not ignored), in a fixed order; an agent whose
    settings cannot be read gets the integration's defaults for them.
    """
    agents: list[Agent] = []
    for ollama in hass.config_entries.async_entries(
        OLLAMA_DOMAIN, include_ignore=False, include_disabled=False
    ):
        url = ollama.data.get(CONF_URL)
        try:
            same = isinstance(url, str) and (unique_id_for(normalize_url(url, 11434)) == unique_id)
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
                    prompt=prompt
                    if isinstance(prompt := subentry.data.get(CONF_PROMPT), str)
                    else None,
                    llm_apis=_apis(subentry.data.get(CONF_LLM_HASS_API)),
                    think=think if isinstance(think := subentry.data.get("think"), bool) else None,
                    subentry_id=subentry.subentry_id,
                )
            )
    return tuple(agents)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _apis(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str))
    return ()


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


def _whole(value: object, default: int) -> int:
    """Return a setting as a whole number (the UI stores numbers as floats), else ``default``."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value == int(value):
        return int(value)
    return default


@callback
def model_agent(entry: LlmWarmthConfigEntry, model: str) -> Agent | None:
    """Return the first of Home Assistant's Ollama agents that uses ``model``.

    None on llama-server and llama-swap: the directory reads these agents for an Ollama
    server alone.
    """
    runtime = entry.runtime_data
    resolve = runtime.coordinator.resolve_model
    return next((a for a in runtime.agents.ollama if resolve(a.model) == model), None)


@callback
def agent_context(entry: LlmWarmthConfigEntry, model: str) -> tuple[int | None, str | None]:
    """Return the context to load ``model`` with, and the agent it comes from.

    Ollama reloads a model loaded with another ``num_ctx``: a model one of Home Assistant's
    Ollama agents uses is loaded with that agent's. The other servers set the context in
    their own configuration: None.
    """
    agent = model_agent(entry, model)
    return (agent.num_ctx, agent.name) if agent else (None, None)


def _same_server(url: object, unique_id: str | None, port: int) -> bool:
    """Return True when ``url`` (an OpenAI-compatible base URL) is the server's."""
    if not isinstance(url, str) or not url.strip():
        return False
    text = url.strip().rstrip("/").removesuffix("/v1")
    try:
        return unique_id_for(normalize_url(text, port)) == unique_id
    except ValueError:
        return False


def _first(values: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if isinstance(value := values.get(key), str) and value:
            return value
    return None


def _openai_compatible_agents(
    hass: HomeAssistant, unique_id: str | None, port: int
) -> tuple[OpenAICompatibleAgent, ...]:
    """Return the OpenAI-compatible agents at the server.

    An entry of any other integration whose data or options give a base URL of this server
    and a model (``chat_model`` or ``model``), or whose conversation subentries give one.
    """
    found: list[OpenAICompatibleAgent] = []
    for other in hass.config_entries.async_entries(include_ignore=False, include_disabled=False):
        if other.domain in (DOMAIN, OLLAMA_DOMAIN):
            continue
        settings = {**other.data, **other.options}
        if not _same_server(_first(settings, _URL_KEYS), unique_id, port):
            continue
        if model := _first(settings, _MODEL_KEYS):
            found.append(OpenAICompatibleAgent(other.title, model, other.domain, other.entry_id))
        for subentry in sorted(other.subentries.values(), key=lambda s: s.subentry_id):
            if subentry.subentry_type == _AGENT_SUBENTRY and (
                model := _first(subentry.data, _MODEL_KEYS)
            ):
                found.append(
                    OpenAICompatibleAgent(
                        subentry.title, model, other.domain, other.entry_id, subentry.subentry_id
                    )
                )
    return tuple(found)


@callback
def agents_of_model(entry: LlmWarmthConfigEntry, model: str) -> list[AgentOfModel]:
    """Return every recognised conversation agent that uses ``model`` on the entry's server."""
    runtime = entry.runtime_data
    resolve = runtime.coordinator.resolve_model
    agents = [
        AgentOfModel(agent.name, OLLAMA_DOMAIN)
        for agent in runtime.agents.ollama
        if resolve(agent.model) == model
    ]
    agents += [
        AgentOfModel(agent.name, agent.integration)
        for agent in runtime.agents.openai_compatible
        if resolve(agent.model) == model
    ]
    return agents
