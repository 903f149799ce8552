"""llama-swap, emulated to its published API: the client, and the integration on its timers.

No llama-swap binary can be installed on these machines: ``llama_swap_emulator.py`` follows
llama-swap's own source. Everything goes over real HTTP on loopback.
"""

import asyncio
from collections.abc import AsyncIterator
import json
import time

import aiohttp
from homeassistant.config_entries import ConfigEntry
from homeassistant.const import STATE_ON
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.aiohttp_client import async_get_clientsession
import pytest
from pytest_homeassistant_custom_component.common import async_capture_events

from custom_components.llm_warmth.const import (
    DOMAIN,
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_PIN_REASSERTED,
)
from custom_components.llm_warmth.core.backends import llama_swap
from custom_components.llm_warmth.core.backends.detection import detect
from custom_components.llm_warmth.core.backends.errors import (
    LlmModelNotFoundError,
    LlmModelStartError,
    LlmServerAuthenticationError,
    LlmServerBusyError,
    LlmServerConnectionError,
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerResponseError,
    LlmServerUnreachableError,
)
from custom_components.llm_warmth.core.backends.llama_swap import LlamaSwapClient
from custom_components.llm_warmth.core.backends.types import ResidencyState
from custom_components.llm_warmth.core.gpu.exporter import ExporterKind, ExporterSource

from .conftest import model_id
from .e2e import add_server, call, wait_until
from .llama_swap_emulator import LlamaSwapEmulator, SwapModel, SwapPeer

BIG, TINY = "big", "tiny"


def models() -> list[SwapModel]:
    return [
        SwapModel(TINY, load_seconds=0.3, aliases=("small",)),
        SwapModel(BIG, load_seconds=1.5, unload_seconds=0.1, prompt_ms_per_token=5.0),
    ]


@pytest.fixture
async def swap(socket_enabled: None) -> AsyncIterator[LlamaSwapEmulator]:
    emulator = LlamaSwapEmulator(models(), ttl_check_interval=0.05)
    await emulator.start()
    yield emulator
    await emulator.stop()


@pytest.fixture
async def client(swap: LlamaSwapEmulator) -> AsyncIterator[LlamaSwapClient]:
    async with aiohttp.ClientSession() as session:
        yield LlamaSwapClient(session, swap.url, request_timeout=2)


async def test_version_models_and_residency(
    client: LlamaSwapClient, swap: LlamaSwapEmulator
) -> None:
    assert await client.version() == swap.version
    # Aliases are names of a model, not models.
    assert [m.name for m in await client.installed_models()] == [BIG, TINY]
    assert await client.running_models() == ()
    await client.load(TINY)
    (tiny,) = await client.running_models()
    assert (tiny.name, tiny.state) == (TINY, ResidencyState.LOADED)
    assert (tiny.size, tiny.expires_at, tiny.context_length) == (None, None, None)
    load = asyncio.create_task(client.load(BIG))
    await wait_until(lambda: swap.state(BIG) == "starting", 2, "big starting")
    assert {m.name: m.state for m in await client.running_models()} == {BIG: ResidencyState.LOADING}
    await load
    await client.unload(BIG)
    assert swap.state(BIG) == "stopped"
    assert await client.running_models() == ()


async def test_detection_tells_llama_swap_from_the_servers_behind_it(
    swap: LlamaSwapEmulator,
) -> None:
    async with aiohttp.ClientSession() as session:
        found = await detect(session, swap.url)
    assert (found.kind, found.version) == ("llama_swap", swap.version)


async def test_cold_then_warm_generation_times_its_load(
    client: LlamaSwapClient, swap: LlamaSwapEmulator
) -> None:
    cold = await client.timed_generation("chat", BIG, "Reply with one word: ready?")
    assert cold.load_duration_ns / 1e9 == pytest.approx(1.5, abs=0.3)
    assert cold.queue_ns == 0
    assert cold.first_token_ns - cold.sent_ns >= cold.load_duration_ns
    assert cold.prompt_cached_count == 0
    warm = await client.timed_generation("chat", BIG, "Reply with one word: ready?")
    assert warm.load_duration_ns == 0
    # The same prompt again: all but its last token came from the upstream's prompt cache.
    assert warm.prompt_cached_count == warm.prompt_eval_count - 1
    generated = await client.timed_generation("generate", BIG, "Complete this", options={})
    assert generated.eval_count


