"""llama-swap for real: the kit's llama-swap (scripts/llm_servers) in front of llama-server.

The client, and the integration on its own timers, against the real binary: residency and
warmth, a load timed from its events, the activity records against our own stopwatch,
preload and evict through the actions, another client's requests as uses and ours not.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
import re
import time

import aiohttp
from homeassistant.const import STATE_OFF, STATE_ON, STATE_UNKNOWN
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import issue_registry as ir
import pytest
from pytest_homeassistant_custom_component.common import async_capture_events

from custom_components.llm_warmth.const import (
    DOMAIN,
    EVENT_MODEL_UNLOADED,
    EVENT_PIN_REAPPLIED,
    EVENT_PIN_REASSERTED,
    EVENT_PIN_RELEASED,
    PIN_SETTLE_SECONDS,
)
from custom_components.llm_warmth.core.backends.base import ServerKind
from custom_components.llm_warmth.core.backends.detection import detect
from custom_components.llm_warmth.core.backends.errors import LlmModelOnPeerError
from custom_components.llm_warmth.core.backends.llama_swap import LlamaSwapClient
from custom_components.llm_warmth.core.backends.types import ResidencyState
from custom_components.llm_warmth.core.usage import COLD

from .conftest import model_id
from .e2e import add_server, protect, server_url, wait_until
from .llama_swaps import Swaps, SwapSpec
from .recording_proxy import RecordingProxy
from .test_pin import call

PLEX = "binary_sensor.plex_transcoding"

# The kit's own llama-swap (e2e). The tests that start llama-swaps of their own run twice
# (the ``swaps`` fixture): on the emulator, and on the real binary (marked e2e there).
TINY = "tiny"


@pytest.fixture
def llama_swap_url(socket_enabled: None) -> str:
    """Return the URL of the kit's real llama-swap (skipped without one; CI fails instead)."""
    return server_url("LLM_WARMTH_LLAMA_SWAP_URL")


@pytest.fixture
async def client(llama_swap_url: str) -> AsyncIterator[LlamaSwapClient]:
    """Our client of the real llama-swap, with no model running to begin with."""
    async with aiohttp.ClientSession() as session:
        swap = LlamaSwapClient(session, llama_swap_url, request_timeout=60)
        await unload_all(session, llama_swap_url)
        yield swap
        await unload_all(session, llama_swap_url)


async def unload_all(session: aiohttp.ClientSession, url: str) -> None:
    """Stop every model llama-swap runs (it answers once they stopped)."""
    async with session.post(f"{url}/api/models/unload") as response:
        response.raise_for_status()


async def chat(url: str, model: str = TINY) -> None:
    """Another client's chat, straight to llama-swap (OpenAI-compatible, not streamed)."""
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/v1/chat/completions", json=body) as response,
    ):
        response.raise_for_status()
        await response.read()


@pytest.mark.e2e
async def test_the_real_llama_swap_is_found_and_its_residency_read(
    client: LlamaSwapClient, llama_swap_url: str
) -> None:
    async with aiohttp.ClientSession() as session:
        found = await detect(session, llama_swap_url)
    assert found.kind is ServerKind.LLAMA_SWAP
    assert found.version == await client.version()
    assert found.version.startswith("v")
    assert TINY in [m.name for m in await client.installed_models()]
    assert await client.running_models() == ()
    await client.load(TINY)
    (tiny,) = await client.running_models()
    assert (tiny.name, tiny.state) == (TINY, ResidencyState.LOADED)
    # llama-swap tells no size, no expiry (its ttl is configured, not counted down), no context.
    assert (tiny.size, tiny.expires_at, tiny.context_length) == (None, None, None)
    await client.unload(TINY)
    assert await client.running_models() == ()


