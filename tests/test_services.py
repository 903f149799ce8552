"""The probe action: stages, cold/warm, sensors, events, and every failure translated."""

import asyncio
import json
import re
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.config_entries import SOURCE_REAUTH
from homeassistant.const import STATE_UNKNOWN
from homeassistant.core import Context, Event, EventStateChangedData, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError, Unauthorized
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.event import async_track_state_change_event
from homeassistant.helpers.service import async_get_all_descriptions
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockUser,
    async_capture_events,
)
from syrupy.assertion import SnapshotAssertion
from syrupy.matchers import path_type

from custom_components.llm_warmth.const import DOMAIN, EVENT_COLD_START, EVENT_MODEL_LOADED
from custom_components.llm_warmth.probe_prompts import DEFAULT_NUM_PREDICT, LONG_PROMPT

from .conftest import (
    ENTRY_ID,
    GIB,
    LLAMA,
    QWEN,
    advance,
    model_device,
    ollama_request,
    start_load,
)
from .ollama_emulator import EmulatedModel, OllamaEmulator

PREFIX = "sensor.ollama_test_llama3_2_3b"


def last_generation(emulator: OllamaEmulator) -> Any:
    """Return the last generation request the emulator received (polls come after it)."""
    return next(r for r in reversed(emulator.requests) if r.path in ("/api/chat", "/api/generate"))


