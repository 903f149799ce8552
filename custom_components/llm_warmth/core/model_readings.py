"""What a server's and its models' sensors read from one snapshot, and why one reads nothing.

Each function takes the snapshot a poll gave (and a model's name) and returns a sensor's
value or its attributes: when the server unloads the model, its warmth, when a loading model
should be ready, its make, its last probe's figures and verdict. ``Unknown`` says why a
model's sensor has no value (its ``reason`` attribute; the words are in the translations).
"""

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from enum import StrEnum

from .backends.types import InstalledModel, ResidentModel
from .load_figures import FigureSource
from .model_timing import ModelTiming
from .monitor import ServerSnapshot
from .ttft import StageBreakdown
from .warmth import model_warmth


class Unknown(StrEnum):
    """Why a model's sensor has no value: its ``reason`` attribute (words: translations)."""

    # A load figure: none timed yet; or only lower bounds, which are never the state.
    NOT_TIMED_YET = "not_timed_yet"
    LOWER_BOUND_ONLY = "lower_bound_only"
    # A lower bound: none since the last exact figure (or none at all).
    NO_PARTLY_SEEN_LOAD = "no_partly_seen_load"
    # When the server unloads the model: it is not in memory, is loading, or has no end.
    NOT_LOADED = "not_loaded"
    LOADING = "loading"
    KEPT_FOREVER = "kept_forever"


def display_name(model: str) -> str:
    """Return a model's name as people say it: without Ollama's default tag."""
    return model.removesuffix(":latest")


def model_details(details: InstalledModel | ResidentModel | None) -> dict[str, str | None]:
    """Return what the server tells of a model's make: family, size, quantization."""
    return {
        "family": details.family if details else None,
        "parameter_size": details.parameter_size if details else None,
        "quantization": details.quantization_level if details else None,
    }


_NO_TIMING = ModelTiming()


def timing(snapshot: ServerSnapshot, model: str) -> ModelTiming:
    """Return what was measured for ``model`` (nothing yet: an empty record)."""
    return snapshot.timings.get(model, _NO_TIMING)


def last_figure(
    snapshot: ServerSnapshot, model: str, value_fn: Callable[[StageBreakdown], float | None]
) -> float | None:
    """Return a figure of the model's last probe, None before the first."""
    last = timing(snapshot, model).last
    return value_fn(last) if last else None


def classification(snapshot: ServerSnapshot, model: str) -> str | None:
    """Return how the model's last probe reads (cold, warm...), None before the first."""
    verdict = timing(snapshot, model).last_verdict
    return verdict.classification.value if verdict else None


def classification_attrs(snapshot: ServerSnapshot, model: str) -> Mapping[str, object]:
    """Return the last probe's costliest stage and its prompt's tokens (None before one)."""
    measured = timing(snapshot, model)
    return {
        "dominant_stage": measured.last_verdict.dominant_stage.value
        if measured.last_verdict
        else None,
        "prompt_tokens": measured.last.prompt_tokens if measured.last else None,
    }


def load_figure_attrs(
    source: FigureSource | None, at_least_seconds: float | None
) -> Mapping[str, object]:
    """Return a load figure's attributes: who measured it, what a newer one lasted at least."""
    return {
        "source": None if source is None else source.value,
        "at_least_seconds": at_least_seconds,
    }


def load_figure_unknown(at_least_seconds: float | None) -> Unknown:
    """Return why a load figure is unknown: none timed yet, or polls saw part of a load."""
    return Unknown.NOT_TIMED_YET if at_least_seconds is None else Unknown.LOWER_BOUND_ONLY


def lower_bound_unknown(at_least_seconds: float | None) -> Unknown | None:
    """Return why a lower bound is unknown: no load since the last exact one was partly seen."""
    return Unknown.NO_PARTLY_SEEN_LOAD if at_least_seconds is None else None


def total(values: list[int | None]) -> int | None:
    """Return the sum of ``values``; None when one of them is not known."""
    return None if None in values else sum(v for v in values if v is not None)


