"""llm_warmth.preload: load a model now; shared when asked twice; keep as the server allows."""

from __future__ import annotations

import asyncio
from datetime import timedelta
import time
from typing import Any
from unittest.mock import ANY

from homeassistant.const import STATE_ON
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError, Unauthorized
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockUser,
    async_capture_events,
)

from custom_components.llm_warmth.const import DOMAIN, EVENT_COLD_START, EVENT_MODEL_LOADED
from custom_components.llm_warmth.diagnostics import async_get_config_entry_diagnostics

from .conftest import ENTRY_ID, LLAMA, QWEN, add_ollama_agent, model_id
from .e2e import add_server, ollama_call, ollama_get, wait_until
from .llama_server_emulator import LlamaServerEmulator
from .llama_swap_emulator import LlamaSwapEmulator
from .ollama_emulator import OllamaEmulator
from .recording_proxy import RecordingProxy
from .test_llama_server import server  # noqa: F401 (a fixture)
from .test_llama_swap import add_swap, swap  # noqa: F401 (swap: a fixture)
from .test_pin import clocks_agree, next_poll  # noqa: F401 (clocks_agree: a fixture)


async def preload(hass: HomeAssistant, **data: Any) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN, "preload", data, blocking=True, return_response=True
    )
    assert response is not None
    return dict(response)


def generate_requests(emulator: OllamaEmulator) -> list[dict[str, Any]]:
    return [r.json for r in emulator.requests if r.path == "/api/generate"]


async def test_preload_loads_and_keeps(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    emulator.models[LLAMA].load_delay = 0.5
    answer = await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA, keep_for={"hours": 2})
    assert answer["already_resident"] is False
    assert answer["load_seconds"] >= 0.5
    assert answer["summary"] == f"{LLAMA} loaded in {answer['load_seconds']:.1f} s"
    # Shown when the action returns, kept as asked (Ollama's keep_alive in seconds).
    assert hass.states.get("binary_sensor.ollama_test_llama3_2_3b_resident").state == STATE_ON
    assert generate_requests(emulator)[-1] == {"model": LLAMA, "keep_alive": 7200}
    # Again: resident already, the keep renewed.
    again = await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA, keep_forever=True)
    assert (again["already_resident"], again["load_seconds"]) == (True, None)
    assert again["summary"] == f"{LLAMA} was resident already"
    assert generate_requests(emulator)[-1] == {"model": LLAMA, "keep_alive": -1}
    # Until a time: the seconds from now; without a keep: the model's own.
    until = dt_util.now() + timedelta(minutes=30)
    await preload(hass, config_entry_id=ENTRY_ID, model=QWEN, keep_until=until.isoformat())
    assert 1790 <= generate_requests(emulator)[-1]["keep_alive"] <= 1800
    await preload(hass, config_entry_id=ENTRY_ID, model=QWEN)
    assert generate_requests(emulator)[-1] == {"model": QWEN}