async def probe(hass: HomeAssistant, **data: Any) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN,
        "probe",
        {"config_entry_id": ENTRY_ID, "model": LLAMA, **data},
        blocking=True,
        return_response=True,
    )
    assert response is not None
    return dict(response)


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_cold_then_warm(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    emulator.models[LLAMA].load_delay = 0.6
    emulator.models[LLAMA].prefill_delay = 0.02
    # Before the first probe there is no probe figure to show: no entity, no "unknown".
    assert hass.states.get(f"{PREFIX}_last_time_to_first_token") is None

    cold = await probe(hass)
    # The one-line verdict, its figures as in the response (each rounded once: within 1 ms).
    said = re.fullmatch(
        r"cold start: (\d+) ms, (\d+) ms of it loading, (\d+) ms prefill", cold["summary"]
    )
    assert said is not None, cold["summary"]
    keys = ("ttft_ms", "queue_and_load_ms", "prefill_ms")
    for figure, key in zip(said.groups(), keys, strict=True):
        assert abs(int(figure) - cold[key]) <= 1
    assert cold["model"] == LLAMA
    assert cold["classification"] == "cold"
    assert cold["dominant_stage"] == "load"
    assert cold["queue_and_load_ms"] >= 600
    assert cold["prefill_ms"] >= 20
    assert cold["ttft_ms"] >= cold["queue_and_load_ms"] + cold["prefill_ms"]
    # The response rounds each figure to 0.1 ms: the sum holds to that.
    assert cold["overhead_ms"] == pytest.approx(
        cold["ttft_ms"] - cold["queue_and_load_ms"] - cold["prefill_ms"],
        abs=0.16,
    )
    assert cold["decode_rate"] > 0
    assert cold["prompt_tokens"] > 0
    request = last_generation(emulator).json
    assert "keep_alive" not in request
    assert request["options"] == {"num_predict": DEFAULT_NUM_PREDICT}
    assert [(e.data["source"], e.data["dominant_stage"]) for e in cold_starts] == [
        ("probe", "load")
    ]
    assert cold_starts[0].data["ttft_ms"] == cold["ttft_ms"]
    assert hass.states.get(f"{PREFIX}_last_probe_result").state == "cold"
    # Residency follows at once: the probe asked for a poll.
    await hass.async_block_till_done()
    assert hass.states.get("binary_sensor.ollama_test_llama3_2_3b_resident").state == "on"
    assert hass.states.get(f"{PREFIX}_last_probe_result").attributes["dominant_stage"] == "load"
    # Shown in seconds (a cold TTFT runs to seconds); measured in milliseconds.
    assert float(hass.states.get(f"{PREFIX}_last_cold_time_to_first_token").state) == (
        pytest.approx(cold["ttft_ms"] / 1000, abs=0.001)
    )
    assert hass.states.get(f"{PREFIX}_last_warm_time_to_first_token").state == STATE_UNKNOWN

    # One load, one number: the loaded event, the cold start and the sensor all carry the
    # server's load_duration; the polls that follow see the same load and stay silent.
    await poll()
    await poll()
    assert [e.data["model"] for e in loaded] == [LLAMA]
    assert len(cold_starts) == 1
    # The response rounds to 0.1 ms and the events to 1 ms: they agree to 1 ms.
    server_load = cold["queue_and_load_ms"] / 1000
    for event in (loaded[0], cold_starts[0]):
        assert event.data["load_seconds"] == pytest.approx(server_load, abs=0.001)
        assert event.data["load_source"] == "server"
        assert event.data["cold_request_source"] == "client"
        assert event.data["cold_request_seconds"] >= round(cold["ttft_ms"] / 1000, 3) - 0.001
        assert event.data["reloaded"] is False
    load_sensor = hass.states.get(f"{PREFIX}_last_measured_load_duration")
    assert float(load_sensor.state) == pytest.approx(server_load, abs=0.001)
    assert load_sensor.attributes["source"] == "server"
    cold_request = hass.states.get(f"{PREFIX}_last_cold_request_duration")
    assert cold_request.attributes["source"] == "client"

    warm = await probe(hass)
    assert warm["classification"] == "warm"
    assert warm["dominant_stage"] == "none"
    assert warm["queue_and_load_ms"] * 5 < cold["queue_and_load_ms"]
    assert len(cold_starts) == 1
    assert hass.states.get(f"{PREFIX}_last_probe_result").state == "warm"
    assert float(hass.states.get(f"{PREFIX}_queue_and_load_stage").state) == pytest.approx(
        warm["queue_and_load_ms"] / 1000, abs=0.001
    )
    assert float(hass.states.get(f"{PREFIX}_prefill_stage").state) == pytest.approx(
        warm["prefill_ms"], abs=1
    )
    assert hass.states.get(f"{PREFIX}_first_decode_stage").state != STATE_UNKNOWN
    assert hass.states.get(f"{PREFIX}_overhead_stage").state != STATE_UNKNOWN
    assert hass.states.get(f"{PREFIX}_decode_rate").state != STATE_UNKNOWN
    assert hass.states.get(f"{PREFIX}_last_probe").state != STATE_UNKNOWN
    # Shown in seconds (a cold TTFT runs to seconds); measured in milliseconds.
    assert float(hass.states.get(f"{PREFIX}_last_cold_time_to_first_token").state) == (
        pytest.approx(cold["ttft_ms"] / 1000, abs=0.001)
    )


async def test_probe_options(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    await probe(
        hass,
        model="llama3.2:3b",
        long_prompt=True,
        api="generate",
        num_ctx=8192,
        options={"temperature": 0, "num_predict": 4},
    )
    request = last_generation(emulator)
    assert request.path == "/api/generate"
    assert request.json["prompt"] == LONG_PROMPT
    assert request.json["options"] == {"temperature": 0, "num_predict": 4, "num_ctx": 8192}
    await probe(hass, prompt="Custom?")
    assert last_generation(emulator).json["messages"] == [{"role": "user", "content": "Custom?"}]


async def test_model_name_without_tag(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    emulator.add_model(EmulatedModel(name="gemma3:latest", size=1024**3))
    init_integration.runtime_data.coordinator.monitor._installed_at = None
    await init_integration.runtime_data.coordinator.async_refresh()
    result = await probe(hass, model="gemma3")
    assert result["model"] == "gemma3:latest"


async def test_passive_load_is_a_cold_start(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    load = await start_load(emulator, QWEN, 0.3, "/api/chat")
    await poll()
    await load
    await poll()
    assert len(cold_starts) == 1
    data = cold_starts[0].data
    assert data["source"] == "passive"
    assert data["model"] == QWEN
    assert data["ttft_ms"] is None
    assert data["dominant_stage"] == "load"
    assert data["load_seconds"] is None  # polling cannot tell the load from its request
    assert data["cold_request_seconds"] >= 0.1
    assert data["cold_request_source"] == "polling"


@pytest.mark.parametrize(
    ("fault", "key"),
    [
        ({"status": 404, "body": '{"error": "model not found"}'}, "model_not_found"),
        ({"status": 503, "body": '{"error": "server busy"}'}, "server_busy"),
        ({"status": 500, "body": '{"error": "cudaMalloc failed: out of memory"}'}, "out_of_memory"),
        ({"status": 500, "body": "<html>oops</html>"}, "unexpected_response"),
        ({"drop": True, "times": 2}, "cannot_connect"),
    ],
)
async def test_probe_errors_are_translated_and_store_nothing(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    fault: dict[str, Any],
    key: str,
) -> None:
    emulator.inject("/api/chat", **fault)
    with pytest.raises(HomeAssistantError) as err:
        await probe(hass)
    assert err.value.translation_domain == DOMAIN
    assert err.value.translation_key == key
    assert LLAMA not in init_integration.runtime_data.coordinator.data.timings
    assert hass.states.get(f"{PREFIX}_last_time_to_first_token") is None


async def test_probe_timeout(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    emulator.inject_stream_fault(kind="hang", after_chunks=1)
    with pytest.raises(HomeAssistantError) as err:
        await probe(hass, timeout=1)
    assert err.value.translation_key == "timeout"
    assert "no complete reply" in str(err.value)
    assert LLAMA not in init_integration.runtime_data.coordinator.data.timings


async def test_probe_mid_stream_error(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    emulator.inject_stream_fault(kind="error_line", after_chunks=1)
    with pytest.raises(HomeAssistantError) as err:
        await probe(hass)
    assert err.value.translation_key == "unexpected_response"


async def test_probe_unknown_model(hass: HomeAssistant, init_integration: MockConfigEntry) -> None:
    with pytest.raises(HomeAssistantError) as err:
        await probe(hass, model="nope:1b")
    assert err.value.translation_key == "model_not_found"
    assert str(err.value).endswith("has no model nope:1b")


async def test_probe_auth_failure_starts_reauth(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    emulator.inject("/api/chat", status=401, body='{"error": "unauthorized"}')
    with pytest.raises(HomeAssistantError) as err:
        await probe(hass)
    assert err.value.translation_key == "invalid_auth"
    await hass.async_block_till_done()
    flows = hass.config_entries.flow.async_progress()
    assert [f["context"]["source"] for f in flows] == [SOURCE_REAUTH]


async def test_probe_needs_a_loaded_entry(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    await hass.config_entries.async_unload(init_integration.entry_id)
    with pytest.raises(ServiceValidationError) as err:
        await probe(hass)
    assert err.value.translation_key == "service_config_entry_not_loaded"
    with pytest.raises(ServiceValidationError) as err:
        await probe(hass, config_entry_id="missing")
    assert err.value.translation_key == "service_config_entry_not_found"


async def test_probe_results_survive_a_restart(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    result = await probe(hass)
    assert await hass.config_entries.async_unload(init_integration.entry_id)
    await hass.async_block_till_done()
    assert await hass.config_entries.async_setup(init_integration.entry_id)
    await hass.async_block_till_done()
    assert float(hass.states.get(f"{PREFIX}_last_time_to_first_token").state) == pytest.approx(
        result["ttft_ms"] / 1000, abs=0.001
    )
    assert hass.states.get(f"{PREFIX}_last_probe_result").state == result["classification"]


async def test_one_token_answer_decomposes(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    emulator.models[LLAMA].reply = "Yes"
    emulator.models[LLAMA].prefill_delay = 0.05
    result = await probe(hass)
    assert result["eval_tokens"] == 1
    assert result["prefill_ms"] >= 50
    assert result["first_decode_ms"] > 0
    assert result["overhead_ms"] == pytest.approx(
        result["ttft_ms"] - result["queue_and_load_ms"] - result["prefill_ms"], abs=0.16
    )


async def test_load_after_a_probe_model_left_is_a_passive_cold_start(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    await probe(hass)  # loads llama: one cold start, from the probe
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await poll()  # the probe's model is gone before any poll saw it
    await ollama_request(emulator, "/api/chat", {"model": LLAMA})
    await poll()
    await poll()
    assert [e.data["source"] for e in cold_starts] == ["probe", "passive"]


async def test_a_quick_cold_probe_still_reports_its_load(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """A load shorter than any poll: the server's figure is known all the same."""
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    emulator.models[LLAMA].load_delay = 0.05
    cold = await probe(hass)
    assert cold["classification"] == "cold"
    await poll()
    await poll()
    assert [e.data["load_seconds"] for e in loaded] == [
        pytest.approx(cold["queue_and_load_ms"] / 1000, abs=0.001)
    ]
    assert hass.states.get(f"{PREFIX}_last_measured_load_duration").state != STATE_UNKNOWN


async def test_a_reload_by_the_probe_is_one_reloaded_load(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    """The probe's num_ctx differs from the resident runner's: the server reloads it."""
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    await make_resident(LLAMA)
    assert len(loaded) == 1
    emulator.models[LLAMA].load_delay = 0.6
    reloaded = await probe(hass, num_ctx=8192)
    assert reloaded["classification"] == "cold"  # the load stage grew: a reload
    await poll()
    await poll()
    assert [(e.data["reloaded"], e.data["load_source"]) for e in loaded[1:]] == [(True, "server")]


async def test_a_slow_warm_reply_names_the_stage_that_took_the_time(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    """A warm reply whose prefill is slow (the server busy with another client's request,
    as Ollama 0.9 runs two at once), without a warm baseline yet."""
    await make_resident(LLAMA)
    emulator.models[LLAMA].prefill_delay = 1.2
    slow = await probe(hass)
    assert slow["classification"] == "warm"
    assert slow["ttft_ms"] > 1000
    assert slow["dominant_stage"] == "prefill"


async def test_a_load_polling_saw_during_a_failed_probe_is_announced(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """What polling saw of a load while the probe ran is held; a failed probe releases it."""
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    emulator.inject_stream_fault(kind="error_line", after_chunks=1)
    # the probe runs until finish_loads(); not tracked: the polls must not wait for it
    task = await emulator.start_while_held(LLAMA, probe(hass))
    entry = {"name": LLAMA, "size": 3 * GIB, "size_vram": 3 * GIB}
    coordinator = init_integration.runtime_data.coordinator
    for expires in ("0001-01-01T00:00:00Z", "2026-11-29T08:05:00Z"):
        emulator.inject(
            "/api/ps", status=200, body=json.dumps({"models": [entry | {"expires_at": expires}]})
        )
        # Not poll(): its async_block_till_done would wait for the probe (an admin
        # action runs as a task of Home Assistant's).
        await coordinator.async_refresh()
        await asyncio.sleep(0)
    assert loaded == []  # held while the probe runs
    emulator.finish_loads()
    with pytest.raises(HomeAssistantError):
        await task
    assert [(e.data["model"], e.data["cold_request_source"]) for e in loaded] == [
        (LLAMA, "polling")
    ]


async def test_a_cancelled_probe_holds_back_no_later_load(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    """A probe cancelled mid-request (Home Assistant stopping, say) leaves no held state."""
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    # the probe's load lasts until finish_loads()
    task = await emulator.start_while_held(LLAMA, probe(hass))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    emulator.finish_loads()
    await make_resident(LLAMA)
    assert [(e.data["model"], e.data["cold_request_source"]) for e in loaded] == [(LLAMA, None)]


async def test_two_probes_at_once_give_one_load(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """Both find the model absent; the server loads it once (the second one waits)."""
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    emulator.models[LLAMA].load_delay = 0.6
    first, second = await asyncio.gather(probe(hass), probe(hass))
    assert first["classification"] == second["classification"] == "cold"
    await poll()
    await poll()
    assert [e.data["load_source"] for e in loaded] == ["server"]
    assert len(cold_starts) == 1


async def test_a_probe_waiting_for_another_clients_load_announces_none(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """Another client's load was under way: the probe waited for it and did not load."""
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    load = await start_load(emulator, LLAMA, 0.8)
    await poll()  # seen loading
    waited = await probe(hass)
    await load
    assert waited["classification"] == "cold"  # it did wait for a load
    await poll()
    await poll()
    assert [(e.data["load_source"], e.data["cold_request_source"]) for e in loaded] == [
        (None, "polling")
    ]
    assert [e.data["source"] for e in cold_starts] == ["passive"]


async def test_a_probe_cold_without_a_load_in_sight_is_a_cold_start_of_its_own(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    """Queued behind another request: cold by its load stage, but no load to report."""
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    await make_resident(LLAMA)
    emulator.models[LLAMA].prefill_delay = 0.8
    other = asyncio.create_task(
        ollama_request(emulator, "/api/generate", {"model": LLAMA, "prompt": "hi"})
    )
    await asyncio.sleep(0.1)
    emulator.models[LLAMA].prefill_delay = 0
    queued = await probe(hass)
    await other
    assert queued["classification"] == "cold"
    assert queued["queue_and_load_ms"] >= 500
    assert len(loaded) == 1  # the first load only
    assert [(e.data["source"], e.data["load_seconds"]) for e in cold_starts[-1:]] == [
        ("probe", None)
    ]
    assert cold_starts[-1].data["queue_and_load_ms"] == queued["queue_and_load_ms"]


async def test_a_model_device_is_a_target(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    device_registry: dr.DeviceRegistry,
) -> None:
    """Pick the model's device instead of a server and a typed name."""
    model = model_device(device_registry, LLAMA)
    assert model is not None
    response = await hass.services.async_call(
        DOMAIN, "probe", {"device_id": model.id}, blocking=True, return_response=True
    )
    assert response is not None
    assert response["model"] == LLAMA
    server = device_registry.async_get_device_by_identifier((DOMAIN, ENTRY_ID), ENTRY_ID)
    assert server is not None
    with pytest.raises(ServiceValidationError) as err:
        await hass.services.async_call(
            DOMAIN, "probe", {"device_id": server.id}, blocking=True, return_response=True
        )
    assert err.value.translation_key == "no_model_target"
    # The server's device and a model's name: that model on that server.
    response = await hass.services.async_call(
        DOMAIN,
        "probe",
        {"device_id": server.id, "model": "qwen3:8b"},
        blocking=True,
        return_response=True,
    )
    assert response is not None
    assert response["model"] == "qwen3:8b"
    # A model's device and another model's name contradict each other.
    with pytest.raises(ServiceValidationError) as err:
        await hass.services.async_call(
            DOMAIN,
            "probe",
            {"device_id": model.id, "model": "qwen3:8b"},
            blocking=True,
            return_response=True,
        )
    assert err.value.translation_key == "device_and_model_differ"
    # A model's device and its own name agree.
    response = await hass.services.async_call(
        DOMAIN,
        "probe",
        {"device_id": model.id, "model": "llama3.2:3b"},
        blocking=True,
        return_response=True,
    )
    assert response is not None
    # A device that is not the integration's is no target.
    other_entry = MockConfigEntry(domain="other")
    other_entry.add_to_hass(hass)
    other = device_registry.async_get_or_create(
        config_entry_id=other_entry.entry_id, identifiers={("other", "x")}
    )
    for device_id in (other.id, "no-such-device"):
        with pytest.raises(ServiceValidationError) as err:
            await hass.services.async_call(
                DOMAIN, "probe", {"device_id": device_id}, blocking=True, return_response=True
            )
        assert err.value.translation_key == "not_a_model_device"
    with pytest.raises(ServiceValidationError) as err:
        await hass.services.async_call(
            DOMAIN, "probe", {"config_entry_id": ENTRY_ID}, blocking=True, return_response=True
        )
    assert err.value.translation_key == "no_model_target"


async def test_the_probe_offers_the_installed_models(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, poll
) -> None:
    """The model field lists the servers' models (typing another stays possible)."""

    async def offered() -> dict[str, Any]:
        descriptions = await async_get_all_descriptions(hass)
        selector: dict[str, Any] = descriptions[DOMAIN]["probe"]["fields"]["model"]["selector"]
        return selector["select"]

    select = await offered()
    assert (select["options"], select["custom_value"]) == ([LLAMA, QWEN], True)
    emulator.add_model(EmulatedModel(name="gemma3:4b", size=GIB, family="gemma3"))
    init_integration.runtime_data.coordinator.monitor._installed_at = None
    await poll()
    assert (await offered())["options"] == ["gemma3:4b", LLAMA, QWEN]
    # The rest of the description is services.yaml's.
    descriptions = await async_get_all_descriptions(hass)
    assert descriptions[DOMAIN]["probe"]["fields"]["timeout"]["default"] == 300
    await hass.config_entries.async_unload(ENTRY_ID)
    await hass.async_block_till_done()
    assert (await offered())["options"] == []


async def test_a_long_cold_probe_shows_its_progress(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    """While a cold probe runs, the model's Warmth says so: loading, then warm.

    On the integration's own timers, on a frozen clock: the probe asks for a poll right
    after it is sent, so the load shows long before the reply (the regular interval here
    is 10 s). The emulator holds the load for the 2 s the test lets pass.
    """
    emulator.hold_loads()
    warmth = "sensor.ollama_test_llama3_2_3b"
    seen: list[tuple[str, bool]] = []

    @callback
    def record(event: Event[EventStateChangedData]) -> None:
        if (state := event.data["new_state"]) is not None:
            seen.append((state.state, state.attributes["probe_running"]))

    unsubscribe = async_track_state_change_event(hass, warmth, record)
    polls_before = sum(r.path == "/api/ps" for r in emulator.requests)
    running = asyncio.create_task(probe(hass))
    async with asyncio.timeout(5):
        await emulator.wait_loading(LLAMA)
    probe_tasks = set(hass._tasks)  # the probe's: they wait on the load
    await advance(hass, freezer, 2.0, besides=probe_tasks)
    emulator.finish_loads()
    response = await running
    unsubscribe()
    assert response["classification"] == "cold"
    assert ("cold", True) in seen  # the probe was sent
    assert ("loading", True) in seen  # its load, seen while it ran
    assert seen[-1] == ("warm", False)  # done
    polls = sum(r.path == "/api/ps" for r in emulator.requests) - polls_before
    # One poll before and one after the request, and fast polls (0.5 s) during the 2 s load.
    assert 4 <= polls <= 10


async def test_the_action_responses(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    snapshot: SnapshotAssertion,
) -> None:
    """What an automation gets back: fields, types, what is null (timings vary)."""
    emulator.models[LLAMA].load_delay = 0.3
    cold = await probe(hass)
    timed = ("ttft_ms", "queue_and_load_ms", "prefill_ms", "first_decode_ms", "overhead_ms")
    assert cold == snapshot(
        name="probe",
        matcher=path_type({**dict.fromkeys((*timed, "decode_rate"), (float,)), "summary": (str,)}),
    )
    assert cold["summary"].startswith("cold start: ")
    dashboard = await hass.services.async_call(
        DOMAIN, "dashboard", {}, blocking=True, return_response=True
    )
    assert dashboard == snapshot(name="dashboard")


async def test_probe_is_for_administrators(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    hass_read_only_user: MockUser,
) -> None:
    """A probe loads the model it times: like preload, pin and evict, an admin's action."""
    with pytest.raises(Unauthorized):
        await hass.services.async_call(
            DOMAIN,
            "probe",
            {"config_entry_id": ENTRY_ID, "model": LLAMA},
            blocking=True,
            context=Context(user_id=hass_read_only_user.id),
        )
    assert not [r for r in emulator.requests if r.path in ("/api/chat", "/api/generate")]


async def test_the_probes_verdict_comes_first(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    answer = await probe(hass)
    assert list(answer)[:3] == ["summary", "model", "classification"]