def unloads_at(snapshot: ServerSnapshot, model: str) -> datetime | None:
    """Return when the server will unload the model; None when never (kept warm)."""
    resident = snapshot.resident.get(model)
    if resident is None or model in snapshot.loading or resident.kept_forever(snapshot.polled_at):
        return None
    return resident.expires_at


def unloads_at_unknown(snapshot: ServerSnapshot, model: str) -> Unknown | None:
    """Return why there is no time the server will unload the model."""
    resident = snapshot.resident.get(model)
    if model in snapshot.loading:
        return Unknown.LOADING
    if resident is None:
        return Unknown.NOT_LOADED
    return Unknown.KEPT_FOREVER if resident.kept_forever(snapshot.polled_at) else None


def kept_forever_attrs(snapshot: ServerSnapshot, model: str) -> Mapping[str, object]:
    """Return whether the server keeps the loaded model without an end (a pin)."""
    resident = snapshot.resident.get(model)
    return {
        "kept_forever": resident is not None
        and model not in snapshot.loading
        and resident.kept_forever(snapshot.polled_at)
    }


def warmth_state(snapshot: ServerSnapshot, model: str) -> str | None:
    """Return the model's warmth; a peer's model's as its own entry reads it (or unknown)."""
    if (view := snapshot.peers.get(model)) is not None:
        return view.warmth.value if view.warmth is not None else None
    return model_warmth(snapshot, model).value


def ready_expected_at(snapshot: ServerSnapshot, model: str) -> datetime | None:
    """Return when a loading model should be ready: its load's start plus its last load.

    None unless it is loading, its start was seen and an exact load figure is known.
    """
    since = snapshot.loading_since.get(model)
    last = timing(snapshot, model).load_seconds
    if model not in snapshot.loading or since is None or last is None:
        return None
    return since + timedelta(seconds=last)


def warmth_attrs(snapshot: ServerSnapshot, model: str) -> Mapping[str, object]:
    """Return the warmth sensor's attributes: the server's state, a probe, its make, a peer."""
    resident = snapshot.resident.get(model)
    details = snapshot.installed.get(model) or resident
    ready = ready_expected_at(snapshot, model)
    attrs: dict[str, object] = {
        "server_state": resident.state.value if resident else None,
        "probe_running": model in snapshot.probing,
        # While it loads: when the household can expect it (a "one moment" automation).
        "ready_expected_at": ready.isoformat() if ready else None,
        **model_details(details),
    }
    if (view := snapshot.peers.get(model)) is not None:
        # Served on another host through this one: which, and how its warmth was read.
        attrs |= {
            "peer": view.peer,
            "peer_model": view.model,
            "peer_server": view.server,
            "peer_reading": view.reading.value,
        }
    return attrs


def make(snapshot: ServerSnapshot, model: str) -> str | None:
    """Return the model's make as the server tells it: "qwen3 · 8.2B · Q4_K_M"."""
    details = model_details(snapshot.installed.get(model) or snapshot.resident.get(model))
    told = [value for value in details.values() if value]
    return " · ".join(told) if told else None


def make_attrs(snapshot: ServerSnapshot, model: str) -> Mapping[str, object]:
    """Return the model's make, part by part (installed first, else as it is resident)."""
    return model_details(snapshot.installed.get(model) or snapshot.resident.get(model))


def context_length(snapshot: ServerSnapshot, model: str) -> int | None:
    """Return the context the resident model was loaded with; None when not resident."""
    return snapshot.resident[model].context_length if model in snapshot.resident else None


def vram(snapshot: ServerSnapshot, model: str) -> int | None:
    """Return the GPU memory the model holds: 0 when not resident, None when not told."""
    return snapshot.resident[model].size_vram if model in snapshot.resident else 0


def gpu_share(snapshot: ServerSnapshot, model: str) -> float | None:
    """Return the share of the model on the GPU (percent).

    Not resident: nothing of it is on the GPU, as its GPU memory says (0 GiB).
    """
    return snapshot.resident[model].gpu_share if model in snapshot.resident else 0
