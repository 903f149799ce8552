"""The Assist harness's pieces, without pytest: a wake word, speech-to-text, a satellite.

``tests/assist.py`` builds a test's pipeline from them; ``scripts/demo`` plays its voice
turns with them in its own Home Assistant (``demo/llm_warmth_demo``). The speech: 16 kHz
16-bit mono silence in 100 ms chunks; ``SpeechUntil`` stands in for Home Assistant's voice
activity detector and hears speech for a turn's first ``speech_ms``; speech-to-text then
takes ``delay`` seconds after the audio ends and hears ``text``.
"""

import asyncio
from collections.abc import AsyncGenerator, AsyncIterable
from contextlib import suppress
from dataclasses import dataclass, field
import time
from typing import Any

from homeassistant.components import stt, tts, wake_word
from homeassistant.components.assist_pipeline import PipelineEvent, PipelineEventType
from homeassistant.components.assist_pipeline.audio_enhancer import EnhancedAudioChunk
from homeassistant.components.assist_satellite import (
    AssistSatelliteConfiguration,
    AssistSatelliteEntity,
)
from homeassistant.components.stt.models import SpeechAudioProcessing
from homeassistant.components.tts.entity import TTSAudioRequest
from homeassistant.core import callback

WAKE_WORD_ID = "okay_nabu"
WAKE_WORD_PHRASE = "okay nabu"
# The wake word is heard once this much of the stream has gone by.
WAKE_WORD_AT_MS = 300
# 100 ms of 16 kHz 16-bit mono audio.
CHUNK = b"\0" * 3200
CHUNK_MS = 100
# Three silent MPEG-1 layer III frames (128 kbit/s, 44.1 kHz): audio that text-to-speech's
# cache can tag (it writes an ID3 tag into each cached answer).
SILENCE_MP3 = (b"\xff\xfb\x90\x64" + b"\0" * 413) * 3
FFMPEG_VERSION = "homeassistant.components.ffmpeg.FFVersion.get_version"
ENHANCER = "homeassistant.components.assist_pipeline.default_pipeline.MicroVadSpeexEnhancer"


def now() -> float:
    """Return ``time.monotonic()`` looked up now (the emulator's clock for its requests)."""
    return time.monotonic()


# ------------------------------------------------------------------------ results


@dataclass(frozen=True)
class TimedEvent:
    """A pipeline event as the satellite got it, and when."""

    at: float
    type: str
    data: dict[str, Any]


@dataclass
class TurnResult:
    """What the satellite saw of one turn."""

    started_at: float
    events: list[TimedEvent] = field(default_factory=list)
    # The satellite's states (the first is its state when the turn began), with their times.
    states: list[tuple[float, str]] = field(default_factory=list)
    # The text-to-speech audio's first byte at the satellite, and the end of its download.
    first_audio_at: float | None = None
    audio_done_at: float | None = None
    audio_bytes: int = 0
    # The satellite's conversation id (the chat session the turn was part of).
    conversation_id: str | None = None
    # The run was cancelled (``Assist.abort`` or another turn started during it).
    aborted: bool = False
    ended_at: float | None = None
    _waiters: list[tuple[str, asyncio.Future[TimedEvent]]] = field(default_factory=list, repr=False)

    def types(self) -> list[str]:
        """Return the events' types in order."""
        return [event.type for event in self.events]

    def state_names(self) -> list[str]:
        """Return the satellite's states in order."""
        return [state for _, state in self.states]

    def event(self, kind: str) -> TimedEvent:
        """Return the first event of ``kind`` (``KeyError`` if none came)."""
        for event in self.events:
            if event.type == kind:
                return event
        raise KeyError(kind)

    def at(self, kind: str) -> float:
        """Return when the first event of ``kind`` came."""
        return self.event(kind).at

    @property
    def error(self) -> dict[str, Any] | None:
        """Return the ``error`` event's data (``code``, ``message``), or None."""
        return next((e.data for e in self.events if e.type == PipelineEventType.ERROR), None)

    @property
    def response_text(self) -> str | None:
        """Return the agent's speech as the intent-end event gives it."""
        with suppress(KeyError):
            output = self.event(PipelineEventType.INTENT_END).data["intent_output"]
            speech: str = output["response"]["speech"]["plain"]["speech"]
            return speech
        return None

    def add(self, event: PipelineEvent) -> None:
        timed = TimedEvent(now(), str(event.type), dict(event.data or {}))
        self.events.append(timed)
        for waiter in [w for w in self._waiters if w[0] == timed.type]:
            self._waiters.remove(waiter)
            if not waiter[1].done():
                waiter[1].set_result(timed)

    async def wait_for(self, kind: str, timeout: float = 10) -> TimedEvent:
        """Return the first event of ``kind``, waiting up to ``timeout`` s for it."""
        with suppress(KeyError):
            return self.event(kind)
        future: asyncio.Future[TimedEvent] = asyncio.get_running_loop().create_future()
        self._waiters.append((kind, future))
        async with asyncio.timeout(timeout):
            return await future


