"""What auto-warm does with the planner's answer now (pure, the clock passed in).

The planner (``warm_plan.py``) says until when a model should be warm: through its
session after a use (the session keep) or through an expected stretch. ``hold`` turns that
into what to send: load a model that is cold ahead of a stretch, keep a resident model
whose server would let it go before then, or nothing (the server's own keep goes on, and
once the planner's time ends the model is let go by it). The integration (``usage.py``)
and the benchmark (``benchmarks/warm_policy.py``) both act on these answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
import math
from typing import Final

from .warm_plan import Plan

# A server's expiry this close to the planner's time is kept as it is (no request for a
# few seconds more); the keep asked for is rounded up to whole seconds.
KEEP_SLACK: Final = timedelta(seconds=30)
# The longest keep asked for at once, renewed once less than KEEP_RENEW of it is left. On
# Ollama a request that sends no keep (every OpenAI-compatible client) keeps the last one
# asked for: after the planner's time such a request keeps the model that long again, so
# it is never more than a session keep (the planner's longest, 30 minutes).
KEEP_PIECE: Final = timedelta(minutes=30)
KEEP_RENEW: Final = timedelta(minutes=15)


class HoldReason(StrEnum):
    """Why auto-warm holds a model."""

    EXPECTED_USE = "expected_use"  # an expected stretch of use: warmed ahead, held through
    SESSION_KEEP = "session_keep"  # after a use, through the gaps of its sessions
    SIGNAL = "signal"  # a household's edge that leads a use: held for its lead window


class HoldAction(StrEnum):
    """What auto-warm sends."""

    LOAD = "load"  # the model is cold: load it, kept until then
    KEEP = "keep"  # the model is resident: move its expiry to then


@dataclass(frozen=True, slots=True)
class Hold:
    """Auto-warm's answer: what to send, until when the planner holds the model, and why.

    ``asked``: the expiry asked for now (``until``, or a piece of at most ``KEEP_PIECE``
    of the way to it; None: ``until``).
    """

    action: HoldAction
    until: datetime
    reason: HoldReason
    asked: datetime | None = None

    @property
    def expiry(self) -> datetime:
        """Return the expiry this request asks the server for."""
        return self.until if self.asked is None else self.asked

    def keep_seconds(self, now: datetime) -> int:
        """Return the keep to ask for at ``now``: to ``expiry``, in whole seconds, at least 1."""
        return max(1, math.ceil((self.expiry - now).total_seconds()))


def piece(until: datetime, now: datetime) -> datetime:
    """Return the expiry to ask for at ``now`` on the way to ``until``: at most a piece on."""
    return min(until, now + KEEP_PIECE)


def hold_reason(plan: Plan) -> HoldReason | None:
    """Return why the plan holds the model now (None: it does not)."""
    if plan.warm_until is None:
        return None
    if plan.expected_until is not None and plan.warm_until == plan.expected_until:
        return HoldReason.EXPECTED_USE
    return HoldReason.SESSION_KEEP


def hold(
    plan: Plan,
    now: datetime,
    *,
    held: bool,
    loading: bool,
    expires_at: datetime | None,
    asked_until: datetime | None,
) -> Hold | None:
    """Return what to send now for the planner's answer ``plan``, or None.

    ``held``: the server holds the model (loaded); ``loading``: a load of it runs (ours or
    another client's: nothing is sent beside it); ``expires_at``: when the server lets it
    go (None: for ever, or it does not say); ``asked_until``: the time our last request for
    it asked for (an expiry the next poll has not shown yet).

    A cold model is loaded only ahead of an expected stretch: a session keep holds a model,
    it does not load one that left. A resident model is kept only when the server would
    let it go earlier than the planner's time; never for less than the server keeps it.
    Far from the planner's time it is kept a piece at a time (``KEEP_PIECE``), renewed
    once less than ``KEEP_RENEW`` is left.
    """
    reason = hold_reason(plan)
    until = plan.warm_until
    if reason is None or until is None or until <= now or loading:
        return None
    asked = piece(until, now)
    if not held:
        if reason is not HoldReason.EXPECTED_USE:
            return None
        return Hold(HoldAction.LOAD, until, reason, asked)
    # Near the planner's time, a server's expiry within the slack of it is kept as it is;
    # further on, one with more than KEEP_RENEW left.
    enough = until - KEEP_SLACK if asked == until else now + KEEP_RENEW
    if expires_at is None or expires_at >= enough:
        return None
    if asked_until is not None and asked_until >= enough:
        return None
    return Hold(HoldAction.KEEP, until, reason, asked)


def still_asked(
    asked_until: datetime | None,
    answered_at: datetime | None,
    polled_at: datetime | None,
    expires_at: datetime | None,
) -> datetime | None:
    """Return until when our last keep still holds the server, or None: ask again.

    On Ollama the last writer wins: a request of another client after our keep sets its
    own keep (often 5 minutes). A poll read after our keep answered (``answered_at``)
    that shows the server letting the model go before what we asked for (beyond
    ``KEEP_SLACK``) shows our keep overwritten. A poll that ran across our answer may show
    the old expiry: then the keep is asked for once more, which changes nothing.
    """
    if asked_until is None or answered_at is None or polled_at is None or expires_at is None:
        return asked_until
    if polled_at > answered_at and expires_at < asked_until - KEEP_SLACK:
        return None
    return asked_until


def auto_warm_stretch(
    plan: Plan | None, now: datetime, lead: timedelta, warmed_for: datetime | None
) -> tuple[datetime, datetime] | None:
    """Return the stretch auto-warm should load the model for now, or None.

    Due from ``lead`` (the model's cold load plus a margin) before an expected stretch
    until what it holds the model to (``Plan.expected_until``: its end, while no use came
    in a routine; the first hour of a long stretch no use came in yet), once per stretch.
    """
    if plan is None or plan.window_start is None or plan.expected_until is None:
        return None
    start, end = plan.window_start, plan.expected_until
    if start - lead <= now < end and warmed_for != start:
        return start, end
    return None


def decide(
    plan: Plan | None,
    now: datetime,
    *,
    lead: timedelta,
    warmed_for: datetime | None,
    held: bool,
    loading: bool,
    expires_at: datetime | None,
    asked_until: datetime | None,
) -> Hold | None:
    """Return what auto-warm sends now: the one decision ``usage.py`` and the benchmark take.

    A cold model is loaded once per expected stretch, from ``lead`` before it, kept to its
    end (``auto_warm_stretch``); a resident one is kept to the planner's time where its
    server would let it go earlier (``hold``); nothing beside a load that runs.
    """
    if plan is None or loading:
        return None
    if not held:
        stretch = auto_warm_stretch(plan, now, lead, warmed_for)
        if stretch is None:
            return None
        until = stretch[1]
        return Hold(HoldAction.LOAD, until, HoldReason.EXPECTED_USE, piece(until, now))
    return hold(plan, now, held=True, loading=False, expires_at=expires_at, asked_until=asked_until)


# What is added to a model's cold load before an expected use, and its load when unknown.
MARGIN: Final = timedelta(seconds=60)
DEFAULT_LOAD: Final = timedelta(seconds=30)


def warm_lead(load_seconds: float | None) -> timedelta:
    """Return how long before an expected use warming starts: the cold load, a margin."""
    return (timedelta(seconds=load_seconds) if load_seconds else DEFAULT_LOAD) + MARGIN


def expiry_with_agent(
    expires_at: datetime | None, *, agent_keep_seconds: float | None, agent_heard: datetime | None
) -> tuple[bool, datetime | None]:
    """Return whether a model is kept for ever, and until when it is kept otherwise.

    Home Assistant's Ollama agent sends its keep with each turn (the last writer wins):
    the server's expiry, or the agent's last turn plus its keep when later. A negative
    keep is for ever. ``agent_keep_seconds`` None: no such agent.
    """
    if agent_keep_seconds is None:
        return False, expires_at
    if agent_keep_seconds < 0:
        return True, None
    if agent_heard is None:
        return False, expires_at
    by_agent = agent_heard + timedelta(seconds=agent_keep_seconds)
    return False, by_agent if expires_at is None else max(expires_at, by_agent)