async def test_two_preloads_at_once_share_one_request(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    emulator.hold_loads()  # both ask while the load lasts, until finish_loads()
    before = len(generate_requests(emulator))
    both = asyncio.gather(
        preload(hass, config_entry_id=ENTRY_ID, model=LLAMA),
        preload(hass, config_entry_id=ENTRY_ID, model=LLAMA),
    )
    async with asyncio.timeout(5):
        await emulator.wait_loading(LLAMA)
    emulator.finish_loads()
    first, second = await both
    assert first == second
    assert len(generate_requests(emulator)) - before == 1


async def test_preload_refusals_are_translated(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    hass_read_only_user: MockUser,
) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"model": "nope:1b"}, "model_not_found"),
        ({"model": LLAMA, "keep_until": "2020-01-01T00:00:00"}, "keep_until_past"),
        ({"model": LLAMA, "keep_until": dt_util.now().isoformat()}, "keep_until_past"),
        ({}, "no_model_target"),
    ]
    for data, key in cases:
        with pytest.raises(ServiceValidationError) as err:
            await preload(hass, config_entry_id=ENTRY_ID, **data)
        assert err.value.translation_key == key
    # A keep under a second would be keep_alive 0 (an unload); a negative one means nothing.
    for keep_for in ({"seconds": 0}, "-00:01:00", {"seconds": 0.5}):
        with pytest.raises(ServiceValidationError) as short:
            await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA, keep_for=keep_for)
        assert short.value.translation_key == "duration_too_short"
        assert short.value.translation_placeholders["field"] == "keep_for"
    assert short.value.translation_placeholders["seconds"] == "0.5"

    emulator.inject("/api/generate", status=500, body="boom")
    with pytest.raises(HomeAssistantError) as failed:
        await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert failed.value.translation_domain == DOMAIN
    with pytest.raises(Unauthorized):
        await hass.services.async_call(
            DOMAIN,
            "preload",
            {"config_entry_id": ENTRY_ID, "model": LLAMA},
            blocking=True,
            context=Context(user_id=hass_read_only_user.id),
        )


