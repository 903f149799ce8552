"""A real Assist pipeline inside the test Home Assistant (issue 21).

A test integration (domain ``test``) provides small speech-to-text, text-to-speech and
wake-word entities and a satellite (``assist_pieces``: the demo plays its turns with them);
Home Assistant's own ``ollama`` integration is the conversation agent, talking to the
Ollama emulator (or any Ollama). One pipeline joins them and is the preferred one, so the
satellite runs it.

    from .assist import Assist, assist_fixture, hass_config_dir_fixture  # noqa: F401

    async def test_a_turn(assist: Assist, emulator: OllamaEmulator) -> None:
        turn = await assist.turn(stt_seconds=0.5)
        assert turn.types()[-1] == "run-end"
        assert turn.state_names() == ["idle", "listening", "processing", "responding", "idle"]

``setup_assist`` builds the same for a test that wants other agent settings or model.
Times are ``time.monotonic()`` seconds, as the emulator's ``RecordedRequest.at``.

The speech: the audio is 16 kHz 16-bit mono silence in 100 ms chunks; Home Assistant's
voice activity detector (``MicroVadSpeexEnhancer``) is replaced by one that hears speech
for the turn's first ``speech_ms`` of audio. Speech-to-text then takes ``stt_seconds``
after the audio ends.
"""

import asyncio
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
import json
from typing import Any, Literal
from unittest.mock import patch

from homeassistant.components import conversation
from homeassistant.components.assist_pipeline import (
    async_create_default_pipeline,
    async_update_pipeline,
)
from homeassistant.components.assist_pipeline.const import DATA_LAST_WAKE_UP
from homeassistant.components.assist_pipeline.models import PipelineStage
from homeassistant.components.assist_pipeline.pipeline import KEY_ASSIST_PIPELINE
from homeassistant.components.assist_pipeline.runtime import PipelineData, PipelineRunDebug
from homeassistant.config_entries import ConfigEntry, ConfigFlow
from homeassistant.const import Platform
from homeassistant.core import Event, EventStateChangedData, HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.event import async_track_state_change_event
from homeassistant.setup import async_setup_component
from homeassistant.util.limited_size_dict import LimitedSizeDict
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockModule,
    MockPlatform,
    mock_config_flow,
    mock_integration,
    mock_platform,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from .assist_pieces import (
    CHUNK_MS,
    ENHANCER,
    FFMPEG_VERSION,
    WAKE_WORD_AT_MS,
    WAKE_WORD_ID,
    WAKE_WORD_PHRASE,
    HarnessSatellite,
    HarnessSTT,
    HarnessTTS,
    HarnessWakeWord,
    SpeechUntil,
    TimedEvent,
    TurnResult,
    audio_stream,
    now,
)
from .conftest import LLAMA, add_entry
from .ollama_emulator import OllamaEmulator

__all__ = [
    "AGENT_SETTINGS",
    "Assist",
    "HarnessSatellite",
    "TimedEvent",
    "TurnResult",
    "assist_fixture",
    "hass_config_dir_fixture",
    "pipeline_debug_broken",
    "setup_assist",
]

TEST_DOMAIN = "test"
# What the turns' agent is set to unless a test says otherwise: a voice assistant's.
AGENT_SETTINGS: dict[str, Any] = {
    "prompt": "You are a voice assistant.",
    "num_ctx": 4096,
    "keep_alive": -1,
    "think": False,
    "max_history": 20,
}


@pytest.fixture(name="hass_config_dir")
def hass_config_dir_fixture(hass_tmp_config_dir: str) -> str:
    """Text-to-speech writes its cache under the config dir: keep it in a temporary one."""
    return hass_tmp_config_dir


# -------------------------------------------------------------------------- harness