async def test_a_request_in_flight_ahead_is_the_queue(
    client: LlamaSwapClient, swap: LlamaSwapEmulator
) -> None:
    await client.load(BIG)
    ahead = asyncio.create_task(
        client.timed_generation("chat", BIG, " ".join(["word"] * 200), options={"num_predict": 8})
    )
    await wait_until(lambda: swap.inflight(BIG) == 1, 2, "the request ahead in flight")
    ours = await client.timed_generation("chat", BIG, "hi")
    first = await ahead
    assert ours.queue_ns is not None
    assert ours.queue_ns > 0
    assert ours.queue_ns <= ours.first_token_ns - ours.sent_ns
    assert ours.load_duration_ns == ours.queue_ns  # loaded already: the wait is the queue
    assert first.queue_ns == 0


@pytest.mark.parametrize("cold", [False, True])
async def test_a_request_ahead_running_beside_ours_is_queue_only_for_what_our_prefill_leaves(
    client: LlamaSwapClient, swap: LlamaSwapEmulator, cold: bool
) -> None:
    """The upstream runs the request ahead beside ours (it is still running at our first
    token): the load and the queue together are at most the time before our prefill (a
    100-token prompt, 0.5 s of it). Cold, both wait for the same 1.5 s load."""
    if not cold:
        await client.load(BIG)
    ahead = asyncio.create_task(
        client.timed_generation("chat", BIG, " ".join(["word"] * 200), options={"num_predict": 8})
    )
    if cold:
        await wait_until(lambda: swap.state(BIG) == "starting", 2, "big starting")
    else:
        await wait_until(lambda: swap.inflight(BIG) == 1, 2, "the request ahead in flight")
    ours = await client.timed_generation("chat", BIG, " ".join(["word"] * 100))
    await ahead
    prefill = ours.prompt_eval_duration_ns
    assert prefill is not None
    assert prefill >= 400_000_000
    assert ours.load_duration_ns is not None
    assert ours.queue_ns is not None
    before_prefill = ours.first_token_ns - ours.sent_ns - prefill
    if cold:
        assert ours.load_duration_ns >= 1_000_000_000  # most of the load was ours to wait
        # The load's end comes from the event stream, a little after the upstream's (a
        # mutant of the bound overshoots it by the load and the prefill, over 1.5 s).
        assert ours.load_duration_ns <= before_prefill + 300_000_000
    else:
        assert ours.load_duration_ns == ours.queue_ns
        assert ours.queue_ns <= before_prefill


async def test_without_its_event_stream_the_load_is_unknown(
    client: LlamaSwapClient, swap: LlamaSwapEmulator
) -> None:
    swap.fail_next("/api/events", 404, "nope", "text/plain")
    reply = await client.timed_generation("chat", TINY, "hi")
    assert (reply.load_duration_ns, reply.queue_ns) == (None, None)


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (
            401,
            '{"error":"unauthorized: invalid or missing API key","src":"llama-swap"}',
            LlmServerAuthenticationError,
        ),
        (
            404,
            '{"error":"no router for requested model","src":"llama-swap"}',
            LlmModelNotFoundError,
        ),
        (429, '{"error":"too many requests","src":"llama-swap"}', LlmServerBusyError),
        (503, "upstream busy", LlmServerBusyError),
        (
            500,
            '{"error":"unspecific error: upstream command exited prematurely"}',
            LlmServerResponseError,
        ),
        (502, "<html>Bad Gateway</html>", LlmServerResponseError),
    ],
)
async def test_generation_errors(
    client: LlamaSwapClient,
    swap: LlamaSwapEmulator,
    status: int,
    body: str,
    error: type[LlmServerError],
) -> None:
    swap.fail_next("/v1/chat/completions", status, body)
    with pytest.raises(error):
        await client.timed_generation("chat", TINY, "hi")