async def test_a_far_future_keep_is_refused_in_words_before_anything_is_sent(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Ten million days, or the last day of 9999: refused, not an OverflowError after a send."""
    sent = len(generate_requests(emulator))
    # Ten years and a day from now (whatever today is), and the last day of 9999.
    far = (dt_util.utcnow() + timedelta(days=3651)).isoformat()
    for keep_until in ("9999-12-31T00:00:00", "9999-12-31T23:59:59+00:00", far):
        with pytest.raises(ServiceValidationError) as err:
            await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA, keep_until=keep_until)
        assert err.value.translation_key == "keep_too_far"
        assert err.value.translation_placeholders["days"] == "3650"
    # Past what Python's time can count too (Home Assistant's reader overflows on them).
    for keep_for in ({"days": 10_000_000}, {"days": 3651}, 10**15, {"days": 10**9}):
        with pytest.raises(ServiceValidationError) as far:
            await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA, keep_for=keep_for)
        assert far.value.translation_key == "duration_too_long"
        assert far.value.translation_placeholders == {"field": "keep_for", "days": "3650"}
    assert len(generate_requests(emulator)) == sent  # nothing reached the server
    # Ten years is the most, and is asked for as it is.
    answer = await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA, keep_for={"days": 3650})
    assert answer["already_resident"] is False
    assert generate_requests(emulator)[-1]["keep_alive"] == 3650 * 86400


async def test_llama_swap_keeps_a_model_for_its_ttl_and_says_so(
    hass: HomeAssistant,
    swap: LlamaSwapEmulator,  # noqa: F811 (the fixture imported above)
) -> None:
    entry = await add_swap(hass, swap.url)
    with pytest.raises(ServiceValidationError) as err:
        await preload(hass, config_entry_id=entry.entry_id, model="tiny", keep_for={"hours": 1})
    assert err.value.translation_key == "keep_not_supported_ttl"
    assert err.value.translation_placeholders == {"server": entry.title}


async def test_a_server_that_keeps_models_by_itself_says_so(
    hass: HomeAssistant,
    server: LlamaServerEmulator,  # noqa: F811 (the fixture imported above)
) -> None:
    """llama-server keeps a model until --models-max needs its place: no keep to give."""
    entry = await add_server(hass, server.url)
    with pytest.raises(ServiceValidationError) as err:
        await preload(hass, config_entry_id=entry.entry_id, model="tiny", keep_forever=True)
    assert err.value.translation_key == "keep_not_supported_lru"
    with pytest.raises(ServiceValidationError) as err:
        await preload(hass, config_entry_id=entry.entry_id, model="tiny", num_ctx=8192)
    assert err.value.translation_key == "num_ctx_not_supported"
    answer = await preload(hass, config_entry_id=entry.entry_id, model="tiny")
    assert answer["already_resident"] is False
    assert hass.states.get(model_id(entry, "binary_sensor.tiny_resident")).state == STATE_ON


@pytest.mark.e2e
async def test_preload_on_the_real_ollama(hass: HomeAssistant, ollama_url: str) -> None:
    """The real Ollama, through a proxy that counts what the integration sent.

    Evict sends one unload; two preloads at once send one load, kept as asked (Ollama's own
    expires_at agrees); the entities show each result when the action returns. The load is
    ours, timed exactly: no cold start (nobody waited), the load sensor shows the action's
    figure, and the polls after it do not report it again as another client's.
    """
    url = ollama_url
    proxy = RecordingProxy(url)
    await proxy.start()
    try:
        entry = await add_server(hass, proxy.url)
        coordinator = entry.runtime_data.coordinator
        name = coordinator.resolve_model("tiny")
        await ollama_call(url, "/api/generate", {"model": "tiny", "keep_alive": "10m"})
        await wait_until(lambda: name in coordinator.data.held, 10, "tiny resident")
        started = time.monotonic()
        await hass.services.async_call(
            DOMAIN, "evict", {"config_entry_id": entry.entry_id, "model": "tiny"}, blocking=True
        )
        assert name not in coordinator.data.held
        assert len(proxy.sent("/api/generate", started)) == 1
        started = time.monotonic()
        loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
        cold_starts = async_capture_events(hass, EVENT_COLD_START)
        first, second = await asyncio.gather(
            *(
                preload(hass, config_entry_id=entry.entry_id, model="tiny", keep_for={"minutes": 7})
                for _ in range(2)
            )
        )
        assert first == second
        assert first["already_resident"] is False
        assert first["load_seconds"] > 0
        assert len(proxy.sent("/api/generate", started)) == 1  # one request for both
        assert name in coordinator.data.held
        # What a person reads when the action returns: warm, and the action's own figure.
        assert hass.states.get(model_id(entry, "sensor.tiny")).state == "warm"
        load = hass.states.get(model_id(entry, "sensor.tiny_last_measured_load_duration"))
        assert (float(load.state), load.attributes["source"]) == (
            pytest.approx(first["load_seconds"], abs=0.05),
            "client",
        )
        assert [(e.data["cold_start"], e.data["load_source"]) for e in loaded] == [
            (False, "client")
        ]
        # Two polls later: the load is not told again, as another client's with a lower bound.
        polls = len(proxy.sent("/api/ps", started))
        await wait_until(lambda: len(proxy.sent("/api/ps", started)) >= polls + 2, 10, "2 polls")
        await hass.async_block_till_done()
        assert (len(loaded), cold_starts) == (1, [])
        assert load.attributes["at_least_seconds"] is None
        assert hass.states.get(model_id(entry, "sensor.tiny")).state == "warm"
        listed = {m["name"]: m for m in (await ollama_get(url, "/api/ps"))["models"]}
        expires = dt_util.parse_datetime(listed[name]["expires_at"])
        assert expires is not None
        assert abs((expires - dt_util.utcnow()).total_seconds() - 420) < 30
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()


async def test_preload_loads_with_the_agents_context(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Home Assistant's Ollama agent sends num_ctx on every turn: the preload loads with it."""
    add_ollama_agent(hass, emulator.url, LLAMA, num_ctx=16384.0, keep_alive=-1)
    answer = await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert (answer["num_ctx"], answer["agent"]) == (16384, "Kitchen assistant")
    assert generate_requests(emulator)[-1] == {"model": LLAMA, "options": {"num_ctx": 16384}}
    assert emulator.loaded[LLAMA].num_ctx == 16384
    # Diagnostics name the agents and their settings.
    diagnostics = await async_get_config_entry_diagnostics(hass, init_integration)
    assert diagnostics["agents"] == [
        {
            "name": "Kitchen assistant",
            "model": LLAMA,
            "num_ctx": 16384,
            "keep_alive": -1,
            "prompt": None,
            "llm_apis": (),
            "think": None,
            "subentry_id": ANY,
        }
    ]
    # The call's own context wins; a model no agent uses gets none.
    answer = await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA, num_ctx=4096)
    assert (answer["num_ctx"], answer["agent"]) == (4096, None)
    answer = await preload(hass, config_entry_id=ENTRY_ID, model=QWEN)
    assert (answer["num_ctx"], answer["agent"]) == (None, None)
    assert generate_requests(emulator)[-1] == {"model": QWEN}


