"""The idle profile on the real Ollama (e2e), on the integration's own timers.

The 0- and 1-minute probes of ``tiny`` (Ollama keeps a model 5 minutes by default): the
first finds it evicted and loads it, the second a minute later finds it resident. What the
integration sent is counted through a proxy, and each result's load is the server's own
``load_duration`` of that reply. (The 10-, 60- and 480-minute probes run the same code on
the same timer; they are tested on a fake clock with the emulator.)
"""

from __future__ import annotations

from datetime import datetime

from homeassistant.core import HomeAssistant
import pytest

from .conftest import model_id
from .e2e import add_server, evict, wait_until
from .recording_proxy import RecordingProxy
from .test_pin import call

TINY = "tiny:latest"


@pytest.mark.e2e
async def test_the_first_two_intervals_on_the_real_ollama(
    hass: HomeAssistant, ollama_url: str
) -> None:
    url = ollama_url
    await evict(url, TINY)
    proxy = RecordingProxy(url)
    await proxy.start()
    entry = await add_server(hass, proxy.url)

    def results() -> tuple[object, ...]:
        profile = entry.runtime_data.profiler.profiles.get(TINY)
        return profile.results if profile else ()

    started = await call(hass, "start_idle_profile", config_entry_id=entry.entry_id, model="tiny")
    assert started["model"] == TINY
    await wait_until(lambda: len(results()) == 1, 60, "the 0-minute probe")
    await wait_until(lambda: len(results()) == 2, 90, "the 1-minute probe")
    sensor = hass.states.get(model_id(entry, "sensor.tiny_idle_profile"))
    stopped = await call(hass, "stop_idle_profile", config_entry_id=entry.entry_id, model="tiny")
    await proxy.stop()
    print(f"\nidle profile on the real Ollama: {stopped['results']}")
    first, second = stopped["results"]
    assert [(r["minutes"], r["resident"]) for r in (first, second)] == [(0, False), (1, True)]
    assert sensor.attributes["verdict"].startswith("resident through 1 min")
    # What it sent: one probe per interval, nothing else that generates.
    chats = [r for r in proxy.requests if r.path == "/api/chat"]
    assert len(chats) == 2
    assert not [r for r in proxy.requests if r.path == "/api/generate"]
    # Its own timer: the second probe a minute after the first ended (plus its own time).
    gap = datetime.fromisoformat(second["at"]) - datetime.fromisoformat(first["at"])
    assert 60 <= gap.total_seconds() < 70
    # The figures are the server's own: the first reply loaded tiny, the second did not.
    for result, chat in zip((first, second), chats, strict=True):
        reply = chat.last_reply_line()
        assert result["load_ms"] == pytest.approx(reply["load_duration"] / 1e6, abs=1)
    assert first["load_ms"] > 10 * second["load_ms"]
    await evict(url, TINY)
    await hass.config_entries.async_unload(entry.entry_id)
