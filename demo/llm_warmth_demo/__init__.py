"""The demo's household, in its own Home Assistant: a voice satellite that speaks, and a past.

Not part of LLM Warmth: ``scripts/demo`` installs it next to the integration (it is
``custom_components/llm_warmth_demo`` there) so that the features a household turns on
have something to show from the first minute:

- **Voice**: the Assist harness's pieces (``tests/assist_pieces.py``): a wake word heard
  300 ms into the audio, speech-to-text that hears a set text a set time after the speech
  ends, text-to-speech, and a satellite that plays the reply's audio. The demo joins them
  with Home Assistant's Ollama agent in a pipeline (through the websocket API, as the UI
  does); ``llm_warmth_demo.voice_turn`` speaks one command to the satellite. LLM Warmth
  finds the pipeline as it would any: a voice device, its silence graph.
- **The past**: ``llm_warmth_demo.record_uses`` hands LLM Warmth's usage feature weeks of
  a model's daily uses through its public ``record``, as if it had followed the household
  all along: a learnt routine, the next expected use, auto-warm's due time.

The speech stand-in replaces Home Assistant's voice activity detector for the turn (as the
test harness does): the audio is silence, which it would hear as no speech at all.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any, Final
from unittest.mock import patch

from homeassistant.components.assist_pipeline.models import PipelineStage
from homeassistant.config_entries import ConfigEntry
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.typing import ConfigType
from homeassistant.util import dt as dt_util
import probatio as vol

from tests.assist_pieces import (
    CHUNK_MS,
    ENHANCER,
    WAKE_WORD_AT_MS,
    HarnessSatellite,
    HarnessSTT,
    HarnessTTS,
    HarnessWakeWord,
    SpeechUntil,
    TurnResult,
    audio_stream,
    now,
)

from .const import DOMAIN

PLATFORMS: Final = [Platform.STT, Platform.TTS, Platform.WAKE_WORD, Platform.ASSIST_SATELLITE]
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)
# How long the satellite may take to play a reply.
PLAYBACK_TIMEOUT: Final = 30.0


class DemoSpeechToText(HarnessSTT):
    """Speech-to-text that hears what the demo says, a set time after the speech ends."""

    _attr_name = "Demo speech-to-text"
    _attr_unique_id = "demo_stt"


class DemoTextToSpeech(HarnessTTS):
    """Text-to-speech that answers with a moment of silence per piece of text."""

    _attr_name = "Demo text-to-speech"
    _attr_unique_id = "demo_tts"


class DemoWakeWord(HarnessWakeWord):
    """Hears "okay nabu" 300 ms into the audio."""

    _attr_name = "Demo wake word"
    _attr_unique_id = "demo_wake_word"


class KitchenSatellite(HarnessSatellite):
    """The kitchen's voice satellite: it plays each reply's audio, then is idle again."""

    _attr_name = "Kitchen satellite"
    _attr_unique_id = "demo_kitchen_satellite"


@dataclass
class DemoHousehold:
    """The household's speech services and satellite."""

    stt: DemoSpeechToText
    tts: DemoTextToSpeech
    wake_word: DemoWakeWord
    satellite: KitchenSatellite
    lock: asyncio.Lock


type DemoHouseholdEntry = ConfigEntry[DemoHousehold]


class _Audio:
    """Fetches a reply's audio by its path from this Home Assistant (as a speaker would)."""

    def __init__(self, hass: HomeAssistant) -> None:
        self.hass = hass

    async def get(self, path: str) -> Any:
        session = async_get_clientsession(self.hass)
        return await session.get(f"http://127.0.0.1:{self.hass.config.api.port}{path}")  # type: ignore[union-attr]


