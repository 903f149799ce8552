"""llm_warmth.pin / unpin and the "Keep warm" switch: kept resident, asserted again, stored."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any
from unittest.mock import patch

from homeassistant.const import STATE_OFF, STATE_ON
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError, Unauthorized
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockUser,
    async_capture_events,
    async_fire_time_changed,
)

from custom_components.llm_warmth.const import (
    DOMAIN,
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_PIN_REASSERTED,
)

from .conftest import ENTRY_ID, GIB, LLAMA, QWEN, model_id, ollama_request
from .e2e import add_server, call, wait_until
from .held_answer import HeldAnswer
from .llama_server_emulator import LlamaServerEmulator
from .llama_swap_emulator import LlamaSwapEmulator
from .ollama_emulator import EmulatedModel, OllamaEmulator
from .test_llama_server import server  # noqa: F401 (a fixture)
from .test_llama_swap import add_swap, swap  # noqa: F401 (a fixture)

SWITCH = "switch.ollama_test_llama3_2_3b_keep_warm"
STORE = f"{DOMAIN}.{ENTRY_ID}"


def keep_alives(emulator: OllamaEmulator, model: str) -> list[object]:
    """The keep_alive of each load request for ``model`` (None: the server's default)."""
    return [
        r.json.get("keep_alive")
        for r in emulator.requests
        if r.path == "/api/generate" and r.json.get("model") == model and "prompt" not in r.json
    ]


async def next_poll(hass: HomeAssistant, emulator: OllamaEmulator, seconds: float = 10) -> None:
    """Let ``seconds`` pass and the integration's own poll timer fire (and what it starts)."""
    emulator.clock.advance(seconds)
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=seconds))
    await hass.async_block_till_done(wait_background_tasks=True)


@pytest.fixture
def clocks_agree(emulator: OllamaEmulator) -> None:
    """The server's clock (the coordinator's in these tests) starts at Home Assistant's."""
    emulator.clock.set(dt_util.utcnow())


pytestmark = pytest.mark.usefixtures("clocks_agree")


async def test_pin_keeps_the_model_and_asserts_it_again(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    hass_storage: dict[str, Any],
) -> None:
    answer = await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA, priority=5)
    assert answer["already_resident"] is False
    assert answer["until"] is None
    assert answer["priority"] == 5
    assert answer["summary"] == f"{LLAMA} pinned until unpinned"
    assert "empty request" in answer["reassert_cost"]
    assert keep_alives(emulator, LLAMA) == [-1]
    switch = hass.states.get(SWITCH)
    assert switch.state == STATE_ON
    assert (switch.attributes["priority"], switch.attributes["until"]) == (5, None)
    # Stored at once: a restart right now loses nothing.
    assert hass_storage[STORE]["data"]["pins"][LLAMA]["priority"] == 5
    reasserted = async_capture_events(hass, EVENT_PIN_REASSERTED)
    # the re-assertions of a model still resident are no loads: none told from here
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)

    # Another client asks with a 5-minute keep_alive: the last writer wins, until the poll.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": "5m"})
    await next_poll(hass, emulator)
    assert keep_alives(emulator, LLAMA) == [-1, "5m", -1]
    assert [e.data["reason"] for e in reasserted] == ["expiry_shortened"]
    assert emulator.loaded[LLAMA].expires_at - emulator.clock.now() > timedelta(days=3650)

    # The server restarts: the first poll that reaches it again loads the model.
    await emulator.restart()
    assert LLAMA not in emulator.loaded
    assert loaded == []
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    await next_poll(hass, emulator, 20)
    await wait_until(lambda: LLAMA in emulator.loaded, 5, "pinned model loaded again")
    await wait_until(lambda: len(reasserted) == 2, 5, "the re-assertion's event")
    assert [e.data["reason"] for e in reasserted] == ["expiry_shortened", "gone"]
    await next_poll(hass, emulator, 30)
    assert hass.states.get(f"binary_sensor.{SWITCH[7:-10]}_resident").state == STATE_ON
    # The re-assertion's load: its exact figure, once; nobody waited for it.
    assert [(e.data["model"], e.data["load_source"]) for e in loaded] == [(LLAMA, "client")]
    assert loaded[0].data["load_seconds"] == reasserted[-1].data["seconds"]
    assert reasserted[-1].data["pushed_out"] == []  # nothing else was resident
    assert cold_starts == []


