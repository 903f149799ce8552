"""The warm assistant: a conversation agent that answers from what is warm.

Each turn goes to one of Home Assistant's conversation agents (a primary and ordered
fall-backs, set in the assistant's subentry), chosen by ``core.assistant_route`` from the
warmth of each agent's model on the servers LLM Warmth follows. The turn is handed on
through Home Assistant's public ``conversation.async_converse`` with the delegate's agent
id and the turn's own conversation id: each delegate keeps its own prompt, tools and
exposed entities, and reads the one chat log of the conversation (so a switch of delegate
mid-conversation keeps the history; inside an Assist pipeline the delegate streams into the
pipeline's chat log). When a fall-back answers because the primary is cold, the primary is
loaded at once (through the household guard of its server) for the next turns.

Every turn fires ``llm_warmth_assistant_route`` and is kept as the assistant's last route.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er, issue_registry as ir
from homeassistant.helpers.chat_session import async_get_chat_session
from homeassistant.util import dt as dt_util
from homeassistant.util.limited_size_dict import LimitedSizeDict

from .const import (
    CONF_ASSISTANT_FALLBACKS,
    CONF_ASSISTANT_PRIMARY,
    CONF_ASSISTANT_WAIT,
    DOMAIN,
    EVENT_ASSISTANT_ROUTE,
    LOGGER,
    SUBENTRY_WARM_ASSISTANT,
)
from .core.agent_options import Agent
from .core.assistant_route import (
    MAX_WAIT_SECONDS,
    AgentState,
    Readiness,
    Route,
    RouteRecord,
    Setting,
    SettingRefused,
    agent_state,
    check_settings,
    route_turn,
    switched_from,
)
from .core.backends.base import GENERATION_TIMEOUT
from .core.backends.errors import LlmServerError
from .core.voice import WAKE_KEEP
from .core.warmth import model_warmth
from .data import LlmWarmthConfigEntry
from .household_entry import server_entries

# MAX_WAIT_SECONDS: the longest wait the assistant's flow offers (assistant_flow.py).
__all__ = [
    "MAX_WAIT_SECONDS",
    "AssistantSettings",
    "Served",
    "WarmAssistant",
    "assistant_primary",
    "readiness",
    "served_by",
]

# Conversations whose last delegate is remembered (the oldest forgotten first).
REMEMBERED_CONVERSATIONS: Final = 100


# The key of each setting in the assistant's subentry.
_FIELDS: Final = {
    Setting.PRIMARY: CONF_ASSISTANT_PRIMARY,
    Setting.FALLBACKS: CONF_ASSISTANT_FALLBACKS,
    Setting.WAIT: CONF_ASSISTANT_WAIT,
}


@dataclass(frozen=True, slots=True)
class AssistantSettings:
    """A warm assistant's settings, as its subentry holds them."""

    primary: str
    fallbacks: tuple[str, ...]
    wait_s: float

    @classmethod
    def from_data(cls, data: Mapping[str, object]) -> AssistantSettings:
        """Read the settings; raise ValueError(field, error key) on one that cannot work."""
        try:
            primary, fallbacks, wait = check_settings(
                data.get(CONF_ASSISTANT_PRIMARY),
                data.get(CONF_ASSISTANT_FALLBACKS, []),
                data.get(CONF_ASSISTANT_WAIT),
            )
        except SettingRefused as err:
            raise ValueError(_FIELDS[err.setting], err.key) from None
        return cls(primary, fallbacks, wait)


@dataclass(frozen=True, slots=True)
class Served:
    """Where an agent's model is served: the entry of its server, the model, the agent."""

    entry: LlmWarmthConfigEntry
    model: str
    agent: Agent | None


