"""What llama-swap's /api/events frames say: the requests in flight, and our queue wait.

The frames as llama-swap writes them (an envelope whose ``data`` is JSON in a string), fed
to the pure readers the client uses while one of its requests runs.
"""

import json

from custom_components.llm_warmth.core.backends.events import StateWatch
from custom_components.llm_warmth.core.backends.llama_swap_events import (
    EVENTS,
    inflight_ids,
    queue_wait_ns,
)


def inflight(**operation: object) -> dict[str, object]:
    return {"type": "inflight", "data": json.dumps(operation)}


def request(number: int, model: str = "m") -> dict[str, object]:
    return {"id": number, "model": model}


def test_the_requests_in_flight_to_a_model_follow_snapshot_upsert_and_remove() -> None:
    frames: list[object] = [
        inflight(operation="snapshot", requests=[request(1), request(2, "other"), "junk"]),
        inflight(operation="upsert", request=request(3)),
        inflight(operation="upsert", request=request(4, "other")),
        inflight(operation="upsert", request="junk"),
        inflight(operation="remove", id=1),
        # Another kind of frame is never read as one of requests, whatever it holds.
        {"type": "modelStatus", "data": json.dumps({"operation": "remove", "id": 3})},
        inflight(operation="snapshot", requests="junk"),
    ]
    assert inflight_ids(frames[:1], "m") == {"1"}
    assert inflight_ids(frames[:2], "m") == {"1", "3"}
    assert inflight_ids(frames[:5], "m") == {"3"}
    assert inflight_ids(frames[:6], "m") == {"3"}
    # A later snapshot is the whole truth: one that is junk leaves nothing in flight.
    assert inflight_ids(frames, "m") == set()
    assert EVENTS.until(frames[:1])
    assert not EVENTS.until([{"type": "modelStatus", "data": "[]"}])


def watch_of(frames: list[tuple[int, object]]) -> StateWatch:
    watch = StateWatch("m", "ready", lambda _frame: [])
    for at, frame in frames:
        watch.frame_times.append(at)
        watch.frames.append(frame)
    return watch


def test_the_queue_wait_is_until_the_last_request_ahead_ends() -> None:
    """Sent at 100, first token at 900: the two ahead ended at 300 and 500."""
    watch = watch_of(
        [
            (50, inflight(operation="snapshot", requests=[request(1), request(2)])),
            (200, inflight(operation="upsert", request=request(2))),  # still running
            (300, inflight(operation="remove", id=1)),
            (400, inflight(operation="upsert", request=request(3))),
            (500, inflight(operation="remove", id=2)),
            (600, inflight(operation="remove", id=3)),
        ]
    )
    assert queue_wait_ns(watch, {"1", "2"}, sent=100, first_token=900) == 400
    assert queue_wait_ns(watch, {"1"}, sent=100, first_token=900) == 200
    assert queue_wait_ns(watch, set(), sent=100, first_token=900) == 0


def test_the_queue_wait_is_bounded_by_the_first_token_and_never_negative() -> None:
    watch = watch_of(
        [(50, inflight(operation="remove", id=1)), (950, inflight(operation="remove", id=2))]
    )
    # Ended before ours was sent: no wait; ended after our first token: bounded by it.
    assert queue_wait_ns(watch, {"1"}, sent=100, first_token=900) == 0
    assert queue_wait_ns(watch, {"2"}, sent=100, first_token=900) == 800
    # One ahead that never ended (in what the stream said): the whole wait to the token.
    assert queue_wait_ns(watch, {"7"}, sent=100, first_token=900) == 800
    other = watch_of([(300, {"type": "inflight", "data": json.dumps({"operation": "upsert"})})])
    assert queue_wait_ns(other, {"1"}, sent=100, first_token=900) == 800
