"""Which conversation agents use a server, and how they ask for its models (pure).

Home Assistant's own Ollama integration sends ``keep_alive`` (default -1) and
``options.num_ctx`` (default 8192) on every turn; Ollama reloads a model loaded with
another ``num_ctx``. So a preload that should spare the agent a reload loads the model with
the agent's ``num_ctx``: these are its settings, read from the integration's entries.

Agents of OpenAI-compatible integrations (for example Extended OpenAI Conversation)
pointed at the server are recognised too, where their entry names a base URL and a model
in the usual keys: they are listed on the model's device, with no settings to follow.

The entries come in as plain records (``EntryView``): what another integration stored is
read here, each value checked for its type, and nothing is asked of Home Assistant.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from .server_url import normalize_url, unique_id_for

OLLAMA_DOMAIN: Final = "ollama"
# The port of an Ollama integration's URL that names none.
OLLAMA_PORT: Final = 11434
# The subentry type of a conversation agent (Ollama's and other integrations').
AGENT_SUBENTRY: Final = "conversation"
# Home Assistant's Ollama integration's defaults (homeassistant/components/ollama/const.py).
OLLAMA_DEFAULT_NUM_CTX: Final = 8192
OLLAMA_DEFAULT_KEEP_ALIVE: Final = -1
# Where Home Assistant's Ollama agent keeps its instructions and its LLM APIs
# (homeassistant.const's CONF_PROMPT and CONF_LLM_HASS_API).
_PROMPT: Final = "prompt"
_LLM_APIS: Final = "llm_hass_api"
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


@dataclass(frozen=True, slots=True)
class SubentryView:
    """A config subentry as stored: its id, type, title and data."""

    subentry_id: str
    subentry_type: str
    title: str
    data: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class EntryView:
    """A config entry in use as stored: its integration, id, title, data and options."""

    domain: str
    entry_id: str
    title: str
    data: Mapping[str, object]
    options: Mapping[str, object]
    subentries: tuple[SubentryView, ...] = ()


def whole(value: object, default: int) -> int:
    """Return a setting as a whole number (the UI stores numbers as floats), else ``default``.

    A bool is no number here, and neither is a float that is not whole (NaN and the
    infinities included: ``int()`` of them raises).
    """
    if isinstance(value, bool):
        return default
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return int(value)
    return default


def apis(value: object) -> tuple[str, ...]:
    """Return the LLM APIs an agent may use: one id, or the ids of a list (others dropped)."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def first(values: Mapping[str, object], keys: tuple[str, ...]) -> str | None:
    """Return the first of ``keys`` whose value is a non-empty text."""
    for key in keys:
        if isinstance(value := values.get(key), str) and value:
            return value
    return None


def same_server(url: object, unique_id: str | None, port: int) -> bool:
    """Return True when ``url`` (an OpenAI-compatible base URL) is the server's."""
    if not isinstance(url, str) or not url.strip():
        return False
    text = url.strip().rstrip("/").removesuffix("/v1")
    try:
        return unique_id_for(normalize_url(text, port)) == unique_id
    except ValueError:
        return False


def ollama_agent(subentry: SubentryView) -> Agent | None:
    """Return the agent an Ollama conversation subentry is (None: it names no model).

    A setting that cannot be read gets the integration's default for it.
    """
    data = subentry.data
    model = data.get("model")
    if subentry.subentry_type != AGENT_SUBENTRY or not isinstance(model, str) or not model:
        return None
    return Agent(
        name=subentry.title,
        model=model,
        num_ctx=whole(data.get("num_ctx"), OLLAMA_DEFAULT_NUM_CTX),
        keep_alive=whole(data.get("keep_alive"), OLLAMA_DEFAULT_KEEP_ALIVE),
        prompt=prompt if isinstance(prompt := data.get(_PROMPT), str) else None,
        llm_apis=apis(data.get(_LLM_APIS)),
        think=think if isinstance(think := data.get("think"), bool) else None,
        subentry_id=subentry.subentry_id,
    )


def ollama_agents(entries: Iterable[EntryView], unique_id: str | None) -> tuple[Agent, ...]:
    """Return the agents of Home Assistant's Ollama entries at the server ``unique_id``.

    Subentries in a fixed order (by id); an entry whose URL cannot be read has none here.
    """
    agents: list[Agent] = []
    for ollama in entries:
        url = ollama.data.get("url")
        try:
            same = (
                isinstance(url, str) and unique_id_for(normalize_url(url, OLLAMA_PORT)) == unique_id
            )
        except ValueError:
            continue
        if not same:
            continue
        for subentry in sorted(ollama.subentries, key=lambda s: s.subentry_id):
            if (agent := ollama_agent(subentry)) is not None:
                agents.append(agent)
    return tuple(agents)


def openai_compatible_agents(
    entries: Iterable[EntryView], unique_id: str | None, port: int, own_domain: str
) -> tuple[OpenAICompatibleAgent, ...]:
    """Return the OpenAI-compatible agents at the server.

    An entry of any other integration (not ``own_domain``, not Ollama) whose data or
    options give a base URL of this server and a model (``chat_model`` or ``model``), or
    whose conversation subentries give one.
    """
    found: list[OpenAICompatibleAgent] = []
    for other in entries:
        if other.domain in (own_domain, OLLAMA_DOMAIN):
            continue
        settings = {**other.data, **other.options}
        if not same_server(first(settings, _URL_KEYS), unique_id, port):
            continue
        if model := first(settings, _MODEL_KEYS):
            found.append(OpenAICompatibleAgent(other.title, model, other.domain, other.entry_id))
        for subentry in sorted(other.subentries, key=lambda s: s.subentry_id):
            if subentry.subentry_type == AGENT_SUBENTRY and (
                model := first(subentry.data, _MODEL_KEYS)
            ):
                found.append(
                    OpenAICompatibleAgent(
                        subentry.title, model, other.domain, other.entry_id, subentry.subentry_id
                    )
                )
    return tuple(found)


def agent_of_entity(
    ollama: Iterable[Agent],
    openai_compatible: Iterable[OpenAICompatibleAgent],
    entry_id: str | None,
    subentry_id: str | None,
) -> tuple[str, Agent | None] | None:
    """Return the model of the agent whose entity belongs to (entry, subentry).

    With Home Assistant's Ollama agent itself (its request shape is known); None as the
    agent for an OpenAI-compatible agent (its subentry's first, then the entry's own). None
    when the entity is no agent at this server.
    """
    for agent in ollama:
        if subentry_id is not None and agent.subentry_id == subentry_id:
            return agent.model, agent
    others = tuple(openai_compatible)
    for wanted in (subentry_id, None):
        for other in others:
            if other.entry_id == entry_id and other.subentry_id == wanted:
                return other.model, None
    return None


def agent_using(agents: Iterable[Agent], model: str, resolve: Callable[[str], str]) -> Agent | None:
    """Return the first agent whose model (as the server names it: ``resolve``) is ``model``."""
    return next((a for a in agents if resolve(a.model) == model), None)


def agents_of_model(
    ollama: Iterable[Agent],
    openai_compatible: Iterable[OpenAICompatibleAgent],
    model: str,
    resolve: Callable[[str], str],
) -> list[AgentOfModel]:
    """Return every recognised agent that uses ``model`` (``resolve``: the server's name)."""
    agents = [AgentOfModel(a.name, OLLAMA_DOMAIN) for a in ollama if resolve(a.model) == model]
    agents += [
        AgentOfModel(a.name, a.integration) for a in openai_compatible if resolve(a.model) == model
    ]
    return agents