@callback
def assistant_primary(hass: HomeAssistant, entity: er.RegistryEntry) -> str | None:
    """Return the primary agent of the warm assistant ``entity`` (None: it is none)."""
    if entity.platform != DOMAIN or entity.domain != "conversation":
        return None
    entry = hass.config_entries.async_get_entry(entity.config_entry_id or "")
    subentry = entry.subentries.get(entity.config_subentry_id or "") if entry else None
    if subentry is None or subentry.subentry_type != SUBENTRY_WARM_ASSISTANT:
        return None
    try:
        return AssistantSettings.from_data(subentry.data).primary
    except ValueError:
        return None


@callback
def served_by(hass: HomeAssistant, agent_id: str) -> Served | None:
    """Return where the model of the conversation agent ``agent_id`` is served, if followed."""
    registered = er.async_get(hass).async_get(agent_id)
    if registered is None or registered.config_entry_id is None:
        return None
    for entry in server_entries(hass):
        runtime = entry.runtime_data
        found = runtime.agents.agent_of_entity(
            registered.config_entry_id, registered.config_subentry_id
        )
        if found is not None:
            model, agent = found
            return Served(entry, runtime.coordinator.resolve_model(model), agent)
    return None


@callback
def readiness(hass: HomeAssistant, agent_id: str) -> tuple[AgentState, Served | None]:
    """Return how ready an agent is now, and where its model is served."""
    served = served_by(hass, agent_id)
    if served is None:
        return agent_state(agent_id, None, reachable=True, load_s=None, loading_for_s=None), None
    coordinator = served.entry.runtime_data.coordinator
    snapshot = coordinator.data
    timing = snapshot.timings.get(served.model)
    since = snapshot.loading_since.get(served.model)
    state = agent_state(
        agent_id,
        model_warmth(snapshot, served.model),
        reachable=coordinator.last_update_success,
        load_s=timing.load_seconds if timing else None,
        loading_for_s=(dt_util.utcnow() - since).total_seconds() if since else None,
    )
    return state, served


