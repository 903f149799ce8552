"""What auto-warm does next, and which requests a server shows are the household's (pure).

``usage.py`` reads Home Assistant and the server (the poll's snapshot, the agents and
their turns, the household guard) and hands what it read here, with the clock. Back come
what to send (a warm-up ahead of an expected stretch, a keep of a resident model, the
context it is sent with), which uses a poll or llama-swap's activity shows (never our own
requests, nor a turn of Home Assistant's agent heard already), and which cold starts were
the household's. What is planned is ``warm_plan.py``'s; what is sent, ``warm_hold.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from .agent_turn import AgentTurnLog
from .backends.types import ResidentModel, ServedRequest
from .monitor import LoadObserved, MonitorChange
from .usage import expiry_shows_a_use
from .warm_hold import Hold, HoldAction, decide, expiry_with_agent, still_asked
from .warm_plan import Plan


class RequestLog(Protocol):
    """When the integration's own requests to each model ran."""

    def during(self, model: str, begin: datetime, end: datetime) -> bool:
        """Return True when a request of ours to ``model`` ran at some time in [begin, end]."""
        ...


def household_request(
    model: str, begin: datetime, end: datetime, *, ours: RequestLog, agents: AgentTurnLog
) -> bool:
    """Return True when a request the server shows in [begin, end] is a use to record.

    Not one of ours (``ours``), and not a turn of Home Assistant's agent: that one was
    heard from its entity already (``agents``).
    """
    return not ours.during(model, begin, end) and not agents.heard(model, begin, end)


def expiry_uses(
    previous: Mapping[str, datetime | None],
    expiries: Mapping[str, datetime | None],
    begin: datetime,
    end: datetime,
    *,
    ours: RequestLog,
    agents: AgentTurnLog,
) -> tuple[str, ...]:
    """Return the models the household used between the polls at ``begin`` and ``end``.

    ``previous``, ``expiries``: each held model's expiry at those polls (Ollama). One
    whose expiry moved on by a request, or loaded since the last poll, was used by someone:
    by the household unless the request was ours or its agent's, heard already.
    """
    return tuple(
        model
        for model, expires in expiries.items()
        if expiry_shows_a_use(previous, model, expires)
        and household_request(model, begin, end, ours=ours, agents=agents)
    )


@dataclass(slots=True)
class ExpiryWatch:
    """What the last poll saw: each held model's expiry, and when (Ollama's moving expiry)."""

    polled_at: datetime | None = None
    expiries: dict[str, datetime | None] = field(default_factory=dict)

    def baseline(self, now: datetime, held: Mapping[str, ResidentModel]) -> None:
        """Take the poll at ``now`` (the setup's) as the one the next is compared with."""
        self.polled_at = now
        self.expiries = {name: m.expires_at for name, m in held.items()}

    def polled(
        self,
        now: datetime,
        held: Mapping[str, ResidentModel],
        *,
        reports_expiry: bool,
        ours: RequestLog,
        agents: AgentTurnLog,
    ) -> tuple[str, ...]:
        """Take the poll at ``now``; return the models the household used since the last.

        None before a baseline, nor from a server that tells no expiry.
        """
        before, previous = self.polled_at, self.expiries
        self.baseline(now, held)
        if before is None or not reports_expiry:
            return ()
        return expiry_uses(previous, self.expiries, before, now, ours=ours, agents=agents)


def activity_uses(
    served: Iterable[ServedRequest], *, ours: RequestLog, agents: AgentTurnLog
) -> tuple[ServedRequest, ...]:
    """Return the requests llama-swap served that are the household's (not ours)."""
    return tuple(
        request
        for request in served
        if household_request(
            request.model, request.started_at, request.ended_at, ours=ours, agents=agents
        )
    )


def household_cold_starts(changes: Iterable[MonitorChange]) -> tuple[str, ...]:
    """Return the models of the cold starts a household request had, in order.

    A cold start of a probe of ours (``ColdStartObserved`` is always one) is not theirs,
    nor a load nobody waited for (one we asked for).
    """
    return tuple(
        change.model
        for change in changes
        if isinstance(change, LoadObserved) and not change.probe and change.waited
    )


def held_bytes(resident: ResidentModel | None) -> int:
    """Return the GPU memory a resident model holds (bytes; 0 where not told or not held)."""
    return (resident.size_vram or resident.size or 0) if resident else 0


def uses_seen_within(
    *, reports_requests: bool, reports_expiry: bool, interval: timedelta
) -> int | None:
    """Return how late, at most, the server shows another client's use (seconds).

    Ollama's moving expiry (``reports_expiry``) and llama-swap's activity
    (``reports_requests``) are read at each poll of ``interval``; llama-server shows none
    (None). Home Assistant's own agents' turns are seen at once.
    """
    if reports_requests or reports_expiry:
        return round(interval.total_seconds())
    return None


