"""llm_warmth.diagnose on the emulators: each scenario's runs and verdict, and its refusals."""

from __future__ import annotations

import math
from typing import Any

from homeassistant.const import STATE_ON
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError, Unauthorized
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockUser,
    async_capture_events,
)

from custom_components.llm_warmth.const import (
    CONF_PROTECTED_ENTITIES,
    DOMAIN,
    EVENT_DIAGNOSIS_PROGRESS,
)
from custom_components.llm_warmth.diagnostics import async_get_config_entry_diagnostics
from custom_components.llm_warmth.probe_prompts import (
    DEFAULT_PROMPT,
    LONG_PROMPT,
    WARM_UP_PROMPT,
)

from .conftest import ENTRY_ID, LLAMA, QWEN, add_ollama_agent
from .e2e import add_server, wait_until
from .llama_server_emulator import LlamaServerEmulator
from .ollama_emulator import OllamaEmulator
from .test_gpu import nvml  # noqa: F401 (a fixture)
from .test_llama_server import server  # noqa: F401 (a fixture)
from .test_pin import call


async def diagnose(hass: HomeAssistant, **data: Any) -> dict[str, Any]:
    return await call(hass, "diagnose", **data)


async def test_cold_vs_repeat_blames_the_load(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    emulator.models[LLAMA].load_delay = 1.0
    await call(hass, "preload", config_entry_id=ENTRY_ID, model=LLAMA)  # resident: evicted first
    answer = await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert [(r["run"], r["resident_before"], r["resident_after"]) for r in answer["runs"]] == [
        ("cold", False, True),
        ("repeat", True, True),
    ]
    assert (answer["pattern"], answer["stage"], answer["recommendation"]) == (
        "evicted",
        "load",
        "keep_resident",
    )
    assert answer["verdict"].startswith("one slow request, then normal: the model was evicted")
    assert answer["expanded_ms"] >= 900
    # The verdict comes first, the raw figures (the runs) last.
    assert list(answer)[:2] == ["verdict", "pattern"]
    assert list(answer)[-1] == "runs"
    # The model's "Last diagnosis" sensor shows it, with the table; kept across a restart.
    sensor = "sensor.ollama_test_llama3_2_3b_last_diagnosis"
    state = hass.states.get(sensor)
    assert state.state == "evicted"
    assert state.attributes["verdict"] == answer["verdict"]
    assert state.attributes["recommendation"] == "keep_resident"
    assert [r["run"] for r in state.attributes["runs"]] == ["cold", "repeat"]
    assert hass.states.get("sensor.ollama_test_qwen3_8b_last_diagnosis") is None  # none yet
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    assert hass.states.get(sensor).attributes["at"] == answer["at"]
    diagnostics = await async_get_config_entry_diagnostics(hass, init_integration)
    assert diagnostics["diagnoses"][LLAMA]["pattern"] == "evicted"


async def test_short_vs_long_prices_the_prompt(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    emulator.models[LLAMA].prefill_delay_per_word = 0.0005
    answer = await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA, scenario="short_vs_long")
    assert [r["run"] for r in answer["runs"]] == ["warm-up", "short", "long"]
    assert answer["pattern"] == "prompt_cost"
    assert answer["prefill_ms_per_token"] > 0
    assert answer["verdict"].startswith(f"prefill {answer['prefill_ms_per_token']:.2f} ms per")
    # No run repeats the prompt of the run before it: the prompt cache helps none of them.
    prompts = [
        r.json["messages"][-1]["content"]
        for r in emulator.requests
        if r.path == "/api/chat" and r.json["model"] == LLAMA
    ][-3:]
    assert prompts == [WARM_UP_PROMPT, DEFAULT_PROMPT, LONG_PROMPT]


async def test_a_switch_between_models_that_do_not_fit(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """3 GiB + 6 GiB on an 8 GiB GPU: qwen3:8b evicts llama3.2:3b, which loads again."""
    emulator.models[LLAMA].load_delay = 0.6
    answer = await diagnose(
        hass, config_entry_id=ENTRY_ID, model=LLAMA, scenario="model_switch", other_model=QWEN
    )
    assert [(r["run"], r["model"]) for r in answer["runs"]] == [
        ("A warm-up", LLAMA),
        ("A warm", LLAMA),
        ("B", QWEN),
        ("A again", LLAMA),
    ]
    assert answer["pattern"] == "switch_evicts"
    assert answer["recommendation"] == "smaller_model"
    assert f"({LLAMA} 3.0 GiB + {QWEN} 6.0 GiB)" in answer["verdict"]


async def test_refusals(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    hass_read_only_user: MockUser,
) -> None:
    with pytest.raises(ServiceValidationError) as err:
        await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA, scenario="model_switch")
    assert err.value.translation_key == "diagnose_other_model"
    with pytest.raises(ServiceValidationError) as err:
        await diagnose(hass, config_entry_id=ENTRY_ID, model="nope:1b")
    assert err.value.translation_key == "model_not_found"
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    with pytest.raises(ServiceValidationError) as err:
        await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert err.value.translation_key == "diagnose_pinned"
    with pytest.raises(Unauthorized):
        await hass.services.async_call(
            DOMAIN,
            "diagnose",
            {"config_entry_id": ENTRY_ID, "model": QWEN},
            blocking=True,
            return_response=True,
            context=Context(user_id=hass_read_only_user.id),
        )


async def test_a_switch_on_llama_server_with_room_for_one(
    hass: HomeAssistant,
    server: LlamaServerEmulator,  # noqa: F811 (the fixture imported above)
) -> None:
    entry = await add_server(hass, server.url)
    answer = await diagnose(
        hass,
        config_entry_id=entry.entry_id,
        model="big",
        scenario="model_switch",
        other_model="tiny",
    )
    assert answer["pattern"] == "switch_evicts"
    assert "switch evicts the other model" in answer["verdict"]
    await hass.config_entries.async_unload(entry.entry_id)


async def test_a_server_that_fails_mid_diagnosis(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """The repeat fails (the server answers 500, then drops the stream): translated errors."""
    first = await diagnose(hass, config_entry_id=ENTRY_ID, model=QWEN)  # works
    emulator.inject("/api/chat", status=500, body="runner crashed")
    with pytest.raises(HomeAssistantError) as err:
        await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert err.value.translation_domain == DOMAIN
    emulator.inject_stream_fault(kind="drop", after_chunks=1)
    with pytest.raises(HomeAssistantError) as err:
        await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert err.value.translation_domain == DOMAIN
    # Nothing half-measured replaces the last complete diagnosis.
    qwen = hass.states.get("sensor.ollama_test_qwen3_8b_last_diagnosis")
    assert qwen.attributes["at"] == first["at"]
    assert hass.states.get("sensor.ollama_test_llama3_2_3b_last_diagnosis") is None


async def test_progress_and_cancel(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Each run announces itself; a second diagnosis of the model waits its turn; cancel."""
    progress = async_capture_events(hass, EVENT_DIAGNOSIS_PROGRESS)
    emulator.hold_loads()  # the first run's load lasts until the cancel
    running = hass.async_create_task(diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA))
    await wait_until(lambda: progress, 5, "the first run")
    assert [(e.data["run"], e.data["step"], e.data["steps"]) for e in progress] == [("cold", 1, 2)]
    with pytest.raises(ServiceValidationError) as err:
        await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert err.value.translation_key == "diagnosis_running"
    answer = await call(hass, "cancel_diagnosis", config_entry_id=ENTRY_ID, model=LLAMA)
    assert answer == {"model": LLAMA, "cancelled": True}
    emulator.finish_loads()
    with pytest.raises(HomeAssistantError) as err:
        await running
    assert err.value.translation_key == "diagnosis_cancelled"
    assert hass.states.get("sensor.ollama_test_llama3_2_3b_last_diagnosis") is None
    # Nothing runs now: nothing to cancel, and a new diagnosis may start.
    answer = await call(hass, "cancel_diagnosis", config_entry_id=ENTRY_ID, model=LLAMA)
    assert answer["cancelled"] is False


async def test_after_a_competing_load(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """qwen3:8b loaded by another load (no question asked) evicts llama3.2:3b."""
    emulator.models[LLAMA].load_delay = 0.6
    answer = await diagnose(
        hass, config_entry_id=ENTRY_ID, model=LLAMA, scenario="competing_load", other_model=QWEN
    )
    assert [r["run"] for r in answer["runs"]] == ["A warm-up", "A warm", "A again"]
    assert answer["runs"][-1]["resident_models"] == [LLAMA]  # qwen3:8b made room again
    assert answer["pattern"] == "switch_evicts"
    assert answer["verdict"].startswith("slow only after a competing load: switch evicts")


@pytest.mark.usefixtures("nvml")
async def test_each_run_says_what_the_gpu_did(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    mock_config_entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(
        mock_config_entry, options={"scan_interval": 10, "gpu_source": "nvml", "reserve_gib": 1.0}
    )
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    answer = await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    gpus = answer["runs"][0]["gpus"]
    assert [g["name"] for g in gpus] == ["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 3060"]
    assert gpus[0] == {
        "name": "NVIDIA GeForce RTX 4090",
        "memory_used_gib": 14.0,
        "performance_state": 2,
        "sm_clock_mhz": 2520,
    }


def probe_contexts(emulator: OllamaEmulator) -> list[tuple[str, Any]]:
    """The model and ``options.num_ctx`` of each chat request the emulator received."""
    return [
        (r.json["model"], (r.json.get("options") or {}).get("num_ctx"))
        for r in emulator.requests
        if r.path == "/api/chat"
    ]


async def test_every_probe_asks_as_the_agent_asks(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """With the agent's num_ctx a warm model stays loaded: only the intended state changes."""
    add_ollama_agent(hass, emulator.url, LLAMA, title="Kitchen", num_ctx=16384)
    emulator.models[LLAMA].load_delay = 0.4
    await call(hass, "preload", config_entry_id=ENTRY_ID, model=LLAMA)  # at the agent's 16384
    answer = await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA, scenario="short_vs_long")
    assert (answer["num_ctx"], answer["agent"]) == (16384, "Kitchen")
    assert probe_contexts(emulator) == [(LLAMA, 16384)] * 3
    # No probe reloaded the model: each found it resident and left it so.
    assert all(r["resident_before"] and r["resident_after"] for r in answer["runs"])
    assert all(r["queue_and_load_ms"] < 300 for r in answer["runs"])
    assert emulator.loaded[LLAMA].num_ctx == 16384
    # A probe action does the same, and says whose context it used.
    probe = await call(hass, "probe", config_entry_id=ENTRY_ID, model=LLAMA)
    assert (probe["num_ctx"], probe["agent"]) == (16384, "Kitchen")
    assert probe_contexts(emulator)[-1] == (LLAMA, 16384)
    assert probe["queue_and_load_ms"] < 300
    # Given by the call, it wins (and the model is reloaded for it); the field over options.
    probe = await call(hass, "probe", config_entry_id=ENTRY_ID, model=LLAMA, num_ctx=4096)
    assert (probe["num_ctx"], probe["agent"]) == (4096, None)
    assert probe["queue_and_load_ms"] >= 400
    probe = await call(
        hass, "probe", config_entry_id=ENTRY_ID, model=LLAMA, options={"num_ctx": 1024}
    )
    assert (probe["num_ctx"], probe_contexts(emulator)[-1]) == (1024, (LLAMA, 1024))
    probe = await call(
        hass,
        "probe",
        config_entry_id=ENTRY_ID,
        model=LLAMA,
        num_ctx=2048,
        options={"num_ctx": 1024},
    )
    assert (probe["num_ctx"], probe_contexts(emulator)[-1]) == (2048, (LLAMA, 2048))


async def test_a_context_change_reloads_the_resident_model(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Loaded as another client leaves it (the default 2048), then asked with the agent's."""
    add_ollama_agent(hass, emulator.url, LLAMA, title="Kitchen", num_ctx=8192)
    emulator.models[LLAMA].load_delay = 0.6
    answer = await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA, scenario="context_change")
    assert [(r["run"], r["resident_before"], r["resident_after"]) for r in answer["runs"]] == [
        ("context change", True, True),
        ("repeat", True, True),
    ]
    assert (answer["pattern"], answer["stage"], answer["recommendation"]) == (
        "context_reload",
        "load",
        "same_context",
    )
    assert answer["verdict"].startswith(
        f"slow after a context change: reload for num_ctx 8192 vs {emulator.default_num_ctx}"
    )
    assert answer["expanded_ms"] >= 500
    # The load before the probes asked for no context (as another client would); the one
    # after them left the model as the agent asks: its context, kept for ever (no reload).
    loads = [r.json for r in emulator.requests if r.path == "/api/generate"]
    assert loads[-2:] == [
        {"model": LLAMA},
        {"model": LLAMA, "keep_alive": -1, "options": {"num_ctx": 8192}},
    ]
    assert answer["left_for_agent"] == "Kitchen"
    assert (emulator.loaded[LLAMA].num_ctx, emulator.loaded[LLAMA].keep_alive) == (8192, math.inf)
    # An Ollama that does not tell the context it had (before 0.10): the server's default.
    emulator.report_context_length = False
    answer = await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA, scenario="context_change")
    assert answer["pattern"] == "context_reload"
    assert answer["verdict"].startswith(
        "slow after a context change: reload for num_ctx 8192 vs the server's default ("
    )


async def test_a_context_change_needs_a_context(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    server: LlamaServerEmulator,  # noqa: F811 (the fixture imported above)
) -> None:
    with pytest.raises(ServiceValidationError) as err:
        await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA, scenario="context_change")
    assert err.value.translation_key == "diagnose_no_context"
    # Given in the call, it runs: the same context everywhere, so no reload at all. (An
    # other_model is for a switch: here it changes nothing.)
    emulator.models[LLAMA].load_delay = 0.6
    answer = await diagnose(
        hass,
        config_entry_id=ENTRY_ID,
        model=LLAMA,
        scenario="context_change",
        num_ctx=emulator.default_num_ctx,
        other_model=LLAMA,
    )
    assert answer["pattern"] == "no_clear_stage"
    assert answer["verdict"].startswith("no clear stage expanded")
    assert probe_contexts(emulator)[-2:] == [(LLAMA, emulator.default_num_ctx)] * 2
    assert answer["left_for_agent"] is None  # no agent: left as the runs left it
    # llama-server's configuration sets the context: nothing a request changes.
    entry = await add_server(hass, server.url)
    with pytest.raises(ServiceValidationError) as err:
        await diagnose(
            hass, config_entry_id=entry.entry_id, model="tiny", scenario="context_change"
        )
    assert err.value.translation_key == "context_change_not_supported"
    with pytest.raises(ServiceValidationError) as err:
        await diagnose(hass, config_entry_id=entry.entry_id, model="tiny", num_ctx=2048)
    assert err.value.translation_key == "num_ctx_not_supported"
    for context in ({"num_ctx": 2048}, {"options": {"num_ctx": 2048}}):
        with pytest.raises(ServiceValidationError) as err:
            await call(hass, "probe", config_entry_id=entry.entry_id, model="tiny", **context)
        assert err.value.translation_key == "num_ctx_not_supported"
    await hass.config_entries.async_unload(entry.entry_id)