@pytest.mark.e2e
async def test_a_cold_load_is_timed_and_the_activity_record_matches_our_stopwatch(
    client: LlamaSwapClient,
) -> None:
    """The load from its events; its activity record's duration against our stopwatch.

    llama-swap stores an activity's time in whole seconds and its duration in milliseconds:
    the duration is compared to the millisecond's rounding, the time to the second.
    """
    cold = await client.timed_generation("chat", TINY, "Reply with one word: ready?")
    assert cold.load_duration_ns > 0
    assert cold.first_token_ns - cold.sent_ns >= cold.load_duration_ns
    warm = await client.timed_generation("chat", TINY, "Reply with one word: ready?")
    # Warm: no load. llama-swap drops a request from its in-flight list a few ms after its
    # client read the last byte, so the one before ours may still be listed ahead when
    # ours is sent: that wait is the queue, and all of the figure (recorded: a warm request
    # sent 0.1 ms after the one before it found it listed, removed 11 ms later, 4.3 ms
    # before our prefill).
    assert warm.load_duration_ns == warm.queue_ns
    assert warm.queue_ns is not None
    assert warm.queue_ns < 50_000_000
    assert warm.prompt_cached_count == warm.prompt_eval_count - 1  # the upstream's cache
    newest, before = (await client.served_requests(limit=2))[:2]
    assert newest.id == before.id + 1
    for record, reply in ((newest, warm), (before, cold)):
        stopwatch = (reply.final_ns - reply.sent_ns) / 1e9
        # Its own clock runs from the request's arrival until it has parsed the reply it
        # passed on (internal/server/metrics.go: record() after the handler returns,
        # buildMetrics' time.Since(start) after the body is read for its tokens): within
        # our stopwatch (sent to final) by the loopback's few milliseconds before, and after
        # by that parse (recorded in CI on two busy cores: 2.4 ms past our last byte).
        assert stopwatch - 0.05 <= record.seconds <= stopwatch + 0.025
        assert record.ended_at.microsecond == 0  # whole seconds, as stored
        assert record.status == 200


@pytest.mark.e2e
async def test_preload_evict_and_uses_through_the_integration(
    hass: HomeAssistant, llama_swap_url: str
) -> None:
    """The actions move the real llama-swap; another client's request is a use, ours none."""
    async with aiohttp.ClientSession() as session:
        await unload_all(session, llama_swap_url)
    proxy = RecordingProxy(llama_swap_url)
    await proxy.start()
    try:
        entry = await add_server(hass, proxy.url)
        coordinator, usage = entry.runtime_data.coordinator, entry.runtime_data.usage
        model = coordinator.resolve_model(TINY)
        resident = next(
            s.entity_id
            for s in hass.states.async_all("binary_sensor")
            if s.entity_id.endswith(f"_{TINY}_resident")
        )
        assert hass.states.get(resident).state == STATE_OFF
        target = {"config_entry_id": entry.entry_id, "model": model}
        await hass.services.async_call(DOMAIN, "preload", target, blocking=True)
        await wait_until(lambda: model in coordinator.data.held, 10, "tiny held")
        await wait_until(lambda: hass.states.get(resident).state == STATE_ON, 10, "resident on")
        # The preload: through its upstream's health check, which starts the model.
        assert any(r.path == f"/upstream/{TINY}/health" for r in proxy.requests)

        def used() -> int:
            record = usage.get(model)
            return len(record.planner.uses) if record else 0

        # Ours (the preload) is no use; another client's chat, straight to it, is one.
        polls = len(proxy.sent("/running"))
        await wait_until(lambda: len(proxy.sent("/running")) >= polls + 2, 10, "two polls")
        assert used() == 0
        await chat(llama_swap_url)
        await wait_until(lambda: used() == 1, 10, "the other client's use")
        await hass.services.async_call(DOMAIN, "evict", target, blocking=True)
        await wait_until(lambda: model not in coordinator.data.held, 10, "tiny gone")
        await wait_until(lambda: hass.states.get(resident).state == STATE_OFF, 10, "resident off")
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()


