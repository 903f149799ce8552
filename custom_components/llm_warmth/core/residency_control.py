"""What evicting, preloading, pinning and unpinning ask of a server, and what they did (pure).

The controller does the requests and reads the residency again; what it asks for (a
keep, a context), which models it unloads, what a load pushed out and what became of an
unpinned model are decided here, with the clock passed in.
"""

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from .backends.base import Capabilities
from .backends.types import InstalledModel
from .pins import Pin


@dataclass(frozen=True, slots=True)
class Preloaded:
    """What a preload did: the model was resident already, or was loaded in ``seconds``.

    ``seconds`` is the wall time of the load request as the integration saw it (the server
    answers once the model is ready). ``pushed_out``: the models the server held before
    and no longer held once it was loaded (it made room for it).
    """

    model: str
    already_resident: bool
    seconds: float | None
    pushed_out: tuple[str, ...] = ()


class Unpinned(StrEnum):
    """What became of a model when its pin was removed (an action's ``residency``)."""

    UNLOADED = "unloaded"  # evicted, as the call asked
    HANDED_BACK = "handed_back"  # asked once more without a keep_alive (Ollama)
    KEPT = "kept"  # the server keeps it by its own rule
    NOT_RESIDENT = "not_resident"
    UNCHANGED = "unchanged"  # it was not pinned


def asked_for(
    pin: Pin, now: datetime, capabilities: Capabilities
) -> tuple[float | None, int | None]:
    """Return the keep (seconds) and context a load for ``pin`` asks for (Ollama only).

    The other servers keep a model by their own rule and take no context per request.
    """
    if not capabilities.requests_set_keep_and_context:
        return None, None
    return pin.keep_seconds(now), pin.num_ctx


def kept_until(keep_seconds: float | None, now: datetime) -> datetime | None:
    """Return until when a load with ``keep_seconds`` keeps its model.

    None where it keeps it for ever (-1) or as the server does (None): the keep_alive
    repair waits for no end then.
    """
    if keep_seconds is not None and keep_seconds > 0:
        return now + timedelta(seconds=keep_seconds)
    return None


def pushed_out(before: Iterable[str], after: Collection[str], model: str) -> tuple[str, ...]:
    """Return the models held ``before`` a load of ``model`` and no longer held ``after``."""
    return tuple(sorted(set(before) - set(after) - {model}))


def load_seconds(took: float, *, already_resident: bool) -> float | None:
    """Return how long a load took as answered (None: the model was resident already)."""
    return None if already_resident else round(took, 3)


def to_unload(held: Iterable[str], models: Collection[str] | None) -> list[str]:
    """Return the held models an eviction of ``models`` unloads (None: all), sorted."""
    return sorted(model for model in held if models is None or model in models)


def on_peers(models: Iterable[str], installed: Mapping[str, InstalledModel]) -> list[str]:
    """Return the ``models`` a peer runs (not held here, yet maybe running there)."""
    return [
        model
        for model in models
        if (listed := installed.get(model)) is not None and listed.peer is not None
    ]


def unpin_outcome(*, resident: bool, pinned: bool, idle_timer: bool) -> Unpinned:
    """Return what becomes of a model whose pin goes, and is not evicted.

    ``resident``: the server holds it; ``pinned``: it had a pin; ``idle_timer``: the
    server's requests set how long it keeps a model (Ollama), so that asking once more
    without a keep_alive hands it back to the server's default idle time from now.
    """
    if not resident:
        return Unpinned.NOT_RESIDENT
    if not pinned:
        return Unpinned.UNCHANGED
    if not idle_timer:
        return Unpinned.KEPT
    return Unpinned.HANDED_BACK
