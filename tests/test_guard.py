"""The household guard in Home Assistant: refusals, releases and re-applies, on the emulator."""

from __future__ import annotations

import asyncio
from typing import Any

from homeassistant.const import (
    CONF_API_KEY,
    CONF_SCAN_INTERVAL,
    CONF_URL,
    CONF_VERIFY_SSL,
    STATE_ON,
)
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events

from custom_components.llm_warmth.const import (
    CONF_GPU_SOURCE,
    CONF_GUARD_CLEAR_MINUTES,
    CONF_HOST,
    CONF_PROTECTED_ENTITIES,
    CONF_RESERVE_GIB,
    DOMAIN,
    EVENT_PIN_REAPPLIED,
    EVENT_PIN_RELEASED,
)
from custom_components.llm_warmth.household_guard import releases_issue_id

from .conftest import ENTRY_ID, GIB, LLAMA, QWEN, ollama_request
from .e2e import add_server, protect, wait_until
from .fake_nvml import RTX_4090, FakeNvml
from .held_answer import HeldAnswer
from .llama_server_emulator import LlamaServerEmulator
from .llama_swap_emulator import LlamaSwapEmulator
from .ollama_emulator import EmulatedModel, OllamaEmulator
from .test_gpu import nvml  # noqa: F401 (a fixture)
from .test_llama_server import server  # noqa: F401 (a fixture)
from .test_llama_swap import add_swap, swap  # noqa: F401 (a fixture)
from .test_pin import call, next_poll

PLEX = "binary_sensor.plex_transcoding"
SWITCH = "switch.ollama_test_{}_keep_warm"
CONTENTION = "sensor.ollama_test_gpu_contention"


async def start(hass: HomeAssistant, entry: MockConfigEntry, **options: Any) -> None:
    entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(
        entry,
        options={
            CONF_SCAN_INTERVAL: 10,
            CONF_PROTECTED_ENTITIES: [PLEX],
            CONF_GUARD_CLEAR_MINUTES: 1,
            **options,
        },
    )
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()


@pytest.fixture(autouse=True)
def room_for_both(emulator: OllamaEmulator) -> None:
    """Both models fit the emulated GPU together; the clocks agree."""
    emulator.vram_budget = 16 * GIB
    emulator.clock.set(dt_util.utcnow())


async def test_a_protected_entity_releases_pins_lowest_first_then_they_come_back(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    hass.states.async_set(PLEX, "off")
    await start(hass, mock_config_entry)
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA, priority=5)
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=QWEN)
    released = async_capture_events(hass, EVENT_PIN_RELEASED)
    reapplied = async_capture_events(hass, EVENT_PIN_REAPPLIED)

    # Plex starts a transcode: the lowest priority pin goes at once.
    hass.states.async_set(PLEX, STATE_ON)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [(e.data["model"], e.data["reason"], e.data["entity"]) for e in released] == [
        (QWEN, "protected_entity", PLEX)
    ]
    assert QWEN not in emulator.loaded
    switch = hass.states.get(SWITCH.format("qwen3_8b"))
    assert (switch.state, switch.attributes["released"]) == (STATE_ON, "protected_entity")
    # Still on at the next poll: answered; the higher priority pin stays, and the
    # released one is not asserted again meanwhile.
    await next_poll(hass, emulator)
    assert [e.data["model"] for e in released] == [QWEN]
    assert set(emulator.loaded) == {LLAMA}
    assert float(hass.states.get(CONTENTION).state) > 0  # Plex needs it, a pin holds it

    # Loads are refused while Plex needs the GPU, unless forced.
    with pytest.raises(HomeAssistantError) as err:
        await call(hass, "preload", config_entry_id=ENTRY_ID, model=QWEN)
    assert err.value.translation_key == "guard_protected"
    assert err.value.translation_placeholders["entity"] == PLEX
    with pytest.raises(HomeAssistantError):
        await hass.services.async_call(
            "switch", "turn_on", {"entity_id": SWITCH.format("qwen3_8b")}, blocking=True
        )
    await call(hass, "preload", config_entry_id=ENTRY_ID, model=LLAMA)  # resident: fine
    forced = await call(hass, "preload", config_entry_id=ENTRY_ID, model=QWEN, force=True)
    assert forced["already_resident"] is False
    await call(hass, "evict", config_entry_id=ENTRY_ID, model=QWEN)  # unpins it too

    # Plex turns on again (another transcode): the next lowest, the assistant, goes.
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=QWEN, force=True)
    hass.states.async_set(PLEX, "off")
    hass.states.async_set(PLEX, STATE_ON)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [e.data["model"] for e in released] == [QWEN, QWEN]
    hass.states.async_set(PLEX, "off")
    await hass.async_block_till_done(wait_background_tasks=True)
    hass.states.async_set(PLEX, "2")  # two transcodes: a number above 0 is "on"
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [e.data["model"] for e in released] == [QWEN, QWEN, LLAMA]
    assert emulator.loaded == {}

    # The transcodes end; a minute later the pins hold again and the models come back.
    hass.states.async_set(PLEX, "off")
    await hass.async_block_till_done(wait_background_tasks=True)
    assert reapplied == []
    await next_poll(hass, emulator, 61)
    assert [e.data["model"] for e in reapplied] == [LLAMA, QWEN]
    await wait_until(lambda: set(emulator.loaded) == {LLAMA, QWEN}, 10, "both pinned again")
    assert hass.states.get(SWITCH.format("qwen3_8b")).attributes["released"] is None


