"""End to end against the real Ollama with the 1.24 GB model: cold, warm and contended probes.

Needs the servers started with BIG=1 SLOW_DISK_MBPS=200 (as .ci/run does), so that a load
from disk is slow enough to tell apart from a warm start. Nothing here polls by hand: the
integration's own timers run while the probes do.
"""

import asyncio
import time

from homeassistant.const import CONF_SCAN_INTERVAL, CONF_URL, CONF_VERIFY_SSL
from homeassistant.core import HomeAssistant
from homeassistant.helpers.event import async_track_state_change_event
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events

from custom_components.llm_warmth.const import DOMAIN, EVENT_COLD_START, EVENT_MODEL_LOADED

from .conftest import model_id
from .e2e import drop_from_page_cache, evict, lists_only_once_loaded, model_file, ollama_call

pytestmark = pytest.mark.e2e
BIG = "big:latest"
# Greedy decoding: the random-weight model then answers the same tokens every time, so the
# first streamed token is the first one sampled (a byte-fallback token that the server
# holds back until a character is complete would move the first chunk one decode later).
SAMPLING = {"num_predict": 2, "temperature": 0, "seed": 7}


async def set_up(hass: HomeAssistant, url: str) -> MockConfigEntry:
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Ollama e2e",
        unique_id=url,
        version=2,
        data={CONF_URL: url, CONF_VERIFY_SSL: True, "server_kind": "ollama"},
        options={CONF_SCAN_INTERVAL: 2},
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    return entry


async def probe(hass: HomeAssistant, entry: MockConfigEntry, **data: object) -> dict[str, float]:
    response = await hass.services.async_call(
        DOMAIN,
        "probe",
        {"config_entry_id": entry.entry_id, "model": BIG, "options": SAMPLING, **data},
        blocking=True,
        return_response=True,
    )
    assert response is not None
    return dict(response)  # type: ignore[arg-type]


async def test_cold_then_warm_probe_of_the_big_model(hass: HomeAssistant, ollama_url: str) -> None:
    started = time.monotonic()
    await evict(ollama_url, BIG)
    drop_from_page_cache(await model_file(ollama_url, BIG))
    entry = await set_up(hass, ollama_url)
    assert BIG not in entry.runtime_data.coordinator.data.resident
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    cold_starts = async_capture_events(hass, EVENT_COLD_START)

    # Progress: the model's Warmth while the cold probe runs, on the integration's timers.
    warmth_seen: list[tuple[str, bool]] = []
    unsubscribe = async_track_state_change_event(
        hass,
        model_id(entry, "sensor.big"),
        lambda event: warmth_seen.append(
            (event.data["new_state"].state, event.data["new_state"].attributes["probe_running"])
        ),
    )
    hop = await lists_only_once_loaded(ollama_url)  # 0.30+: the runner is llama-server
    cold = await probe(hass, entry)
    unsubscribe()
    assert ("loading", True) in warmth_seen, warmth_seen  # seen long before the reply
    await asyncio.sleep(2.5)  # the integration's next regular poll sees the probe's load
    warm = await probe(hass, entry)
    await asyncio.sleep(2.5)
    print(f"\ncold: {cold}\nwarm: {warm}")

    assert cold["classification"] == "cold"
    assert cold["dominant_stage"] == "load"
    assert warm["classification"] == "warm"
    assert float(cold["queue_and_load_ms"]) >= 5 * float(warm["queue_and_load_ms"])
    for reply in (cold, warm):
        # The server's own stages explain the client's TTFT: the residual stays under 10 %,
        # plus 20 ms on 0.30 and newer, whose requests take one more HTTP hop (Ollama to
        # its llama-server runner): 11-15 ms measured here, 14.7 of a 100 ms warm TTFT.
        # (The first token is sampled from the prefill's logits, so the per-token decode
        # time is not part of it; see ttft.py.)
        ttft = float(reply["ttft_ms"])
        server_stages = float(reply["queue_and_load_ms"]) + float(reply["prefill_ms"])
        assert abs(ttft - server_stages) < 0.1 * ttft + (20 if hop else 0)
        assert float(reply["first_decode_ms"]) > 0

    # One load, one number: the loaded event, the cold start and the sensor carry the
    # server's own load_duration of the probe that loaded the model; polling adds nothing.
    # (The response rounds to 0.1 ms, the events to 1 ms: they agree to 1 ms.)
    server_load = float(cold["queue_and_load_ms"]) / 1000
    assert [e.data["load_seconds"] for e in loaded] == [pytest.approx(server_load, abs=0.001)]
    assert [e.data["load_seconds"] for e in cold_starts] == [pytest.approx(server_load, abs=0.001)]
    assert loaded[0].data["load_source"] == "server"
    assert loaded[0].data["cold_request_source"] == "client"
    assert loaded[0].data["cold_request_seconds"] >= round(float(cold["ttft_ms"]) / 1000, 3)
    sensor = hass.states.get(model_id(entry, "sensor.big_last_measured_load_duration"))
    assert float(sensor.state) == pytest.approx(server_load, abs=0.001)
    await evict(ollama_url, BIG)
    await hass.config_entries.async_unload(entry.entry_id)
    print(f"cold/warm e2e took {time.monotonic() - started:.1f} s")


async def test_a_probe_behind_another_clients_request_names_the_slow_stage(
    hass: HomeAssistant, ollama_url: str
) -> None:
    """A warm model busy with another client's long prompt: the probe is slow, not "none"."""
    await ollama_call(ollama_url, "/api/generate", {"model": BIG, "keep_alive": "10m"})
    entry = await set_up(hass, ollama_url)
    assert BIG in entry.runtime_data.coordinator.data.resident

    # A prompt the server has no cached prefix for: its prefill takes seconds on the CPU
    # server, and the probe sent meanwhile waits for it. Ollama 0.34.4 prefills about 20
    # times faster than 0.9.3's Intel build here (1.3 s against 27 s for 177 tokens of
    # big): it gets a longer prompt, so that each server is busy for a second or more.
    words = " ".join(["the of and to in is you that it he"] * 30)
    text = words if await lists_only_once_loaded(ollama_url) else "hi"
    other = asyncio.create_task(
        ollama_call(
            ollama_url,
            "/api/generate",
            {
                "model": BIG,
                "prompt": f"Note {time.time_ns()}: {text}",
                "options": {"num_predict": 2},
            },
        )
    )
    await asyncio.sleep(0.3)  # the other request is in the server first
    contended = await probe(hass, entry)
    await other
    print(f"\ncontended: {contended}")

    assert contended["classification"] == "warm"
    assert contended["ttft_ms"] > 1000
    # No warm baseline yet: the stage that took the time is the one the server reports
    # as the largest part of the TTFT.
    stages = {
        "load": contended["queue_and_load_ms"],
        "prefill": contended["prefill_ms"],
        "overhead": contended["overhead_ms"],
    }
    assert contended["dominant_stage"] == max(stages, key=lambda stage: stages[stage])
    await evict(ollama_url, BIG)
    await hass.config_entries.async_unload(entry.entry_id)
