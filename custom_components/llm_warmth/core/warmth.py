"""How warm a model is right now: the one answer a dashboard or an automation needs (pure)."""

from datetime import datetime
from enum import StrEnum

from .backends.types import ResidencyState, ResidentModel
from .monitor import ServerSnapshot


class Warmth(StrEnum):
    """A model's warmth, from what the server said of it.

    ``cold``: its weights are not in memory (not resident, or asleep); the next request
    loads them. ``loading``: they are being loaded (or the server is busy with the
    request that loads them). ``warm``: loaded, until the server lets it go (an idle
    timer, or another model needing its place). ``kept_warm``: loaded and kept with no
    end (Ollama's negative ``keep_alive``). ``unloading``: on its way out.
    """

    COLD = "cold"
    LOADING = "loading"
    WARM = "warm"
    KEPT_WARM = "kept_warm"
    UNLOADING = "unloading"


def warmth(model: ResidentModel | None, *, loading: bool, now: datetime) -> Warmth:
    """Return the warmth of a model the server lists as ``model`` (None: not listed).

    ``loading``: the residency tracker sees the model busy with the request that loads it
    (on Ollama 0.9 the server itself does not say so; Ollama 0.30 and newer does not list
    it at all until loaded, so our own request to it is what tells).
    """
    if model is None:
        return Warmth.LOADING if loading else Warmth.COLD
    if model.state is ResidencyState.SLEEPING:
        return Warmth.COLD
    if model.state is ResidencyState.UNLOADING:
        return Warmth.UNLOADING
    if loading or model.state is ResidencyState.LOADING:
        return Warmth.LOADING
    return Warmth.KEPT_WARM if model.kept_forever(now) else Warmth.WARM


def model_warmth(snapshot: ServerSnapshot, model: str) -> Warmth:
    """Return the warmth of ``model`` in one snapshot of its server.

    A model first seen on a server that lists it from the start of its load (Ollama 0.9)
    reads loading until the next poll tells: it read warm for a poll, then loading.
    """
    loading = model in snapshot.loading or model in snapshot.unsure
    return warmth(snapshot.resident.get(model), loading=loading, now=snapshot.polled_at)