async def test_faults_leave_only_our_errors(
    client: LlamaSwapClient, swap: LlamaSwapEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(LlmModelNotFoundError):
        await client.timed_generation("chat", "nope", "hi")
    with pytest.raises(LlmModelNotFoundError):
        await client.unload("nope")
    with pytest.raises(LlmModelNotFoundError):
        await client.load("nope")
    swap.malformed_next("/running")
    with pytest.raises(LlmServerResponseError):
        await client.running_models()
    swap.fail_next(
        "/running",
        200,
        '{"running": [{"model": "a", "state": "ready"}, {"model": "a", "state": "ready"}]}',
    )
    with pytest.raises(LlmServerResponseError, match="twice"):
        await client.running_models()
    swap.fail_next("/v1/models", 200, '{"data": {"id": "x"}}')
    with pytest.raises(LlmServerResponseError):
        await client.installed_models()
    swap.fail_next("/running", 404, "404 page not found", "text/plain")
    with pytest.raises(LlmServerNotSupportedError):
        await client.version()
    # A restart mid-request: the reply breaks off.
    generation = asyncio.create_task(client.timed_generation("chat", BIG, " ".join(["word"] * 300)))
    await wait_until(lambda: swap.inflight(BIG) == 1, 5, "the request in flight")
    await swap.restart()
    with pytest.raises(LlmServerError):
        await generation
    monkeypatch.setattr(client._http, "timeout", 0.2)
    async with swap.outage():
        with pytest.raises(LlmServerUnreachableError):
            await client.running_models()


async def test_residency_events_and_a_cut_or_stalled_stream(
    client: LlamaSwapClient, swap: LlamaSwapEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, ResidencyState]] = []

    async def follow() -> None:
        async for resident in client.residency_events():
            seen.append({m.name: m.state for m in resident})

    follower = asyncio.create_task(follow())
    await wait_until(lambda: seen, 2, "the state on connect")
    assert seen[0] == {}
    await client.load(TINY)
    await wait_until(lambda: seen[-1] == {TINY: ResidencyState.LOADED}, 2, "tiny ready")
    assert {TINY: ResidencyState.LOADING} in seen
    swap.cut_events()
    with pytest.raises((LlmServerConnectionError, LlmServerResponseError)):
        await asyncio.wait_for(follower, 2)

    monkeypatch.setattr(llama_swap, "EVENT_SILENCE_SECONDS", 0.3)
    swap.stall_events(True)
    stalled = asyncio.create_task(follow())
    with pytest.raises(LlmServerResponseError, match="no event"):
        await asyncio.wait_for(stalled, 3)


async def add_swap(hass: HomeAssistant, url: str) -> ConfigEntry:
    entry = await add_server(hass, url)
    assert entry.data["server_kind"] == "llama_swap"
    assert entry.title.startswith("llama-swap ")
    return entry


async def test_loads_and_swaps_by_another_client_come_from_the_event_stream(
    hass: HomeAssistant, swap: LlamaSwapEmulator
) -> None:
    """On its own timers: residency from the events, no fast polling, loads timed by them."""
    entry = await add_swap(hass, swap.url)
    coordinator = entry.runtime_data.coordinator
    await wait_until(lambda: coordinator.events_connected, 3, "the event stream")
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    polls_before = swap.requests["GET /running"]
    started = time.monotonic()
    await swap.load_by_other_client(TINY)
    await swap.load_by_other_client(BIG)  # the swap group stops tiny first
    elapsed = time.monotonic() - started
    await wait_until(lambda: len(loaded) == 2 and unloaded, 2, "the events")
    assert [e.data["model"] for e in loaded] == [TINY, BIG]
    big = loaded[1].data
    assert big["load_source"] == "events"
    assert big["load_seconds"] == pytest.approx(1.5, abs=0.2)
    assert unloaded[0].data["entity_id"] == model_id(entry, "sensor.tiny")
    assert {k: unloaded[0].data[k] for k in ("model", "reason", "replaced_by")} == {
        "model": TINY,
        "reason": "displaced",
        "replaced_by": [BIG],
    }
    assert hass.states.get(model_id(entry, "binary_sensor.big_resident")).state == STATE_ON
    # Only the regular 2 s polls ran meanwhile: the stream replaced fast polling.
    polls = swap.requests["GET /running"] - polls_before
    print(f"\n{polls} polls of /running during {elapsed:.1f} s of loads")
    assert polls <= elapsed / 2 + 1
    assert not coordinator.fast_polling