async def test_a_model_whose_server_fails_to_start_is_said_in_words(
    hass: HomeAssistant, swaps: Swaps
) -> None:
    """A model whose llama-server exits at once: the preload says so, no traceback."""
    url = await swaps.start([SwapSpec(TINY), SwapSpec("broken", broken=True)])
    entry = await add_server(hass, url)
    model = entry.runtime_data.coordinator.resolve_model("broken")
    with pytest.raises(HomeAssistantError) as raised:
        await hass.services.async_call(
            DOMAIN, "preload", {"config_entry_id": entry.entry_id, "model": model}, blocking=True
        )
    # Recorded: HTTP 500 "unspecific error: upstream command exited prematurely".
    assert raised.value.translation_key == "model_failed_to_start"
    assert str(raised.value) == (
        f"The server at {url} could not start broken (its process exited or never answered"
        " its health check; see the server's log): unspecific error: upstream command"
        " exited prematurely"
    )
    # A repair names it (its words, the server's); the other model is not held back by it.
    await entry.runtime_data.coordinator.async_refresh()
    await hass.async_block_till_done()
    repair = ir.async_get(hass).async_get_issue(
        DOMAIN, f"model_fails_to_start_{entry.entry_id}_{model}"
    )
    assert repair is not None
    assert repair.translation_placeholders is not None
    assert repair.translation_placeholders["model"] == model
    await hass.services.async_call(
        DOMAIN, "preload", {"config_entry_id": entry.entry_id, "model": "tiny"}, blocking=True
    )
    # What the server logs within 2 s of a request of ours is taken for ours, and its
    # times are whole seconds: the household's requests come a few seconds later.
    await asyncio.sleep(3.5)
    # Another client's requests, read from llama-swap's activity: the failed one (its 500
    # is in the log) is no use, the served one is; our two preloads are none.
    usage = entry.runtime_data.usage
    with pytest.raises(aiohttp.ClientResponseError) as failed:
        await chat(url, "broken")
    assert failed.value.status == 500
    await chat(url)  # tiny again: the failed start swapped it out, so a cold start too

    def uses(model: str) -> int:
        record = usage.get(model)
        return len(record.planner.uses) if record else 0

    await wait_until(lambda: uses("tiny") == 1, 10, "the served request's use")
    coordinator = entry.runtime_data.coordinator
    async with aiohttp.ClientSession() as session, session.get(f"{url}/api/metrics/activity") as r:
        logged = (await r.json())["data"]
    assert sorted((row["model"], row["resp_status_code"]) for row in logged) == [
        ("broken", 500),
        ("tiny", 200),
    ]  # our loads go through the upstream's health check: not in its activity
    await coordinator.async_refresh()  # one more poll reads the log again: still one use
    await hass.async_block_till_done()
    assert (uses("tiny"), uses("broken")) == (1, 0)
    assert usage.scoreboard("tiny", COLD) == (1.0, 1.0)  # the household waited for it
    await hass.config_entries.async_unload(entry.entry_id)


async def test_a_ttl_expiry_is_shown_when_it_happens(hass: HomeAssistant, swaps: Swaps) -> None:
    """llama-swap unloads a model its ttl after the last request; shown then, not a poll later.

    Its event stream shows the model stopping (llama-swap checks each ttl once a second);
    the unload event follows once no other model came in its place (3 s), long before the
    next poll (30 s here). llama-swap reports no expiry, so the reason is ``unloaded``.
    """
    url = await swaps.start([SwapSpec(TINY, ttl=3)])
    entry = await add_server(hass, url, interval=30.0)  # what it shows comes from events
    coordinator = entry.runtime_data.coordinator
    unloaded = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await chat(url)
    answered = time.monotonic()
    await wait_until(lambda: "tiny" in coordinator.data.held, 10, "tiny held")
    await wait_until(lambda: "tiny" not in coordinator.data.held, 15, "tiny let go")
    gone = time.monotonic() - answered
    assert 3.0 <= gone <= 5.0  # its ttl, and at most a second of llama-swap's check
    await wait_until(lambda: unloaded, 6, "the unload event")
    said = time.monotonic() - answered
    assert said <= gone + 4.5  # the replacement window (3 s) and a fast poll
    assert (unloaded[0].data["model"], unloaded[0].data["reason"]) == ("tiny", "unloaded")
    await hass.config_entries.async_unload(entry.entry_id)