@dataclass
class Assist:
    """The pipeline, its providers, the agent and the satellite of a test."""

    hass: HomeAssistant
    satellite: HarnessSatellite
    stt: HarnessSTT
    pipeline_id: str
    agent_entity_id: str
    agent_entry: MockConfigEntry
    stt_entity_id: str
    tts_entity_id: str
    wake_word_entity_id: str
    emulator: OllamaEmulator | None = None
    turns: list[TurnResult] = field(default_factory=list)
    _speech_ms: int = 1500
    _running: int = 0
    _patcher: Any = None
    # How many turns there are once the one start_turn started has begun.
    _started: int = 1

    @property
    def pipeline_data(self) -> PipelineData:
        """Return Home Assistant's Assist pipeline data (``hass.data["assist_pipeline"]``)."""
        return self.hass.data[KEY_ASSIST_PIPELINE]

    def debug_runs(self) -> list[PipelineRunDebug]:
        """Return the pipeline's runs in Home Assistant's debug buffer, oldest first."""
        return list(self.pipeline_data.pipeline_debug.get(self.pipeline_id, {}).values())

    async def turn(
        self,
        *,
        wake: bool = False,
        speech_ms: int = 1500,
        stt_seconds: float = 0.3,
        text: str | None = None,
        audio_timeout: float = 10,
        wake_cooldown: bool = False,
        real_time: bool = False,
        new_conversation: bool = False,
    ) -> TurnResult:
        """Run one turn from the satellite and return what it saw.

        ``wake``: the pipeline starts at wake-word detection (Home Assistant's wake word
        entity), else at speech-to-text (the satellite heard its wake word itself).
        ``speech_ms``: how long the speaker talks; ``stt_seconds``: how long speech-to-text
        takes after the audio ends; ``text``: what it hears. The turn ends once the
        satellite is idle again (its audio played; cut short if the run failed). A turn
        cancelled by ``abort`` or by another turn returns with ``aborted``.
        ``wake_cooldown``: keep Home Assistant's memory of the last wake-ups (a wake word
        heard again within 2 s is a duplicate: the run ends with an error); by default the
        turn forgets it, as turns seconds apart are. ``real_time``: the audio comes as fast
        as it is spoken (100 ms a chunk), not ten times faster. ``new_conversation``: start
        a new conversation (by default a turn continues the satellite's last one, as Home
        Assistant does for a while, with its history in the agent's prompt).
        """
        if new_conversation:
            self.satellite._conversation_id = None
        if not wake_cooldown:
            self.hass.data[DATA_LAST_WAKE_UP].clear()
        result = TurnResult(started_at=now())
        self.turns.append(result)
        self.stt.delay = stt_seconds
        if text is not None:
            self.stt.text = text
        self._speech_ms = speech_ms
        satellite = self.satellite
        satellite.turn = result
        entity_id = satellite.entity_id
        if (state := self.hass.states.get(entity_id)) is not None:
            result.states.append((now(), state.state))

        @callback
        def on_state(event: Event[EventStateChangedData]) -> None:
            if (new := event.data["new_state"]) is not None:
                result.states.append((now(), new.state))

        unsubscribe = async_track_state_change_event(self.hass, [entity_id], on_state)
        self._enter()
        try:
            lead_ms = WAKE_WORD_AT_MS + CHUNK_MS if wake else 0
            stream = audio_stream(
                lead_ms + speech_ms + 5000, pace=CHUNK_MS / 1000 if real_time else 0.01
            )
            try:
                await satellite.async_accept_pipeline_from_satellite(
                    stream,
                    start_stage=PipelineStage.WAKE_WORD if wake else PipelineStage.STT,
                    wake_word_phrase=None if wake else WAKE_WORD_PHRASE,
                )
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise  # the test cancelled the turn itself
                result.aborted = True
            result.conversation_id = satellite.conversation_id
            playback = satellite.playback if satellite.turn is result else None
            if playback is not None:
                if result.aborted or result.error is not None:
                    playback.cancel()
                with suppress(asyncio.CancelledError, TimeoutError):
                    async with asyncio.timeout(audio_timeout):
                        await playback
            await self.hass.async_block_till_done()
        finally:
            self._leave()
            unsubscribe()
            if satellite.turn is result:
                satellite.turn = None
        result.ended_at = now()
        return result

    def start_turn(self, **kwargs: Any) -> asyncio.Task[TurnResult]:
        """Start ``turn(**kwargs)`` as a task (to act during it); returns the task."""
        self._started = len(self.turns) + 1
        return asyncio.create_task(self.turn(**kwargs))

    async def wait_for(self, kind: str, timeout: float = 10) -> TimedEvent:
        """Wait for an event of ``kind`` in the turn started last with start_turn."""
        for _ in range(100):
            if len(self.turns) >= self._started:
                break
            await asyncio.sleep(0)
        return await self.turns[-1].wait_for(kind, timeout)

    async def abort(self) -> None:
        """Cancel the running pipeline (as a new run from the satellite does)."""
        await self.satellite.cancel_pipeline()

    # --------------------------------------------------------------- agent faults

    def _emulator(self) -> OllamaEmulator:
        if self.emulator is None:
            raise RuntimeError("the agent's faults need the emulator (setup_assist emulator=)")
        return self.emulator

    def fail_agent(
        self,
        kind: Literal["http", "error_line", "drop", "hang"] = "http",
        *,
        status: int = 500,
        message: str = "model runner has unexpectedly stopped",
        after_chunks: int = 1,
        times: int | None = 1,
    ) -> None:
        """Make the agent's next chat(s) on the emulator fail.

        ``http``: /api/chat answers ``status`` with ``{"error": message}`` (the ollama client
        raises; the agent's error). ``error_line``/``drop``/``hang``: the streamed reply
        breaks after ``after_chunks`` chunks (an error line, a dropped connection: the
        server down mid-turn, or no more words).
        """
        emulator = self._emulator()
        if kind == "http":
            emulator.inject(
                "/api/chat",
                status=status,
                body=f'{{"error":"{message}"}}',
                times=times,
                method="POST",
            )
        else:
            emulator.inject_stream_fault(
                kind=kind, after_chunks=after_chunks, message=message, times=times
            )

    # ------------------------------------------------------------ internal state

    def _enter(self) -> None:
        if self._running == 0:
            self._patcher = patch(ENHANCER, self._enhancer)
            self._patcher.start()
        self._running += 1

    def _leave(self) -> None:
        self._running -= 1
        if self._running == 0 and self._patcher is not None:
            self._patcher.stop()
            self._patcher = None

    def _enhancer(self, *args: Any, **kwargs: Any) -> SpeechUntil:
        return SpeechUntil(self._speech_ms)