async def test_unpin_hands_back_or_unloads(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    answer = await call(hass, "unpin", config_entry_id=ENTRY_ID, model=LLAMA)
    assert answer == {
        "model": LLAMA,
        "was_pinned": True,
        "residency": "handed_back",
        "summary": f"{LLAMA} unpinned; kept for the server's default idle time from now",
    }
    assert keep_alives(emulator, LLAMA) == [-1, None]  # Ollama's own keep_alive from now
    assert hass.states.get(SWITCH).state == STATE_OFF
    answer = await call(hass, "unpin", config_entry_id=ENTRY_ID, model=LLAMA)
    assert answer["summary"] == f"{LLAMA} was not pinned; left as the server keeps it"
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=QWEN)
    answer = await call(hass, "unpin", config_entry_id=ENTRY_ID, model=QWEN, evict=True)
    assert (answer["residency"], QWEN in emulator.loaded) == ("unloaded", False)
    answer = await call(hass, "unpin", config_entry_id=ENTRY_ID, model=QWEN)
    assert answer["summary"] == f"{QWEN} was not pinned; not resident"
    # Unpinned: no longer asserted.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await next_poll(hass, emulator)
    assert LLAMA not in emulator.loaded
    # Evicting a pinned model unpins it (the pin would load it again).
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    await call(hass, "evict", config_entry_id=ENTRY_ID, model=LLAMA)
    assert hass.states.get(SWITCH).state == STATE_OFF
    await next_poll(hass, emulator)
    assert LLAMA not in emulator.loaded


async def test_keep_warm_switch_is_the_pin(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    await hass.services.async_call("switch", "turn_on", {"entity_id": SWITCH}, blocking=True)
    assert hass.states.get(SWITCH).state == STATE_ON
    assert LLAMA in emulator.loaded
    assert init_integration.runtime_data.pins.get(LLAMA) is not None
    await hass.services.async_call("switch", "turn_off", {"entity_id": SWITCH}, blocking=True)
    assert hass.states.get(SWITCH).state == STATE_OFF
    assert init_integration.runtime_data.pins.get(LLAMA) is None
    # A server error while turning it on: translated, and the switch stays off.
    emulator.inject("/api/generate", status=500, body="boom")
    with pytest.raises(HomeAssistantError) as err:
        await hass.services.async_call("switch", "turn_on", {"entity_id": SWITCH}, blocking=True)
    assert err.value.translation_domain == DOMAIN
    assert hass.states.get(SWITCH).state == STATE_OFF


async def test_a_pin_with_an_end(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    answer = await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA, **{"for": "00:30:00"})
    assert 1790 <= keep_alives(emulator, LLAMA)[-1] <= 1810  # type: ignore[operator]
    # The answer tells the end in the household's time zone (the test's: US/Pacific), as
    # the summary does; the switch's attribute is the same time (the frontend shows it so).
    end = dt_util.now() + timedelta(minutes=30)
    until = datetime.fromisoformat(str(answer["until"]))
    assert until.utcoffset() == end.utcoffset() != timedelta(0)
    assert abs(until - end) < timedelta(seconds=5)
    attribute = datetime.fromisoformat(hass.states.get(SWITCH).attributes["until"])
    assert abs(attribute - until) < timedelta(seconds=1)
    assert answer["summary"] == f"{LLAMA} pinned until {until:%Y-%m-%d %H:%M}"
    until = dt_util.now() + timedelta(hours=1)
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA, until=until.isoformat())
    assert 3590 <= keep_alives(emulator, LLAMA)[-1] <= 3610  # type: ignore[operator]
    # Past its end the pin is gone; the server lets the model go by itself.
    await next_poll(hass, emulator, 3601)
    assert hass.states.get(SWITCH).state == STATE_OFF
    assert init_integration.runtime_data.pins.pins == {}


