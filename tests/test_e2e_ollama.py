"""End to end against the real Ollama (LLM_WARMTH_OLLAMA_URL): residency, figures and events.

The integration talks to the real server through a recording proxy on loopback and runs on
its own timers (a 2 s poll interval): nothing here polls by hand. Each figure it reports is
compared with the server's own, and the proxy counts what the integration sent.
"""

from collections.abc import AsyncIterator
import itertools
import time

from homeassistant.const import STATE_OFF, STATE_ON
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import async_capture_events

from custom_components.llm_warmth.const import (
    DOMAIN,
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
    SETTLING_SCAN_INTERVAL,
)

from .conftest import model_id
from .e2e import (
    add_server,
    drop_from_page_cache,
    evict,
    lists_only_once_loaded,
    model_file,
    ollama_call,
    ollama_get,
    wait_until,
)
from .recording_proxy import RecordingProxy

pytestmark = pytest.mark.e2e
BIG, TINY = "big:latest", "tiny:latest"
INTERVAL = 2.0
FAST = SETTLING_SCAN_INTERVAL.total_seconds()
# Home Assistant starts a regular poll up to a second late (whole second + a random fraction).
REGULAR_SLACK = 1.0


@pytest.fixture
async def proxy(ollama_url: str) -> AsyncIterator[RecordingProxy]:
    recording = RecordingProxy(ollama_url)
    await recording.start()
    yield recording
    await recording.stop()


async def test_a_cold_request_by_another_client(
    hass: HomeAssistant, ollama_url: str, proxy: RecordingProxy
) -> None:
    """The assistant's first turn after idle, as the integration sees it on its own timers."""
    await evict(ollama_url, BIG)
    drop_from_page_cache(await model_file(ollama_url, BIG))
    entry = await add_server(hass, proxy.url)
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    cold_starts = async_capture_events(hass, EVENT_COLD_START)

    started = time.monotonic()
    sent_at = dt_util.utcnow()
    reply = await ollama_call(
        ollama_url, "/api/generate", {"model": BIG, "prompt": "hi", "options": {"num_predict": 2}}
    )
    ended = time.monotonic()
    await wait_until(lambda: loaded, 2 * FAST + 1, "the loaded event")
    durations = {key: value for key, value in reply.items() if key.endswith("_duration")}
    print(f"\nserver: {durations}\nloaded: {loaded[0].data}")

    event = loaded[0].data
    assert event["model"] == BIG
    assert [e.data["source"] for e in cold_starts] == ["passive"]
    cold = hass.states.get(model_id(entry, "sensor.big_last_cold_request_duration"))
    if await lists_only_once_loaded(ollama_url):
        # The model is not listed while it loads: the first poll that lists it sees the
        # end of the load (the server's load_duration after the request was sent), within
        # one regular interval, and nothing of its start. No figure is made up.
        seen = (loaded[0].time_fired - sent_at).total_seconds()
        load_end = reply["load_duration"] / 1e9
        print(f"load ended {load_end:.3f} s after the request, seen after {seen:.3f} s")
        assert load_end - 0.1 <= seen <= load_end + INTERVAL + REGULAR_SLACK + 0.5
        assert (event["load_seconds"], event["cold_request_seconds"]) == (None, None)
        assert cold.state == "unknown"
        await evict(ollama_url, BIG)
        await hass.config_entries.async_unload(entry.entry_id)
        return
    # Polling cannot split the load from the request: it reports the cold request, seen
    # from the first poll that listed the runner to the end of the request. Compared with
    # the server's own total_duration it misses at most one regular interval at the start,
    # and ends within one fast poll of the request's end.
    assert event["load_seconds"] is None
    assert event["cold_request_source"] == "polling"
    server_total = reply["total_duration"] / 1e9
    assert server_total - INTERVAL - REGULAR_SLACK <= event["cold_request_seconds"]
    assert event["cold_request_seconds"] <= server_total + FAST + 0.5
    # A lower bound: the sensor says "at least", its state stays for an exact figure.
    assert cold.state == "unknown"
    assert cold.attributes["at_least_seconds"] == pytest.approx(event["cold_request_seconds"])
    # The same lower bound on its own sensor, the one the device page and the graph show.
    partly = hass.states.get(model_id(entry, "sensor.big_last_partly_seen_cold_request_at_least"))
    assert float(partly.state) == pytest.approx(event["cold_request_seconds"], abs=0.05)

    # What the integration sent meanwhile: spaced fast polls, never back to back.
    polls = proxy.sent("/api/ps", started, ended)
    gaps = [b - a for a, b in itertools.pairwise(polls)]
    print(f"{len(polls)} polls in {ended - started:.1f} s, shortest gap {min(gaps):.3f} s")
    assert polls[0] - started <= INTERVAL + REGULAR_SLACK
    assert min(gaps) >= FAST - 0.05
    assert len(polls) - 1 <= (ended - polls[0]) / FAST + 1
    # The version is not read on every poll.
    assert proxy.sent("/api/version", started, ended) == []
    await evict(ollama_url, BIG)
    await hass.config_entries.async_unload(entry.entry_id)