async def test_a_release_under_way_is_not_started_again(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """The household changes again while the release's unload runs: one release, one unload."""
    hass.states.async_set(PLEX, "off")
    await start(hass, mock_config_entry)
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    released = async_capture_events(hass, EVENT_PIN_RELEASED)
    unload = HeldAnswer()
    emulator.inject("/api/generate", hold=unload)
    before = len(emulator.requests)
    hass.states.async_set(PLEX, STATE_ON)
    await asyncio.wait_for(unload.arrived.wait(), 5)
    # Still unloading: the transcode's state changes again, twice.
    hass.states.async_set(PLEX, STATE_ON, {"sessions": 2})
    hass.states.async_set(PLEX, STATE_ON, {"sessions": 3})
    await hass.async_block_till_done()
    unload.release()
    await wait_until(lambda: LLAMA not in emulator.loaded, 5, "llama released")
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [e.data["model"] for e in released] == [LLAMA]
    unloads = [
        r
        for r in emulator.requests[before:]
        if r.path == "/api/generate" and r.json.get("keep_alive") == 0
    ]
    assert len(unloads) == 1


async def test_releases_again_and_again_raise_a_repair(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    issue_registry: ir.IssueRegistry,
) -> None:
    hass.states.async_set(PLEX, "off")
    await start(hass, mock_config_entry, **{CONF_GUARD_CLEAR_MINUTES: 0})
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    issue_id = releases_issue_id(ENTRY_ID)
    for _ in range(3):
        assert issue_registry.async_get_issue(DOMAIN, issue_id) is None
        hass.states.async_set(PLEX, STATE_ON)
        await hass.async_block_till_done(wait_background_tasks=True)
        hass.states.async_set(PLEX, "0")  # a number: 0 transcodes, the GPU is free
        await next_poll(hass, emulator)
        await wait_until(lambda: LLAMA in emulator.loaded, 5, "llama pinned again")
        await next_poll(hass, emulator)
    issue = issue_registry.async_get_issue(DOMAIN, issue_id)
    assert issue is not None
    assert issue.translation_placeholders["count"] == "3"
    # A day later the releases are old: the issue goes.
    await next_poll(hass, emulator, 24 * 3600)
    assert issue_registry.async_get_issue(DOMAIN, issue_id) is None
    await hass.config_entries.async_remove(ENTRY_ID)


@pytest.mark.usefixtures("nvml")
async def test_headroom_refuses_a_model_that_does_not_fit_and_releases_when_short(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    nvml: FakeNvml,  # noqa: F811 (the fixture imported above)
) -> None:
    # RTX 4090: 9.57 GiB free; RTX 3060: 10.87 GiB free. With 7 GiB reserved the best
    # place has 3.87 GiB of headroom: qwen3:8b, never resident yet, is estimated by its
    # file (4.2 GiB) and does not fit; llama3.2:3b does.
    await start(hass, mock_config_entry, **{CONF_GPU_SOURCE: "nvml", CONF_RESERVE_GIB: 7.0})
    with pytest.raises(HomeAssistantError) as err:
        await call(hass, "pin", config_entry_id=ENTRY_ID, model=QWEN)
    assert err.value.translation_key == "guard_headroom"
    assert err.value.translation_placeholders == {
        "model": QWEN,
        "size": "4.2",
        "headroom": "3.9",
        "free": "10.9",
        "reserve": "7.0",
    }
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    released = async_capture_events(hass, EVENT_PIN_RELEASED)
    # A transcode takes 3 GiB of the 4090: below the reserve there.
    next(g for g in nvml.gpus if g.uuid == RTX_4090).used_mib += 3072
    await next_poll(hass, emulator)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [(e.data["model"], e.data["reason"]) for e in released] == [(LLAMA, "headroom_low")]
    assert released[0].data["headroom_gib"] < 0
    assert released[0].data["reserve_gib"] == 7.0
    assert "ffmpeg" in released[0].data["processes"]
    assert LLAMA not in emulator.loaded


@pytest.mark.usefixtures("nvml")
async def test_headroom_weighs_a_model_by_the_memory_it_last_held_not_its_file(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
) -> None:
    """qwen3:8b's file is 4.2 GiB, resident it held 6 GiB (its context's cache with it).

    With 5.9 GiB reserved the RTX 3060 has 5.0 GiB of headroom: never resident, the file
    fits; once it was resident, the 6 GiB it held does not.
    """
    await start(hass, mock_config_entry, **{CONF_GPU_SOURCE: "nvml", CONF_RESERVE_GIB: 5.9})
    await call(hass, "preload", config_entry_id=ENTRY_ID, model=QWEN)
    await call(hass, "evict", config_entry_id=ENTRY_ID, model=QWEN)
    assert QWEN not in emulator.loaded
    with pytest.raises(HomeAssistantError) as err:
        await call(hass, "pin", config_entry_id=ENTRY_ID, model=QWEN)
    assert err.value.translation_key == "guard_headroom"
    assert (
        err.value.translation_placeholders["size"],
        err.value.translation_placeholders["headroom"],
    ) == ("6.0", "5.0")
    assert QWEN not in emulator.loaded


async def test_the_guard_on_llama_server_and_llama_swap(
    hass: HomeAssistant,
    server: LlamaServerEmulator,  # noqa: F811 (the fixture imported above)
    swap: LlamaSwapEmulator,  # noqa: F811
) -> None:
    """Every kind: a protected entity releases the pin (unloaded); cleared, it comes back."""
    hass.states.async_set(PLEX, "off")
    for entry, emulator in (
        (await add_server(hass, server.url), server),
        (await add_swap(hass, swap.url), swap),
    ):
        await protect(hass, entry, PLEX)
        coordinator = entry.runtime_data.coordinator
        await call(hass, "pin", config_entry_id=entry.entry_id, model="tiny")
        released = async_capture_events(hass, EVENT_PIN_RELEASED)
        hass.states.async_set(PLEX, STATE_ON)
        # (Not waiting for background tasks: the server's event stream is one of them.)
        await wait_until(lambda r=released: r, 5, "the release")
        assert [e.data["model"] for e in released] == ["tiny"]
        await wait_until(lambda c=coordinator: "tiny" not in c.data.held, 5, "tiny released")
        assert emulator.state("tiny") != "loaded"
        hass.states.async_set(PLEX, "off")
        await hass.async_block_till_done()
        await coordinator.async_refresh()  # the next poll re-applies it
        await wait_until(lambda c=coordinator: "tiny" in c.data.held, 10, "tiny pinned again")
        await hass.config_entries.async_unload(entry.entry_id)


async def test_a_pin_the_server_let_go_waits_while_the_household_needs_the_gpu(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """A pin kept through a release (higher priority) is not loaded again meanwhile."""
    hass.states.async_set(PLEX, "off")
    await start(hass, mock_config_entry)
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA, priority=5)
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=QWEN)
    released = async_capture_events(hass, EVENT_PIN_RELEASED)
    hass.states.async_set(PLEX, STATE_ON)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [e.data["model"] for e in released] == [QWEN]
    # Another client unloads the pin that was kept; Plex still transcodes.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    loads = len(emulator.requests)
    for _ in range(3):
        await next_poll(hass, emulator)
    assert [e.data["model"] for e in released] == [QWEN]  # LLAMA's pin was not released
    assert emulator.loaded == {}  # and it waits
    assert not [r for r in emulator.requests[loads:] if r.path == "/api/generate"]
    # Plex is done: at the next poll the kept pin holds its model again.
    hass.states.async_set(PLEX, "off")
    await hass.async_block_till_done(wait_background_tasks=True)
    await next_poll(hass, emulator)
    await wait_until(lambda: LLAMA in emulator.loaded, 10, "the kept pin asserted again")