async def test_pins_survive_a_home_assistant_restart(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    hass_storage: dict[str, Any],
) -> None:
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=QWEN, priority=-3)
    await hass.config_entries.async_unload(ENTRY_ID)
    await emulator.restart()  # and the server restarted meanwhile
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done(wait_background_tasks=True)
    # Restored and asserted right after the first poll.
    assert init_integration.runtime_data.pins.get(QWEN).priority == -3  # type: ignore[union-attr]
    await wait_until(lambda: QWEN in emulator.loaded, 5, "pinned model loaded again")
    assert hass.states.get("switch.ollama_test_qwen3_8b_keep_warm").state == STATE_ON
    # Removing the entry removes its pins with its measurements.
    await hass.config_entries.async_remove(ENTRY_ID)
    assert STORE not in hass_storage


async def test_pin_refusals_are_translated(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    hass_read_only_user: MockUser,
) -> None:
    for data, key in (
        ({"model": "nope:1b"}, "model_not_found"),
        ({"model": LLAMA, "until": "2020-01-01T00:00:00"}, "keep_until_past"),
        ({"model": LLAMA, "until": "9999-12-31T00:00:00"}, "keep_too_far"),
        ({"model": LLAMA, "until": "9999-12-31T23:59:59+00:00"}, "keep_too_far"),
        # Past what Python holds: Home Assistant's own reader had no words for it.
        ({"model": LLAMA, "until": "10000-01-01"}, "time_not_read"),
        ({"model": LLAMA, "until": "next tuesday"}, "time_not_read"),
        ({}, "no_model_target"),
    ):
        with pytest.raises(ServiceValidationError) as err:
            await call(hass, "pin", config_entry_id=ENTRY_ID, **data)
        assert err.value.translation_key == key
    with pytest.raises(ServiceValidationError) as err:
        await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA, until="1" * 500)
    assert err.value.translation_placeholders == {"given": "1" * 64, "days": "3650"}
    with pytest.raises(ServiceValidationError) as err:
        await call(hass, "preload", config_entry_id=ENTRY_ID, model=LLAMA, keep_until="10000-01-01")
    assert err.value.translation_key == "time_not_read"
    for duration, key in (
        ({"days": 10**7}, "duration_too_long"),
        (10**15, "duration_too_long"),
        ({"days": 10**9}, "duration_too_long"),
        ("-00:30:00", "duration_too_short"),
        ({"seconds": 0}, "duration_too_short"),
    ):
        with pytest.raises(ServiceValidationError) as err:
            await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA, **{"for": duration})
        assert (err.value.translation_key, err.value.translation_placeholders["field"]) == (
            key,
            "for",
        )
    assert not any(r.path == "/api/generate" for r in emulator.requests)  # nothing was sent
    emulator.inject("/api/generate", status=500, body="boom")
    with pytest.raises(HomeAssistantError) as failed:
        await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    assert failed.value.translation_domain == DOMAIN
    assert init_integration.runtime_data.pins.pins == {}  # not pinned
    for action in ("pin", "unpin"):
        with pytest.raises(Unauthorized):
            await hass.services.async_call(
                DOMAIN,
                action,
                {"config_entry_id": ENTRY_ID, "model": LLAMA},
                blocking=True,
                context=Context(user_id=hass_read_only_user.id),
            )


