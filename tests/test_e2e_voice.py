"""Voice turns on the real Ollama: Home Assistant's own Ollama agent, a real Assist pipeline.

Through a proxy that counts what was sent, on the integration's own timers: a cold turn
is explained as the model's load (the run's own stamps, the server's residency), and
warming at the wake loads the model while the user speaks, before the agent asks.
"""

from __future__ import annotations

import time

from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import async_capture_events
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.llm_warmth.const import EVENT_VOICE_TURN

from .assist import hass_config_dir_fixture, setup_assist  # noqa: F401 (a fixture)
from .e2e import add_server, evict, server_url, wait_until
from .recording_proxy import RecordingProxy
from .voice_runs import NUM_CTX, PROMPT, ColdTurns, agent_wait, make_big_voice

pytestmark = pytest.mark.e2e


async def test_a_cold_turn_then_warm_on_wake_on_the_real_ollama(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, ollama_url: str
) -> None:
    proxy = RecordingProxy(ollama_url)
    await proxy.start()
    try:
        entry = await add_server(hass, proxy.url)
        coordinator = entry.runtime_data.coordinator
        model = coordinator.resolve_model("tiny")
        await evict(ollama_url, model)
        await wait_until(lambda: model not in coordinator.data.held, 10, "tiny gone")
        assist = await setup_assist(
            hass, hass_client, proxy.url, model, num_ctx=1024, prompt="Answer in one word."
        )
        turns = async_capture_events(hass, EVENT_VOICE_TURN)
        # A cold turn: the agent's request loads the model.
        await assist.turn(speech_ms=800, stt_seconds=0.05)
        await wait_until(lambda: turns, 10, "the voice turn")
        cold = turns[-1].data
        print(f"\ncold turn: {cold}")
        assert (cold["model"], cold["resident_at_intent_start"]) == (model, False)
        # The wait for the first words is the load: all of it where the server gave no
        # figure of its own (``residency``), else the server's figure within it. Which
        # stage cost the most is the largest of them: ``tiny`` loads in about 0.3 s from
        # the page cache, about what the pipeline waits for enough words to speak, so
        # the load is not always the costliest (CI: load 0.29 s, tts 0.316 s).
        # The agent's wait: for its first words, or its whole turn where it streamed none.
        stages, wait = cold["stages"], agent_wait(cold)
        assert stages["load"] > 0
        if cold["load_source"] == "residency":
            assert stages["load"] == wait
        else:
            waited = min(cold["load_seconds"], wait)
            assert stages["load"] == pytest.approx(waited, abs=0.001)
        assert cold["dominant_stage"] == max(stages, key=stages.get)
        assert cold["silence_seconds"] >= wait
        # Warm on wake: the next turn finds the model cold again, and it is loaded at the
        # wake with the agent's settings, before the agent's own request.
        await evict(ollama_url, model)
        await wait_until(lambda: model not in coordinator.data.held, 10, "tiny gone")
        voice = entry.runtime_data.voice
        voice.set_enabled(assist.pipeline_id, True)
        started = time.monotonic()
        await assist.turn(speech_ms=2500)
        await wait_until(lambda: len(turns) == 2, 10, "the second voice turn")
        warm = turns[-1].data
        print(f"warm on wake: {warm}")
        sent = [
            (path, at)
            for path in ("/api/generate", "/api/chat")
            for at in proxy.sent(path, started)
        ]
        first_load = min(at for path, at in sent if path == "/api/generate")
        first_chat = min(at for path, at in sent if path == "/api/chat")
        assert first_load < first_chat
        assert warm["warmed_on_wake"] is True
        counts = voice.counts[assist.pipeline_id]
        assert counts.helped + counts.too_late == 1
        assert counts.hidden_seconds > 0
        assert warm["pipeline"] == assist.pipeline_id
        assert voice.last[assist.pipeline_id].model == model
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()


async def test_warm_on_wake_shortens_the_silence_of_a_cold_big_model(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, socket_enabled: None
) -> None:
    """``big`` behind the throttled disk, 3 s of speech and 3 s of speech-to-text.

    Without warm on wake the agent's own request loads the model after the transcript;
    with it the load starts at the wake and the household waits only for what is left.
    On the current Ollama: on 0.9.3 (Intel's CPU build) the prefill of the agent's prompt
    on ``big`` took 42 to 63 s from one turn to the next (measured with this test), which
    drowns a load of 8.6 s; the cold turn of ``tiny`` above runs on both.
    """
    ollama_url = server_url("LLM_WARMTH_OLLAMA_CURRENT_URL")
    model = await make_big_voice(ollama_url)
    proxy = RecordingProxy(ollama_url)
    await proxy.start()
    try:
        entry = await add_server(hass, proxy.url)
        assist = await setup_assist(
            hass, hass_client, proxy.url, model, num_ctx=NUM_CTX, prompt=PROMPT
        )
        runs = ColdTurns(hass, entry, assist, proxy)
        without = await runs.run(ollama_url, model, warm_on_wake=False)
        warmed = await runs.run(ollama_url, model, warm_on_wake=True)
        print(f"\nwithout: {without}\nwith: {warmed}")
        # Without: the agent's request loaded the model (the server's own figure), and the
        # turn says the load was its costliest stage.
        assert without.resident_at_intent_start is False
        assert without.agent_load_server_seconds is not None
        assert without.agent_load_server_seconds > 1.0
        assert without.agent_wait >= without.agent_load_server_seconds
        # With: our load began at the wake; the agent's request loaded nothing of its own
        # when ours had ended, else waited only for its rest.
        assert warmed.our_load_seconds is not None
        assert warmed.our_load_seconds > 1.0
        assert warmed.hidden is not None
        assert 0 < warmed.hidden <= warmed.our_load_seconds
        assert warmed.silence < without.silence
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()