@contextmanager
def pipeline_debug_broken(
    hass: HomeAssistant, how: Literal["missing", "no_runs", "no_data"] = "missing"
) -> Iterator[None]:
    """Break Home Assistant's pipeline debug internals for the ``with`` block.

    ``missing``: ``hass.data["assist_pipeline"]`` has no ``pipeline_debug`` (Home
    Assistant's own runs then fail as they start: it writes each run there).
    ``no_runs``: the debug buffer keeps no run (as if each had been pushed out: Home
    Assistant runs on, and a reader finds nothing). ``no_data``: no
    ``hass.data["assist_pipeline"]`` at all.
    """
    data: PipelineData = hass.data[KEY_ASSIST_PIPELINE]
    if how == "no_data":
        hass.data.pop(KEY_ASSIST_PIPELINE)
        try:
            yield
        finally:
            hass.data[KEY_ASSIST_PIPELINE] = data
        return
    saved = data.pipeline_debug
    if how == "missing":
        del data.pipeline_debug
    else:
        data.pipeline_debug = _KeepsNothing()
    try:
        yield
    finally:
        data.pipeline_debug = saved


class _KeepsNothing(dict[str, LimitedSizeDict[str, PipelineRunDebug]]):
    """A debug buffer whose pipelines keep no run."""

    def __missing__(self, key: str) -> LimitedSizeDict[str, PipelineRunDebug]:
        self[key] = LimitedSizeDict(size_limit=0)
        return self[key]

    def __contains__(self, key: object) -> bool:
        return True


# ---------------------------------------------------------------------------- setup


def _platform(entity: Any) -> MockPlatform:
    async def setup_entry(
        hass: HomeAssistant, entry: ConfigEntry, add: AddConfigEntryEntitiesCallback
    ) -> None:
        add([entity])

    return MockPlatform(async_setup_entry=setup_entry)


class _HarnessFlow(ConfigFlow):
    VERSION = 1