async def test_an_unload_told_by_the_stream_alone_is_decided_after_its_window(
    hass: HomeAssistant, swap: LlamaSwapEmulator
) -> None:
    """Stopped by another client (or its ttl), no model in its place, no poll due (30 s):

    the unload event comes once the replacement window (3 s) has passed, from the pushed
    residency read again (no request sent for it), not at the next poll.
    """
    entry = await add_server(hass, swap.url, interval=30.0)
    coordinator = entry.runtime_data.coordinator
    await wait_until(lambda: coordinator.events_connected, 3, "the event stream")
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await swap.load_by_other_client(TINY)
    await wait_until(lambda: TINY in coordinator.data.held, 2, "tiny held")
    polls = swap.requests["GET /running"]
    # Timed from before the unload is sent: the stream may tell it (and the window start)
    # before the unload's own reply comes back (CI once measured 2.99997 s from after it).
    left = time.monotonic()
    await swap.unload(TINY)
    await wait_until(lambda: TINY not in coordinator.data.held, 2, "tiny gone")
    assert unloaded == []  # another model may yet come in its place
    await wait_until(lambda: unloaded, 5, "the unload event")
    assert 3.0 <= time.monotonic() - left <= 4.0
    assert {k: unloaded[0].data[k] for k in ("model", "reason", "replaced_by")} == {
        "model": TINY,
        "reason": "unloaded",
        "replaced_by": [],
    }
    assert swap.requests["GET /running"] == polls  # decided without a poll
    await hass.config_entries.async_unload(entry.entry_id)


async def test_a_pin_is_asserted_again_from_the_stream_without_waiting_for_a_poll(
    hass: HomeAssistant, swap: LlamaSwapEmulator
) -> None:
    """A pinned model stopped by another client, told by the event stream: the pin loads it
    again within its settle time, not at the next poll (30 s away): the controller checks
    the pins on pushed data as on a poll.
    """
    entry = await add_server(hass, swap.url, interval=30.0)
    coordinator = entry.runtime_data.coordinator
    await wait_until(lambda: coordinator.events_connected, 3, "the event stream")
    await call(hass, "pin", config_entry_id=entry.entry_id, model=TINY)
    assert TINY in coordinator.data.held
    reasserted = async_capture_events(hass, EVENT_PIN_REASSERTED)
    await swap.unload(TINY)
    await wait_until(lambda: reasserted, 8, "the pin asserted again from the stream")
    assert [e.data["reason"] for e in reasserted] == ["gone"]
    await wait_until(lambda: TINY in coordinator.data.held, 5, "tiny resident again")
    await hass.config_entries.async_unload(entry.entry_id)


async def test_an_entry_removed_while_an_unload_waits_for_its_window_leaves_no_timer(
    hass: HomeAssistant, swap: LlamaSwapEmulator
) -> None:
    entry = await add_server(hass, swap.url, interval=30.0)
    coordinator = entry.runtime_data.coordinator
    await wait_until(lambda: coordinator.events_connected, 3, "the event stream")
    await swap.load_by_other_client(TINY)
    await wait_until(lambda: TINY in coordinator.data.held, 2, "tiny held")
    await swap.unload(TINY)
    await wait_until(lambda: TINY not in coordinator.data.held, 2, "tiny gone")
    assert coordinator.monitor.undecided_until is not None  # the window runs
    assert await hass.config_entries.async_remove(entry.entry_id)
    await hass.async_block_till_done()
    assert not coordinator._decision.armed  # what the removal must leave


