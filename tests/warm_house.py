"""A household of two hosts on the real servers, with the warm assistant (issue 31's proof).

The big box is the kit's second Ollama (``ollama_second``, reached through a proxy that
records what was sent): the primary agent, Home Assistant's Ollama agent on ``big-voice``
(``big``'s 1.24 GB behind the throttled disk, replies of 8 tokens). The always-on NAS is
the kit's current Ollama: the fall-back agent on ``tiny-voice`` (``tiny``, 8 tokens). Both
servers are LLM Warmth entries; the warm assistant (added through its subentry flow) is the
agent of a real Assist pipeline, or the primary agent itself for the control arm.

Used by ``tests/test_e2e_warm_assistant.py`` and ``tests/bench_warm_assistant.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import time
from typing import Any

from homeassistant.components.assist_pipeline import async_get_pipeline, async_update_pipeline
from homeassistant.config_entries import SOURCE_USER, ConfigEntry
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.llm_warmth.const import EVENT_ASSISTANT_ROUTE, EVENT_VOICE_TURN

from .assist import AGENT_SETTINGS, Assist, add_ollama_voice_agent, setup_assist
from .e2e import (
    add_server,
    drop_from_page_cache,
    evict,
    model_file,
    ollama_call,
    ollama_get,
    server_url,
    wait_until,
)
from .recording_proxy import RecordingProxy
from .voice_runs import NUM_CTX, PROMPT, make_big_voice, make_voice_model

ASSISTANT = "conversation.house_assistant"
TINY_VOICE = "tiny-voice"
# The wait the household accepts: less than the big model's cold load behind the disk.
MAX_WAIT = 2.0
SPEECH_MS = 1500
STT_SECONDS = 0.5


@dataclass
class Turn:
    """One voice turn: the voice feature's record, and the warm assistant's route (if any)."""

    voice: dict[str, Any]
    route: dict[str, Any] | None

    @property
    def silence(self) -> float:
        return float(self.voice["silence_seconds"])


@dataclass
class RealHouse:
    """The two hosts, their entries, the agents, the pipeline and what it recorded."""

    hass: HomeAssistant
    assist: Assist
    proxy: RecordingProxy
    big_url: str
    nas_url: str
    big_entry: ConfigEntry
    nas_entry: ConfigEntry
    big_model: str
    nas_model: str
    primary: str
    fallback: str
    voice: list[dict[str, Any]] = field(default_factory=list)
    routes: list[dict[str, Any]] = field(default_factory=list)

    async def use_assistant(self, on: bool) -> None:
        """Make the warm assistant (or, off: the primary agent itself) the pipeline's agent."""
        pipeline = async_get_pipeline(self.hass, self.assist.pipeline_id)
        engine = ASSISTANT if on else self.primary
        await async_update_pipeline(self.hass, pipeline, conversation_engine=engine)
        # Each arm as a household gets it: warm on wake on for a warm assistant's pipeline
        # (its default), off for the primary itself (a plain pipeline's), whichever arm the
        # one pipeline ran before.
        self.big_entry.runtime_data.voice.set_enabled(self.assist.pipeline_id, on)

    async def primary_cold(self) -> None:
        """Evict the big model and forget its file, as after a night of idle."""
        coordinator = self.big_entry.runtime_data.coordinator
        await evict(self.big_url, self.big_model)
        drop_from_page_cache(await model_file(self.big_url, self.big_model))
        await wait_until(lambda: self.big_model not in coordinator.data.held, 10, "big gone")

    async def resident(self, entry: ConfigEntry, url: str, model: str) -> None:
        """Load ``model`` with the agents' settings and wait until its entry sees it held."""
        await ollama_call(
            url,
            "/api/generate",
            {"model": model, "keep_alive": "10m", "options": {"num_ctx": NUM_CTX}},
        )
        coordinator = entry.runtime_data.coordinator
        await wait_until(lambda: model in coordinator.data.held, 15, f"{model} held")

    async def primary_warm(self) -> None:
        await self.resident(self.big_entry, self.big_url, self.big_model)

    async def primary_loaded_afresh(self) -> None:
        """Unload the big model and load it again (from the page cache): warm, with nothing
        of an earlier turn's prompt kept, the same for every arm that starts warm."""
        coordinator = self.big_entry.runtime_data.coordinator
        await evict(self.big_url, self.big_model)
        await wait_until(lambda: self.big_model not in coordinator.data.held, 10, "big gone")
        await self.primary_warm()

    async def fallback_warm(self) -> None:
        await self.resident(self.nas_entry, self.nas_url, self.nas_model)

    async def turn(self) -> Turn:
        """Run one voice turn (a new conversation), and return its records."""
        voice, routes = len(self.voice), len(self.routes)
        pipeline = async_get_pipeline(self.hass, self.assist.pipeline_id)
        via_assistant = pipeline.conversation_engine == ASSISTANT
        await self.assist.turn(
            speech_ms=SPEECH_MS, stt_seconds=STT_SECONDS, real_time=True, new_conversation=True
        )
        await wait_until(lambda: len(self.voice) > voice, 30, "the voice turn")
        if via_assistant:
            await wait_until(lambda: len(self.routes) > routes, 5, "the route")
        return Turn(self.voice[-1], self.routes[-1] if via_assistant else None)

    def sent_since(self, started: float, path: str) -> list[Any]:
        """Return what was sent to the big box (the primary) since ``started``."""
        return [r for r in self.proxy.requests if r.at >= started and r.path == path]