async def test_a_peer_model_is_listed_as_such_and_a_preload_through_the_front_one_reaches_it(
    hass: HomeAssistant, swaps: Swaps
) -> None:
    """A llama-swap peer (another llama-swap on another port) seen through the front one.

    Recorded: /v1/models lists the peer's model as "lab/tiny" of type peer, always
    "unloaded"; /running never lists it; /upstream/lab/tiny/health is the peer's own
    /health and starts nothing; an unload of it is 404 "model not found".
    """
    peer = await swaps.start([SwapSpec(TINY)])
    front = await swaps.start([SwapSpec(TINY)], peers={"lab": (peer, [TINY])})
    async with aiohttp.ClientSession() as session:
        client = LlamaSwapClient(session, front, request_timeout=60)
        peer_client = LlamaSwapClient(session, peer, request_timeout=60)
        listed = {m.name: m.peer for m in await client.installed_models()}
        assert listed == {TINY: None, f"lab/{TINY}": "lab"}
        await client.load(f"lab/{TINY}")
        # The peer runs it; the front one runs nothing and says nothing of it.
        assert [(m.name, m.state) for m in await peer_client.running_models()] == [
            (TINY, ResidencyState.LOADED)
        ]
        assert await client.running_models() == ()
        events = client.residency_events()
        assert await anext(events) == ()
        await events.aclose()
        with pytest.raises(LlmModelOnPeerError, match="peer lab"):
            await client.unload(f"lab/{TINY}")
        await peer_client.unload(TINY)

    # Through the integration: its warmth is unknown, and why, until the peer is an entry.
    entry = await add_server(hass, front)
    warmth = model_id(entry, f"sensor.lab_{TINY}")
    state = hass.states.get(warmth)
    assert state.state == STATE_UNKNOWN
    assert (state.attributes["peer"], state.attributes["peer_reading"]) == ("lab", "not_added")
    peer_entry = await add_server(hass, peer)
    await wait_until(lambda: hass.states.get(warmth).state == "cold", 5, "read from the peer")
    state = hass.states.get(warmth)
    assert (state.attributes["peer_server"], state.attributes["peer_model"]) == (
        peer_entry.title,
        TINY,
    )
    # The preload reaches the peer, and its entry's warmth is shown on the front's model.
    model = entry.runtime_data.coordinator.resolve_model(f"lab/{TINY}")
    await hass.services.async_call(
        DOMAIN, "preload", {"config_entry_id": entry.entry_id, "model": model}, blocking=True
    )
    async with aiohttp.ClientSession() as session:
        running = await LlamaSwapClient(session, peer).running_models()
    assert [m.name for m in running] == [TINY]
    await wait_until(lambda: hass.states.get(warmth).state == "warm", 10, "warm on the peer")
    # The peer down: said as such, the front one unaffected.
    await swaps.down(peer)
    await wait_until(
        lambda: hass.states.get(warmth).attributes["peer_reading"] == "unreachable",
        15,
        "the peer seen down",
    )
    assert hass.states.get(warmth).state == STATE_UNKNOWN
    assert entry.runtime_data.coordinator.last_update_success
    # Its entry removed: not added again.
    await hass.config_entries.async_remove(peer_entry.entry_id)
    await hass.async_block_till_done()
    assert hass.states.get(warmth).attributes["peer_reading"] == "not_added"
    with pytest.raises(HomeAssistantError) as raised:
        await hass.services.async_call(
            DOMAIN, "evict", {"config_entry_id": entry.entry_id, "model": model}, blocking=True
        )
    assert raised.value.translation_key == "model_on_peer"
    assert str(raised.value) == (
        f"The server at {front} does not run lab/{TINY} itself: it runs on llama-swap's"
        " peer lab. Stop it on that server (add it as an entry of its own to see and manage"
        " its models)"  # Home Assistant leaves out the sentence's last period
    )


