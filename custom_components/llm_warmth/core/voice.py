"""A voice turn, stage by stage, from an Assist pipeline run's events (pure, clock-free).

Home Assistant's Assist pipeline stamps each event of a run as it happens: the wake, the
end of speech (its voice activity detection), the transcript, the agent's start, each
streamed piece of its reply, the request for the reply's audio, the end. ``VoiceTurn``
reads those times (``voice_stages.py`` joins them with what the LLM server did meanwhile
and names the stage that cost the household the most of its silence); here too is what
warming the model at the wake did and may do.

Every event comes from Home Assistant internals that may change shape: each is read with
its type and time checked, and a run that does not read is no turn (``None``), never an
error.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

# The pipeline's event types this module reads (``PipelineEventType`` values).
RUN_START = "run-start"
RUN_END = "run-end"
WAKE_WORD_END = "wake_word-end"
STT_START = "stt-start"
STT_VAD_END = "stt-vad-end"
STT_END = "stt-end"
INTENT_START = "intent-start"
INTENT_PROGRESS = "intent-progress"
INTENT_END = "intent-end"
TTS_END = "tts-end"
ERROR = "error"


class VoiceStage(StrEnum):
    """Where a turn's silence went."""

    STT = "stt"  # turning the speech into text
    QUEUE = "queue"  # the model busy with other requests
    LOAD = "load"  # the model loading
    PREFILL = "prefill"  # the model reading the prompt, up to its first words
    GENERATION = "generation"  # the reply written in full before it was spoken
    TTS = "tts"  # waiting for the reply's audio to be asked for


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One event of a pipeline run: its type, when it happened and its data."""

    type: str
    at: datetime
    data: Mapping[str, object]


def run_events(raw: Iterable[tuple[object, object, object]]) -> list[RunEvent] | None:
    """Return a run's events from ``(type, ISO timestamp, data)``; None when they do not read.

    The timestamps are the pipeline's own (UTC, ISO 8601). One event of the wrong shape
    makes the run unreadable: a changed format is said once, not half read.
    """
    events: list[RunEvent] = []
    for kind, stamp, data in raw:
        if not isinstance(kind, str) or not isinstance(stamp, str):
            return None
        try:
            at = datetime.fromisoformat(stamp)
        except ValueError:
            return None
        if at.tzinfo is None:
            return None
        if data is not None and not isinstance(data, Mapping):
            return None
        events.append(RunEvent(kind, at, data or {}))
    return events


def _text(data: Mapping[str, object], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def _first_text(event: RunEvent) -> bool:
    """Return True for a streamed piece of the agent's reply that carries words."""
    delta = event.data.get("chat_log_delta")
    return isinstance(delta, Mapping) and bool(delta.get("content"))


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None or end < start:
        return None
    return round((end - start).total_seconds(), 3)


@dataclass(frozen=True, slots=True)
class VoiceTurn:
    """One Assist run, as its events timed it.

    ``speech_end_at`` is the pipeline's end-of-speech decision (its voice activity
    detection waits for a short silence first: the speaker stopped a little earlier).
    ``audio_requested_at`` is when the pipeline asked for the reply's audio: while the
    reply still streams (``streamed``), or once it is written. Home Assistant stamps no
    event at the first byte of audio: the text-to-speech engine's own time is not in it.
    """

    pipeline: str | None
    satellite: str | None
    conversation_id: str | None
    agent: str | None
    started_at: datetime
    wake_at: datetime | None
    speech_end_at: datetime | None
    stt_start_at: datetime | None
    stt_end_at: datetime | None
    intent_start_at: datetime | None
    first_text_at: datetime | None
    intent_end_at: datetime | None
    audio_requested_at: datetime | None
    ended_at: datetime | None
    streamed: bool
    error: str | None

    @classmethod
    def from_events(cls, events: list[RunEvent]) -> VoiceTurn | None:
        """Return the turn the events tell; None unless they start with ``run-start``."""
        if not events or events[0].type != RUN_START:
            return None
        first: dict[str, RunEvent] = {}
        first_text: RunEvent | None = None
        streaming: RunEvent | None = None
        for event in events:
            first.setdefault(event.type, event)
            if event.type != INTENT_PROGRESS:
                continue
            if first_text is None and _first_text(event):
                first_text = event
            if streaming is None and event.data.get("tts_start_streaming") is True:
                streaming = event

        def at(kind: str) -> datetime | None:
            return first[kind].at if kind in first else None

        start, intent = first[RUN_START], first.get(INTENT_START)
        tts_end = at(TTS_END)
        error = first.get(ERROR)
        return cls(
            pipeline=_text(start.data, "pipeline"),
            satellite=_text(start.data, "satellite_id"),
            conversation_id=_text(start.data, "conversation_id"),
            agent=_text(intent.data, "engine") if intent else None,
            started_at=start.at,
            wake_at=at(WAKE_WORD_END) or at(STT_START),
            speech_end_at=at(STT_VAD_END),
            stt_start_at=at(STT_START),
            stt_end_at=at(STT_END),
            intent_start_at=at(INTENT_START),
            first_text_at=first_text.at if first_text else None,
            intent_end_at=at(INTENT_END),
            audio_requested_at=streaming.at if streaming else tts_end,
            ended_at=at(RUN_END),
            streamed=streaming is not None,
            error=(_text(error.data, "code") or "error") if error else None,
        )

    @property
    def spoken(self) -> bool:
        """Return True when the reply was to be spoken (the run asked for its audio)."""
        return self.audio_requested_at is not None

    @property
    def heard_at(self) -> datetime | None:
        """Return when the household heard (or read) the reply begin, as far as HA tells."""
        return self.audio_requested_at if self.spoken else self.first_text_at

    @property
    def wake_to_speech_end(self) -> float | None:
        """Return the seconds from the wake to the end of speech."""
        return _seconds(self.wake_at, self.speech_end_at)

    @property
    def stt(self) -> float | None:
        """Return the seconds speech-to-text took after the speech ended."""
        return _seconds(self.speech_end_at or self.stt_start_at, self.stt_end_at)

    @property
    def agent_first_text(self) -> float | None:
        """Return the seconds from the agent's start to its first streamed words."""
        return _seconds(self.intent_start_at, self.first_text_at)

    @property
    def agent_reply(self) -> float | None:
        """Return the seconds from the agent's start to its reply's end (its whole turn)."""
        return _seconds(self.intent_start_at, self.intent_end_at)

    @property
    def agent_rest(self) -> float | None:
        """Return the seconds the agent wrote on after its first words."""
        return _seconds(self.first_text_at, self.intent_end_at)

    @property
    def tts_start(self) -> float | None:
        """Return the seconds from the words being ready to their audio being asked for.

        Streamed: from the first words (the pipeline waits for enough of them). Not
        streamed: from the reply's end.
        """
        ready = self.first_text_at if self.streamed else self.intent_end_at
        return _seconds(ready, self.audio_requested_at)

    @property
    def silence(self) -> float | None:
        """Return the seconds from the end of speech to the reply (its audio asked for)."""
        return _seconds(self.speech_end_at or self.stt_start_at, self.heard_at)