async def test_a_warm_up_shaped_like_the_agents_request(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """The agent's system prompt (as Home Assistant renders it) and context, no keep_alive."""
    hass.config.location_name = "Maple House"
    add_ollama_agent(
        hass,
        emulator.url,
        LLAMA,
        num_ctx=4096,
        prompt="You are the voice of {{ ha_name }}.",
        llm_hass_api=["an_api_that_is_gone"],
        think=False,
    )
    emulator.models[LLAMA].load_delay = 0.2
    answer = await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA, warm_up=True)
    warm_up = answer["warm_up"]
    assert warm_up["system_prompt_from"] == "Kitchen assistant"
    assert warm_up["ttft_ms"] > 0
    assert warm_up["prefill_ms"] is not None
    assert warm_up["summary"].startswith("warm")  # loaded by the preload just before
    assert warm_up["next_turn"] is None  # Ollama does not say what its cache kept
    chat = [r.json for r in emulator.requests if r.path == "/api/chat"][-1]
    assert chat["messages"] == [
        {"role": "system", "content": "You are the voice of Maple House."},
        {"role": "user", "content": "Hello."},
    ]
    assert chat["options"] == {"num_predict": 1, "num_ctx": 4096}
    assert "keep_alive" not in chat  # the model keeps the preload's
    assert chat["think"] is False  # as the agent asks
    # The call's own system prompt and message; without a warm-up, none.
    answer = await preload(
        hass, config_entry_id=ENTRY_ID, model=QWEN, system_prompt="Be brief.", prompt="Hi"
    )
    assert answer["warm_up"]["system_prompt_from"] == "call"
    chat = [r.json for r in emulator.requests if r.path == "/api/chat"][-1]
    assert chat["messages"][0] == {"role": "system", "content": "Be brief."}
    assert (await preload(hass, config_entry_id=ENTRY_ID, model=QWEN))["warm_up"] is None


async def test_a_warm_up_on_llama_server_reports_the_prompt_cache(
    hass: HomeAssistant,
    server: LlamaServerEmulator,  # noqa: F811 (the fixture imported above)
) -> None:
    entry = await add_server(hass, server.url)
    first = await preload(hass, config_entry_id=entry.entry_id, model="tiny", warm_up=True)
    assert first["warm_up"]["system_prompt_from"] is None  # no agent, none given
    again = await preload(
        hass, config_entry_id=entry.entry_id, model="tiny", system_prompt="You are the house."
    )
    # The same system prompt in the next turn: its prefix comes from the prompt cache.
    next_turn = again["warm_up"]["next_turn"]
    assert set(next_turn) == {"prompt_cache_reuse", "prefill_ms", "ttft_ms"}
    assert next_turn["prompt_cache_reuse"] > 0
    chats = [r for r in server.requests if r.path == "/v1/chat/completions"]
    assert [r.json["messages"][-1]["content"] for r in chats[-2:]] == [
        "Hello.",
        "What time is it?",
    ]
    await hass.config_entries.async_unload(entry.entry_id)