VOICE_TURN_SCHEMA = vol.Schema(
    {
        vol.Required("text"): cv.string,
        vol.Optional("speech_seconds", default=1.5): vol.All(
            vol.Coerce(float), vol.Range(min=0.3, max=10)
        ),
        vol.Optional("stt_seconds", default=0.5): vol.All(
            vol.Coerce(float), vol.Range(min=0, max=10)
        ),
    }
)
RECORD_USES_SCHEMA = vol.Schema(
    {
        vol.Required("model"): cv.string,
        vol.Optional("days", default=21): vol.All(vol.Coerce(int), vol.Range(min=1, max=56)),
        vol.Optional("time"): cv.time,
        vol.Optional("minutes", default=[0, 2, 5]): vol.All(
            cv.ensure_list, [vol.All(vol.Coerce(int), vol.Range(min=0, max=120))]
        ),
    }
)


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Offer the household's two actions."""
    hass.services.async_register(
        DOMAIN,
        "voice_turn",
        _async_voice_turn,
        schema=VOICE_TURN_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    hass.services.async_register(
        DOMAIN,
        "record_uses",
        _async_record_uses,
        schema=RECORD_USES_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    return True


async def async_setup_entry(hass: HomeAssistant, entry: DemoHouseholdEntry) -> bool:
    """Set up the speech services and the satellite."""
    satellite = KitchenSatellite()
    satellite.client = _Audio(hass)
    entry.runtime_data = DemoHousehold(
        DemoSpeechToText(), DemoTextToSpeech(), DemoWakeWord(), satellite, asyncio.Lock()
    )
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    return True


async def async_unload_entry(hass: HomeAssistant, entry: DemoHouseholdEntry) -> bool:
    """Unload them."""
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)


def _household(hass: HomeAssistant) -> DemoHousehold:
    entries: list[DemoHouseholdEntry] = hass.config_entries.async_loaded_entries(DOMAIN)
    if not entries:
        raise ServiceValidationError("the demo household is not set up")
    return entries[0].runtime_data


async def _async_voice_turn(call: ServiceCall) -> ServiceResponse:
    """Say a command to the kitchen satellite: its wake word, the command, then the reply.

    In real time: the wake word 300 ms in, then ``speech_seconds`` of speech; speech-to-text
    hears ``text`` ``stt_seconds`` after the speech ends; the agent answers; the satellite
    plays the reply. Returns once it is idle again.
    """
    household = _household(call.hass)
    satellite = household.satellite
    speech_ms = round(call.data["speech_seconds"] * 1000)
    async with household.lock:
        household.stt.delay = call.data["stt_seconds"]
        household.stt.text = call.data["text"]
        turn = TurnResult(started_at=now())
        satellite.turn = turn
        audio = audio_stream(WAKE_WORD_AT_MS + CHUNK_MS + speech_ms + 5000, pace=CHUNK_MS / 1000)
        try:
            with patch(ENHANCER, lambda *_args, **_kwargs: SpeechUntil(speech_ms)):
                await satellite.async_accept_pipeline_from_satellite(
                    audio, start_stage=PipelineStage.WAKE_WORD
                )
            if (playback := satellite.playback) is not None:
                with suppress(asyncio.CancelledError, TimeoutError):
                    async with asyncio.timeout(PLAYBACK_TIMEOUT):
                        await playback
        finally:
            satellite.turn = None
    return {"reply": turn.response_text, "error": turn.error}


async def _async_record_uses(call: ServiceCall) -> ServiceResponse:
    """Record a model's daily uses of the past ``days`` days in LLM Warmth's usage feature.

    Each day at ``time`` (local; by default the next ten-minute mark at least four minutes
    from now, so that today's is still ahead) and ``minutes`` after it. Returns the time of
    day and its next occurrence.
    """
    hass = call.hass
    model: str = call.data["model"]
    usage = next(
        (
            entry.runtime_data.usage
            for entry in hass.config_entries.async_loaded_entries("llm_warmth")
            if getattr(entry.runtime_data, "usage", None) is not None
            and model in entry.runtime_data.coordinator.data.models
        ),
        None,
    )
    if usage is None:
        raise ServiceValidationError(f"no LLM Warmth server has {model}")
    moment = dt_util.now()
    at: time = call.data.get("time") or _next_mark(moment)
    today = moment.date()
    recorded = 0
    for days_ago in range(call.data["days"], 0, -1):
        day = datetime.combine(today - timedelta(days=days_ago), at, tzinfo=moment.tzinfo)
        for minutes in sorted(call.data["minutes"]):
            usage.record(model, dt_util.as_utc(day + timedelta(minutes=minutes)))
            recorded += 1
    upcoming = datetime.combine(today, at, tzinfo=moment.tzinfo)
    if upcoming <= moment:
        upcoming += timedelta(days=1)
    return {
        "model": model,
        "recorded": recorded,
        "time": at.isoformat(timespec="minutes"),
        "next": upcoming.isoformat(),
    }


def _next_mark(moment: datetime) -> time:
    """Return the next ten-minute mark at least four minutes after ``moment`` (its time).

    The planner learns a day in ten-minute bins: a routine at a mark is expected from
    there. Four minutes: the demo's morning and a first look at it come first, and
    auto-warm's load (a minute ahead) is not one of the morning's.
    """
    later = moment + timedelta(minutes=4)
    mark = later.replace(minute=later.minute // 10 * 10, second=0, microsecond=0)
    if mark < later:
        mark += timedelta(minutes=10)
    return mark.time()
