"""llama-server (router mode): the client on recorded replies and faults, the integration.

The parsers read the raw replies recorded from the real server (``fixtures/llama_server``,
``scripts/record_fixtures``), served over loopback; the faults and the integration run on
``llama_server_emulator.py``. The real server is exercised in ``test_e2e_llama_server.py``.
"""

import asyncio
from collections.abc import AsyncIterator
import logging
from pathlib import Path
import time
from typing import Any

import aiohttp
from freezegun.api import FrozenDateTimeFactory
from homeassistant.const import STATE_OFF, STATE_ON
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import async_capture_events

from custom_components.llm_warmth import event_stream as event_stream_module
from custom_components.llm_warmth.const import DOMAIN, EVENT_MODEL_LOADED, EVENT_MODEL_UNLOADED
from custom_components.llm_warmth.core.backends.detection import detect
from custom_components.llm_warmth.core.backends.errors import (
    LlmModelNotFoundError,
    LlmServerAuthenticationError,
    LlmServerBusyError,
    LlmServerConnectionError,
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerOutOfMemoryError,
    LlmServerResponseError,
    LlmServerTimeoutError,
    LlmServerUnreachableError,
)
from custom_components.llm_warmth.core.backends.events import StateWatch
from custom_components.llm_warmth.core.backends.llama_server import LlamaServerClient
from custom_components.llm_warmth.core.backends.types import ResidencyState

from .conftest import advance_until, model_id
from .e2e import add_server, wait_until
from .llama_server_emulator import EmulatedLlamaModel, HeldAnswer, LlamaServerEmulator

FIXTURES = Path(__file__).parent / "fixtures" / "llama_server"
BIG, TINY = "big", "tiny"
SSE = "text/event-stream"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@pytest.fixture
async def server(socket_enabled: None) -> AsyncIterator[LlamaServerEmulator]:
    emulator = LlamaServerEmulator(
        [
            EmulatedLlamaModel(BIG, load_seconds=1.5, prompt_ms_per_token=5.0),
            EmulatedLlamaModel(TINY, load_seconds=0.2),
        ],
        models_max=1,
    )
    await emulator.start()
    yield emulator
    await emulator.stop()


@pytest.fixture
async def client(server: LlamaServerEmulator) -> AsyncIterator[LlamaServerClient]:
    async with aiohttp.ClientSession() as session:
        yield LlamaServerClient(session, server.url, request_timeout=2)


async def test_recorded_replies(client: LlamaServerClient, server: LlamaServerEmulator) -> None:
    """What the real server b11669 sent, byte for byte, parses into what it meant."""
    server.inject("/props", status=200, body=fixture("props.json"))
    assert await client.version() == "b11669-Debian"
    server.inject("/models", status=200, body=fixture("models_unloaded.json"))
    assert await client.running_models() == ()
    server.inject("/models", status=200, body=fixture("models_loading.json"))
    (big,) = await client.running_models()
    assert (big.name, big.state, big.context_length) == (BIG, ResidencyState.LOADING, 512)
    assert (big.size, big.size_vram, big.expires_at) == (None, None, None)
    server.inject("/models", status=200, body=fixture("models_loaded.json"))
    (big,) = await client.running_models()
    assert big.state is ResidencyState.LOADED
    server.inject("/models", status=200, body=fixture("models_loaded.json"))
    assert [m.name for m in await client.installed_models()] == [BIG, TINY]
    server.inject(
        "/v1/chat/completions", status=200, body=fixture("chat_stream_tiny.sse"), content_type=SSE
    )
    reply = await client.timed_generation("chat", TINY, "Reply with one word: ready?")
    # The recorded timings: 67 prompt tokens, none cached, 4 predicted.
    assert (reply.prompt_eval_count, reply.prompt_cached_count, reply.eval_count) == (67, 0, 4)
    assert reply.prompt_eval_duration_ns is not None
    assert reply.done_reason == "length"
    assert reply.load_duration_ns == 0  # the event stream was up and saw no load
    server.inject(
        "/v1/completions", status=200, body=fixture("completion_stream_tiny.sse"), content_type=SSE
    )
    reply = await client.timed_generation("generate", TINY, "Reply with one word: ready?")
    assert reply.eval_count == 4


