"""What the household should change: reloads waiting to happen, and reloads that repeat.

Three findings, each for a repair issue (pure logic, clock passed in):

- ``ContextMismatch``: a model is loaded with another context than its conversation agent
  asks for (Ollama reloads it at the agent's next turn).
- ``Thrash``: the same model loaded again and again, or two models displacing each other
  in turn, with the numbers, the likely cause and what to change.
- ``KeepAliveConflict``: an agent's ``keep_alive`` overrides a time-limited preload or a
  pin (Ollama: the last writer wins, and the agent writes on every turn).
"""

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from .pins import Pin
from .residency import UnloadReason

# A model loaded this often within THRASH_WINDOW thrashes; two models displacing each
# other this often each (within the window) do too.
THRASH_LOADS = 4
THRASH_SWAPS = 2
THRASH_WINDOW = timedelta(minutes=30)


@dataclass(frozen=True, slots=True)
class AgentUse:
    """How one conversation agent asks for a model (Ollama's agent settings)."""

    agent: str
    model: str
    num_ctx: int
    keep_alive: int  # seconds; negative: for ever


@dataclass(frozen=True, slots=True)
class ContextMismatch:
    """``model`` is loaded with ``loaded`` tokens of context; ``agent`` asks for ``wanted``."""

    model: str
    loaded: int
    agent: str
    wanted: int


def context_mismatches(
    loaded_contexts: Mapping[str, int | None], uses: Iterable[AgentUse]
) -> list[ContextMismatch]:
    """Return the resident models loaded with another context than an agent's.

    ``loaded_contexts``: the resident models and the context they were loaded with (None:
    the server does not say).
    """
    found: dict[str, ContextMismatch] = {}
    for use in uses:
        loaded = loaded_contexts.get(use.model)
        if loaded is not None and loaded != use.num_ctx and use.model not in found:
            found[use.model] = ContextMismatch(use.model, loaded, use.agent, use.num_ctx)
    return list(found.values())


class ThrashCause(StrEnum):
    """The likely cause of repeated reloads."""

    CONTEXT_MISMATCH = "context_mismatch"  # reloaded in place: a request with another context
    AGENTS_DIFFER = "agents_differ"  # two agents ask for one model with other settings
    DO_NOT_FIT = "do_not_fit"  # two models displace each other
    PUSHED_OUT = "pushed_out"  # other models pushed it out between uses
    LEFT_EARLY = "left_early"  # unloaded between uses, before its keep ran out
    KEPT_TOO_SHORT = "kept_too_short"  # it expires between uses


@dataclass(frozen=True, slots=True)
class Thrash:
    """``models`` were loaded ``count`` times within ``minutes``; ``cause`` is the likely one.

    The figures behind the cause: ``sizes`` (bytes, one per model, for two that do not
    fit; empty when a size is unknown), ``contexts`` (each agent and its ``num_ctx``, when
    they differ), ``reloads`` (the loads in place, for a context mismatch), and why it left
    memory in the window: ``expired`` times its keep ran out, ``pushed_out`` times
    ``pushed_out_by`` pushed it out, ``left_early`` times it was unloaded before that.
    """

    models: tuple[str, ...]
    count: int
    minutes: int
    cause: ThrashCause
    sizes: tuple[int, ...] = ()
    contexts: tuple[tuple[str, int], ...] = ()
    reloads: int = 0
    expired: int = 0
    pushed_out: int = 0
    pushed_out_by: tuple[str, ...] = ()
    left_early: int = 0


@dataclass(frozen=True, slots=True)
class _Load:
    at: datetime
    reloaded: bool