async def test_a_pin_holds_across_a_llama_swap_restart_and_across_its_ttl(
    hass: HomeAssistant, swaps: Swaps
) -> None:
    """Pinned: loaded again after llama-swap restarts, and after its ttl lets the model go.

    llama-swap takes no keep-alive: a ttl in its config unloads a model whatever a client
    asked, so a pin can only load it again once it is gone (and backs off when that keeps
    happening within two minutes: core/pins.py REASSERT_BACKOFF). On the integration's own
    timers (polls every 2 s), through a proxy that counts the loads it sent (through the
    upstream's health check): one per pin, restart and ttl, each within a poll and the
    pin's settle time of the model going.
    """
    url = await swaps.start([SwapSpec(TINY), SwapSpec("brief", ttl=3)])
    proxy = RecordingProxy(url)
    await proxy.start()
    try:
        entry = await add_server(hass, proxy.url, interval=2.0)
        coordinator = entry.runtime_data.coordinator
        reasserted = async_capture_events(hass, EVENT_PIN_REASSERTED)
        started = time.monotonic()
        answer = await call(hass, "pin", config_entry_id=entry.entry_id, model=TINY)
        assert answer["already_resident"] is False
        assert TINY in coordinator.data.held
        assert len(proxy.sent(f"/upstream/{TINY}/health", started)) == 1

        await swaps.restart(url)
        down = time.monotonic()
        await wait_until(lambda: reasserted, 30, "the pin asserted after the restart")
        await wait_until(lambda: TINY in coordinator.data.held, 10, "tiny resident again")
        loads = proxy.sent(f"/upstream/{TINY}/health", started)
        assert len(loads) == 2
        assert loads[-1] - down <= 2.0 + PIN_SETTLE_SECONDS + 2.0
        assert [e.data["reason"] for e in reasserted] == ["gone"]
        await call(hass, "unpin", config_entry_id=entry.entry_id, model=TINY, evict=True)

        # A pin on a model with a ttl: the ttl lets it go, the pin loads it again. Gone
        # again as soon (a ttl shorter than the back-off), it waits: a pin must not keep
        # a server loading all day against its own config.
        reasserted.clear()
        started = time.monotonic()
        await call(hass, "pin", config_entry_id=entry.entry_id, model="brief")
        await wait_until(lambda: "brief" not in coordinator.data.held, 15, "brief let go")
        gone = time.monotonic()
        await wait_until(lambda: reasserted, 10, "the pin asserted after the ttl")
        await wait_until(lambda: "brief" in coordinator.data.held, 10, "brief resident again")
        loads = proxy.sent("/upstream/brief/health", started)
        assert len(loads) == 2
        assert loads[-1] - gone <= 2.0 + PIN_SETTLE_SECONDS + 1.0
        assert [(e.data["model"], e.data["reason"]) for e in reasserted] == [("brief", "gone")]
        await wait_until(lambda: "brief" not in coordinator.data.held, 15, "brief let go again")
        await asyncio.sleep(2 * 2.0 + PIN_SETTLE_SECONDS)  # two polls and the settle time
        assert len(proxy.sent("/upstream/brief/health", started)) == 2  # backing off
        await call(hass, "unpin", config_entry_id=entry.entry_id, model="brief", evict=True)
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()