class WarmAssistant:
    """Routes the turns of one warm assistant (one subentry of an LLM Warmth entry)."""

    def __init__(self, hass: HomeAssistant, subentry: ConfigSubentry) -> None:
        """Route for ``subentry``; its settings were checked by its flow."""
        self.hass = hass
        self.name = subentry.title
        self.issue_id = f"assistant_primary_down_{subentry.subentry_id}"
        self.settings = AssistantSettings.from_data(subentry.data)
        self.last: RouteRecord | None = None
        self._delegates: LimitedSizeDict[str, str] = LimitedSizeDict(
            size_limit=REMEMBERED_CONVERSATIONS
        )
        self._listeners: list[CALLBACK_TYPE] = []
        # Whether the primary's server was down at the last turn (said once, until it is up).
        self._primary_down = False

    @callback
    def async_add_listener(self, listener: CALLBACK_TYPE) -> CALLBACK_TYPE:
        """Call ``listener`` after each turn's route; return what stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    @callback
    def decide(self) -> tuple[Route, AgentState, dict[str, Served | None]]:
        """Return where a turn goes now, the primary's state, and where each model is."""
        settings = self.settings
        primary, primary_served = readiness(self.hass, settings.primary)
        served: dict[str, Served | None] = {settings.primary: primary_served}
        fallbacks = []
        for agent_id in settings.fallbacks:
            state, served[agent_id] = readiness(self.hass, agent_id)
            fallbacks.append(state)
        return route_turn(primary, fallbacks, settings.wait_s), primary, served

    async def async_converse(
        self, user_input: conversation.ConversationInput, assistant_id: str
    ) -> conversation.ConversationResult:
        """Answer one turn through the agent the route picks."""
        with async_get_chat_session(self.hass, user_input.conversation_id) as session:
            conversation_id = session.conversation_id
            route, primary, served = self.decide()
            primary_served = served[self.settings.primary]
            self._say_primary_down(primary, primary_served)
            warming = bool(route.warm_primary and primary_served and self._warm(primary_served))
            previous = self._delegates.get(conversation_id)
            self._delegates[conversation_id] = route.agent_id
            where = served.get(route.agent_id)
            record = RouteRecord(
                at=dt_util.utcnow(),
                route=route,
                primary=primary,
                agent_server=where.entry.title if where else None,
                agent_model=where.model if where else None,
                switched_from=switched_from(previous, route.agent_id),
                warming=warming,
            )
            if record.switched_from:
                LOGGER.debug(
                    "%s: conversation %s goes on with %s (was %s): %s",
                    self.name,
                    conversation_id,
                    route.agent_id,
                    record.switched_from,
                    route.reason,
                )
            try:
                result = await conversation.async_converse(
                    self.hass,
                    user_input.text,
                    conversation_id,
                    user_input.context,
                    user_input.language,
                    agent_id=route.agent_id,
                    device_id=user_input.device_id,
                    satellite_id=user_input.satellite_id,
                    extra_system_prompt=user_input.extra_system_prompt,
                )
            except ValueError:  # the agent is gone (its integration was removed)
                record = replace(record, failed=True)
                self._publish(record, assistant_id, conversation_id)
                raise HomeAssistantError(
                    translation_domain=DOMAIN,
                    translation_key="assistant_agent_missing",
                    translation_placeholders={"agent": route.agent_id},
                ) from None
            failed = result.response.error_code is not None
            self._publish(replace(record, failed=failed), assistant_id, conversation_id)
            return result

    @callback
    def _say_primary_down(self, primary: AgentState, served: Served | None) -> None:
        """Say once, with a log line and a repair, that the primary's server is down.

        Both are cleared at the first turn that finds the server up again.
        """
        down = primary.readiness is Readiness.DOWN
        if down == self._primary_down:
            return
        self._primary_down = down
        server = served.entry.title if served else ""
        if not down:
            LOGGER.info("%s: %s's server %s answers again", self.name, primary.agent_id, server)
            ir.async_delete_issue(self.hass, DOMAIN, self.issue_id)
            return
        LOGGER.warning(
            "%s: the server of its primary agent %s (%s) is down; the fall-backs answer",
            self.name,
            primary.agent_id,
            server,
        )
        ir.async_create_issue(
            self.hass,
            DOMAIN,
            self.issue_id,
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key="assistant_primary_down",
            translation_placeholders={
                "assistant": self.name,
                "agent": primary.agent_id,
                "server": server,
            },
        )

    @callback
    def async_stop(self) -> None:
        """Forget the outage it said (the entity goes)."""
        self._primary_down = False
        ir.async_delete_issue(self.hass, DOMAIN, self.issue_id)

    @callback
    def _publish(self, record: RouteRecord, assistant_id: str, conversation_id: str) -> None:
        self.last = record
        self.hass.bus.async_fire(
            EVENT_ASSISTANT_ROUTE,
            {"assistant": assistant_id, "conversation_id": conversation_id, **record.as_dict()},
        )
        for listener in list(self._listeners):
            listener()

    @callback
    def _warm(self, served: Served) -> bool:
        """Load the primary's model for the next turns, unless its server's guard refuses."""
        runtime = served.entry.runtime_data
        try:
            runtime.household.check(served.model, force=False)
        except HomeAssistantError as err:
            LOGGER.debug("%s: not warming %s: %s", self.name, served.model, err)
            return False
        agent = served.agent
        keeps = runtime.client.capabilities.requests_set_keep_and_context

        async def warm() -> None:
            try:
                await runtime.controller.preload(
                    served.model,
                    # The agent's own keep (it sends it again with its turn); a keep of 0
                    # would unload at once, so the model is held until the next turn.
                    keep_seconds=float(agent.keep_alive or WAKE_KEEP) if agent and keeps else None,
                    num_ctx=agent.num_ctx if agent and keeps else None,
                    timeout=GENERATION_TIMEOUT,
                )
            except (LlmServerError, HomeAssistantError) as err:
                LOGGER.debug("%s: warming %s failed: %s", self.name, served.model, err)

        # The serving entry's task: it ends with that entry.
        served.entry.async_create_background_task(
            self.hass, warm(), f"llm_warmth warm assistant {served.model}"
        )
        return True
