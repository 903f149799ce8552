"""Polling on the integration's own timers: nothing here triggers a poll by hand.

Home Assistant schedules a coordinator's next refresh at "this whole second + a random
fraction + the interval": with a sub-second interval that time is often already past, and
the polls ran back to back (hundreds per load). These tests let the timers run, on a frozen
clock moved in small steps (``time.monotonic``, which the coordinator and the emulator's
request log read, moves with it), and count what reached the server.
"""

import itertools
import time

from freezegun.api import FrozenDateTimeFactory
from homeassistant.const import CONF_SCAN_INTERVAL
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.const import SETTLING_SCAN_INTERVAL

from .conftest import LLAMA, advance, start_load
from .ollama_emulator import OllamaEmulator

FAST = SETTLING_SCAN_INTERVAL.total_seconds()


def ps_polls(emulator: OllamaEmulator, since: float, until: float) -> list[float]:
    """Return when /api/ps was asked for in [since, until] (monotonic seconds)."""
    return [r.at for r in emulator.requests if r.path == "/api/ps" and since <= r.at <= until]


async def set_up_polling_every_2_s(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(entry, options={CONF_SCAN_INTERVAL: 2})
    assert await hass.config_entries.async_setup(entry.entry_id)


async def test_fast_polls_are_spaced_during_a_multi_second_load(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    await set_up_polling_every_2_s(hass, mock_config_entry)
    coordinator = mock_config_entry.runtime_data.coordinator

    load_seconds = 4.0
    await advance(hass, freezer, 0.1)  # after the setup's poll (the clock is frozen)
    load = await start_load(emulator, LLAMA, None)  # held until finish_loads()
    started = time.monotonic()
    # The regular 2 s poll finds the load on its own; from then on the fast timer runs.
    await advance(hass, freezer, load_seconds)
    emulator.finish_loads()
    await load
    ended = time.monotonic()
    await advance(hass, freezer, FAST + 0.3)  # the poll that sees the load's end
    assert not coordinator.fast_polling
    assert coordinator.data.timings[LLAMA].cold_request_at_least_seconds is not None

    polls = ps_polls(emulator, started, ended)
    gaps = [b - a for a, b in itertools.pairwise(polls)]
    # Found within one regular interval, then about one poll per FAST seconds.
    assert polls[0] - started <= 2.0 + 0.6
    fast_span = ended - polls[0]
    assert len(polls) - 1 <= fast_span / FAST + 1
    assert len(polls) - 1 >= fast_span / FAST - 2
    assert min(gaps) >= FAST - 0.05, gaps

    # Back to the regular 2 s interval once the load is over (Home Assistant adds a
    # random fraction of a second: regular polls are at least a second apart).
    quiet_from = time.monotonic()
    await advance(hass, freezer, 2.0)
    after = ps_polls(emulator, quiet_from, time.monotonic())
    assert len(after) <= 2
    assert all(b - a >= 1.0 for a, b in itertools.pairwise(after)), after
    await hass.config_entries.async_unload(mock_config_entry.entry_id)


async def test_no_fast_polls_of_an_idle_server(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    await set_up_polling_every_2_s(hass, mock_config_entry)
    await advance(hass, freezer, 0.1)  # after the setup's poll (the clock is frozen)
    since = time.monotonic()
    await advance(hass, freezer, 4.2)
    polls = ps_polls(emulator, since, time.monotonic())
    # Every 2 s (Home Assistant adds a random fraction of a second to each).
    assert 1 <= len(polls) <= 3
    gaps = [b - a for a, b in itertools.pairwise(polls)]
    assert all(gap >= 1.0 for gap in gaps), gaps
    await hass.config_entries.async_unload(mock_config_entry.entry_id)
