"""Which conversation agent answers a turn of the warm assistant, and why (pure).

The warm assistant has a primary agent, ordered fall-backs and the longest wait the user
accepts. Each agent's model is read where LLM Warmth follows its server: warm, loading,
cold, or its server down; or not followed at all (a model on a server LLM Warmth does not
watch, or an agent with no model, such as Home Assistant's own). A cold or loading model's
wait is what its last exact load took (a polled lower bound never stands in for it).

The rule, in order:
1. the primary, when its model is warm, or will be ready within the accepted wait;
2. else the first fall-back whose model is warm (or not followed: nothing known to load),
   then the first that will be ready within the wait; the primary is warmed for the next
   turns, unless its server is down;
3. else the primary, which loads while the household waits (no fall-back is any better);
   when the primary's server is down, the first fall-back whose server is up, cold or not.

A turn always ends in words: when the agent asked fails (it raised, answered with an error,
is gone, or said nothing by ``words_due_in``), the next agent ready within the wait is asked
(``retry_order``), and when none answers, a sentence says which servers could not be
reached (``unanswered``).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from .json_value import JsonValue
from .sentence import Sentence
from .warmth import Warmth

# The longest wait a user may accept, in seconds (a minute of silence is no answer).
MAX_WAIT_SECONDS: Final = 60.0
# How long an agent asked may say nothing (no word, no tool call) once its model is ready
# by its last load: a warm model's first token on a long prompt comes within seconds; a
# server that took the request and says nothing would hold the turn for its client's
# timeout (minutes), and the person in silence.
FIRST_WORDS_SECONDS: Final = 30.0


class Readiness(StrEnum):
    """How ready an agent's model is, as LLM Warmth sees its server."""

    WARM = "warm"
    LOADING = "loading"
    COLD = "cold"
    # Its server is unreachable: the agent would fail, or wait for a timeout.
    DOWN = "down"
    # Its model is on no server LLM Warmth follows (or it has no model).
    NOT_FOLLOWED = "not_followed"


class RouteReason(StrEnum):
    """Why a turn went where it went."""

    PRIMARY_WARM = "primary_warm"
    PRIMARY_WITHIN_WAIT = "primary_within_wait"
    PRIMARY_NOT_FOLLOWED = "primary_not_followed"
    FALLBACK_PRIMARY_COLD = "fallback_primary_cold"
    FALLBACK_PRIMARY_DOWN = "fallback_primary_down"
    PRIMARY_NO_READY_FALLBACK = "primary_no_ready_fallback"
    NOTHING_REACHABLE = "nothing_reachable"
    # The agent asked first failed; another answered (or none did).
    AFTER_A_FAILURE = "after_a_failure"


class TurnFailure(StrEnum):
    """How a delegate failed a turn."""

    GONE = "gone"  # no such agent any more (its integration was removed or unloaded)
    RAISED = "raised"  # it raised (its server unreachable, a reply it could not read)
    ERROR = "error"  # it could not work ("Unable to get response")
    SILENT = "silent"  # it said nothing by ``words_due_in`` (its server took it and hung)


@dataclass(frozen=True, slots=True)
class Failed:
    """One delegate that failed a turn: the agent, where it is served, how it failed.

    ``server``: the title of the entry that serves its model (None: not followed).
    """

    agent_id: str
    server: str | None
    failure: TurnFailure


@dataclass(frozen=True, slots=True)
class AgentState:
    """One agent as the router sees it.

    ``ready_in_s``: for a cold or loading model, how long until it answers by its last
    exact load (what is left of it, for one loading now); None where no load was measured.
    """

    agent_id: str
    readiness: Readiness
    ready_in_s: float | None = None

    def ready_within(self, wait_s: float) -> bool:
        """Return True when the model is known to be ready within ``wait_s`` seconds."""
        if self.readiness in (Readiness.WARM, Readiness.NOT_FOLLOWED):
            return True
        if self.readiness is Readiness.DOWN or self.ready_in_s is None:
            return False
        return self.ready_in_s <= wait_s


@dataclass(frozen=True, slots=True)
class Route:
    """Where one turn goes: the agent, why, and whether to warm the primary now."""

    agent_id: str
    reason: RouteReason
    warm_primary: bool

    @property
    def fell_back(self) -> bool:
        """Return True when a fall-back answers instead of the primary."""
        return self.reason in (RouteReason.FALLBACK_PRIMARY_COLD, RouteReason.FALLBACK_PRIMARY_DOWN)