@pytest.mark.parametrize(
    ("path", "name", "error"),
    [
        ("/models/unload", "unload_unknown", LlmModelNotFoundError),
        ("/models/load", "load_unknown", LlmModelNotFoundError),
        ("/v1/chat/completions", "chat_unknown_model", LlmModelNotFoundError),
    ],
)
async def test_recorded_errors(
    client: LlamaServerClient,
    server: LlamaServerEmulator,
    path: str,
    name: str,
    error: type[LlmServerError],
) -> None:
    status = int(fixture(f"{name}.status"))
    server.inject(path, status=status, body=fixture(f"{name}.json"))
    calls = {
        "/models/unload": lambda: client.unload("nope"),
        "/models/load": lambda: client.load("nope"),
        "/v1/chat/completions": lambda: client.timed_generation("chat", "nope", "hi"),
    }
    with pytest.raises(error):
        await calls[path]()


async def test_unloading_a_model_that_is_not_running_is_fine(
    client: LlamaServerClient, server: LlamaServerEmulator
) -> None:
    server.inject("/models/unload", status=400, body=fixture("unload_not_running.json"))
    await client.unload(BIG)


async def test_load_unload_and_the_load_stage_of_a_cold_request(
    client: LlamaServerClient, server: LlamaServerEmulator
) -> None:
    await client.load(TINY)
    assert server.state(TINY) == "loaded"
    cold = await client.timed_generation("chat", BIG, "Reply with one word: ready?")
    assert server.loaded_models() == [BIG]  # --models-max 1: tiny made room
    assert cold.load_duration_ns / 1e9 == pytest.approx(1.5, abs=0.3)
    warm = await client.timed_generation("chat", BIG, "Reply with one word: ready?")
    assert warm.load_duration_ns == 0
    assert warm.prompt_cached_count == warm.prompt_eval_count - 1
    await client.unload(BIG)
    assert server.loaded_models() == []
    server.set_failing(TINY)
    with pytest.raises(LlmServerResponseError, match="could not load"):
        await client.load(TINY)


