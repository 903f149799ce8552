"""Pins on the real servers (e2e): across a restart, and released by the household guard."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
import pytest
from pytest_homeassistant_custom_component.common import async_capture_events

from custom_components.llm_warmth.const import (
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_PIN_REAPPLIED,
    EVENT_PIN_REASSERTED,
    EVENT_PIN_RELEASED,
    PIN_SETTLE_SECONDS,
)

from .conftest import model_id
from .e2e import add_server, protect, server_url, wait_until
from .recording_proxy import RecordingProxy
from .test_pin import call

PLEX = "binary_sensor.plex_transcoding"


def restart_command(variable: str) -> str:
    """Return the command that restarts a real server (CI sets it; it must not skip there)."""
    command = os.environ.get(variable)
    if not command:
        reason = f"{variable} (a command that restarts the server) is not set"
        if os.environ.get("LLM_WARMTH_REQUIRE_E2E"):
            pytest.fail(reason)
        pytest.skip(reason)
    return command


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("kind", "load_path"),
    [
        ("OLLAMA", "/api/generate"),
        ("OLLAMA_CURRENT", "/api/generate"),
        ("LLAMA", "/models/load"),
    ],
    ids=["ollama-0.9.3", "ollama-current", "llama-server"],
)
async def test_a_pin_survives_a_real_server_restart(
    hass: HomeAssistant, socket_enabled: None, kind: str, load_path: str
) -> None:
    """Pin tiny, kill and start the real server: tiny is loaded again within one poll.

    On the integration's own timers (polls every 2 s), through a proxy that counts what it
    sent: one load for the pin, one after the restart, sent right after the first poll
    that reached the server again (one poll, plus the pin's settle time).
    """
    url = server_url(f"LLM_WARMTH_{kind}_URL")
    restart = restart_command(f"LLM_WARMTH_{kind}_RESTART")
    proxy = RecordingProxy(url)
    await proxy.start()
    try:
        entry = await add_server(hass, proxy.url, interval=2.0)
        coordinator = entry.runtime_data.coordinator
        name = coordinator.resolve_model("tiny")
        # Not resident first, so that the pin's preload loads it and times the load.
        await call(hass, "evict", config_entry_id=entry.entry_id, all=True)
        loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
        cold_starts = async_capture_events(hass, EVENT_COLD_START)
        started = time.monotonic()
        answer = await call(hass, "pin", config_entry_id=entry.entry_id, model="tiny")
        assert name in coordinator.data.held
        assert len(proxy.sent(load_path, started)) == 1
        # The load time returned: the load request's own, as the proxy saw it end.
        assert answer["already_resident"] is False
        assert 0 < answer["load_seconds"] < time.monotonic() - started
        reasserted = async_capture_events(hass, EVENT_PIN_REASSERTED)
        process = await asyncio.create_subprocess_shell(
            restart, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        await wait_until(lambda: not coordinator.last_update_success, 60, "the server down")
        assert await process.wait() == 0
        await wait_until(lambda: coordinator.last_update_success, 60, "the server back")
        back = time.monotonic()
        await wait_until(lambda: reasserted, 60, "the pin asserted again")
        assert [e.data["reason"] for e in reasserted] == ["gone"]
        await wait_until(lambda: name in coordinator.data.held, 10, "tiny resident")
        loads = proxy.sent(load_path, started)
        print(f"\n{kind}: load sent {loads[-1] - back:.2f} s after the first poll back")
        assert len(loads) == 2
        assert loads[-1] - back <= 2.0 + PIN_SETTLE_SECONDS + 1.0
        # Both loads are ours, timed exactly, and nobody waited for them: no cold start;
        # the load sensor shows the re-assertion's own figure.
        await hass.async_block_till_done()
        assert cold_starts == []
        assert [(e.data["cold_start"], e.data["load_source"]) for e in loaded] == [
            (False, "client"),
            (False, "client"),
        ]
        figure = hass.states.get(model_id(entry, "sensor.tiny_last_measured_load_duration"))
        assert float(figure.state) == pytest.approx(reasserted[0].data["seconds"], abs=0.05)
        await call(hass, "unpin", config_entry_id=entry.entry_id, model="tiny", evict=True)
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()


@pytest.mark.e2e
async def test_the_guard_on_the_real_ollama(hass: HomeAssistant, ollama_url: str) -> None:
    """A protected entity turns on: the pin is released (one unload sent); off: loaded again.

    On the integration's own timers (polls every 2 s, re-applied at once), through a proxy
    that counts what it sent.
    """
    url = ollama_url
    proxy = RecordingProxy(url)
    await proxy.start()
    try:
        hass.states.async_set(PLEX, "off")
        entry = await add_server(hass, proxy.url, interval=2.0)
        await protect(hass, entry, PLEX)
        coordinator = entry.runtime_data.coordinator
        name = coordinator.resolve_model("tiny")
        await call(hass, "pin", config_entry_id=entry.entry_id, model="tiny", priority=3)
        released = async_capture_events(hass, EVENT_PIN_RELEASED)
        reapplied = async_capture_events(hass, EVENT_PIN_REAPPLIED)
        started = time.monotonic()
        hass.states.async_set(PLEX, "on")
        await wait_until(lambda: name not in coordinator.data.held, 30, "tiny released")
        unloads = [r for r in proxy.requests if r.at >= started and r.path == "/api/generate"]
        assert [r.json().get("keep_alive") for r in unloads] == [0]
        assert [e.data["reason"] for e in released] == ["protected_entity"]
        # Refused meanwhile, with the entity named.
        with pytest.raises(HomeAssistantError) as err:
            await call(hass, "preload", config_entry_id=entry.entry_id, model="tiny")
        assert err.value.translation_key == "guard_protected"
        await asyncio.sleep(4)  # two polls: nothing is asserted while Plex needs the GPU
        assert name not in coordinator.data.held
        hass.states.async_set(PLEX, "off")
        await wait_until(lambda: name in coordinator.data.held, 30, "tiny pinned again")
        assert [e.data["model"] for e in reapplied] == [name]
        loads = [
            r.json()
            for r in proxy.requests
            if r.at >= started and r.path == "/api/generate" and r.json().get("keep_alive") != 0
        ]
        assert loads == [{"model": name, "keep_alive": -1}]
        await call(hass, "unpin", config_entry_id=entry.entry_id, model="tiny", evict=True)
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()