@dataclass(frozen=True, slots=True)
class WakeOutcome:
    """What warming the model at the wake did for one turn.

    ``helped``: the model was cold at the wake and warm at the agent's start.
    ``hidden_seconds``: the load time the household did not wait for (all of it when
    helped; the part before the agent's start when it was too late).
    ``too_late``: still loading when the agent started.
    """

    helped: bool
    hidden_seconds: float
    too_late: bool


def wake_outcome(
    *, load_started: float, load_ended: float | None, intent_started: float
) -> WakeOutcome:
    """Return what a load started at the wake did for the turn whose agent started then.

    The three times are seconds on one clock (a monotonic one: what the turn waited
    for is not moved by a clock change).
    """
    if load_ended is not None and load_ended <= intent_started:
        hidden = round(max(load_ended - load_started, 0.0), 3)
        return WakeOutcome(helped=True, hidden_seconds=hidden, too_late=False)
    hidden = round(max(intent_started - load_started, 0.0), 3)
    return WakeOutcome(helped=False, hidden_seconds=hidden, too_late=True)


# How many of a pipeline's latest turns say how soon its agent starts after the wake.
WAKE_TO_INTENT_KEPT = 8


def prefix_warm_fits(
    *, prefix_seconds: float | None, wake_to_intent: Sequence[float], elapsed: float
) -> bool:
    """Return whether the agent's prompt prefix can be warmed before its agent starts.

    A server with one slot (Ollama's default) runs one request of a model at a time: a
    turn that arrives while the warm-up of its prompt prefix still runs waits for the rest
    of it (measured on Ollama 0.34.4 by ``benchmarks/voice_warm.py``: 19.4 s to the first
    token instead of 16.7 s without the warm-up, 2.4 s after one that had ended). So the prefix is
    sent only when its last warm-up (``prefix_seconds``) ends, from ``elapsed`` seconds
    after the wake, before the quickest of the pipeline's latest agent starts
    (``wake_to_intent``: seconds from the wake). Never measured, it is sent while at least
    half of that time is left (then it measures itself), or when no turn is known yet.
    """
    if not wake_to_intent:
        return True
    quickest = min(wake_to_intent)
    if prefix_seconds is None:
        return elapsed <= quickest / 2
    return elapsed + prefix_seconds <= quickest


# How long a load at the wake keeps the model (Ollama's keep_alive, seconds) until the
# agent's own request sets the agent's keep: a wake that no command follows (a false wake)
# lets the model go after this, not with the agent's keep (Home Assistant's default: for
# ever).
WAKE_KEEP = 120.0


def wake_keep(agent_keep: float | None) -> float:
    """Return the keep a load at the wake asks for, given the agent's own keep (seconds).

    The agent's keep when it is shorter than ``WAKE_KEEP`` and above nothing; else
    ``WAKE_KEEP``. A keep of 0 is not sent: on Ollama a load that asks for 0 is an unload,
    so the model loaded at the wake would leave before the command it was loaded for; a
    negative keep (for ever) is what a false wake must not hold.
    """
    if agent_keep is not None and 0 < agent_keep < WAKE_KEEP:
        return agent_keep
    return WAKE_KEEP