async def test_a_failing_reassertion_is_logged_once(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    # Another client unloads it: pinned, so back it comes.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    for _ in range(3):
        emulator.inject("/api/generate", status=500, body="boom")
        await next_poll(hass, emulator, 120)  # past each back-off
    assert caplog.text.count(f"could not keep {LLAMA} pinned") == 1
    emulator.clear_faults()
    await next_poll(hass, emulator, 600)
    await wait_until(lambda: LLAMA in emulator.loaded, 5, "pinned model loaded again")
    assert f"{LLAMA} is pinned again" in caplog.text


async def test_pins_on_llama_server_and_llama_swap(
    hass: HomeAssistant,
    server: LlamaServerEmulator,  # noqa: F811 (the fixture imported above)
    swap: LlamaSwapEmulator,  # noqa: F811
) -> None:
    """The other kinds keep a model by their own rule: the pin loads it again when gone.

    llama-server with --models-max 1 lets tiny go when another client loads big; llama-swap
    stops tiny when big of its group starts.
    """
    for entry, emulator in (
        (await add_server(hass, server.url), server),
        (await add_swap(hass, swap.url), swap),
    ):
        coordinator = entry.runtime_data.coordinator
        reasserted = async_capture_events(hass, EVENT_PIN_REASSERTED)
        answer = await call(hass, "pin", config_entry_id=entry.entry_id, model="tiny")
        assert answer["num_ctx"] is None
        assert "full load" in answer["reassert_cost"]
        assert hass.states.get(model_id(entry, "switch.tiny_keep_warm")).state == STATE_ON
        with pytest.raises(ServiceValidationError) as err:
            await call(hass, "pin", config_entry_id=entry.entry_id, model="tiny", num_ctx=1024)
        assert err.value.translation_key == "num_ctx_not_supported"
        await emulator.load_by_other_client("big")
        await wait_until(lambda c=coordinator: "big" in c.data.held, 10, "big loaded")
        await wait_until(lambda r=reasserted: r, 10, "tiny pinned again")
        assert [e.data["reason"] for e in reasserted] == ["gone"]
        assert "tiny" in coordinator.data.held
        answer = await call(hass, "unpin", config_entry_id=entry.entry_id, model="tiny")
        assert answer["residency"] == "kept"


async def test_the_pins_are_checked_once_per_poll(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """A poll that changed something tells its poll and its update listeners: one check."""
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    coordinator = init_integration.runtime_data.coordinator
    pins = init_integration.runtime_data.pins
    with (
        patch.object(pins, "due", wraps=pins.due) as due,
        patch.object(
            coordinator, "_async_refresh_finished", wraps=coordinator._async_refresh_finished
        ) as polls,
    ):
        await next_poll(hass, emulator)  # nothing changed
        assert (polls.call_count, due.call_count) == (1, 1)
        # Another, small model loads beside the pinned one (both fit): the snapshot changes.
        emulator.add_model(EmulatedModel(name="gemma3:1b", size=GIB, family="gemma3"))
        await ollama_request(emulator, "/api/generate", {"model": "gemma3:1b"})
        await next_poll(hass, emulator)
        assert "gemma3:1b" in coordinator.data.held
        assert polls.call_count >= 2
        assert due.call_count == polls.call_count


async def test_unpinning_a_model_the_server_let_go_sends_nothing(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Handed back is only for a model still resident: one let go is not loaded again."""
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    # another client unloads it, and no poll came since
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    assert LLAMA not in emulator.loaded
    answer = await call(hass, "unpin", config_entry_id=ENTRY_ID, model=LLAMA)
    assert (answer["was_pinned"], answer["residency"]) == (True, "not_resident")
    assert keep_alives(emulator, LLAMA) == [-1, 0]  # the pin's, the other client's: no more
    assert LLAMA not in emulator.loaded


async def test_a_pin_being_asserted_is_not_asserted_again_by_the_next_poll(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """An assertion the server answers after a later poll is one request, not two.

    The later poll comes after the pins' back-off (60 s): only the one under way holds it.
    """
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": "5m"})
    reasserted = async_capture_events(hass, EVENT_PIN_REASSERTED)
    held = HeldAnswer()
    emulator.inject("/api/generate", hold=held)
    for poll in range(2):
        emulator.clock.advance(10 + 70 * poll)
        async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=10 + 70 * poll))
        await hass.async_block_till_done()
        async with asyncio.timeout(5):
            await held.arrived.wait()
        for _ in range(5):  # what a second assertion would send, it has sent by now
            await asyncio.sleep(0.05)
    assert keep_alives(emulator, LLAMA) == [-1, "5m", -1]
    held.release()
    await wait_until(lambda: reasserted, 5, "the re-assertion's event")
    assert [e.data["reason"] for e in reasserted] == ["expiry_shortened"]
    assert keep_alives(emulator, LLAMA) == [-1, "5m", -1]