async def test_the_guard_is_per_host(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """A household service belongs to its host: Plex on the gaming PC releases the pins of
    the servers there, never those of the NAS; a server moved to the PC's host is held back
    by the PC's services, set on the other entry."""
    nas = OllamaEmulator(vram_budget=16 * GIB, clock=emulator.clock)
    nas.add_model(EmulatedModel(name=LLAMA, size=3 * GIB))
    await nas.start()
    try:
        hass.states.async_set(PLEX, "off")
        await start(hass, mock_config_entry, **{CONF_HOST: "gaming-pc"})
        nas_entry = MockConfigEntry(
            domain=DOMAIN,
            title="NAS",
            unique_id=nas.url,
            version=2,
            minor_version=2,
            data={
                CONF_URL: nas.url,
                CONF_API_KEY: "",
                CONF_VERIFY_SSL: True,
                "server_kind": "ollama",
            },
            options={CONF_SCAN_INTERVAL: 10, CONF_HOST: "nas", CONF_GUARD_CLEAR_MINUTES: 1},
        )
        nas_entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(nas_entry.entry_id)
        await hass.async_block_till_done()
        assert nas_entry.runtime_data.household.protected == []
        await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
        await call(hass, "pin", config_entry_id=nas_entry.entry_id, model=LLAMA)
        released = async_capture_events(hass, EVENT_PIN_RELEASED)

        hass.states.async_set(PLEX, STATE_ON)
        await hass.async_block_till_done(wait_background_tasks=True)
        assert [(e.data["server"], e.data["host"]) for e in released] == [
            ("Ollama test", "gaming-pc")
        ]
        assert LLAMA in nas.loaded
        assert LLAMA not in emulator.loaded
        # The NAS refuses nothing for Plex.
        await call(hass, "preload", config_entry_id=nas_entry.entry_id, model=LLAMA)

        # The NAS's server is moved to the gaming PC (say, it ran there all along): the
        # PC's Plex, set on the other entry, now holds it back too.
        hass.config_entries.async_update_entry(
            nas_entry, options={**nas_entry.options, CONF_HOST: "Gaming-PC "}
        )
        assert await hass.config_entries.async_reload(nas_entry.entry_id)
        await hass.async_block_till_done(wait_background_tasks=True)
        assert nas_entry.runtime_data.household.host == "gaming-pc"
        assert nas_entry.runtime_data.household.protected == [PLEX]
        # Plex's next transcode releases the NAS server's pin too.
        hass.states.async_set(PLEX, "off")
        await hass.async_block_till_done(wait_background_tasks=True)
        hass.states.async_set(PLEX, STATE_ON)
        await hass.async_block_till_done(wait_background_tasks=True)
        assert [(e.data["server"], e.data["host"]) for e in released][-1] == ("NAS", "gaming-pc")
        assert LLAMA not in nas.loaded
        await hass.config_entries.async_unload(nas_entry.entry_id)
    finally:
        await nas.stop()


async def test_a_service_added_on_a_host_mate_is_followed_at_once(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Another entry of the same host gets a protected entity: this entry's guard follows it
    without a reload of its own."""
    hass.states.async_set(PLEX, "off")
    await start(hass, mock_config_entry, **{CONF_PROTECTED_ENTITIES: [], CONF_HOST: "pc"})
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    released = async_capture_events(hass, EVENT_PIN_RELEASED)
    other = MockConfigEntry(
        domain=DOMAIN,
        title="Other",
        unique_id="http://pc:9292",
        version=2,
        minor_version=2,
        data={CONF_URL: "http://pc:9292", "server_kind": "llama_swap"},
        options={CONF_HOST: "pc"},
        disabled_by=None,
    )
    other.add_to_hass(hass)  # not set up: its settings are what count
    hass.config_entries.async_update_entry(
        other, options={CONF_HOST: "pc", CONF_PROTECTED_ENTITIES: [PLEX]}
    )
    await hass.async_block_till_done()
    hass.states.async_set(PLEX, STATE_ON)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [(e.data["model"], e.data["entity"], e.data["host"]) for e in released] == [
        (LLAMA, PLEX, "pc")
    ]


async def test_the_guards_record_outlives_a_restart_and_a_damaged_one_is_said(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    hass_storage: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Its contended time and releases come back from the store and go back to it; a
    record that does not read is set aside with a warning (never an error)."""
    key = f"{DOMAIN}.{mock_config_entry.entry_id}"
    record = {"contended_seconds": 90.5, "releases": ["2026-12-06T08:00:00+00:00"]}
    hass_storage[key] = {"version": 1, "minor_version": 8, "key": key, "data": {"guard": record}}
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    guard = mock_config_entry.runtime_data.guard
    assert guard.as_stored() == record
    assert guard.guard.contended_minutes == pytest.approx(90.5 / 60)
    await hass.config_entries.async_unload(mock_config_entry.entry_id)
    assert hass_storage[key]["data"]["guard"] == record
    hass_storage[key]["data"]["guard"] = {"contended_seconds": "lots"}
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    assert "Ignoring the household guard's stored record" in caplog.text
    assert mock_config_entry.runtime_data.guard.as_stored() == {
        "contended_seconds": 0.0,
        "releases": [],
    }