async def _setup_providers(
    hass: HomeAssistant,
) -> tuple[HarnessSTT, HarnessSatellite]:
    stt_entity, satellite = HarnessSTT(), HarnessSatellite()

    async def setup_entry(hass: HomeAssistant, entry: ConfigEntry) -> bool:
        await hass.config_entries.async_forward_entry_setups(
            entry, [Platform.STT, Platform.TTS, Platform.WAKE_WORD, Platform.ASSIST_SATELLITE]
        )
        return True

    mock_integration(hass, MockModule(domain=TEST_DOMAIN, async_setup_entry=setup_entry))
    mock_platform(hass, f"{TEST_DOMAIN}.config_flow")
    mock_platform(hass, f"{TEST_DOMAIN}.stt", _platform(stt_entity))
    mock_platform(hass, f"{TEST_DOMAIN}.tts", _platform(HarnessTTS()))
    mock_platform(hass, f"{TEST_DOMAIN}.wake_word", _platform(HarnessWakeWord()))
    mock_platform(hass, f"{TEST_DOMAIN}.assist_satellite", _platform(satellite))
    with mock_config_flow(TEST_DOMAIN, _HarnessFlow):
        entry = MockConfigEntry(domain=TEST_DOMAIN)
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    return stt_entity, satellite


def add_ollama_voice_agent(
    hass: HomeAssistant, url: str, model: str, *, title: str, **settings: Any
) -> MockConfigEntry:
    """Home Assistant's Ollama integration at ``url`` with one agent, at its current version.

    (``conftest.add_ollama_agent`` makes a version 1 entry, which Home Assistant's Ollama
    would migrate as it sets up: it is for entries that are only read.)
    """
    return add_entry(
        hass,
        MockConfigEntry(
            domain="ollama",
            title="Ollama",
            version=3,
            minor_version=3,
            data={"url": url},
            subentries_data=[
                {
                    "data": {"model": model, **settings},
                    "subentry_type": "conversation",
                    "title": title,
                    "unique_id": None,
                }
            ],
        ),
    )


OPENAI_DOMAIN = "test_openai"


class HarnessOpenAIAgent(conversation.ConversationEntity):
    """An OpenAI-compatible agent (as Extended OpenAI Conversation is) for the tests.

    Its entry names the server's base URL and the model in the usual keys (``base_url``,
    ``chat_model``); each turn streams ``/chat/completions`` into the chat log.
    """

    _attr_supports_streaming = True
    _attr_has_entity_name = True
    _attr_name = None

    def __init__(self, entry: ConfigEntry) -> None:
        self.entry = entry
        self._attr_unique_id = entry.entry_id

    @property
    def supported_languages(self) -> Literal["*"]:
        return "*"

    async def _async_handle_message(
        self, user_input: conversation.ConversationInput, chat_log: conversation.ChatLog
    ) -> conversation.ConversationResult:
        await chat_log.async_provide_llm_data(
            user_input.as_llm_context(OPENAI_DOMAIN), None, AGENT_SETTINGS["prompt"], None
        )
        async for _content in chat_log.async_add_delta_content_stream(
            self.entity_id, self._stream(user_input.text)
        ):
            pass
        return conversation.async_get_result_from_chat_log(user_input, chat_log)

    async def _stream(self, text: str) -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
        yield {"role": "assistant"}
        body = {
            "model": self.entry.data["chat_model"],
            "messages": [
                {"role": "system", "content": AGENT_SETTINGS["prompt"]},
                {"role": "user", "content": text},
            ],
            "stream": True,
        }
        session = async_get_clientsession(self.hass)
        url = f"{self.entry.data['base_url']}/chat/completions"
        async with session.post(url, json=body) as response:
            response.raise_for_status()
            async for line in response.content:
                if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                    continue
                choices = json.loads(line[6:]).get("choices") or [{}]
                if content := (choices[0].get("delta") or {}).get("content"):
                    yield {"content": content}