@pytest.mark.usefixtures("clocks_agree")
async def test_a_load_we_caused_has_its_exact_figure_and_is_no_cold_start(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """A preload's load: the figure the action timed, on the sensor and in the event.

    Nobody waited for it: no cold start. The polls after it do not report it again as
    another client's load with a polled lower bound.
    """
    emulator.models[LLAMA].load_delay = 0.5
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    answer = await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA, keep_for={"hours": 2})
    for _ in range(3):
        await next_poll(hass, emulator)
    assert [(e.data["model"], e.data["load_source"]) for e in loaded] == [(LLAMA, "client")]
    assert loaded[0].data["load_seconds"] == answer["load_seconds"] >= 0.5
    assert loaded[0].data["cold_request_seconds"] is None
    assert cold_starts == []
    sensor = hass.states.get("sensor.ollama_test_llama3_2_3b_last_measured_load_duration")
    assert float(sensor.state) == answer["load_seconds"]
    assert sensor.attributes["source"] == "client"


async def test_a_preload_says_what_it_pushed_out(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator, make_resident
) -> None:
    """3 GiB and 6 GiB on an 8 GiB GPU: loading one pushes the other out, and it says so."""
    await make_resident(QWEN, keep_alive="1h")
    answer = await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert answer["pushed_out"] == [QWEN]
    assert answer["summary"] == (
        f"{LLAMA} loaded in {answer['load_seconds']:.1f} s; pushed out of memory: {QWEN}"
    )
    again = await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    assert (again["pushed_out"], again["summary"]) == ([], f"{LLAMA} was resident already")


async def test_a_reload_for_another_context_is_ours_and_timed_by_the_action(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """Resident with 2048, preloaded with 8192: Ollama loads it again; one load, ours.

    The coordinator reads the residency right after the request, while it still counts as
    ours: the new runner is this preload's, not another client's reload.
    """
    await ollama_call(emulator.url, "/api/generate", {"model": LLAMA, "options": {"num_ctx": 2048}})
    for _ in range(2):  # another client's load, seen and settled
        await next_poll(hass, emulator)
    emulator.models[LLAMA].load_delay = 0.3
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    answer = await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA, num_ctx=8192)
    assert answer["already_resident"] is True
    for _ in range(2):
        await next_poll(hass, emulator)
    assert [(e.data["load_source"], e.data["reloaded"]) for e in loaded] == [("client", True)]
    assert cold_starts == []
    assert emulator.loaded[LLAMA].num_ctx == 8192


async def test_a_preload_whose_poll_fails_says_the_polls_own_words(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """The poll before the load fails: its translated error is the action's, nothing sent."""
    emulator.inject("/api/ps", drop=True, times=None)  # every try of the poll
    with pytest.raises(HomeAssistantError) as err:
        await preload(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    emulator.clear_faults()
    polls = init_integration.runtime_data.coordinator
    assert err.value.translation_key == polls.last_exception.translation_key
    assert err.value.translation_key == "cannot_connect"  # not a reply it could not read
    assert err.value.translation_placeholders["url"] == emulator.url
    assert generate_requests(emulator) == []


async def test_a_preload_the_entry_unloads_under_says_so_and_one_its_caller_left_goes_on(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """The load runs in the entry's background, shielded from the action that asked.

    A caller that goes away (an automation stopped) leaves the load running: it ends, the
    model is resident. The entry unloading under a waiting action ends it in words.
    """
    left = await emulator.start_while_held(
        LLAMA, preload(hass, config_entry_id=ENTRY_ID, model=LLAMA)
    )
    left.cancel()
    with pytest.raises(asyncio.CancelledError):
        await left
    emulator.finish_loads()
    coordinator = init_integration.runtime_data.coordinator
    await wait_until(lambda: LLAMA in coordinator.data.held, 5, "the load the caller left")
    assert [r["model"] for r in generate_requests(emulator)] == [LLAMA]

    waiting = await emulator.start_while_held(
        QWEN, preload(hass, config_entry_id=ENTRY_ID, model=QWEN)
    )
    assert await hass.config_entries.async_unload(ENTRY_ID)
    with pytest.raises(HomeAssistantError) as err:
        async with asyncio.timeout(5):
            await waiting
    assert err.value.translation_key == "entry_unloaded"
    emulator.finish_loads()
