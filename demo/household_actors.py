"""The demo household's actors in its Home Assistant: its voice, its past, its turns.

Set up through Home Assistant's public HTTP and websocket APIs (``home_assistant.py``'s
``Session``), as the frontend does: the household's satellite and speech services, an
agent on Home Assistant's Ollama integration and the Assist pipeline that joins them;
three weeks of uses for LLM Warmth to learn a routine from; warming at the wake turned on;
and a command said to the satellite.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from tests.assist_pieces import WAKE_WORD_ID

from .home_assistant import Session, flow

# The voice assistant's agent (Home Assistant's Ollama integration): keeps its model 30 s
# after each turn, as the household's other clients do.
AGENT = {
    "name": "Voice assistant",
    "prompt": "You are a voice assistant. Answer in one short sentence.",
    "num_ctx": 4096,
    "max_history": 20,
    "keep_alive": 30,
    "think": False,
}


# What assist_pipeline/pipeline/update asks for (each field, as the pipeline has it).
PIPELINE_FIELDS = (
    "name",
    "language",
    "conversation_language",
    "stt_engine",
    "stt_language",
    "tts_engine",
    "tts_language",
    "tts_voice",
    "wake_word_entity",
    "wake_word_id",
)


async def add_household(session: Session, server_url: str, model: str) -> dict[str, Any]:
    """Give the demo's household a voice: its satellite, an agent on ``model``, a pipeline.

    The household (its speech services and kitchen satellite), Home Assistant's Ollama
    integration at ``server_url`` with a voice assistant agent, and an Assist pipeline that
    joins them, made the preferred one (the satellite's); return the pipeline.
    """
    await flow(session, "/api/config/config_entries/flow", "llm_warmth_demo")
    agent = await _ollama_agent(session, server_url, {**AGENT, "model": model})
    stt, tts, wake = [
        await _entity(session, domain, "llm_warmth_demo") for domain in ("stt", "tts", "wake_word")
    ]
    (pipeline,) = await session.websocket(
        {
            "type": "assist_pipeline/pipeline/create",
            "name": "Kitchen",
            "language": "en",
            "conversation_engine": agent,
            "conversation_language": "en",
            "stt_engine": stt,
            "stt_language": "en",
            "tts_engine": tts,
            "tts_language": "en",
            "tts_voice": None,
            "wake_word_entity": wake,
            "wake_word_id": WAKE_WORD_ID,
        }
    )
    await session.websocket(
        {"type": "assist_pipeline/pipeline/set_preferred", "pipeline_id": pipeline["id"]}
    )
    return dict(pipeline)


async def add_warm_assistant(
    session: Session, entry_id: str, nas_url: str, nas_model: str, pipeline: dict[str, Any]
) -> str:
    """Answer the kitchen from what is warm: the NAS's agent beside the GPU box's.

    Home Assistant's Ollama integration at the NAS with an agent on ``nas_model`` (kept
    loaded), a warm assistant on the GPU box's entry (``entry_id``) whose primary is the
    pipeline's agent and whose fall-back is the NAS's, and the pipeline answered by it.
    Return the warm assistant's entity.
    """
    nas = {**AGENT, "name": "NAS assistant", "model": nas_model, "keep_alive": -1}
    nas_agent = await _ollama_agent(session, nas_url, nas)
    await flow(
        session,
        "/api/config/config_entries/subentries/flow",
        [entry_id, "warm_assistant"],
        {
            "name": "House assistant",
            "primary_agent": pipeline["conversation_engine"],
            "fallback_agents": [nas_agent],
            "max_wait_seconds": 2,
        },
    )
    assistant = await _entity(session, "conversation", "llm_warmth", entry_id, timeout=60)
    fields = {k: pipeline[k] for k in PIPELINE_FIELDS}
    await session.websocket(
        {
            "type": "assist_pipeline/pipeline/update",
            "pipeline_id": pipeline["id"],
            **fields,
            "conversation_engine": assistant,
        }
    )
    return assistant


async def _ollama_agent(session: Session, url: str, agent: dict[str, Any]) -> str:
    """Add Home Assistant's Ollama integration at ``url`` with one agent; return its entity."""
    ollama = await flow(session, "/api/config/config_entries/flow", "ollama", {"url": url})
    entry_id = ollama["result"]["entry_id"]
    await flow(
        session, "/api/config/config_entries/subentries/flow", [entry_id, "conversation"], agent
    )
    return await _entity(session, "conversation", "ollama", entry_id, timeout=60)


async def _entity(
    session: Session, domain: str, platform: str, entry_id: str | None = None, timeout: float = 30
) -> str:
    """Return the first entity of ``domain`` of a platform (of an entry), once there is one."""
    async with asyncio.timeout(timeout):
        while True:
            (entities,) = await session.websocket({"type": "config/entity_registry/list"})
            for entity in entities:
                if (
                    entity["entity_id"].startswith(f"{domain}.")
                    and entity["platform"] == platform
                    and entry_id in (None, entity["config_entry_id"])
                ):
                    return str(entity["entity_id"])
            await asyncio.sleep(0.5)


async def call(session: Session, domain: str, service: str, **data: Any) -> Any:
    """Call an action through the websocket API; return its response."""
    (answer,) = await session.websocket(
        {
            "type": "call_service",
            "domain": domain,
            "service": service,
            "service_data": data,
            "return_response": True,
        }
    )
    return answer["response"]


async def learn_household(session: Session, entry_id: str, routine: str, new: str) -> datetime:
    """Give LLM Warmth the household's past; return when the routine comes next.

    Three weeks of the ``routine`` model's daily uses (a learnt routine; its auto-warm
    turned on), three days of the ``new`` model's (still learning).
    """
    answer = await call(session, "llm_warmth_demo", "record_uses", model=routine, days=21)
    await call(session, "llm_warmth_demo", "record_uses", model=new, days=3, minutes=[0, 20])
    switch = await _entity_by_unique_id(session, "switch", f"{entry_id}_{routine}_auto_warm")
    await session.post("/api/services/switch/turn_on", {"entity_id": switch})
    return datetime.fromisoformat(answer["next"])


async def _entity_by_unique_id(session: Session, domain: str, unique_id: str) -> str:
    (entities,) = await session.websocket({"type": "config/entity_registry/list"})
    return next(
        str(e["entity_id"])
        for e in entities
        if e["unique_id"] == unique_id and e["entity_id"].startswith(f"{domain}.")
    )


async def warm_on_wake(session: Session) -> None:
    """Turn on warming at the wake for every pipeline LLM Warmth follows (one, here)."""
    (entities,) = await session.websocket({"type": "config/entity_registry/list"})
    switches = [
        e["entity_id"]
        for e in entities
        if e["platform"] == "llm_warmth" and e["unique_id"].endswith("_voice_warm_on_wake")
    ]
    await session.post("/api/services/switch/turn_on", {"entity_id": switches})


async def voice_turn(session: Session, text: str) -> str:
    """Say a command to the household's satellite; return the reply (or the error)."""
    answer = await call(session, "llm_warmth_demo", "voice_turn", text=text)
    if answer.get("error"):
        return f"the turn ended with an error: {answer['error']}"
    return f'"{answer.get("reply")}"'
