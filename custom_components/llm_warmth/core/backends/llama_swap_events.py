"""What llama-swap's ``/api/events`` frames say (no Home Assistant imports).

Each frame is an envelope ``{"type", "data": "<JSON as a string>"}``: ``modelStatus``
lists every model with its state (a model turning ``ready`` ends its load), ``inflight``
gives the requests in flight (a ``snapshot`` on connect, then each ``upsert`` and
``remove``). ``llama_swap.py`` follows them while a request runs: to time its load, and
how long the requests already in flight kept it waiting.
"""

from typing import Final

from .events import StateWatch
from .openai_stream import WatchedStream
from .replies import decode_json, valid_name


def event_data(payload: object, kind: str) -> object | None:
    """Return the inner data of an ``/api/events`` envelope of type ``kind``, else None."""
    if not isinstance(payload, dict) or payload.get("type") != kind:
        return None
    data = payload.get("data")
    if not isinstance(data, str):
        return None
    try:
        inner: object = decode_json(data)
    except ValueError:
        return None
    return inner


def ready_events(payload: object) -> list[tuple[str, str]]:
    """Return the (model, state) pairs a ``modelStatus`` frame tells (none from others)."""
    statuses = event_data(payload, "modelStatus")
    if not isinstance(statuses, list):
        return []
    return [
        (s["id"], s["state"])
        for s in statuses
        if isinstance(s, dict)
        and valid_name(s.get("id")) is not None
        and isinstance(s.get("state"), str)
    ]


def has_inflight_snapshot(frames: list[object]) -> bool:
    """Return True once the frames hold the snapshot of the requests in flight."""
    return any(isinstance(event_data(frame, "inflight"), dict) for frame in frames)


EVENTS: Final = WatchedStream("/api/events", "ready", ready_events, has_inflight_snapshot)


def inflight_ids(frames: list[object], model: str) -> set[str]:
    """Return the ids of the requests to ``model`` in flight, from the frames so far."""
    ids: set[str] = set()
    for frame in frames:
        op = event_data(frame, "inflight")
        if not isinstance(op, dict):
            continue
        match op.get("operation"):
            case "snapshot":
                requests = op.get("requests")
                ids = {
                    str(r.get("id"))
                    for r in (requests if isinstance(requests, list) else [])
                    if isinstance(r, dict) and r.get("model") == model
                }
            case "upsert":
                request = op.get("request")
                if isinstance(request, dict) and request.get("model") == model:
                    ids.add(str(request.get("id")))
            case "remove":
                ids.discard(str(op.get("id")))
    return ids


def queue_wait_ns(watch: StateWatch, ahead: set[str], sent: int, first_token: int) -> int:
    """Return how long the requests ahead of ours were still running after ours was sent.

    Bounded by the first token: what ran beside ours after that did not delay it.
    """
    if not ahead:
        return 0
    remaining = set(ahead)
    for at, frame in zip(watch.frame_times, watch.frames, strict=True):
        op = event_data(frame, "inflight")
        if isinstance(op, dict) and op.get("operation") == "remove":
            remaining.discard(str(op.get("id")))
            if not remaining:
                return min(max(at - sent, 0), first_token - sent)
    return first_token - sent
