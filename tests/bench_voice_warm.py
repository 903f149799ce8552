"""The voice turns ``benchmarks/voice_warm.py`` times (not a ``test_`` module: never run by CI).

Cold turns of ``big`` through a real Assist pipeline on a real Ollama, without and with
warm on wake, interleaved (drift on the machine falls on both alike); each turn's figures
are written as JSON to ``LLM_WARMTH_BENCH_OUT``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from .assist import hass_config_dir_fixture, setup_assist  # noqa: F401 (a fixture)
from .e2e import add_server, ollama_get, server_url
from .recording_proxy import RecordingProxy
from .voice_runs import NUM_CTX, PROMPT, SPEECH_MS, STT_SECONDS, ColdTurns, make_big_voice

pytestmark = pytest.mark.e2e


async def test_voice_warm_runs(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, socket_enabled: None
) -> None:
    url = server_url(os.environ.get("LLM_WARMTH_BENCH_SERVER", "LLM_WARMTH_OLLAMA_CURRENT_URL"))
    runs = int(os.environ.get("LLM_WARMTH_BENCH_RUNS", "5"))
    model = await make_big_voice(url)
    proxy = RecordingProxy(url)
    await proxy.start()
    try:
        entry = await add_server(hass, proxy.url)
        assist = await setup_assist(
            hass, hass_client, proxy.url, model, num_ctx=NUM_CTX, prompt=PROMPT
        )
        turns = ColdTurns(hass, entry, assist, proxy)
        results = [
            (await turns.run(url, model, warm_on_wake=warm)).as_dict()
            for _ in range(runs)
            for warm in (False, True)
        ]
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()
    version = (await ollama_get(url, "/api/version"))["version"]
    write(
        {
            "server": f"Ollama {version}",
            "speech_seconds": SPEECH_MS / 1000,
            "stt_seconds": STT_SECONDS,
            "turns": results,
        }
    )


def write(result: dict[str, object]) -> None:
    """Write the result where the benchmark reads it."""
    Path(os.environ["LLM_WARMTH_BENCH_OUT"]).write_text(json.dumps(result))