async def test_a_switch_asks_each_model_as_its_agent_does(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Each model with its own agent's num_ctx; the diagnosed one is left as its agent asks."""
    add_ollama_agent(hass, emulator.url, LLAMA, title="Kitchen", num_ctx=8192)
    add_ollama_agent(hass, emulator.url, QWEN, title="Office", num_ctx=4096)
    answer = await diagnose(
        hass, config_entry_id=ENTRY_ID, model=LLAMA, scenario="model_switch", other_model=QWEN
    )
    assert probe_contexts(emulator) == [(LLAMA, 8192), (LLAMA, 8192), (QWEN, 4096), (LLAMA, 8192)]
    assert answer["left_for_agent"] == "Kitchen"
    assert emulator.loaded[LLAMA].keep_alive == math.inf  # kept for ever


async def test_the_model_is_left_as_its_agent_asks_even_after_a_cancel_or_a_failure(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """The runs evict it; a cancel or a failing server then still leaves it for the agent."""
    add_ollama_agent(hass, emulator.url, LLAMA, num_ctx=8192)  # keep_alive -1 (the default)
    emulator.hold_loads()  # the cold run's load lasts until the cancel
    progress = async_capture_events(hass, EVENT_DIAGNOSIS_PROGRESS)
    running = hass.async_create_task(diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA))
    await wait_until(lambda: progress, 5, "the cold run")
    await call(hass, "cancel_diagnosis", config_entry_id=ENTRY_ID, model=LLAMA)
    emulator.finish_loads()  # what the diagnosis loads after the cancel, it loads at once
    with pytest.raises(HomeAssistantError) as err:
        await running
    assert err.value.translation_key == "diagnosis_cancelled"
    runner = emulator.loaded[LLAMA]
    assert (runner.num_ctx, runner.keep_alive) == (8192, math.inf)
    # The server fails the probes: the diagnosis fails, and the model is left all the same.
    emulator.inject("/api/chat", status=500, body="runner crashed")
    with pytest.raises(HomeAssistantError):
        await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    runner = emulator.loaded[LLAMA]
    assert (runner.num_ctx, runner.keep_alive) == (8192, math.inf)


async def test_the_model_is_not_left_loaded_against_the_household_or_its_agent(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not while the house needs the GPU; not for an agent that unloads after each turn."""
    add_ollama_agent(hass, emulator.url, LLAMA, num_ctx=8192)
    add_ollama_agent(hass, emulator.url, QWEN, title="Office", num_ctx=4096, keep_alive=0)
    answer = await diagnose(hass, config_entry_id=ENTRY_ID, model=QWEN)
    assert (answer["agent"], answer["left_for_agent"]) == ("Office", None)
    # Nothing was loaded to keep: the only loads with a keep_alive are the evictions (0).
    keeps = [r.json.get("keep_alive") for r in emulator.requests if r.path == "/api/generate"]
    assert set(keeps) <= {None, 0}
    plex = "binary_sensor.plex_transcoding"
    hass.config_entries.async_update_entry(
        init_integration, options={**init_integration.options, CONF_PROTECTED_ENTITIES: [plex]}
    )
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    hass.states.async_set(plex, STATE_ON)
    await hass.async_block_till_done()
    answer = await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert (answer["agent"], answer["left_for_agent"]) == ("Kitchen assistant", None)
    assert emulator.loaded[LLAMA].keep_alive != math.inf  # the server's default, not for ever
    hass.states.async_set(plex, "off")
    await hass.async_block_till_done()
    answer = await diagnose(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert answer["left_for_agent"] == "Kitchen assistant"
    assert emulator.loaded[LLAMA].keep_alive == math.inf
    assert "could not leave" not in caplog.text
