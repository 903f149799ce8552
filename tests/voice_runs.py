"""Cold voice turns on a real Ollama, with and without warm on wake (issue 21's proof).

The model is ``big`` (1.24 GB, read behind the kit's throttled disk), under another name
that stops its replies after 8 tokens (random weights never stop on their own). Before
each turn it is evicted and dropped from the page cache, as after a night of idle; the
speaker talks for ``SPEECH_MS`` (the audio comes in real time) and speech-to-text takes
``STT_SECONDS`` after that; each turn starts a new conversation (the same prompt each time). Used by
``tests/test_e2e_voice.py`` and ``benchmarks/voice_warm.py`` (through
``tests/bench_voice_warm.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
import time
from typing import Any

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import Event, HomeAssistant, callback

from custom_components.llm_warmth.const import EVENT_VOICE_TURN

from .assist import Assist
from .e2e import drop_from_page_cache, evict, model_file, ollama_call, wait_until
from .recording_proxy import RecordingProxy

BIG_VOICE = "big-voice"
SPEECH_MS = 3000
STT_SECONDS = 3.0
NUM_CTX = 1024
PROMPT = "Answer in one word."


async def make_voice_model(url: str, base: str, name: str) -> str:
    """Create ``name`` (``base``'s weights, replies of 8 tokens) on the server; return it."""
    await ollama_call(
        url,
        "/api/create",
        {"model": name, "from": f"{base}:latest", "parameters": {"num_predict": 8}},
    )
    return f"{name}:latest"


async def make_big_voice(url: str) -> str:
    """Create ``big-voice`` (``big``'s weights, replies of 8 tokens) on the server."""
    return await make_voice_model(url, "big", BIG_VOICE)


def agent_wait(event: dict[str, Any]) -> float:
    """Return what a turn's agent kept the household waiting: to its first streamed words,
    else (it streamed none: an empty reply, seen on CI from random weights) its whole turn."""
    first = event["agent_first_text_seconds"]
    wait = first if first is not None else event["agent_reply_seconds"]
    assert isinstance(wait, float), event
    return wait


@dataclass(frozen=True)
class ColdTurn:
    """One turn that found the model cold at the wake, as LLM Warmth and the server told it."""

    warm_on_wake: bool
    silence: float
    # To the agent's first words, or its whole turn where it streamed none (agent_wait).
    agent_wait: float
    dominant_stage: str | None
    resident_at_intent_start: bool | None
    # Warm on wake: the load time the household did not wait for, and our load's seconds
    # as the integration measured it (Ollama's reply to a load-only request carries no
    # load_duration), of which it is a share.
    hidden: float | None
    our_load_seconds: float | None
    # The server's own load_duration of the agent's request (0 when ours had loaded it).
    agent_load_server_seconds: float | None
    event: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """Return the turn as JSON."""
        return asdict(self)


class ColdTurns:
    """Runs cold turns of one pipeline on one server, through a recording proxy."""

    def __init__(
        self, hass: HomeAssistant, entry: ConfigEntry, assist: Assist, proxy: RecordingProxy
    ) -> None:
        self.hass, self.entry, self.assist, self.proxy = hass, entry, assist, proxy
        self.events: list[dict[str, Any]] = []

        @callback
        def turn(event: Event) -> None:
            self.events.append(dict(event.data))

        hass.bus.async_listen(EVENT_VOICE_TURN, turn)

    async def run(self, url: str, model: str, *, warm_on_wake: bool) -> ColdTurn:
        """Evict the model and forget its file, then run one turn; return what it was."""
        coordinator = self.entry.runtime_data.coordinator
        voice = self.entry.runtime_data.voice
        voice.set_enabled(self.assist.pipeline_id, warm_on_wake)
        await evict(url, model)
        drop_from_page_cache(await model_file(url, model))
        await wait_until(lambda: model not in coordinator.data.held, 10, f"{model} gone")
        seen, started = len(self.events), time.monotonic()
        await self.assist.turn(
            speech_ms=SPEECH_MS, stt_seconds=STT_SECONDS, real_time=True, new_conversation=True
        )
        await wait_until(lambda: len(self.events) > seen, 30, "the voice turn")
        event = self.events[-1]
        timing = coordinator.data.timings.get(model)
        sent = [r for r in self.proxy.requests if r.at >= started]
        ours = [r for r in sent if r.path == "/api/generate" and not r.json().get("prompt")]
        agents = [
            r
            for r in sent
            if r.path == "/api/chat"
            and r.json().get("options", {}).get("num_predict") != 1  # not our prompt warm-up
        ]
        return ColdTurn(
            warm_on_wake=warm_on_wake,
            silence=event["silence_seconds"],
            agent_wait=agent_wait(event),
            dominant_stage=event["dominant_stage"],
            resident_at_intent_start=event["resident_at_intent_start"],
            hidden=event["warm_hidden_seconds"],
            our_load_seconds=timing.load_seconds if ours and timing else None,
            agent_load_server_seconds=_load_seconds(agents[-1]) if agents else None,
            event=event,
        )


def _load_seconds(request: Any) -> float | None:
    """Return the server's own ``load_duration`` of a request (its reply's last line)."""
    nanoseconds = request.last_reply_line().get("load_duration")
    return round(float(nanoseconds) / 1e9, 3) if nanoseconds is not None else None
