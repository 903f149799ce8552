"""The idle profile on the emulator, on a fake clock across 480 minutes.

With a Home Assistant restart (the entry reloaded) and a use in between that restarts a
wait, and the household guard holding a probe back.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from homeassistant.const import STATE_ON
from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.llm_warmth.const import CONF_PROTECTED_ENTITIES
from custom_components.llm_warmth.core.idle_profile import IdleProfile, IdleResult

from .conftest import ENTRY_ID, LLAMA, add_ollama_agent, ollama_request
from .ollama_emulator import OllamaEmulator
from .test_diagnose import probe_contexts
from .test_pin import call

SENSOR = "sensor.ollama_test_llama3_2_3b_idle_profile"
PLEX = "binary_sensor.plex_transcoding"


class Clock:
    """Home Assistant's timers and the emulator's clock, moved together."""

    def __init__(self, hass: HomeAssistant, emulator: OllamaEmulator) -> None:
        self.hass = hass
        self.emulator = emulator
        self.start = dt_util.utcnow()
        self.elapsed = timedelta(0)
        emulator.clock.set(self.start)

    async def minutes(self, minutes: float) -> None:
        for _ in range(int(minutes * 6) or 1):  # every 10 s, as the polls go
            step = timedelta(minutes=minutes) / (int(minutes * 6) or 1)
            self.elapsed += step
            self.emulator.clock.set(self.start + self.elapsed)
            async_fire_time_changed(self.hass, self.start + self.elapsed)
            await self.hass.async_block_till_done(wait_background_tasks=True)

    def now(self) -> datetime:
        return self.start + self.elapsed


def results(hass: HomeAssistant) -> list[tuple[int, bool]]:
    return [(r["minutes"], r["resident"]) for r in hass.states.get(SENSOR).attributes["results"]]


@pytest.mark.usefixtures("socket_enabled")
async def test_an_idle_profile_across_a_restart_and_a_use(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    hass.states.async_set(PLEX, "off")
    mock_config_entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(
        mock_config_entry, options={"scan_interval": 10, CONF_PROTECTED_ENTITIES: [PLEX]}
    )
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    clock = Clock(hass, emulator)
    emulator.models[LLAMA].load_delay = 0.3
    # Ollama keeps the model 5 minutes after its last use (the emulator's default keep_alive).
    answer = await call(hass, "start_idle_profile", config_entry_id=ENTRY_ID, model=LLAMA)
    assert answer["model"] == LLAMA
    await clock.minutes(0.2)
    assert results(hass) == [(0, False)]  # the 0-minute probe: cold, the first use
    await clock.minutes(1)
    assert results(hass) == [(0, False), (1, True)]
    # Another client uses the model 5 minutes in: the 10-minute wait starts again.
    await clock.minutes(5)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "prompt": "hi"})
    await clock.minutes(6)
    assert results(hass) == [(0, False), (1, True)]
    # A restart in the middle: the profile is stored and goes on.
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    await clock.minutes(5)
    assert results(hass) == [(0, False), (1, True), (10, False)]
    # The household needs the GPU when the 60-minute probe is due: it waits.
    await clock.minutes(55)
    hass.states.async_set(PLEX, STATE_ON)
    await clock.minutes(10)
    assert len(results(hass)) == 3
    hass.states.async_set(PLEX, "off")
    await clock.minutes(6)
    assert results(hass)[-1] == (60, False)
    await clock.minutes(481)
    state = hass.states.get(SENSOR)
    assert state.state == "done"
    assert [m for m, _ in results(hass)] == [0, 1, 10, 60, 480]
    assert state.attributes["verdict"].startswith("resident through 1 min; evicted by 10 min")
    answer = await call(hass, "stop_idle_profile", config_entry_id=ENTRY_ID, model=LLAMA)
    assert len(answer["results"]) == 5
    assert hass.states.get(SENSOR).state == "unknown"


async def test_the_target_sensor_reads_the_profile_too(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """A fast last probe, but the profile broke the target after 10 minutes idle: off."""
    clock = Clock(hass, emulator)
    await call(hass, "probe", config_entry_id=ENTRY_ID, model=LLAMA)
    within = "binary_sensor.ollama_test_llama3_2_3b_within_ttft_target"
    assert hass.states.get(within).state == STATE_ON
    profile = init_integration.runtime_data.profiler.profiles
    profile[LLAMA] = IdleProfile(
        model=LLAMA,
        last_use=clock.now(),
        results=(
            IdleResult(0, clock.now(), True, 90.0, 1.0, 40.0),
            IdleResult(10, clock.now(), False, 8300.0, 8100.0, 40.0),
        ),
    )
    init_integration.runtime_data.coordinator.async_update_listeners()
    await hass.async_block_till_done()
    state = hass.states.get(within)
    assert state.state == "off"
    assert state.attributes["idle_profile_breaks_after_minutes"] == 10


@pytest.mark.usefixtures("socket_enabled")
async def test_the_profile_asks_as_the_agent_asks(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Probes with the agent's num_ctx: a resident model is found resident, not reloaded."""
    add_ollama_agent(hass, emulator.url, LLAMA, title="Kitchen", num_ctx=8192)
    clock = Clock(hass, emulator)
    emulator.models[LLAMA].load_delay = 0.3
    await call(hass, "preload", config_entry_id=ENTRY_ID, model=LLAMA)  # as the agent left it
    await call(hass, "start_idle_profile", config_entry_id=ENTRY_ID, model=LLAMA)
    await clock.minutes(0.2)
    await clock.minutes(1)
    assert results(hass) == [(0, True), (1, True)]
    assert probe_contexts(emulator) == [(LLAMA, 8192), (LLAMA, 8192)]
    loads = [r["load_ms"] for r in hass.states.get(SENSOR).attributes["results"]]
    assert all(load < 250 for load in loads)
    assert emulator.loaded[LLAMA].num_ctx == 8192