def ready_in(load_s: float | None, loading_for_s: float | None) -> float | None:
    """Return how long a model needs until it answers, by its last exact load.

    ``loading_for_s``: how long it has been loading (None: it is not loading). A load that
    already took longer than the last one is taken as about to end (0).
    """
    if load_s is None:
        return None
    if loading_for_s is None:
        return load_s
    return max(0.0, load_s - loading_for_s)


def _primary_answers(primary: AgentState, wait_s: float) -> RouteReason | None:
    """Return why the primary answers at once, or None when it cannot in time."""
    if primary.readiness is Readiness.WARM:
        return RouteReason.PRIMARY_WARM
    if primary.readiness is Readiness.NOT_FOLLOWED:
        return RouteReason.PRIMARY_NOT_FOLLOWED
    if primary.ready_within(wait_s):
        return RouteReason.PRIMARY_WITHIN_WAIT
    return None


def route_turn(primary: AgentState, fallbacks: Sequence[AgentState], wait_s: float) -> Route:
    """Return where a turn goes (see the module's rule)."""
    if (answers := _primary_answers(primary, wait_s)) is not None:
        return Route(primary.agent_id, answers, warm_primary=False)
    down = primary.readiness is Readiness.DOWN
    reason = RouteReason.FALLBACK_PRIMARY_DOWN if down else RouteReason.FALLBACK_PRIMARY_COLD
    others = [f for f in fallbacks if f.agent_id != primary.agent_id]
    for ready in (
        lambda f: f.readiness in (Readiness.WARM, Readiness.NOT_FOLLOWED),
        lambda f: f.ready_within(wait_s),
        # The primary's server is down: any fall-back whose server is up, cold or not.
        lambda f: down and f.readiness is not Readiness.DOWN,
    ):
        if chosen := next((f for f in others if ready(f)), None):
            return Route(chosen.agent_id, reason, warm_primary=not down)
    if down:
        return Route(primary.agent_id, RouteReason.NOTHING_REACHABLE, warm_primary=False)
    return Route(primary.agent_id, RouteReason.PRIMARY_NO_READY_FALLBACK, warm_primary=False)


def retry_order(
    route: Route, primary: AgentState, fallbacks: Sequence[AgentState], wait_s: float
) -> tuple[str, ...]:
    """Return the agents to ask in turn: the route's, then each other one ready in time.

    After the route's agent fails, the fall-backs in their order and then the primary are
    asked, each only when its model is known to be ready within ``wait_s`` (a failure is
    no reason to wait for a cold model's load); each agent once.
    """
    order = [route.agent_id]
    for state in (*fallbacks, primary):
        if state.agent_id not in order and state.ready_within(wait_s):
            order.append(state.agent_id)
    return tuple(order)


def words_due_in(state: AgentState | None) -> float | None:
    """Return how long an agent asked may take to say its first words (None: no bound).

    The time its model needs by its last exact load, then ``FIRST_WORDS_SECONDS``; an agent
    LLM Warmth does not follow (or does not know) has nothing to load. A cold model whose
    load was never measured has no bound: its load may be that long.
    """
    if state is None or state.readiness in (Readiness.WARM, Readiness.NOT_FOLLOWED):
        return FIRST_WORDS_SECONDS
    if state.ready_in_s is None:
        return None
    return state.ready_in_s + FIRST_WORDS_SECONDS


def unanswered(failed: Sequence[Failed]) -> tuple[Sentence, ...]:
    """Return what the assistant says when no agent answered: which could not be reached.

    The servers (or agents, where LLM Warmth follows none) that failed, in the order asked,
    each once; an agent that is gone is said apart, with what to do.
    """
    gone = [f.agent_id for f in failed if f.failure is TurnFailure.GONE]
    servers = list(
        dict.fromkeys(f.server or f.agent_id for f in failed if f.failure is not TurnFailure.GONE)
    )
    said = []
    if servers or not gone:
        said.append(Sentence("assistant_unanswered", {"servers": ", ".join(servers)}))
    said.extend(Sentence("assistant_agent_gone", {"agent": agent}) for agent in gone)
    return tuple(said)