async def evict_all(url: str) -> None:
    """Unload every model the Ollama at ``url`` holds."""
    listed = await ollama_get(url, "/api/ps")
    models = listed.get("models")
    for model in models if isinstance(models, list) else []:
        await evict(url, str(model["name"]))


async def real_house(hass: HomeAssistant, hass_client: ClientSessionGenerator) -> RealHouse:
    """Set up the two hosts, the agents, the warm assistant and the pipeline (its agent)."""
    big_url = server_url("LLM_WARMTH_OLLAMA_SECOND_URL")
    nas_url = server_url("LLM_WARMTH_OLLAMA_CURRENT_URL")
    proxy = RecordingProxy(big_url)
    await proxy.start()
    big_model = await make_big_voice(big_url)
    nas_model = await make_voice_model(nas_url, "tiny", TINY_VOICE)
    # Nothing resident from earlier tests: Ollama runs a model of the same weights (tiny
    # for tiny-voice) in one runner, listed under the name that loaded it first.
    for url in (big_url, nas_url):
        await evict_all(url)
    big_entry = await add_server(hass, proxy.url)
    nas_entry = await add_server(hass, nas_url)
    assist = await setup_assist(
        hass, hass_client, proxy.url, big_model, num_ctx=NUM_CTX, prompt=PROMPT, title="Big box"
    )
    nas_agent = add_ollama_voice_agent(
        hass, nas_url, nas_model, title="NAS", **{**AGENT_SETTINGS, "num_ctx": NUM_CTX}
    )
    assert await hass.config_entries.async_setup(nas_agent.entry_id)
    await hass.async_block_till_done()
    registry = er.async_get(hass)
    fallback = next(
        e.entity_id
        for e in er.async_entries_for_config_entry(registry, nas_agent.entry_id)
        if e.domain == "conversation"
    )
    # The warm assistant, added as a user adds it (on the NAS's entry: always on).
    result = await hass.config_entries.subentries.async_init(
        (nas_entry.entry_id, "warm_assistant"), context={"source": SOURCE_USER}
    )
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            "name": "House assistant",
            "primary_agent": assist.agent_entity_id,
            "fallback_agents": [fallback],
            "max_wait_seconds": MAX_WAIT,
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert hass.states.get(ASSISTANT) is not None
    house = RealHouse(
        hass,
        assist,
        proxy,
        big_url,
        nas_url,
        big_entry,
        nas_entry,
        big_model,
        nas_model,
        assist.agent_entity_id,
        fallback,
    )

    @callback
    def voice(event: Event) -> None:
        house.voice.append(dict(event.data))

    @callback
    def route(event: Event) -> None:
        house.routes.append(dict(event.data))

    hass.bus.async_listen(EVENT_VOICE_TURN, voice)
    hass.bus.async_listen(EVENT_ASSISTANT_ROUTE, route)
    await house.use_assistant(True)
    return house


async def close(house: RealHouse) -> None:
    """Unload both entries and stop the proxy; the kit's models stay as they were."""
    for entry in (house.big_entry, house.nas_entry):
        await house.hass.config_entries.async_unload(entry.entry_id)
    await house.proxy.stop()


def now() -> float:
    return time.monotonic()