def probes_sent(emulator: OllamaEmulator) -> int:
    return sum(1 for r in emulator.requests if r.path in ("/api/chat", "/api/generate"))


@pytest.mark.usefixtures("socket_enabled")
@pytest.mark.parametrize("how", ["remove", "reload"])
async def test_an_entry_removed_or_reloaded_while_its_probe_runs_leaves_nothing_behind(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    caplog: pytest.LogCaptureFixture,
    how: str,
) -> None:
    """The 0-minute probe is loading the model when the entry goes (or comes back)."""
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    clock = Clock(hass, emulator)
    emulator.hold_loads()  # the 0-minute probe's load lasts until finish_loads()
    await call(hass, "start_idle_profile", config_entry_id=ENTRY_ID, model=LLAMA)
    async_fire_time_changed(hass, clock.now())
    async with asyncio.timeout(5):
        await emulator.wait_loading(LLAMA)
    assert emulator.loaded[LLAMA].loading  # the probe is in flight
    if how == "remove":
        await hass.config_entries.async_remove(ENTRY_ID)
    else:
        await hass.config_entries.async_reload(ENTRY_ID)
    emulator.finish_loads()  # the cancelled request's load ends in the emulator
    await hass.async_block_till_done(wait_background_tasks=True)
    sent = probes_sent(emulator)
    # The next probes of the profile are due 1 and 10 minutes on: only a reloaded entry
    # sends them, once each (no old profiler beside the new one).
    await clock.minutes(12)
    await hass.async_block_till_done(wait_background_tasks=True)
    if how == "remove":
        assert probes_sent(emulator) == sent
        assert hass.config_entries.async_get_entry(ENTRY_ID) is None
    else:
        # The probe that was cut short is due again at once, then the 1- and the
        # 10-minute ones: one profiler, so three probes, not six.
        assert probes_sent(emulator) - sent == 3
        assert [minutes for minutes, _ in results(hass)] == [0, 1, 10]
        await hass.config_entries.async_unload(ENTRY_ID)
    assert "Task exception was never retrieved" not in caplog.text
    assert "AttributeError" not in caplog.text
    assert "Error doing job" not in caplog.text


async def test_a_profile_started_again_keeps_its_one_sensor(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Start, stop, start: the model's Idle profile sensor is the same entity throughout."""
    sensor = "sensor.ollama_test_llama3_2_3b_idle_profile"
    for _ in range(2):
        await call(hass, "start_idle_profile", config_entry_id=ENTRY_ID, model=LLAMA)
        await hass.async_block_till_done()
        assert hass.states.get(sensor).state == "running"
        await call(hass, "stop_idle_profile", config_entry_id=ENTRY_ID, model=LLAMA)
        await hass.async_block_till_done()
        assert hass.states.get(sensor).state == "unknown"
    assert "does not generate unique IDs" not in caplog.text
    assert [
        s.entity_id for s in hass.states.async_all("sensor") if "idle_profile" in s.entity_id
    ] == [sensor]
