"""End to end against the real Ollama with the 1.24 GB model: a cold probe, then a warm one.

Needs the servers started with BIG=1 SLOW_DISK_MBPS=200 (as .ci/run does), so that a load
from disk is slow enough to tell apart from a warm start.
"""

import os
import time

from homeassistant.config_entries import SOURCE_USER
from homeassistant.const import CONF_URL, CONF_VERIFY_SSL
from homeassistant.core import HomeAssistant
import pytest

from custom_components.llm_warmth.const import DOMAIN

from .e2e import evict, ollama_call, server_url

pytestmark = pytest.mark.e2e
BIG = "big:latest"


@pytest.fixture
def ollama_url(socket_enabled: None) -> str:
    return server_url("LLM_WARMTH_OLLAMA_URL")


def drop_from_page_cache(path: str) -> None:
    """Make the next read of ``path`` come from disk (the cold start of a fresh boot)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


async def test_cold_then_warm_probe_of_the_big_model(hass: HomeAssistant, ollama_url: str) -> None:
    started = time.monotonic()
    tags = await ollama_call(ollama_url, "/api/show", {"model": BIG})
    model_file = next(
        line.removeprefix("FROM ").strip()
        for line in str(tags["modelfile"]).splitlines()
        if line.startswith("FROM /")
    )
    await evict(ollama_url, BIG)
    drop_from_page_cache(model_file)

    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: ollama_url, CONF_VERIFY_SSL: True}
    )
    entry = result["result"]
    await hass.async_block_till_done()
    assert BIG not in entry.runtime_data.coordinator.data.resident

    async def probe() -> dict[str, float | str]:
        response = await hass.services.async_call(
            DOMAIN,
            "probe",
            {"config_entry_id": entry.entry_id, "model": BIG, "options": {"num_predict": 2}},
            blocking=True,
            return_response=True,
        )
        assert response is not None
        return dict(response)  # type: ignore[arg-type]

    cold = await probe()
    await entry.runtime_data.coordinator.async_refresh()
    warm = await probe()
    print(f"\ncold: {cold}\nwarm: {warm}")

    assert cold["classification"] == "cold"
    assert cold["dominant_stage"] == "load"
    assert warm["classification"] == "warm"
    assert float(cold["queue_and_load_ms"]) >= 5 * float(warm["queue_and_load_ms"])
    for reply in (cold, warm):
        # The server's own stages explain the client's TTFT: the residual stays under 10 %.
        # (The first token is sampled from the prefill's logits, so the per-token decode
        # time is not part of it; see ttft.py.)
        ttft = float(reply["ttft_ms"])
        server_stages = float(reply["queue_and_load_ms"]) + float(reply["prefill_ms"])
        assert abs(ttft - server_stages) < 0.1 * ttft
        assert float(reply["first_decode_ms"]) > 0
    await evict(ollama_url, BIG)
    await hass.config_entries.async_unload(entry.entry_id)
    print(f"cold/warm e2e took {time.monotonic() - started:.1f} s (goal: under 60 s)")