def agent_state(
    agent_id: str,
    warmth: Warmth | None,
    *,
    reachable: bool,
    load_s: float | None,
    loading_for_s: float | None,
) -> AgentState:
    """Return how ready an agent is from its model's warmth on its server.

    ``warmth``: None when the agent's model is on no server LLM Warmth follows.
    ``reachable``: whether the server's last poll succeeded. ``load_s``: the model's last
    exact load; ``loading_for_s``: how long the model has been loading (None: unknown).
    """
    if warmth is None:
        return AgentState(agent_id, Readiness.NOT_FOLLOWED)
    if not reachable:
        return AgentState(agent_id, Readiness.DOWN)
    if warmth in (Warmth.WARM, Warmth.KEPT_WARM):
        return AgentState(agent_id, Readiness.WARM)
    if warmth is Warmth.LOADING:
        return AgentState(agent_id, Readiness.LOADING, ready_in(load_s, loading_for_s or 0.0))
    # Cold, or on its way out: a whole load is ahead.
    return AgentState(agent_id, Readiness.COLD, ready_in(load_s, None))


class Setting(StrEnum):
    """One of a warm assistant's settings (its subentry names each with a key of its own)."""

    PRIMARY = "primary"
    FALLBACKS = "fallbacks"
    WAIT = "wait"


class SettingRefused(ValueError):
    """A setting that cannot work: which one, and the error key to show."""

    def __init__(self, setting: Setting, key: str) -> None:
        """Say which setting is refused, with what error key."""
        super().__init__(setting, key)
        self.setting = setting
        self.key = key


def check_settings(
    primary: object, fallbacks: object, wait: object
) -> tuple[str, tuple[str, ...], float]:
    """Return a warm assistant's primary, fall-backs and wait, as stored, checked.

    Each agent must be a conversation entity, none twice; the wait within 0 to
    ``MAX_WAIT_SECONDS`` seconds. Raise ``SettingRefused`` naming the first that cannot work.
    """
    if not isinstance(primary, str) or not primary.startswith("conversation."):
        raise SettingRefused(Setting.PRIMARY, "assistant_not_agent")
    if not isinstance(fallbacks, list | tuple) or not all(
        isinstance(f, str) and f.startswith("conversation.") for f in fallbacks
    ):
        raise SettingRefused(Setting.FALLBACKS, "assistant_not_agent")
    if primary in fallbacks or len(set(fallbacks)) != len(fallbacks):
        raise SettingRefused(Setting.FALLBACKS, "assistant_agents_repeat")
    if (
        not isinstance(wait, int | float)
        or isinstance(wait, bool)
        or not 0 <= wait <= MAX_WAIT_SECONDS
    ):
        raise SettingRefused(Setting.WAIT, "assistant_wait_range")
    return primary, tuple(str(f) for f in fallbacks), float(wait)


def switched_from(previous: str | None, agent_id: str) -> str | None:
    """Return the delegate that answered the conversation before, when it was another."""
    return previous if previous not in (None, agent_id) else None


@dataclass(frozen=True, slots=True)
class RouteRecord:
    """One turn's route, as the entity and the event show it."""

    at: datetime
    route: Route
    primary: AgentState
    agent_server: str | None
    agent_model: str | None
    # The delegate that answered the conversation's turn before, when it was another.
    switched_from: str | None
    # Whether the primary's model is being loaded for the next turns (the route asked for
    # it and its server's household guard let it).
    warming: bool = False
    # Whether the turn's answer is an error: no delegate answered (the assistant's own
    # sentence), or the one that did could not do what was asked.
    failed: bool = False
    # The delegates that failed the turn before one answered (or before it gave up).
    failures: tuple[Failed, ...] = ()

    def as_dict(self) -> dict[str, JsonValue]:
        """Return the record as the event and the attributes carry it."""
        return {
            "agent": self.route.agent_id,
            "reason": self.route.reason.value,
            "primary": self.primary.agent_id,
            "primary_readiness": self.primary.readiness.value,
            "primary_ready_in": self.primary.ready_in_s,
            "warming_primary": self.warming,
            "agent_server": self.agent_server,
            "agent_model": self.agent_model,
            "switched_from": self.switched_from,
            "failed": self.failed,
            "failures": [
                {"agent": f.agent_id, "server": f.server, "failure": f.failure.value}
                for f in self.failures
            ],
        }