async def test_a_cut_stream_is_reconnected_and_polling_covers_the_gap(
    hass: HomeAssistant, swap: LlamaSwapEmulator
) -> None:
    entry = await add_swap(hass, swap.url)
    coordinator = entry.runtime_data.coordinator
    await wait_until(lambda: coordinator.events_connected, 3, "the event stream")
    connections = swap.events_connections
    swap.cut_events()
    await wait_until(lambda: not coordinator.events_connected, 2, "the cut noticed")
    await wait_until(lambda: coordinator.events_connected, 5, "the reconnection")
    assert swap.events_connections == connections + 1


async def test_a_probe_reports_its_load_queue_and_prompt_cache(
    hass: HomeAssistant, swap: LlamaSwapEmulator
) -> None:
    entry = await add_swap(hass, swap.url)
    cold_starts = async_capture_events(hass, EVENT_COLD_START)

    async def probe() -> dict[str, object]:
        reply = await hass.services.async_call(
            DOMAIN,
            "probe",
            {"config_entry_id": entry.entry_id, "model": BIG, "prompt": "Ready?"},
            blocking=True,
            return_response=True,
        )
        return dict(reply or {})

    cold = await probe()
    assert cold["classification"] == "cold"
    assert cold["dominant_stage"] == "load"
    assert cold["queue_and_load_ms"] / 1000 == pytest.approx(1.5, abs=0.3)
    assert cold["queue_ms"] == 0
    assert [e.data["source"] for e in cold_starts] == ["probe"]
    warm = await probe()
    assert warm["classification"] == "warm"
    assert warm["prompt_cache_reuse"] > 0
    queue = hass.states.get(model_id(entry, "sensor.big_queue_stage"))
    assert float(queue.state) == 0
    reuse = float(hass.states.get(model_id(entry, "sensor.big_prompt_cache_reuse")).state)
    assert reuse == pytest.approx(warm["prompt_cache_reuse"], abs=0.05)  # the response: to 0.1


async def test_gpu_headroom_from_llama_swaps_metrics(
    hass: HomeAssistant, swap: LlamaSwapEmulator
) -> None:
    """llama-swap's own /metrics is a GPU source (the exporter kind is recognised)."""
    source = ExporterSource(async_get_clientsession(hass), f"{swap.url}/metrics", ExporterKind.AUTO)
    gpus = await source.read()
    assert gpus
    assert all(gpu.memory_total and gpu.memory_used is not None for gpu in gpus)


async def test_a_server_that_answers_any_path_is_not_llama_swap(
    client: LlamaSwapClient, swap: LlamaSwapEmulator
) -> None:
    """LM Studio answers unknown paths with HTTP 200 and an error object."""
    swap.fail_next("/running", 200, '{"error": "Unexpected endpoint or method. (GET /running)"}')
    with pytest.raises(LlmServerNotSupportedError):
        await client.version()


async def test_a_keep_is_refused(client: LlamaSwapClient) -> None:
    """llama-swap keeps a model for the ttl in its configuration: no keep to give."""
    with pytest.raises(LlmServerNotSupportedError, match="decides by itself"):
        await client.load(TINY, keep_seconds=60)


@pytest.mark.parametrize(
    ("status", "message", "error"),
    [
        # Recorded from the real llama-swap (a model whose llama-server exits at once).
        (500, "unspecific error: upstream command exited prematurely", LlmModelStartError),
        (500, "unspecific error: health check timed out after 2m0s", LlmModelStartError),
        (500, "unspecific error: failed to start command: exec: no such file", LlmModelStartError),
        (500, "unspecific error: group: model unloaded", LlmServerResponseError),
        (502, "upstream command exited prematurely", LlmServerResponseError),
    ],
)
def test_a_model_that_fails_to_start_is_its_own_error(
    status: int, message: str, error: type[LlmServerError]
) -> None:
    found = llama_swap.error_for_status(status, message, "/upstream/broken/health")
    assert type(found) is error
    assert message in str(found)


