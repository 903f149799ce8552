"""llm_warmth.diagnose on the real servers (e2e).

On the real Ollama, big (1.24 GB) behind the throttled disk, its file dropped from the page
cache: the cold-vs-repeat verdict is "evicted: load dominates"; with an agent asking for
another context than the one big was loaded with, the context-change verdict is "reload for
num_ctx". On the real llama-server with ``--models-max 1``: switching to tiny and back to
big gives "switch evicts the other model".
"""

from __future__ import annotations

from typing import Any

from homeassistant.core import HomeAssistant
import pytest

from custom_components.llm_warmth.const import DOMAIN

from .conftest import add_ollama_agent
from .e2e import add_server, drop_from_page_cache, evict, model_file, ollama_get
from .recording_proxy import RecordingProxy
from .test_e2e_llama_server import unload_all


async def diagnose(hass: HomeAssistant, **data: Any) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN, "diagnose", data, blocking=True, return_response=True
    )
    assert response is not None
    return dict(response)


@pytest.mark.e2e
async def test_cold_vs_repeat_on_the_real_ollama(hass: HomeAssistant, ollama_url: str) -> None:
    url = ollama_url
    proxy = RecordingProxy(url)  # to read the server's own figures of each reply
    await proxy.start()
    entry = await add_server(hass, proxy.url)
    await evict(url, "big")
    drop_from_page_cache(await model_file(url, "big"))
    answer = await diagnose(hass, config_entry_id=entry.entry_id, model="big")
    await proxy.stop()
    print(f"\ndiagnosis on the real Ollama: {answer}")
    # Each run's stages are the server's own figures of its reply (ns -> ms, shown to 0.1).
    replies = [r.last_reply_line() for r in proxy.requests if r.path == "/api/chat"]
    assert len(replies) == 2
    for run, reply in zip(answer["runs"], replies, strict=True):
        assert run["queue_and_load_ms"] == pytest.approx(reply["load_duration"] / 1e6, abs=1)
        assert run["prefill_ms"] == pytest.approx(reply["prompt_eval_duration"] / 1e6, abs=1)
        assert run["prompt_tokens"] == reply["prompt_eval_count"]
    assert (answer["pattern"], answer["stage"], answer["recommendation"]) == (
        "evicted",
        "load",
        "keep_resident",
    )
    cold, repeat = answer["runs"]
    assert (cold["resident_before"], repeat["resident_before"]) == (False, True)
    assert cold["queue_and_load_ms"] > 10 * repeat["queue_and_load_ms"]
    await hass.config_entries.async_unload(entry.entry_id)


@pytest.mark.e2e
async def test_a_context_change_on_the_real_ollama(hass: HomeAssistant, ollama_url: str) -> None:
    """big as another client leaves it (its Modelfile's num_ctx 512), then the agent's 1024."""
    url = ollama_url
    proxy = RecordingProxy(url)
    await proxy.start()
    entry = await add_server(hass, proxy.url)
    add_ollama_agent(
        hass, proxy.url, "big", title="Kitchen", num_ctx=1024
    )  # Home Assistant's Ollama agent, num_ctx 1024
    answer = await diagnose(
        hass, config_entry_id=entry.entry_id, model="big", scenario="context_change"
    )
    await proxy.stop()
    print(f"\ncontext change on the real Ollama: {answer['verdict']}")
    # What it sent: one load without a context (another client), two probes with the agent's,
    # and one load that left big as the agent asks (its context, kept for ever).
    loads = [r.json() for r in proxy.requests if r.path == "/api/generate"]
    chats = [r for r in proxy.requests if r.path == "/api/chat"]
    assert [(load.get("options"), load.get("keep_alive")) for load in loads] == [
        (None, None),
        ({"num_ctx": 1024}, -1),
    ]
    assert [r.json()["options"]["num_ctx"] for r in chats] == [1024, 1024]
    assert (answer["num_ctx"], answer["agent"], answer["left_for_agent"]) == (
        1024,
        "Kitchen",
        "Kitchen",
    )
    # big is left kept for ever, as the agent keeps it (Ollama shows a far expiry).
    resident: Any = await ollama_get(url, "/api/ps")
    expiry = {m["name"]: m["expires_at"] for m in resident["models"]}
    assert expiry["big:latest"] > "2100"
    # The stages are the server's own figures: its load_duration says it reloaded big.
    for run, chat in zip(answer["runs"], chats, strict=True):
        reply = chat.last_reply_line()
        assert run["queue_and_load_ms"] == pytest.approx(reply["load_duration"] / 1e6, abs=1)
    changed, repeat = answer["runs"]
    assert (changed["resident_before"], repeat["resident_before"]) == (True, True)
    assert (answer["pattern"], answer["stage"], answer["recommendation"]) == (
        "context_reload",
        "load",
        "same_context",
    )
    # Ollama 0.9 does not report the context it had; 0.10 and later do ("vs 512").
    assert answer["verdict"].startswith("slow after a context change: reload for num_ctx 1024 vs")
    await evict(url, "big")
    await hass.config_entries.async_unload(entry.entry_id)


@pytest.mark.e2e
async def test_a_switch_on_the_real_llama_server(hass: HomeAssistant, llama_url: str) -> None:
    url = llama_url
    await unload_all(url)
    entry = await add_server(hass, url)
    answer = await diagnose(
        hass,
        config_entry_id=entry.entry_id,
        model="big",
        scenario="model_switch",
        other_model="tiny",
    )
    print(f"\ndiagnosis on the real llama-server: {answer['verdict']}")
    assert answer["pattern"] == "switch_evicts"
    assert "switch evicts the other model" in answer["verdict"]
    assert [(r["run"], r["resident_before"]) for r in answer["runs"]] == [
        ("A warm-up", False),
        ("A warm", True),
        ("B", False),
        ("A again", False),
    ]
    await unload_all(url)
    await hass.config_entries.async_unload(entry.entry_id)
