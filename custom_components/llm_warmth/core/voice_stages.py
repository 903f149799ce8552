"""A voice turn's silence split by stage, with what the LLM server did meanwhile (pure).

``explain`` joins a turn's times (``VoiceTurn``) with what the server did for it
(``ServerSide``: was the model resident, was it loading, how long the load the turn
waited for took, and where the server keeps one, its own record of the agent's request,
found by ``join_request``) and names the stage that cost the household the most.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from .backends.types import ServedRequest
from .voice import VoiceStage, VoiceTurn


@dataclass(frozen=True, slots=True)
class ServerSide:
    """What the LLM server did for a turn, as LLM Warmth saw it.

    ``resident``: the model held, loaded, at the agent's start (None: not known).
    ``loading``: loading then. ``load_seconds``: a load the turn waited for, and who
    measured it (``load_source``: ``server``, ``client``, ``events``, ``polling`` for a
    lower bound; ``residency`` when only that the model was cold is known: the wait for
    the first words, load and prompt together). ``request``: the agent's request in the
    server's own record, where it keeps one (its wait before the prefill, its prefill).
    """

    model: str
    resident: bool | None
    loading: bool
    load_seconds: float | None = None
    load_source: str | None = None
    # The agent's own request as the server recorded it (llama-swap), joined by time.
    request: ServedRequest | None = None


def waited_load(
    server: ServerSide | None,
    *,
    loaded_at_wake: bool,
    wake_load_ended: float | None,
    intent_started: float | None,
    figures: tuple[float | None, float | None, str | None],
    figures_before: tuple[float | None, float | None],
) -> ServerSide | None:
    """Return what the server did, with the load a turn on a cold model waited for.

    ``loaded_at_wake``: our load at the wake ran (it ended at ``wake_load_ended``, on one
    monotonic clock with ``intent_started``; None: not by then): the turn waited for what
    was left of it, timed by us ("client"). Else the model's load figures now
    (``figures``: exact, at least, the exact one's source) against those from before the
    turn (``figures_before``): a new exact figure is this turn's load, by its source; a
    new lower bound is what polling saw of it ("polling"); none: only that the model was
    cold is known ("residency", the wait for the first words, which ``explain`` counts as
    the load).
    """
    if server is None or server.resident:
        return server

    def cold(seconds: float | None, source: str | None) -> ServerSide:
        return ServerSide(server.model, False, server.loading, seconds, source)

    if loaded_at_wake and intent_started is not None:
        ended = wake_load_ended if wake_load_ended is not None else intent_started
        return cold(round(max(ended - intent_started, 0.0), 3), "client")
    exact, at_least, source = figures
    if exact is not None and exact != figures_before[0]:
        return cold(exact, source)
    if at_least is not None and at_least != figures_before[1]:
        return cold(at_least, "polling")
    return cold(None, "residency")


@dataclass(frozen=True, slots=True)
class Explained:
    """A turn's silence by stage (seconds, None where not known) and the costliest one."""

    stages: Mapping[VoiceStage, float]
    dominant: VoiceStage | None


def explain(turn: VoiceTurn, server: ServerSide | None) -> Explained:
    """Split the turn's silence into stages and name the one that cost the most.

    The agent's time to its first words is the load (when the turn waited for one), and
    what remains of it the prefill: all of it is the load when the model was cold at the
    agent's start and no figure of its load is known (the server's ``residency`` says
    only that). The rest of the reply counts only when it was not streamed (the
    household heard nothing until it was written). An agent that streamed no words (an
    empty reply, or one handed over whole) kept the household waiting its whole turn:
    that is split the same way, and what follows the prefill is the reply's writing.
    """
    stages: dict[VoiceStage, float] = {}
    if (stt := turn.stt) is not None:
        stages[VoiceStage.STT] = stt
    words = turn.first_text_at is not None
    if (wait := turn.agent_first_text if words else turn.agent_reply) is not None:
        stages.update(_agent_stages(wait, server, words=words))
    if not turn.streamed and turn.spoken and (rest := turn.agent_rest) is not None:
        stages[VoiceStage.GENERATION] = rest
    if (tts := turn.tts_start) is not None:
        stages[VoiceStage.TTS] = tts
    dominant = max(stages, key=lambda stage: stages[stage]) if stages else None
    return Explained(stages, dominant)


def _agent_stages(
    wait: float, server: ServerSide | None, *, words: bool
) -> dict[VoiceStage, float]:
    """Split the agent's wait: to its first words (``words``), else to its reply's end.

    By the server's record of the agent's request where it tells the stages apart, else
    by the load's figure. With no words streamed, what follows the load (and the prefill,
    where the server timed it) is the reply's writing: the household heard nothing of it.
    """
    request = server.request if server else None
    if server is not None and request is not None and _told_apart(request):
        stages = _request_stages(request, wait, cold=server.resident is False)
    else:
        load = server.load_seconds if server and server.load_seconds is not None else 0.0
        if server and server.resident is False and server.load_seconds is None:
            # Cold at the agent's start, and no figure of the load: its wait held the load
            # and the prompt together (and, with no words, the writing), not told apart.
            load = wait
        waited = min(load, wait)
        stages = {VoiceStage.LOAD: round(waited, 3)} if waited > 0 else {}
        if words:
            stages[VoiceStage.PREFILL] = round(wait - waited, 3)
    if not words and (left := round(wait - sum(stages.values()), 3)) > 0:
        stages[VoiceStage.GENERATION] = left
    return stages


def _told_apart(request: ServedRequest) -> bool:
    return request.waited_seconds is not None and request.prefill_seconds is not None


def _request_stages(request: ServedRequest, wait: float, *, cold: bool) -> dict[VoiceStage, float]:
    """Split the agent's wait (for its first words, or its whole reply) by the server's record.

    What the request waited before its prefill is the load when the model was cold at
    the agent's start, else the queue; then the server's prefill. Both within the wait
    Home Assistant saw (the rest of it is the agent's own work and the network).
    """
    stages: dict[VoiceStage, float] = {}
    waited = min(request.waited_seconds or 0.0, wait)
    if waited > 0:
        stages[VoiceStage.LOAD if cold else VoiceStage.QUEUE] = round(waited, 3)
    stages[VoiceStage.PREFILL] = round(min(request.prefill_seconds or 0.0, wait - waited), 3)
    return stages


# Seconds the server's clock and Home Assistant's may differ, for a request to be the turn's.
JOIN_TOLERANCE = 2.0
# A record's time may read this much early: llama-swap keeps it in whole seconds, floored
# (recorded from the real one: "2026-12-04T15:49:47Z").
RECORD_STEP = timedelta(seconds=1)


def join_request(turn: VoiceTurn, requests: Iterable[ServedRequest]) -> ServedRequest | None:
    """Return the server's record of the turn's agent request, found by time.

    The successful request that arrived nearest the agent's start (within
    ``JOIN_TOLERANCE`` before it, and before its first words or its end) and ended after
    that start (its end read to within ``RECORD_STEP``). The server's clock is taken to
    agree with Home Assistant's (NTP).
    """
    start = turn.intent_start_at
    if start is None:
        return None
    latest = turn.first_text_at or turn.intent_end_at or turn.ended_at
    tolerance = timedelta(seconds=JOIN_TOLERANCE)
    # Differences, not shifted times: a turn's time may lie next to the ends of Python's.
    found = [
        r
        for r in requests
        if r.status == 200
        and r.started_at - start >= -tolerance
        and (latest is None or r.started_at - latest <= tolerance)
        and r.ended_at + RECORD_STEP > start
    ]
    return min(found, key=lambda r: abs(r.started_at - start), default=None)