# ---------------------------------------------------------------------- providers


class HarnessSTT(stt.SpeechToTextEntity):
    """Speech-to-text that hears ``text``, ``delay`` seconds after the audio ends.

    It asks for Home Assistant's voice activity detection, so the pipeline sends
    stt-vad-start and stt-vad-end and ends the audio at the end of speech.
    """

    _attr_name = "Harness STT"
    _attr_unique_id = "harness_stt"

    def __init__(self) -> None:
        self.delay = 0.3
        self.text = "tell me about the weather"

    @property
    def supported_languages(self) -> list[str]:
        return ["en"]

    @property
    def supported_formats(self) -> list[stt.AudioFormats]:
        return [stt.AudioFormats.WAV]

    @property
    def supported_codecs(self) -> list[stt.AudioCodecs]:
        return [stt.AudioCodecs.PCM]

    @property
    def supported_bit_rates(self) -> list[stt.AudioBitRates]:
        return [stt.AudioBitRates.BITRATE_16]

    @property
    def supported_sample_rates(self) -> list[stt.AudioSampleRates]:
        return [stt.AudioSampleRates.SAMPLERATE_16000]

    @property
    def supported_channels(self) -> list[stt.AudioChannels]:
        return [stt.AudioChannels.CHANNEL_MONO]

    @property
    def audio_processing(self) -> SpeechAudioProcessing:
        return SpeechAudioProcessing(
            requires_external_vad=True,
            prefers_auto_gain_enabled=False,
            prefers_noise_reduction_enabled=False,
        )

    async def async_process_audio_stream(
        self, metadata: stt.SpeechMetadata, stream: AsyncIterable[bytes]
    ) -> stt.SpeechResult:
        async for _chunk in stream:  # ends when Home Assistant hears the speech end
            pass
        await asyncio.sleep(self.delay)
        return stt.SpeechResult(self.text, stt.SpeechResultState.SUCCESS)


class HarnessTTS(tts.TextToSpeechEntity):
    """Text-to-speech with streaming input: a few bytes of "audio" per piece of text."""

    _attr_name = "Harness TTS"
    _attr_unique_id = "harness_tts"
    _attr_default_language = "en"

    @property
    def supported_languages(self) -> list[str]:
        return ["en"]

    def get_tts_audio(
        self, message: str, language: str, options: dict[str, Any]
    ) -> tts.TtsAudioType:
        return ("mp3", SILENCE_MP3)

    async def async_stream_tts_audio(self, request: TTSAudioRequest) -> tts.TTSAudioResponse:
        async def audio() -> AsyncGenerator[bytes]:
            async for _text in request.message_gen:
                yield SILENCE_MP3

        return tts.TTSAudioResponse("mp3", audio())


