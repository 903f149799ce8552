"""A voice turn as LLM Warmth keeps it: its record, and what warming at the wake did.

Pure: the shell (``voice.py``) reads Home Assistant's pipeline runs into a
``core.voice.VoiceTurn``, explains it (``core.voice_stages``), and keeps here the record
its event and its entities tell, and the counts the store keeps per pipeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .backends.types import ServedRequest
from .voice import WAKE_TO_INTENT_KEPT, VoiceTurn
from .voice_stages import Explained, ServerSide


@dataclass(slots=True)
class WakeCounts:
    """What warming at the wake did for a pipeline's turns, counted since the option exists."""

    enabled: bool = False
    helped: int = 0
    hidden_seconds: float = 0.0
    too_late: int = 0
    refused: int = 0
    # The warm-ups of the agent's prompt prefix: sent, left out (they would not have
    # ended before the agent started), and still running when it started.
    prefix_sent: int = 0
    prefix_skipped: int = 0
    prefix_overlapped: int = 0
    # Left out because the server holds the prompt already (this satellite's last turn
    # ran on this load of the model) or another satellite's warm-up of it runs.
    prefix_held: int = 0
    # Wakes no command followed that loaded the model (false wakes), and the GiB-seconds
    # each then held it until the server let it go (or the next wake used it).
    wasted: int = 0
    wasted_gib_seconds: float = 0.0
    # The last prefix warm-up's seconds, and the latest turns' seconds from wake to agent.
    prefix_seconds: float | None = None
    wake_to_intent: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """Return the counts as stored."""
        return {
            "warm_on_wake": self.enabled,
            "helped": self.helped,
            "hidden_seconds": round(self.hidden_seconds, 3),
            "too_late": self.too_late,
            "refused": self.refused,
            "prefix_sent": self.prefix_sent,
            "prefix_skipped": self.prefix_skipped,
            "prefix_overlapped": self.prefix_overlapped,
            "prefix_held": self.prefix_held,
            "wasted": self.wasted,
            "wasted_gib_seconds": round(self.wasted_gib_seconds, 3),
            "prefix_seconds": self.prefix_seconds,
            "wake_to_intent": list(self.wake_to_intent),
        }

    def intent_after(self, seconds: float) -> None:
        """Note how many seconds after its wake a turn's agent started."""
        self.wake_to_intent = [*self.wake_to_intent, round(seconds, 3)][-WAKE_TO_INTENT_KEPT:]

    @classmethod
    def from_dict(cls, values: object) -> WakeCounts:
        """Read stored counts; what does not read starts from nothing."""
        if not isinstance(values, Mapping):
            return cls()

        def count(key: str) -> int:
            value = values.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        def seconds(value: object, most: float = 86400) -> float | None:
            """Return a figure of seconds: a finite, non-negative number below ``most``."""
            if not isinstance(value, int | float) or isinstance(value, bool):
                return None
            return float(value) if 0 <= value < most else None

        after = values.get("wake_to_intent")
        wake_to_intent = [
            s for v in (after if isinstance(after, list) else []) if (s := seconds(v)) is not None
        ]
        return cls(
            enabled=values.get("warm_on_wake") is True,
            helped=max(count("helped"), 0),
            hidden_seconds=seconds(values.get("hidden_seconds"), most=1e9) or 0.0,
            too_late=max(count("too_late"), 0),
            refused=max(count("refused"), 0),
            prefix_sent=max(count("prefix_sent"), 0),
            prefix_skipped=max(count("prefix_skipped"), 0),
            prefix_overlapped=max(count("prefix_overlapped"), 0),
            prefix_held=max(count("prefix_held"), 0),
            wasted=max(count("wasted"), 0),
            wasted_gib_seconds=seconds(values.get("wasted_gib_seconds"), most=1e12) or 0.0,
            prefix_seconds=seconds(values.get("prefix_seconds")),
            wake_to_intent=wake_to_intent[-WAKE_TO_INTENT_KEPT:],
        )


@dataclass(frozen=True, slots=True)
class VoiceRecord:
    """A pipeline's last turn: its times, what the server did, its stages."""

    turn: VoiceTurn
    model: str
    server: ServerSide | None
    explained: Explained
    warmed: bool
    hidden_seconds: float | None
    # The warm-up of the agent's prompt prefix: "ready" (ended before the agent started),
    # "overlapped" (the agent's request came while it ran), "skipped" (it would not have
    # ended in time), None (not sent: warm on wake is off, or the warm-up was refused).
    prefix: str | None = None

    def details(self) -> dict[str, object]:
        """Return the turn as its event and its silence sensor's attribute tell it."""
        turn, server, explained = self.turn, self.server, self.explained
        return {
            "satellite": turn.satellite,
            "conversation_id": turn.conversation_id,
            "agent": turn.agent,
            "model": self.model,
            "silence_seconds": turn.silence,
            "wake_to_speech_end_seconds": turn.wake_to_speech_end,
            "stt_seconds": turn.stt,
            "agent_first_text_seconds": turn.agent_first_text,
            "agent_rest_seconds": turn.agent_rest,
            "agent_reply_seconds": turn.agent_reply,
            "tts_start_seconds": turn.tts_start,
            "streamed": turn.streamed,
            "error": turn.error,
            "stages": {stage.value: seconds for stage, seconds in explained.stages.items()},
            "dominant_stage": explained.dominant.value if explained.dominant else None,
            "resident_at_intent_start": server.resident if server else None,
            "loading_at_intent_start": server.loading if server else None,
            "load_seconds": server.load_seconds if server else None,
            "load_source": server.load_source if server else None,
            "server_request": request_details(server.request) if server else None,
            "warmed_on_wake": self.warmed,
            "warm_hidden_seconds": self.hidden_seconds,
            "warm_prefix": self.prefix,
        }


def request_details(request: ServedRequest | None) -> dict[str, object] | None:
    """Return the server's record of the agent's request, as the turn's details tell it."""
    if request is None:
        return None
    return {
        "source": "llama-swap activity",
        "id": request.id,
        "started_at": request.started_at.isoformat(),
        "seconds": request.seconds,
        "waited_seconds": request.waited_seconds,
        "prefill_seconds": request.prefill_seconds,
        "generation_seconds": request.generation_seconds,
        "prompt_tokens": request.prompt_tokens,
        "cached_tokens": request.cached_tokens,
    }


def prefix_outcome(
    *,
    started: float | None,
    ended: float | None,
    intent_started: float | None,
    held: bool,
    skipped: bool,
) -> str | None:
    """Return what became of the warm-up of the agent's prompt prefix for a turn.

    "held" (the server holds the prompt, or another satellite's warm-up of it runs),
    "skipped" (it would not have ended in time), None (not sent), "ready" (it ended
    before the agent started), "overlapped" (the agent's request came while it ran).
    Times are monotonic seconds.
    """
    if started is None:
        if held:
            return "held"
        return "skipped" if skipped else None
    if ended is not None and (intent_started is None or ended <= intent_started):
        return "ready"
    return "overlapped"