async def test_a_model_that_fails_to_start_is_said_and_repaired_until_it_loads(
    hass: HomeAssistant, swap: LlamaSwapEmulator, issue_registry: ir.IssueRegistry
) -> None:
    """The preload says it in words; a repair names the model until it loads."""
    entry = await add_swap(hass, swap.url)
    coordinator = entry.runtime_data.coordinator
    swap.models[TINY].load_error = "upstream command exited prematurely"
    target = {"config_entry_id": entry.entry_id, "model": TINY}
    with pytest.raises(HomeAssistantError) as raised:
        await hass.services.async_call(DOMAIN, "preload", target, blocking=True)
    assert raised.value.translation_key == "model_failed_to_start"
    assert "upstream command exited prematurely" in str(raised.value)
    await coordinator.async_refresh()
    await hass.async_block_till_done()
    found = issue_registry.async_get_issue(DOMAIN, f"model_fails_to_start_{entry.entry_id}_{TINY}")
    assert found is not None
    assert found.translation_placeholders == {
        "server": entry.title,
        "model": TINY,
        "error": "unspecific error: upstream command exited prematurely",
    }
    # Its command mended: the next load works, and the repair goes.
    swap.models[TINY].load_error = None
    await hass.services.async_call(DOMAIN, "preload", target, blocking=True)
    await coordinator.async_refresh()
    await hass.async_block_till_done()
    assert issue_registry.async_get_issue(DOMAIN, found.issue_id) is None
    # Failed again, then loaded by another client: the repair goes, and the controller
    # forgets the failure (it would come back once the model leaves otherwise).
    controller = entry.runtime_data.controller
    await hass.services.async_call(DOMAIN, "evict", target, blocking=True)
    swap.models[TINY].load_error = "upstream command exited prematurely"
    with pytest.raises(HomeAssistantError):
        await hass.services.async_call(DOMAIN, "preload", target, blocking=True)
    assert list(controller.failed_starts) == [TINY]
    swap.models[TINY].load_error = None
    await swap.load_by_other_client(TINY)
    await coordinator.async_refresh()
    await hass.async_block_till_done()
    assert controller.failed_starts == {}
    assert issue_registry.async_get_issue(DOMAIN, found.issue_id) is None
    await hass.config_entries.async_unload(entry.entry_id)


@pytest.mark.parametrize(
    "peer_id", [None, "", "   ", 7], ids=["missing", "empty", "blank", "not-a-string"]
)
async def test_a_peer_model_without_its_peer_is_a_bad_reply(
    client: LlamaSwapClient, swap: LlamaSwapEmulator, peer_id: object
) -> None:
    """A /v1/models entry of type peer must name its peer: else the reply is refused."""
    own = {"type": "peer"} if peer_id is None else {"type": "peer", "peerID": peer_id}
    entry = {"id": "lab/tiny", "object": "model", "meta": {"llamaswap": own}}
    swap.fail_next("/v1/models", 200, json.dumps({"data": [entry], "object": "list"}))
    with pytest.raises(LlmServerResponseError, match="peerID"):
        await client.installed_models()
    # Well formed, it is listed with its peer; the peer's name is kept as sent.
    own = {"type": "peer", "peerID": "lab"}
    swap.fail_next("/v1/models", 200, json.dumps({"data": [{**entry, "meta": {"llamaswap": own}}]}))
    assert [(m.name, m.peer) for m in await client.installed_models()] == [("lab/tiny", "lab")]