async def test_the_guard_releases_a_pin_and_applies_it_again(
    hass: HomeAssistant, swaps: Swaps
) -> None:
    """A protected entity turns on: one unload sent; off again: one load, the pin back."""
    url = await swaps.start([SwapSpec(TINY)])
    proxy = RecordingProxy(url)
    await proxy.start()
    try:
        hass.states.async_set(PLEX, "off")
        entry = await add_server(hass, proxy.url, interval=2.0)
        await protect(hass, entry, PLEX)
        coordinator = entry.runtime_data.coordinator
        await call(hass, "pin", config_entry_id=entry.entry_id, model=TINY, priority=3)
        released = async_capture_events(hass, EVENT_PIN_RELEASED)
        reapplied = async_capture_events(hass, EVENT_PIN_REAPPLIED)
        started = time.monotonic()
        hass.states.async_set(PLEX, "on")
        await wait_until(lambda: TINY not in coordinator.data.held, 30, "tiny released")
        assert len(proxy.sent(f"/api/models/unload/{TINY}", started)) == 1
        assert [e.data["reason"] for e in released] == ["protected_entity"]
        with pytest.raises(HomeAssistantError) as err:
            await call(hass, "preload", config_entry_id=entry.entry_id, model=TINY)
        assert err.value.translation_key == "guard_protected"
        await asyncio.sleep(4)  # two polls: nothing is loaded while Plex needs the GPU
        assert TINY not in coordinator.data.held
        assert proxy.sent(f"/upstream/{TINY}/health", started) == []
        hass.states.async_set(PLEX, "off")
        await wait_until(lambda: TINY in coordinator.data.held, 30, "tiny pinned again")
        assert [e.data["model"] for e in reapplied] == [TINY]
        assert len(proxy.sent(f"/upstream/{TINY}/health", started)) == 1
        await call(hass, "unpin", config_entry_id=entry.entry_id, model=TINY, evict=True)
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()


async def test_an_outage_is_said_and_its_end_seen(hass: HomeAssistant, swaps: Swaps) -> None:
    """llama-swap down: the entities go unavailable, an action says so in words; back up:
    the entities come back and the residency is read again, with no traceback."""
    url = await swaps.start([SwapSpec(TINY)])
    entry = await add_server(hass, url, interval=2.0)
    coordinator = entry.runtime_data.coordinator
    await call(hass, "preload", config_entry_id=entry.entry_id, model=TINY)
    assert TINY in coordinator.data.held
    await swaps.down(url)
    await wait_until(lambda: not coordinator.last_update_success, 15, "the server seen down")
    with pytest.raises(HomeAssistantError) as err:
        await call(hass, "preload", config_entry_id=entry.entry_id, model=TINY)
    assert err.value.translation_key in ("cannot_connect", "server_unavailable")
    await swaps.up(url)
    await wait_until(lambda: coordinator.last_update_success, 15, "the server seen back")
    # Its models' processes went with it: nothing is held now, and that is what is shown.
    assert TINY not in coordinator.data.held
    await call(hass, "preload", config_entry_id=entry.entry_id, model=TINY)
    assert TINY in coordinator.data.held
    await hass.config_entries.async_unload(entry.entry_id)


@pytest.mark.e2e
async def test_a_load_timed_from_its_events_against_llama_servers_own_log(
    tmp_path: Path, socket_enabled: None
) -> None:
    """The load figure (starting to ready on llama-swap's events) against llama-server's log.

    llama-server logs its own time since it started ("listening on" once the model is
    loaded); llama-swap starts it, waits 250 ms, then checks its health once a second
    (internal/process/process_command.go) and turns it ready at the first check that
    passes. So the figure is at least llama-server's own time to listen, and at most a
    check later.
    """
    swaps = Swaps("real", tmp_path)
    try:
        url = await swaps.start([SwapSpec(TINY)])
        async with aiohttp.ClientSession() as session:
            client = LlamaSwapClient(session, url, request_timeout=60)
            reply = await client.timed_generation("chat", TINY, "Reply with one word: ready?")
        figure = reply.load_duration_ns / 1e9
        (listening,) = [
            _llama_server_seconds(line)
            for line in swaps.log(url).splitlines()
            if "llama_server: listening on" in line
        ]
        print(f"\nload from events {figure:.3f} s; llama-server listening at {listening:.3f} s")
        assert max(listening, 0.25) <= figure <= max(listening, 0.25) + 1.0 + 0.3
    finally:
        await swaps.close()


def _llama_server_seconds(line: str) -> float:
    """llama-server's own time in a log line: ``M.SS.mmm.uuu`` since it started."""
    stamp = re.search(r"(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) I ", line)
    assert stamp is not None, line
    minutes, seconds, millis, micros = (int(part) for part in stamp.groups())
    return minutes * 60 + seconds + millis / 1e3 + micros / 1e6