async def test_residency_and_an_unload_by_another_client(
    hass: HomeAssistant, ollama_url: str, proxy: RecordingProxy
) -> None:
    await evict(ollama_url, TINY)
    entry = await add_server(hass, proxy.url)
    resident = model_id(entry, "binary_sensor.tiny_resident")
    assert hass.states.get(resident).state == STATE_OFF
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)

    reply = await ollama_call(ollama_url, "/api/generate", {"model": TINY, "keep_alive": "10m"})
    assert reply["done_reason"] == "load"
    preloaded_at = dt_util.utcnow()
    await wait_until(lambda: loaded, INTERVAL + REGULAR_SLACK + 2 * FAST + 1, "the load")
    assert [e.data["model"] for e in loaded] == [TINY]
    assert hass.states.get(resident).state == STATE_ON
    unloads_at = dt_util.parse_datetime(
        hass.states.get(model_id(entry, "sensor.tiny_unloads_at")).state
    )
    assert unloads_at is not None
    assert abs((unloads_at - preloaded_at).total_seconds() - 600) < 5
    # This Ollama runs on the CPU: its models' memory shows where it is, in system RAM, as
    # much as /api/ps says; no "GPU memory 0 GiB" sensors.
    listed = (await ollama_get(ollama_url, "/api/ps"))["models"]
    assert listed
    assert all(m["size_vram"] == 0 for m in listed)
    in_ram = sum(m["size"] - m["size_vram"] for m in listed) / 1024**3
    ram = hass.states.get(model_id(entry, "sensor.resident_memory_in_system_ram"))
    assert float(ram.state) == pytest.approx(in_ram, abs=0.01)
    for gpu_sensor in ("sensor.tiny_gpu_memory", "sensor.tiny_gpu_share"):
        assert hass.states.get(model_id(entry, gpu_sensor)) is None
    assert hass.states.get(model_id(entry, "sensor.resident_gpu_memory")) is None

    # Another client unloads it (keep_alive 0): early, and nothing came in.
    await ollama_call(ollama_url, "/api/generate", {"model": TINY, "keep_alive": 0})
    await wait_until(lambda: unloaded, 3 * INTERVAL + 2, "the unloaded event")
    assert [(e.data["reason"], e.data["replaced_by"]) for e in unloaded] == [("unloaded", [])]
    assert hass.states.get(resident).state == STATE_OFF
    await hass.config_entries.async_unload(entry.entry_id)


async def test_a_reload_for_another_context_by_another_client(
    hass: HomeAssistant, ollama_url: str, proxy: RecordingProxy
) -> None:
    """num_ctx 2048 after 512: reloaded in place; /api/ps shows a new size (and context)."""
    await evict(ollama_url, TINY)
    small = {"model": TINY, "prompt": "hi", "keep_alive": "10m"}
    await ollama_call(ollama_url, "/api/generate", small | {"options": {"num_ctx": 512}})
    entry = await add_server(hass, proxy.url)
    before = entry.runtime_data.coordinator.data.resident[TINY].size
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)

    reply = await ollama_call(ollama_url, "/api/generate", small | {"options": {"num_ctx": 2048}})
    await wait_until(lambda: loaded, INTERVAL + REGULAR_SLACK + 2 * FAST + 1, "the reload")
    after = entry.runtime_data.coordinator.data.resident[TINY].size
    print(f"\nserver load_duration {reply['load_duration'] / 1e9:.3f} s, size {before} -> {after}")
    # The server's own figures: it loaded the model again, and its size changed.
    assert reply["load_duration"] > 100_000_000
    assert after != before
    assert [(e.data["model"], e.data["reloaded"]) for e in loaded] == [(TINY, True)]
    assert unloaded == []
    # The context the runner got, as the server lists it (0.10 and newer; 0.9 omits it),
    # is what the model's Context length sensor (disabled by default) reads.
    (listed,) = (await ollama_get(ollama_url, "/api/ps"))["models"]
    context = entry.runtime_data.coordinator.data.resident[TINY].context_length
    if "context_length" in listed:
        assert listed["context_length"] == 2048
        assert context == listed["context_length"]
    else:
        assert context is None
    await evict(ollama_url, TINY)
    await hass.config_entries.async_unload(entry.entry_id)


async def test_an_outage_then_a_restart_event_with_the_current_version(
    hass: HomeAssistant, ollama_url: str, proxy: RecordingProxy
) -> None:
    entry = await add_server(hass, proxy.url)
    version = (await ollama_get(ollama_url, "/api/version"))["version"]
    restarted = async_capture_events(hass, EVENT_SERVER_RESTARTED)
    connectivity = er.async_get(hass).async_get_entity_id(
        "binary_sensor", DOMAIN, f"{entry.entry_id}_connectivity"
    )
    assert connectivity is not None
    assert hass.states.get(connectivity).state == STATE_ON

    async with proxy.outage():
        await wait_until(
            lambda: hass.states.get(connectivity).state == STATE_OFF,
            INTERVAL + REGULAR_SLACK + 1,
            "the outage",
        )
    back = time.monotonic()
    await wait_until(lambda: restarted, INTERVAL + REGULAR_SLACK + 1, "the restart event")
    assert restarted[0].data["reason"] == "reconnected"
    assert restarted[0].data["version"] == version
    # Read from the server after it came back, before the event.
    assert proxy.sent("/api/version", back)
    assert hass.states.get(connectivity).state == STATE_ON
    await hass.config_entries.async_unload(entry.entry_id)
