"""The events a household sees of what the monitor found: which, and with what data.

Pure: the shell fires them on Home Assistant's bus under the names ``const`` gives each
kind, adding the server and the entity they are about.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from .load_figures import LoadFigures
from .monitor import ColdStartObserved, LoadObserved, MonitorChange, ProbeResult, ServerRestarted
from .ttft import Stage

type EventData = dict[str, str | float | int | bool | list[str] | None]


class ResidencyEvent(StrEnum):
    """What a household is told happened to the server or one of its models."""

    SERVER_RESTARTED = "server_restarted"
    MODEL_LOADED = "model_loaded"
    COLD_START = "cold_start"
    MODEL_UNLOADED = "model_unloaded"


def events_of(changes: Iterable[MonitorChange]) -> list[tuple[ResidencyEvent, EventData]]:
    """Return the events of ``changes``, in their order.

    A load that a request waited for is also a cold start (with who waited: a probe of
    ours, or ``passive``, a client we only saw); a load of ours (a preload, a pin) is not.
    A probe that found the model cold without a load of its own is a cold start alone.
    """
    events: list[tuple[ResidencyEvent, EventData]] = []
    for change in changes:
        match change:
            case ServerRestarted():
                events.append(
                    (
                        ResidencyEvent.SERVER_RESTARTED,
                        {
                            "reason": "version_changed"
                            if change.version_changed
                            else "reconnected",
                            "version": change.version,
                            "previous_version": change.previous_version,
                        },
                    )
                )
            case LoadObserved():
                figures = change.figures.as_event_data()
                waited = waited_for(change.probe) if change.waited else {}
                events.append(
                    (
                        ResidencyEvent.MODEL_LOADED,
                        {"model": change.model, "cold_start": change.waited, **waited, **figures},
                    )
                )
                if change.waited:
                    events.append(_cold_start(change.model, change.figures, change.probe))
            case ColdStartObserved():
                events.append(_cold_start(change.model, LoadFigures(), change.probe))
            case _:
                events.append(
                    (
                        ResidencyEvent.MODEL_UNLOADED,
                        {
                            "model": change.model,
                            "reason": change.reason.value,
                            "replaced_by": list(change.replaced_by),
                        },
                    )
                )
    return events


def _cold_start(
    model: str, figures: LoadFigures, probe: ProbeResult | None
) -> tuple[ResidencyEvent, EventData]:
    return (
        ResidencyEvent.COLD_START,
        {"model": model, **waited_for(probe), **figures.as_event_data()},
    )


def waited_for(probe: ProbeResult | None) -> EventData:
    """Return who waited for a load: a probe of ours (its first token, its costliest stage)."""
    sample = probe.sample.as_response() if probe else None
    return {
        "source": "probe" if probe else "passive",
        "ttft_ms": sample["ttft_ms"] if sample else None,
        "queue_and_load_ms": sample["queue_and_load_ms"] if sample else None,
        "dominant_stage": (probe.verdict.dominant_stage if probe else Stage.LOAD).value,
    }