async def test_a_cut_or_stalled_event_stream_leaves_the_load_unknown(
    client: LlamaServerClient, server: LlamaServerEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.inject("/models/sse", status=404, body='{"error":"nope"}')
    reply = await client.timed_generation("chat", TINY, "hi")
    assert reply.load_duration_ns is None
    # Cut while the load runs: what came after is unknown.
    generation = asyncio.create_task(client.timed_generation("chat", BIG, "hi"))
    await wait_until(lambda: server.state(BIG) == "loading", 2, "big loading")
    server.cut_sse()
    assert (await generation).load_duration_ns is None
    # A stream that never answers: the request goes without it after a short wait.
    monkeypatch.setattr(StateWatch, "CONNECT_SECONDS", 0.2)
    server.inject("/models/sse", hold=HeldAnswer())  # never released
    started = time.monotonic()
    reply = await client.timed_generation("chat", BIG, "hi")
    assert reply.load_duration_ns is None
    assert time.monotonic() - started < 3


async def test_faults_leave_only_our_errors(
    client: LlamaServerClient, server: LlamaServerEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    for status, body, error in [
        (401, '{"error":{"code":401,"message":"Invalid API Key"}}', LlmServerAuthenticationError),
        (503, '{"error":{"code":503,"message":"Loading model"}}', LlmServerBusyError),
        (
            500,
            '{"error":{"message":"failed to allocate buffer: out of memory"}}',
            LlmServerOutOfMemoryError,
        ),
        (502, "<html>Bad Gateway</html>", LlmServerResponseError),
        (200, "{not json", LlmServerResponseError),
        (200, '{"data": {"id": "big"}}', LlmServerResponseError),
        (200, '{"data": [{"id": "a"}, {"id": "a"}]}', LlmServerResponseError),
        (200, '{"data": [{"id": 7, "status": {"value": "loaded"}}]}', LlmServerResponseError),
    ]:
        server.inject("/models", status=status, body=body)
        with pytest.raises(error):
            await client.running_models()
    server.inject("/props", status=200, body='{"build_info": "b1", "role": "model"}')
    with pytest.raises(LlmServerNotSupportedError, match="router mode"):
        await client.version()
    server.inject("/props", status=404, body="404 page not found", content_type="text/plain")
    with pytest.raises(LlmServerNotSupportedError):
        await client.version()
    server.inject("/props", status=200, body="{}")
    with pytest.raises(LlmServerNotSupportedError):
        await client.version()
    # Streams that break: an error chunk, no timings, no [DONE], a dropped connection.
    for body in (
        b'data: {"error": {"message": "context size exceeded"}}\n\n',
        b'data: {"choices": [{"delta": {"content": "a"}}]}\n\ndata: [DONE]\n\n',
        b'data: {"choices": [{"delta": {"content": "a"}}]}\n\n',
        b'data: {"choices": [], "timings": {"prompt_n": -1, "predicted_n": 1}}\n\ndata: [DONE]\n\n',
    ):
        server.inject("/v1/chat/completions", status=200, body=body, content_type=SSE)
        with pytest.raises(LlmServerError):
            await client.timed_generation("chat", TINY, "hi")
    server.inject("/v1/chat/completions", drop=True)
    with pytest.raises(LlmServerConnectionError):
        await client.timed_generation("chat", TINY, "hi")
    # A restart mid-request.
    generation = asyncio.create_task(client.timed_generation("chat", BIG, "hi"))
    await wait_until(lambda: server.state(BIG) == "loading", 2, "big loading")
    await server.restart()
    with pytest.raises(LlmServerError):
        await generation
    server.inject("/models", hold=HeldAnswer())  # never released
    with pytest.raises(LlmServerTimeoutError):
        await client.running_models(timeout=0.2)
    with pytest.raises(LlmServerTimeoutError):
        await client.timed_generation("chat", BIG, "hi", timeout=0.3)
    server.inject("/models/load", delay=0)
    with pytest.raises(LlmServerTimeoutError):
        await client.load(BIG, timeout=0.3)
    async with server.outage():
        with pytest.raises(LlmServerUnreachableError):
            await client.running_models()


async def test_detection_names_what_it_found(server: LlamaServerEmulator) -> None:
    async with aiohttp.ClientSession() as session:
        found = await detect(session, server.url)
        assert (found.kind, found.version) == ("llama_server", "b11669-Debian")
        server.inject("/props", status=200, body='{"build_info": "b1", "role": "model"}', times=3)
        server.inject("/running", status=404, body="404")
        with pytest.raises(LlmServerNotSupportedError, match="router mode"):
            await detect(session, server.url)


async def test_passive_loads_and_an_lru_eviction_on_the_integrations_timers(
    hass: HomeAssistant, server: LlamaServerEmulator
) -> None:
    entry = await add_server(hass, server.url)
    assert entry.data["server_kind"] == "llama_server"
    coordinator = entry.runtime_data.coordinator
    await wait_until(lambda: coordinator.events_connected, 3, "the event stream")
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await server.load_by_other_client(TINY)
    await wait_until(lambda: loaded, 3, "tiny loaded")
    polls_before = server.counts["GET /models"]
    started = time.monotonic()
    await server.load_by_other_client(BIG)  # --models-max 1: tiny goes
    load = time.monotonic() - started
    await wait_until(lambda: len(loaded) == 2 and unloaded, 2, "the swap")
    assert unloaded[0].data["model"] == TINY
    assert unloaded[0].data["reason"] == "displaced"
    assert unloaded[0].data["replaced_by"] == [BIG]
    big = loaded[1].data
    # /models/sse announced the loading state's start and end: the load itself.
    assert big["load_source"] == "events"
    assert big["cold_request_seconds"] is None
    assert big["load_seconds"] == pytest.approx(1.5, abs=0.3)
    # Only the regular 2 s polls ran meanwhile: the event stream replaced fast polling.
    polls = server.counts["GET /models"] - polls_before
    print(f"\n{polls} polls of /models during a {load:.1f} s load")
    assert polls <= load / 2 + 1
    assert hass.states.get(model_id(entry, "binary_sensor.big_resident")).state == STATE_ON
    assert hass.states.get(model_id(entry, "binary_sensor.tiny_resident")).state == STATE_OFF
    load_sensor = hass.states.get(model_id(entry, "sensor.big_last_measured_load_duration"))
    assert (float(load_sensor.state), load_sensor.attributes["source"]) == (
        big["load_seconds"],
        "events",
    )
    # What llama-server does not report is not shown; probe figures wait for a probe.
    for missing in ("unloads_at", "vram", "gpu_share", "prompt_cache_reuse"):
        assert hass.states.get(model_id(entry, f"sensor.big_{missing}")) is None
    await hass.services.async_call(
        DOMAIN,
        "probe",
        {"config_entry_id": entry.entry_id, "model": BIG},
        blocking=True,
        return_response=True,
    )
    await hass.async_block_till_done()
    assert hass.states.get(model_id(entry, "sensor.big_prompt_cache_reuse")) is not None
    assert hass.states.get(model_id(entry, "sensor.big_queue_stage")) is None  # llama-swap's alone


async def test_without_its_event_stream_fast_polls_time_the_load(
    hass: HomeAssistant, server: LlamaServerEmulator, freezer: FrozenDateTimeFactory
) -> None:
    """A build without /models/sse (or a stream that keeps failing): polling takes over.

    On a frozen clock that the test moves: the emulator's 5 s load, the polls and the
    stream's retries all take their time on it.
    """
    server.inject("/models/sse", status=404, body='{"error":"nope"}', times=None)
    server.add_model(EmulatedLlamaModel("slow", load_seconds=5.0))
    entry = await add_server(hass, server.url)
    coordinator = entry.runtime_data.coordinator
    # The task following the event stream runs (and retries) for as long as the entry.
    events = {t for t in hass._background_tasks if t.get_name().endswith(" events")}
    assert events
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    started = time.monotonic()
    load = asyncio.create_task(server.load_by_other_client("slow"))
    await advance_until(
        hass, freezer, lambda: coordinator.fast_polling, 3, "fast polling", besides=events
    )
    await advance_until(hass, freezer, load.done, 6, "the load", besides=events)
    await load
    await advance_until(hass, freezer, lambda: loaded, 2, "slow loaded", besides=events)
    assert not coordinator.events_connected
    figure = loaded[0].data
    assert figure["load_source"] == "polling"
    # Between the polls that saw the loading state start (within one 2 s interval of the
    # start) and end (within 0.5 s of it).
    assert 5.0 - 2.0 - 1.0 <= figure["load_seconds"] <= time.monotonic() - started
    # The stream is retried with a growing delay, not hammered.
    assert server.counts["GET /models/sse"] <= 4


async def test_a_cut_event_stream_is_followed_again(
    hass: HomeAssistant, server: LlamaServerEmulator
) -> None:
    entry = await add_server(hass, server.url)
    coordinator = entry.runtime_data.coordinator
    await wait_until(lambda: coordinator.events_connected, 3, "the event stream")
    server.cut_sse()
    await wait_until(lambda: not coordinator.events_connected, 2, "the cut noticed")
    await wait_until(lambda: coordinator.events_connected, 5, "the reconnection")
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    await server.load_by_other_client(TINY)
    await wait_until(lambda: loaded, 2, "tiny loaded, seen on the new stream")
    assert loaded[0].data["load_source"] == "events"


async def test_pushes_and_polls_agree_no_false_reload_and_no_stale_poll(
    hass: HomeAssistant, server: LlamaServerEmulator, freezer: FrozenDateTimeFactory
) -> None:
    """Events carry no context length and polls do: no reload seen; a slow poll is no news.

    On a frozen clock that the test moves (the emulator's load takes its time on it).
    """
    entry = await add_server(hass, server.url)
    coordinator = entry.runtime_data.coordinator
    # The task following the event stream runs for as long as the entry.
    events = {t for t in hass._background_tasks if t.get_name().endswith(" events")}
    assert events
    await advance_until(
        hass, freezer, lambda: coordinator.events_connected, 3, "the event stream", besides=events
    )
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    load = asyncio.create_task(server.load_by_other_client(TINY))
    await advance_until(hass, freezer, load.done, 2, "the load", besides=events)
    await load
    await advance_until(hass, freezer, lambda: loaded, 2, "tiny loaded", besides=events)
    for _ in range(3):  # polls and pushes alternate
        await coordinator.async_refresh()
    assert [e.data["model"] for e in loaded] == [TINY]
    assert coordinator.data.resident[TINY].context_length == 512
    # A poll that read /models before another client unloaded tiny ends after the push.
    held = HeldAnswer()
    server.inject("/models", hold=held)
    poll = asyncio.create_task(coordinator.async_refresh())
    await held.arrived.wait()
    await server.unload(TINY)
    held.release()
    await poll
    assert TINY not in coordinator.data.resident
    # Left early with nothing in sight: called "unloaded" 3 s on, at the next reading.
    await advance_until(hass, freezer, lambda: unloaded, 3 + 2 + 2, "tiny unloaded", besides=events)
    assert unloaded[0].data["reason"] == "unloaded"
    assert [e.data["model"] for e in loaded] == [TINY]
    assert len(unloaded) == 1


async def test_the_event_task_survives_an_unexpected_error(
    hass: HomeAssistant, server: LlamaServerEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = await add_server(hass, server.url)
    coordinator = entry.runtime_data.coordinator
    await wait_until(lambda: coordinator.events_connected, 3, "the event stream")
    observe = coordinator._observe_pushed
    failures = []

    def failing_once(resident: object) -> None:
        if not failures:
            failures.append(resident)
            raise RuntimeError("boom")
        observe(resident)

    monkeypatch.setattr(coordinator, "_observe_pushed", failing_once)
    connections = server.counts["GET /models/sse"]
    await server.load_by_other_client(TINY)
    await wait_until(lambda: failures, 2, "the failure")
    await wait_until(
        lambda: server.counts["GET /models/sse"] > connections and coordinator.events_connected,
        5,
        "the stream followed again",
    )
    assert TINY in coordinator.data.held


async def test_a_keep_is_refused(client: LlamaServerClient) -> None:
    """The router keeps a model until --models-max needs its place: no keep to give."""
    with pytest.raises(LlmServerNotSupportedError, match="decides by itself"):
        await client.load(TINY, keep_seconds=60)
    with pytest.raises(LlmServerNotSupportedError, match="configured context"):
        await client.load(TINY, num_ctx=8192)


async def test_a_system_prompt_and_think_reach_the_chat_template(
    client: LlamaServerClient, server: LlamaServerEmulator
) -> None:
    """A warm-up's system prompt is a system message; think goes to the chat template."""
    await client.timed_generation("chat", TINY, "Hello.", system="Be brief.", think=False)
    chat = [r.json for r in server.requests if r.path == "/v1/chat/completions"][-1]
    assert chat["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello."},
    ]
    assert chat["chat_template_kwargs"] == {"enable_thinking": False}
    await client.timed_generation("generate", TINY, "Hello.", system="Be brief.")
    completion = [r.json for r in server.requests if r.path == "/v1/completions"][-1]
    assert completion["prompt"] == "Be brief.\n\nHello."
    assert "chat_template_kwargs" not in completion


async def test_an_unexpected_event_stream_failure_is_logged_once_until_it_recovers(
    hass: HomeAssistant,
    server: LlamaServerEmulator,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bug on every pushed snapshot: one traceback, then debug lines, then 'works again'."""
    monkeypatch.setattr(event_stream_module, "EVENTS_RETRY_MIN", 0.05)
    monkeypatch.setattr(event_stream_module, "EVENTS_RETRY_MAX", 0.1)
    entry = await add_server(hass, server.url)
    coordinator = entry.runtime_data.coordinator
    await wait_until(lambda: coordinator.events_connected, 3, "the event stream")
    observe = coordinator._observe_pushed
    failures = 0

    def failing(resident: Any) -> None:
        nonlocal failures
        if failures < 4:
            failures += 1
            raise RuntimeError("a bug in reading a pushed snapshot")
        observe(resident)

    caplog.set_level(logging.DEBUG, logger="custom_components.llm_warmth")
    monkeypatch.setattr(coordinator, "_observe_pushed", failing)
    server.cut_sse()
    await wait_until(lambda: failures == 4, 5, "four failures")
    await server.load_by_other_client(TINY)  # a snapshot that is read again
    await wait_until(
        lambda: "the event stream works again" in caplog.text, 5, "the stream working again"
    )
    mine = [r for r in caplog.records if "event stream" in r.getMessage()]
    errors = [r for r in mine if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in errors] == [f"{coordinator.name}: the event stream failed"]
    assert errors[0].exc_info is not None
    again = [r for r in mine if "failed again" in r.getMessage()]
    assert len(again) == 3
    assert all(r.levelno == logging.DEBUG for r in again)
    # Said once, when it recovered; not at the first connection before the failures.
    assert [r.levelno for r in mine if "works again" in r.getMessage()] == [logging.INFO]
    # Once it worked again, the next failure is news again: a second traceback.
    failures = 3
    server.cut_sse()
    await wait_until(lambda: failures == 4, 5, "a failure after the recovery")
    await wait_until(lambda: coordinator.events_connected, 5, "the stream followed again")
    mine = [r for r in caplog.records if "event stream" in r.getMessage()]
    errors = [r for r in mine if r.levelno >= logging.ERROR]
    assert len(errors) == 2
    assert errors[1].exc_info is not None


async def test_events_pushed_while_a_poll_runs_are_not_lost(
    hass: HomeAssistant, server: LlamaServerEmulator
) -> None:
    """A slow poll answers with the list from before a load the event stream announced."""
    entry = await add_server(hass, server.url)
    coordinator = entry.runtime_data.coordinator
    await wait_until(lambda: coordinator.events_connected, 3, "the event stream")
    async with aiohttp.ClientSession() as session, session.get(f"{server.url}/models") as reply:
        before = await reply.read()  # nothing loaded yet
    held = HeldAnswer()
    server.inject("/models", method="GET", body=before, hold=held)
    polling = asyncio.create_task(coordinator.async_refresh())
    await held.arrived.wait()  # the poll is waiting for its (stale) answer
    await server.load_by_other_client(TINY)
    await wait_until(lambda: TINY in coordinator.data.held, 3, "the pushed load")
    held.release()
    await polling
    assert TINY in coordinator.data.held  # the poll's older list did not undo it
    await hass.config_entries.async_unload(entry.entry_id)


async def test_an_event_that_is_not_an_object_is_passed_over(
    client: LlamaServerClient, server: LlamaServerEmulator
) -> None:
    """A `data:` line that parses to a list, a number or a string tells nothing: next one."""
    events = client.residency_events()
    try:
        async with asyncio.timeout(5):
            assert await anext(events) == ()
            for conn in server._sse_conns:
                for frame in (b"data: [1]\n\n", b"data: 7\n\n", b'data: "loaded"\n\n'):
                    conn.queue.put_nowait(frame)
            await server.load_by_other_client(TINY)
            states = [[(m.name, m.state) for m in await anext(events)]]
            while states[-1] != [(TINY, ResidencyState.LOADED)]:
                states.append([(m.name, m.state) for m in await anext(events)])
    finally:
        await events.aclose()
    assert states[0] == [(TINY, ResidencyState.LOADING)]