class HarnessWakeWord(wake_word.WakeWordDetectionEntity):
    """Hears its wake word once ``WAKE_WORD_AT_MS`` of audio have gone by."""

    _attr_name = "Harness wake word"
    _attr_unique_id = "harness_wake_word"

    async def get_supported_wake_words(self) -> list[wake_word.WakeWord]:
        return [wake_word.WakeWord(id=WAKE_WORD_ID, name="Okay Nabu")]

    async def _async_process_audio_stream(
        self, stream: AsyncIterable[tuple[bytes, int]], wake_word_id: str | None
    ) -> wake_word.DetectionResult | None:
        async for _chunk, timestamp in stream:
            if timestamp >= WAKE_WORD_AT_MS:
                return wake_word.DetectionResult(
                    wake_word_id=WAKE_WORD_ID,
                    wake_word_phrase=WAKE_WORD_PHRASE,
                    timestamp=timestamp,
                )
        return None


class HarnessSatellite(AssistSatelliteEntity):
    """A satellite that records its runs and plays (downloads) the response's audio.

    The audio is fetched when text-to-speech starts streaming (intent-progress with
    ``tts_start_streaming``) or at tts-end; when the download ends the satellite says the
    response has finished playing (back to idle), as a real one does.
    """

    _attr_name = "Harness satellite"
    _attr_unique_id = "harness_satellite"

    def __init__(self) -> None:
        # What fetches the response's audio from Home Assistant by its path (a test's
        # client; the demo's: an HTTP session on its Home Assistant's address).
        self.client: Any = None
        self.turn: TurnResult | None = None
        self.playback: asyncio.Task[None] | None = None
        self._tts_url: str | None = None

    @callback
    def async_get_configuration(self) -> AssistSatelliteConfiguration:
        return AssistSatelliteConfiguration(
            available_wake_words=[], active_wake_words=[], max_active_wake_words=1
        )

    async def async_set_configuration(self, config: AssistSatelliteConfiguration) -> None:
        return None

    @property
    def conversation_id(self) -> str | None:
        """Return the chat session the satellite's next turn continues."""
        return self._conversation_id

    @property
    def pipeline_task(self) -> asyncio.Task[Any] | None:
        """Return the running pipeline's task (None between runs)."""
        return self._pipeline_task

    async def cancel_pipeline(self) -> None:
        """Cancel the running pipeline, as a new run from the satellite does."""
        await self._cancel_running_pipeline()

    @callback
    def on_pipeline_event(self, event: PipelineEvent) -> None:
        turn = self.turn
        if turn is not None:
            turn.add(event)
        data = event.data or {}
        if event.type is PipelineEventType.RUN_START:
            self._tts_url = (data.get("tts_output") or {}).get("url")
            self.playback = None
            return
        speak = (
            event.type is PipelineEventType.INTENT_PROGRESS and data.get("tts_start_streaming")
        ) or event.type is PipelineEventType.TTS_END
        if not speak or self.playback is not None:
            return
        url = self._tts_url or (data.get("tts_output") or {}).get("url")
        if url and self.client is not None and turn is not None:
            self.playback = self.hass.async_create_task(self._play(url, turn))

    async def _play(self, url: str, turn: TurnResult) -> None:
        assert self.client is not None
        response = await self.client.get(url)
        async for chunk in response.content.iter_any():
            if turn.first_audio_at is None:
                turn.first_audio_at = now()
            turn.audio_bytes += len(chunk)
        turn.audio_done_at = now()
        self.tts_response_finished()


class SpeechUntil:
    """Stands in for ``MicroVadSpeexEnhancer``: speech before ``speech_ms``, then silence."""

    def __init__(self, speech_ms: int) -> None:
        self.speech_ms = speech_ms

    def enhance_chunk(self, audio: bytes, timestamp_ms: int) -> EnhancedAudioChunk:
        return EnhancedAudioChunk(
            audio=audio,
            timestamp_ms=timestamp_ms,
            speech_probability=1.0 if timestamp_ms < self.speech_ms else 0.0,
        )


async def audio_stream(total_ms: int, pace: float = 0.01) -> AsyncGenerator[bytes]:
    """Yield ``total_ms`` of audio in 100 ms chunks, ``pace`` real seconds apart."""
    for _ in range(total_ms // CHUNK_MS):
        yield CHUNK
        await asyncio.sleep(pace)
