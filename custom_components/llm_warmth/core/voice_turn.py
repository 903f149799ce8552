"""A voice turn as the bus tells it, and the voice section as the store keeps it (pure).

The shell (``voice.py``) listens to the satellites' states and to the warm assistants'
routes, and fires each turn's event; here is what a satellite's state change means for
its turn, what a route keeps, the turn event's data, and the voice section's stored form
(each pipeline's warm-on-wake option and counts) with its reading back.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from .voice_record import VoiceRecord, WakeCounts

# The satellites' entity ids begin so.
SATELLITE_PREFIX: Final = "assist_satellite."
# The satellite states (``AssistSatelliteState``) read.
LISTENING: Final = "listening"
PROCESSING: Final = "processing"
IDLE: Final = "idle"
# What a warm assistant's route event tells of the agent that answers, kept for its turn.
ROUTE_KEYS: Final = ("agent", "reason", "agent_server", "agent_model")


class SatelliteStep(StrEnum):
    """What a satellite's new state means for its turn."""

    # The satellite is gone: its turn is forgotten.
    GONE = "gone"
    # The wake: speech-to-text starts.
    WAKE = "wake"
    # The pipeline's agent starts.
    INTENT = "intent"
    # Back to idle from another state: the turn is over.
    FINISH = "finish"


def is_satellite(entity_id: object) -> bool:
    """Return True for an Assist satellite's entity id."""
    return isinstance(entity_id, str) and entity_id.startswith(SATELLITE_PREFIX)


def satellite_step(new: str | None, old: str | None) -> SatelliteStep | None:
    """Return what a satellite's state change from ``old`` to ``new`` means (None: nothing).

    ``new`` None: the satellite was removed. ``old`` None: it had no state before.
    """
    if new is None:
        return SatelliteStep.GONE
    if new == LISTENING:
        return SatelliteStep.WAKE
    if new == PROCESSING:
        return SatelliteStep.INTENT
    if new == IDLE and old is not None and old != IDLE:
        return SatelliteStep.FINISH
    return None


def route_of(data: Mapping[str, object]) -> tuple[str, dict[str, object]] | None:
    """Return the warm assistant a route event names (its entity id) and what it keeps.

    None for an event that names no assistant (not a text: no turn of ours to join).
    """
    assistant = data.get("assistant")
    if not isinstance(assistant, str) or not assistant:
        return None
    return assistant, {key: data.get(key) for key in ROUTE_KEYS}


def turn_event_data(
    record: VoiceRecord,
    *,
    server: str,
    entry_id: str,
    entity_id: str | None,
    pipeline_id: str,
    pipeline_name: str,
    assistant: str | None,
    route: Mapping[str, object] | None,
) -> dict[str, object]:
    """Return a voice turn event's data.

    ``entity_id``: the pipeline's costliest-stage sensor the logbook files it under (left
    out when not registered). ``assistant``: the pipeline's warm assistant, whose turns say
    which agent answered and why (``route``, None when no route was heard).
    """
    return {
        "server": server,
        "config_entry_id": entry_id,
        **({"entity_id": entity_id} if entity_id else {}),
        "pipeline": pipeline_id,
        "pipeline_name": pipeline_name,
        **record.details(),
        **({"assistant_route": route} if assistant else {}),
    }


def counts_of_stored(stored: object) -> dict[str, WakeCounts]:
    """Read the voice section: each pipeline's counts; what does not read is left out."""
    if not isinstance(stored, Mapping):
        return {}
    return {
        pid: WakeCounts.from_dict(values) for pid, values in stored.items() if isinstance(pid, str)
    }


def stored_counts(counts: Mapping[str, WakeCounts]) -> dict[str, object]:
    """Return the voice section as stored: each pipeline's warm-on-wake option and counts."""
    return {pid: wake.as_dict() for pid, wake in counts.items()}