class ThrashWatch:
    """Remembers the recent loads and displacements of one server's models."""

    def __init__(self) -> None:
        """Start with nothing seen."""
        self._loads: dict[str, deque[_Load]] = {}
        self._displaced: deque[tuple[datetime, str, str]] = deque()  # (at, gone, by)
        self._left: dict[str, deque[tuple[datetime, UnloadReason]]] = {}

    def loaded(self, model: str, now: datetime, *, reloaded: bool) -> None:
        """Note a load of ``model`` (``reloaded``: in place, without leaving memory)."""
        self._loads.setdefault(model, deque()).append(_Load(now, reloaded))

    def left(self, model: str, reason: UnloadReason, by: Iterable[str], now: datetime) -> None:
        """Note that ``model`` left memory, and why (``by``: the models that displaced it)."""
        self._left.setdefault(model, deque()).append((now, reason))
        if reason is UnloadReason.DISPLACED:
            for other in by:
                self._displaced.append((now, model, other))

    def findings(
        self,
        now: datetime,
        uses: Iterable[AgentUse] = (),
        sizes: Mapping[str, int] | None = None,
    ) -> list[Thrash]:
        """Return what thrashes within the window, with its likely cause."""
        self._forget(now)
        minutes = int(THRASH_WINDOW.total_seconds() // 60)
        found: list[Thrash] = []
        paired: set[str] = set()
        pairs: dict[frozenset[str], dict[str, int]] = {}
        for _at, gone, by in self._displaced:
            pairs.setdefault(frozenset((gone, by)), {}).setdefault(gone, 0)
            pairs[frozenset((gone, by))][gone] += 1
        for pair, counts in sorted(pairs.items(), key=lambda item: sorted(item[0])):
            if len(counts) == 2 and min(counts.values()) >= THRASH_SWAPS:
                models = tuple(sorted(pair))
                paired.update(models)
                known = sizes or {}
                found.append(
                    Thrash(
                        models,
                        sum(counts.values()),
                        minutes,
                        ThrashCause.DO_NOT_FIT,
                        sizes=tuple(known[m] for m in models)
                        if all(m in known for m in models)
                        else (),
                    )
                )
        by_model: dict[str, list[AgentUse]] = {}
        for use in uses:
            by_model.setdefault(use.model, []).append(use)
        for model, loads in sorted(self._loads.items()):
            if model in paired or len(loads) < THRASH_LOADS:
                continue
            found.append(
                self._why_it_left(_cause((model,), loads, minutes, by_model.get(model)), model)
            )
        return found

    def _why_it_left(self, thrash: Thrash, model: str) -> Thrash:
        """Return ``thrash`` with why the model left memory: the cause says what happened.

        The cause is what ended most of its stays: other models (pushed out), an unload
        before its keep ran out (left early), or its keep running out (kept too short).
        """
        reasons = [reason for _at, reason in self._left.get(model, ())]
        expired = reasons.count(UnloadReason.EXPIRED)
        pushed_out = reasons.count(UnloadReason.DISPLACED)
        left_early = (
            len(reasons) - expired - pushed_out - reasons.count(UnloadReason.SERVER_RESTARTED)
        )
        by = tuple(sorted({b for _at, gone, b in self._displaced if gone == model}))
        cause = thrash.cause
        if cause is ThrashCause.KEPT_TOO_SHORT and left_early > max(expired, pushed_out):
            cause = ThrashCause.LEFT_EARLY
        elif cause is ThrashCause.KEPT_TOO_SHORT and pushed_out and pushed_out >= expired:
            cause = ThrashCause.PUSHED_OUT
        return replace(
            thrash,
            cause=cause,
            expired=expired,
            pushed_out=pushed_out,
            pushed_out_by=by,
            left_early=left_early,
        )

    def _forget(self, now: datetime) -> None:
        for model in list(self._loads):
            loads = self._loads[model]
            while loads and now - loads[0].at > THRASH_WINDOW:
                loads.popleft()
            if not loads:
                del self._loads[model]
        while self._displaced and now - self._displaced[0][0] > THRASH_WINDOW:
            self._displaced.popleft()
        for model in list(self._left):
            left = self._left[model]
            while left and now - left[0][0] > THRASH_WINDOW:
                left.popleft()
            if not left:
                del self._left[model]


def _cause(
    models: tuple[str, ...], loads: deque[_Load], minutes: int, uses: list[AgentUse] | None
) -> Thrash:
    contexts = tuple(sorted({(use.agent, use.num_ctx) for use in uses or ()}))
    if len({ctx for _agent, ctx in contexts}) > 1:
        return Thrash(models, len(loads), minutes, ThrashCause.AGENTS_DIFFER, contexts=contexts)
    if reloads := sum(1 for load in loads if load.reloaded):
        return Thrash(models, len(loads), minutes, ThrashCause.CONTEXT_MISMATCH, reloads=reloads)
    return Thrash(models, len(loads), minutes, ThrashCause.KEPT_TOO_SHORT)


class Kept(StrEnum):
    """What asked to keep a model, which an agent's keep_alive overrides."""

    PIN = "pin"
    PRELOAD = "preload"


@dataclass(frozen=True, slots=True)
class KeepAliveConflict:
    """``agent``'s keep_alive (``keep_alive`` s; negative: for ever) overrides ``what``.

    ``until``: the end of the pin or preload (None: a pin without end).
    """

    model: str
    agent: str
    keep_alive: int
    what: Kept
    until: datetime | None


def keep_alive_conflicts(
    uses: Iterable[AgentUse],
    pins: Mapping[str, Pin],
    preloads: Mapping[str, datetime],
    now: datetime,
) -> list[KeepAliveConflict]:
    """Return where an agent's every turn rewrites the keep a pin or preload asked for.

    Time-limited (a pin or preload with an end): any agent keep_alive overrides it (for
    ever: past the end; shorter: before it). A pin without end: an agent's keep_alive that
    is not "for ever" shortens it at every turn (the pin then asks again: one empty
    request each time).
    """
    found: list[KeepAliveConflict] = []
    for use in uses:
        pin = pins.get(use.model)
        if pin is not None and not pin.expired(now):
            if pin.until is not None or use.keep_alive >= 0:
                found.append(
                    KeepAliveConflict(use.model, use.agent, use.keep_alive, Kept.PIN, pin.until)
                )
            continue
        until = preloads.get(use.model)
        if until is not None and until > now:
            found.append(
                KeepAliveConflict(use.model, use.agent, use.keep_alive, Kept.PRELOAD, until)
            )
    return found