@dataclass(frozen=True, slots=True)
class WarmUp:
    """A warm-up to send: ahead of the expected stretch from ``start``, held as ``hold``."""

    start: datetime
    hold: Hold

    def keep_seconds(self, now: datetime, *, requests_set_keep: bool) -> int | None:
        """Return the keep its load asks for at ``now`` (None: the server keeps by its own)."""
        return self.hold.keep_seconds(now) if requests_set_keep else None


def warm_up(
    plan: Plan | None,
    now: datetime,
    *,
    lead: timedelta,
    warmed_for: datetime | None,
    held: bool,
    loading: bool,
) -> WarmUp | None:
    """Return the warm-up auto-warm sends now, or None: once per expected stretch.

    Due from ``lead`` (the model's cold load plus a margin) before the stretch until what
    the stretch holds it to (its end; a long one's first hour while no use came), while no
    use came in it yet. None for a model ``held`` already (kept by ``keep_order``) or
    ``loading`` (another client's load runs).
    """
    decision = decide(
        plan,
        now,
        lead=lead,
        warmed_for=warmed_for,
        held=held,
        loading=loading,
        expires_at=None,
        asked_until=None,
    )
    if plan is None or plan.window_start is None or decision is None:
        return None
    return WarmUp(plan.window_start, decision)


@dataclass(frozen=True, slots=True)
class AgentKeep:
    """What a model's Home Assistant agent asks of it.

    ``keep_seconds``: its keep (negative: for ever; None: no such agent); ``heard``: its
    last turn with the model; ``num_ctx``: the context it loads the model with.
    """

    keep_seconds: float | None = None
    heard: datetime | None = None
    num_ctx: int | None = None


@dataclass(frozen=True, slots=True)
class AskedKeep:
    """Our last keep of a model: the expiry it asked for, and when the server answered it."""

    until: datetime | None = None
    answered_at: datetime | None = None


@dataclass(slots=True)
class KeepLedger:
    """Our last keep of each model: the expiry it asked for, and when the server answered."""

    _asked_until: dict[str, datetime] = field(default_factory=dict)
    _answered_at: dict[str, datetime] = field(default_factory=dict)

    def asked(self, model: str) -> AskedKeep:
        """Return our last keep of ``model``."""
        return AskedKeep(self._asked_until.get(model), self._answered_at.get(model))

    def sent(self, model: str, expiry: datetime) -> None:
        """Note a keep of ``model`` sent, asking the server to keep it until ``expiry``."""
        self._asked_until[model] = expiry

    def answered(self, model: str, at: datetime) -> None:
        """Note that the server answered our keep of ``model`` ``at`` (the polls' clock)."""
        self._answered_at[model] = at

    def failed(self, model: str) -> None:
        """Forget the keep of ``model`` that failed: it asked for nothing."""
        self._asked_until.pop(model, None)


@dataclass(frozen=True, slots=True)
class KeepOrder:
    """A keep to send: ``hold`` with the context ``num_ctx`` (None: not known, not sent)."""

    hold: Hold
    num_ctx: int | None


def keep_order(
    plan: Plan | None,
    now: datetime,
    *,
    lead: timedelta,
    warmed_for: datetime | None,
    resident: ResidentModel | None,
    loading: bool,
    agent: AgentKeep,
    asked: AskedKeep,
    polled_at: datetime | None,
) -> KeepOrder | None:
    """Return the keep of a ``resident`` model to send now, or None.

    Kept until the planner's time where its server would let it go earlier: after a use,
    through its sessions' gaps (the session keep); through an expected stretch. A keep of
    ours must not cut one of its agent's turns short: the agent's keep counts, and one for
    ever needs none of ours. Our last keep, overwritten by a later request of another
    client (the last writer wins), holds nothing: it is asked for again. Sent with the
    context the agent asks for (its turns loaded it), else the one the server runs it with
    (another ``num_ctx`` would load it again; None: Ollama 0.9 tells none).
    """
    if plan is None or resident is None:
        return None
    forever, expires = expiry_with_agent(
        resident.expires_at, agent_keep_seconds=agent.keep_seconds, agent_heard=agent.heard
    )
    if forever:
        return None  # its agent keeps it for ever
    decision = decide(
        plan,
        now,
        lead=lead,
        warmed_for=warmed_for,
        held=True,
        loading=loading,
        expires_at=expires,
        asked_until=still_asked(asked.until, asked.answered_at, polled_at, resident.expires_at),
    )
    if decision is None or decision.action is not HoldAction.KEEP:
        return None
    return KeepOrder(decision, agent.num_ctx or resident.context_length)