async def test_a_peers_entry_in_the_event_stream_is_never_resident_here(
    socket_enabled: None,
) -> None:
    """The front llama-swap lists each peer's model in its events (recorded: with no state).

    Whatever state such an entry says, it runs on the peer: only the front's own models
    are resident on the front (a peer's shown resident here would be warm where it is not).
    """
    statuses = [
        {"id": "tiny", "state": "ready", "peerID": ""},
        {"id": "lab/tiny", "state": "ready", "peerID": "lab"},
        {"id": "lab/big", "state": "starting", "peerID": "lab"},
    ]
    frame = json.dumps({"type": "modelStatus", "data": json.dumps(statuses)})
    done = asyncio.Event()

    async def events(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(f"data: {frame}\n\n".encode())
        await done.wait()
        return response

    app = aiohttp.web.Application()
    app.router.add_get("/api/events", events)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with aiohttp.ClientSession() as session:
            client = LlamaSwapClient(session, f"http://127.0.0.1:{port}", request_timeout=2)
            stream = client.residency_events()
            resident = await asyncio.wait_for(anext(stream), 2)
            await stream.aclose()
        assert {m.name: m.state for m in resident} == {"tiny": ResidencyState.LOADED}
    finally:
        done.set()
        await runner.cleanup()


@pytest.fixture
async def front_and_peer(
    socket_enabled: None,
) -> AsyncIterator[tuple[LlamaSwapEmulator, LlamaSwapEmulator]]:
    """A llama-swap with models of its own and a peer ``lab`` that runs ``tiny``."""
    peer = LlamaSwapEmulator([SwapModel(TINY, load_seconds=0.05)], ttl_check_interval=1.0)
    await peer.start()
    front = LlamaSwapEmulator(
        models(), ttl_check_interval=1.0, peers={"lab": SwapPeer(peer.url, (TINY,))}
    )
    await front.start()
    yield front, peer
    await front.stop()
    await peer.stop()


async def test_a_preload_of_a_peers_model_ends_with_its_answered_load(
    hass: HomeAssistant, front_and_peer: tuple[LlamaSwapEmulator, LlamaSwapEmulator]
) -> None:
    """The front server never lists what its peer runs: the answered load is the end.

    Waiting for the front server to show the peer's model would wait out the timeout.
    """
    front, peer = front_and_peer
    entry = await add_swap(hass, front.url)
    done = await entry.runtime_data.controller.preload(
        f"lab/{TINY}", keep_seconds=None, num_ctx=None, timeout=3
    )
    assert done.model == f"lab/{TINY}"
    assert peer.running_models() == [TINY]
    assert f"lab/{TINY}" not in entry.runtime_data.coordinator.data.held
    await hass.config_entries.async_unload(entry.entry_id)


async def test_a_llama_swap_older_than_its_version_path_is_version_unknown(
    client: LlamaSwapClient, swap: LlamaSwapEmulator
) -> None:
    """Before v173 there is no /api/version: 404, and the version is "unknown"."""
    swap.fail_next("/api/version", 404, "404 page not found", "text/plain")
    assert await client.version() == "unknown"


async def test_the_latest_ten_requests_served_are_read_unless_told(
    client: LlamaSwapClient, swap: LlamaSwapEmulator
) -> None:
    for _ in range(12):
        await client.timed_generation("chat", TINY, "hi", options={"num_predict": 1})
    served = await client.served_requests()
    assert len(served) == 10
    assert [r.id for r in served] == sorted((r.id for r in served), reverse=True)
    assert len(await client.served_requests(limit=12)) == 12


async def test_a_peers_model_is_started_by_a_one_token_chat_and_an_own_model_by_its_health(
    front_and_peer: tuple[LlamaSwapEmulator, LlamaSwapEmulator],
) -> None:
    """Once the models are listed, a peer's goes as a chat of one token; the front
    server's own model still through its upstream's health check."""
    front, peer = front_and_peer
    async with aiohttp.ClientSession() as session:
        client = LlamaSwapClient(session, front.url, request_timeout=5)
        assert {m.name: m.peer for m in await client.installed_models()} == {
            BIG: None,
            TINY: None,
            f"lab/{TINY}": "lab",
        }
        await client.load(f"lab/{TINY}")
        await client.load(TINY)
    assert front.requests["POST /v1/chat/completions"] == 1
    assert front.requests[f"GET /upstream/{TINY}/health"] == 1
    assert [entry["tokens"]["output_tokens"] for entry in peer.activity] == [1]