async def add_openai_voice_agent(hass: HomeAssistant, url: str, model: str) -> MockConfigEntry:
    """Set up an OpenAI-compatible agent (domain ``test_openai``) at ``url`` for ``model``."""

    async def setup_entry(hass: HomeAssistant, entry: ConfigEntry) -> bool:
        await hass.config_entries.async_forward_entry_setups(entry, [Platform.CONVERSATION])
        return True

    mock_integration(hass, MockModule(domain=OPENAI_DOMAIN, async_setup_entry=setup_entry))
    mock_platform(hass, f"{OPENAI_DOMAIN}.config_flow")
    entry = MockConfigEntry(
        domain=OPENAI_DOMAIN,
        title="OpenAI-compatible agent",
        data={"base_url": f"{url}/v1", "chat_model": model},
    )
    mock_platform(hass, f"{OPENAI_DOMAIN}.conversation", _platform(HarnessOpenAIAgent(entry)))
    entry.add_to_hass(hass)
    with mock_config_flow(OPENAI_DOMAIN, _HarnessFlow):
        assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    return entry


def _entity_id(hass: HomeAssistant, domain: str, platform: str, entry_id: str) -> str:
    registry = er.async_get(hass)
    return next(
        e.entity_id
        for e in er.async_entries_for_config_entry(registry, entry_id)
        if e.domain == domain and e.platform == platform
    )


async def setup_assist(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    url: str,
    model: str = LLAMA,
    *,
    emulator: OllamaEmulator | None = None,
    title: str = "Voice assistant",
    openai: bool = False,
    **agent_settings: Any,
) -> Assist:
    """Set up the providers, the satellite, Home Assistant's Ollama agent and the pipeline.

    ``agent_settings`` (prompt, num_ctx, keep_alive, think, max_history) replace
    ``AGENT_SETTINGS``'s. ``emulator``: the server at ``url``, for the agent's faults.
    ``openai``: the agent is an OpenAI-compatible one at ``url`` (llama-swap,
    llama-server) instead of Home Assistant's Ollama agent.
    """
    # Text-to-speech needs ffmpeg's integration, which asks the ffmpeg binary its version.
    with patch(FFMPEG_VERSION, return_value="6.1.1"):
        for domain in ("homeassistant", "assist_pipeline", "assist_satellite"):
            assert await async_setup_component(hass, domain, {})
    stt_entity, satellite = await _setup_providers(hass)
    if openai:
        agent_entry = await add_openai_voice_agent(hass, url, model)
    else:
        agent_entry = add_ollama_voice_agent(
            hass, url, model, title=title, **{**AGENT_SETTINGS, **agent_settings}
        )
        assert await hass.config_entries.async_setup(agent_entry.entry_id)
        await hass.async_block_till_done()
    test_entry_id = satellite.platform.config_entry.entry_id  # type: ignore[union-attr]
    agent_id = _entity_id(
        hass, "conversation", OPENAI_DOMAIN if openai else "ollama", agent_entry.entry_id
    )
    stt_id = _entity_id(hass, "stt", TEST_DOMAIN, test_entry_id)
    tts_id = _entity_id(hass, "tts", TEST_DOMAIN, test_entry_id)
    wake_id = _entity_id(hass, "wake_word", TEST_DOMAIN, test_entry_id)
    pipeline = await async_create_default_pipeline(
        hass, stt_engine_id=stt_id, tts_engine_id=tts_id, pipeline_name="Harness"
    )
    assert pipeline is not None
    await async_update_pipeline(
        hass,
        pipeline,
        conversation_engine=agent_id,
        conversation_language="*",
        wake_word_entity=wake_id,
        wake_word_id=WAKE_WORD_ID,
    )
    hass.data[KEY_ASSIST_PIPELINE].pipeline_store.async_set_preferred_item(pipeline.id)
    satellite.client = await hass_client()
    return Assist(
        hass=hass,
        satellite=satellite,
        stt=stt_entity,
        pipeline_id=pipeline.id,
        agent_entity_id=agent_id,
        agent_entry=agent_entry,
        stt_entity_id=stt_id,
        tts_entity_id=tts_id,
        wake_word_entity_id=wake_id,
        emulator=emulator,
    )


@pytest.fixture(name="assist")
async def assist_fixture(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, emulator: OllamaEmulator
) -> Assist:
    """A real Assist pipeline with Home Assistant's Ollama agent on the emulator's llama."""
    return await setup_assist(hass, hass_client, emulator.url, LLAMA, emulator=emulator)
