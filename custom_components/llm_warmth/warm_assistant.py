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

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er, intent, issue_registry as ir
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
    Failed,
    Readiness,
    Route,
    RouteReason,
    RouteRecord,
    Setting,
    SettingRefused,
    TurnFailure,
    agent_state,
    check_settings,
    retry_order,
    route_turn,
    switched_from,
    unanswered,
    words_due_in,
)
from .core.backends.base import GENERATION_TIMEOUT
from .core.backends.errors import LlmServerError
from .core.voice import WAKE_KEEP
from .core.warmth import model_warmth
from .data import LlmWarmthConfigEntry
from .first_words import first_words
from .household_entry import server_entries
from .sentences import async_say_in

# MAX_WAIT_SECONDS: the longest wait the assistant's flow offers (assistant_flow.py).
__all__ = [
    "MAX_WAIT_SECONDS",
    "AssistantSettings",
    "Decision",
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


@dataclass(frozen=True, slots=True)
class Decision:
    """Where a turn goes, the agents' states, and where each agent's model is served."""

    route: Route
    primary: AgentState
    fallbacks: tuple[AgentState, ...]
    served: dict[str, Served | None]


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
        # On the snapshot's own clock (the coordinator's: its polls dated the load's start).
        loading_for_s=(coordinator.utcnow() - since).total_seconds() if since else None,
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
    def follow(self, subentry: ConfigSubentry) -> bool:
        """Take the settings of a reconfigured subentry; return True when they changed."""
        settings = AssistantSettings.from_data(subentry.data)
        if (settings, subentry.title) == (self.settings, self.name):
            return False
        self.settings, self.name = settings, subentry.title
        return True

    @callback
    def async_add_listener(self, listener: CALLBACK_TYPE) -> CALLBACK_TYPE:
        """Call ``listener`` after each turn's route; return what stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    @callback
    def decide(self) -> Decision:
        """Return where a turn goes now, each agent's state, and where each model is."""
        settings = self.settings
        primary, primary_served = readiness(self.hass, settings.primary)
        served: dict[str, Served | None] = {settings.primary: primary_served}
        fallbacks = []
        for agent_id in settings.fallbacks:
            state, served[agent_id] = readiness(self.hass, agent_id)
            fallbacks.append(state)
        route = route_turn(primary, fallbacks, settings.wait_s)
        return Decision(route, primary, tuple(fallbacks), served)

    async def async_converse(
        self, user_input: conversation.ConversationInput, assistant_id: str
    ) -> conversation.ConversationResult:
        """Answer one turn: the route's agent, then the next ready one while they fail.

        The turn always ends in words (an agent's answer, or the assistant's own sentence
        saying which servers could not be reached), and its route event always fires.
        """
        with async_get_chat_session(self.hass, user_input.conversation_id) as session:
            conversation_id = session.conversation_id
            decision = self.decide()
            route, primary = decision.route, decision.primary
            primary_served = decision.served[self.settings.primary]
            self._say_primary_down(primary, primary_served)
            warming = bool(route.warm_primary and primary_served and self._warm(primary_served))
            previous = self._delegates.get(conversation_id)
            failures: list[Failed] = []
            order = retry_order(route, primary, decision.fallbacks, self.settings.wait_s)
            states = {s.agent_id: s for s in (*decision.fallbacks, primary)}
            for agent_id in order:
                where = decision.served.get(agent_id)
                due_in = words_due_in(states.get(agent_id))
                result = await self._ask(agent_id, user_input, conversation_id, due_in)
                if isinstance(result, TurnFailure):
                    failures.append(Failed(agent_id, where.entry.title if where else None, result))
                    continue
                if failures:  # asked again: another agent answered
                    route = replace(route, agent_id=agent_id, reason=RouteReason.AFTER_A_FAILURE)
                break
            else:
                result = None
            answered = result is not None
            if answered:
                self._delegates[conversation_id] = route.agent_id
            where = decision.served.get(route.agent_id)
            record = RouteRecord(
                at=dt_util.utcnow(),
                route=route,
                primary=primary,
                agent_server=where.entry.title if where else None,
                agent_model=where.model if where else None,
                switched_from=switched_from(previous, route.agent_id) if answered else None,
                warming=warming,
                failed=result is None or result.response.error_code is not None,
                failures=tuple(failures),
            )
            self._publish(record, assistant_id, conversation_id)
            if result is None:
                return await self._unanswered(user_input, conversation_id, failures)
            return result

    async def _ask(
        self,
        agent_id: str,
        user_input: conversation.ConversationInput,
        conversation_id: str,
        due_in: float | None,
    ) -> conversation.ConversationResult | TurnFailure:
        """Hand the turn to ``agent_id``; return its answer, or how it failed.

        ``due_in``: how long it may take to say its first words (None: no bound); past it,
        the turn goes on to the next agent.
        """
        if conversation.async_get_agent_info(self.hass, agent_id) is None:
            LOGGER.warning("%s: its agent %s is gone", self.name, agent_id)
            return TurnFailure.GONE
        deadline = asyncio.timeout(due_in)
        try:
            async with deadline:
                with first_words(lambda: deadline.reschedule(None)):
                    result = await conversation.async_converse(
                        self.hass,
                        user_input.text,
                        conversation_id,
                        user_input.context,
                        user_input.language,
                        agent_id=agent_id,
                        device_id=user_input.device_id,
                        satellite_id=user_input.satellite_id,
                        extra_system_prompt=user_input.extra_system_prompt,
                    )
        except Exception as err:  # any delegate's failure: the turn goes on to the next
            if isinstance(err, TimeoutError) and deadline.expired():
                LOGGER.warning("%s: %s said nothing in %.0f s", self.name, agent_id, due_in)
                return TurnFailure.SILENT
            # Its type only: a client's error may carry its server's address and key.
            LOGGER.warning("%s: %s failed the turn (%s)", self.name, agent_id, type(err).__name__)
            return TurnFailure.RAISED
        # Home Assistant's code for an agent that could not work (it raised Home Assistant's
        # error: "Unable to get response"); another code is the agent's answer ("Sorry, I
        # couldn't understand that"), which another agent would not better.
        if result.response.error_code is intent.IntentResponseErrorCode.UNKNOWN:
            LOGGER.info("%s: %s could not answer", self.name, agent_id)
            return TurnFailure.ERROR
        return result

    async def _unanswered(
        self,
        user_input: conversation.ConversationInput,
        conversation_id: str,
        failures: list[Failed],
    ) -> conversation.ConversationResult:
        """Return the assistant's own answer when no agent answered, in the turn's language."""
        speech = await async_say_in(self.hass, user_input.language, *unanswered(failures))
        response = intent.IntentResponse(language=user_input.language)
        response.async_set_error(intent.IntentResponseErrorCode.UNKNOWN, speech)
        return conversation.ConversationResult(response=response, conversation_id=conversation_id)

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
