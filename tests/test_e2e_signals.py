"""Warming on a signal, on the real Ollama and the integration's own listeners and timers.

A signal entity's edge in the test Home Assistant warms the model on the real server: the
load asks for the signal's hold, and the server's own ``expires_at`` shows it; unused, the
server lets the model go when the hold ends, and nothing is scored warm; used by another
client, the request finds the model loaded (its ``load_duration`` under 50 ms) and the
scoreboard counts it once, as warm thanks to a signal.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from homeassistant.config_entries import SOURCE_USER
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.util import dt as dt_util
import pytest

from custom_components.llm_warmth.const import (
    CONF_SIGNAL_ENTITIES,
    CONF_SIGNAL_MODEL,
    EVENT_AUTO_WARM,
    SUBENTRY_WARMING_SIGNALS,
)
from custom_components.llm_warmth.core.usage import SIGNAL_HELPED

from .e2e import add_server, evict, ollama_call, ollama_get, wait_until
from .recording_proxy import RecordingProxy
from .signal_lessons import teach

pytestmark = pytest.mark.e2e

DOOR, MOTION = "input_boolean.front_door", "input_boolean.bedroom_motion"
# Each is learnt to lead a use 10 s on: held 40 s (its margin of 30 s).
LEAD, HOLD = 10, 40


async def expires_in(url: str, model: str) -> float | None:
    """Return how many seconds the real server still keeps ``model`` (None: not held)."""
    listed = (await ollama_get(url, "/api/ps"))["models"]
    assert isinstance(listed, list)
    for found in listed:
        if found["name"] == model:
            expires = dt_util.parse_datetime(found["expires_at"])
            assert expires is not None
            return (expires - dt_util.utcnow()).total_seconds()
    return None


async def test_a_signal_warms_the_model_an_unused_hold_lets_it_go_a_use_counts_once(
    hass: HomeAssistant, ollama_url: str
) -> None:
    proxy = RecordingProxy(ollama_url)
    await proxy.start()
    fired: list[Event] = []

    @callback
    def heard(event: Event) -> None:
        fired.append(event)

    hass.bus.async_listen(EVENT_AUTO_WARM, heard)
    try:
        entry = await add_server(hass, proxy.url)
        coordinator, usage = entry.runtime_data.coordinator, entry.runtime_data.usage
        model = coordinator.resolve_model("tiny")
        await evict(ollama_url, model)
        await wait_until(lambda: model not in coordinator.data.held, 10, "tiny gone")
        hass.states.async_set(DOOR, "off")
        hass.states.async_set(MOTION, "off")
        # The household picks the model's signals, as in the settings.
        result = await hass.config_entries.subentries.async_init(
            (entry.entry_id, SUBENTRY_WARMING_SIGNALS), context={"source": SOURCE_USER}
        )
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"], {CONF_SIGNAL_MODEL: model}
        )
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"], {CONF_SIGNAL_ENTITIES: [DOOR, MOTION]}
        )
        await hass.async_block_till_done()
        assert usage.chosen_signals(model) == (DOOR, MOTION)
        teach(entry, model, {DOOR: LEAD, MOTION: LEAD}, now=dt_util.utcnow(), load=1.0)
        usage.set_auto_warm(model, True)

        # The door, and nobody asks: loaded for the hold, let go by the server after it.
        started = asyncio.get_running_loop().time()
        hass.states.async_set(DOOR, "on")
        await wait_until(lambda: model in coordinator.data.held, 20, "tiny warmed on the door")
        loads = [r.json() for r in proxy.requests if r.path == "/api/generate"]
        assert len(loads) == 1
        assert not loads[0].get("prompt")
        assert loads[0]["keep_alive"] == pytest.approx(HOLD, abs=1)
        left = await expires_in(ollama_url, model)
        assert left is not None
        assert HOLD - 10 <= left <= HOLD + 2  # the server's own expiry: the hold
        await wait_until(lambda: model not in coordinator.data.held, HOLD + 30, "tiny let go")
        assert asyncio.get_running_loop().time() - started >= HOLD - 10
        assert usage.scoreboard(model, SIGNAL_HELPED) == (0.0, 0.0)
        record = usage.get(model)
        assert record is not None
        assert record.holding_since is None  # its hold is over: its memory counted

        # The bedroom wakes; another client asks soon after: the model is warm for it.
        hass.states.async_set(MOTION, "on")
        await wait_until(lambda: model in coordinator.data.held, 20, "tiny warmed on motion")
        await wait_until(lambda: usage.get(model).warmed == 2, 20, "the signal's load answered")
        # Two polls after our load: the next expiry that moves is another client's.
        polls = proxy.sent("/api/ps")
        await wait_until(lambda: len(proxy.sent("/api/ps")) >= len(polls) + 2, 10, "two polls")
        reply = await ollama_call(
            ollama_url,
            "/api/generate",
            {"model": model, "prompt": "hi", "keep_alive": "10s", "options": {"num_predict": 2}},
        )
        load_duration = reply["load_duration"]
        assert isinstance(load_duration, int)
        assert load_duration < 50_000_000  # ns: no load
        await wait_until(
            lambda: usage.scoreboard(model, SIGNAL_HELPED)[0] == 1, 15, "the use scored"
        )
        polls = proxy.sent("/api/ps")
        await wait_until(lambda: len(proxy.sent("/api/ps")) >= len(polls) + 2, 10, "two polls")
        assert usage.scoreboard(model, SIGNAL_HELPED) == (1.0, 1.0)  # counted once
        reasons = [(e.data["reason"], e.data["signal_entity_id"]) for e in fired]
        assert reasons == [("signal", DOOR), ("signal", MOTION)]
        assert all(e.data["within_minutes"] == 1 for e in fired)
        sent = [r.json() for r in proxy.requests if r.path == "/api/generate"][1]
        until = dt_util.parse_datetime(str(fired[1].data["until"]))
        assert until is not None
        assert until - dt_util.utcnow() < timedelta(seconds=HOLD)
        assert sent["keep_alive"] == pytest.approx(HOLD, abs=1)
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()
