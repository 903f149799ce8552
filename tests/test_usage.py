"""Usage: every use of a model recorded, whoever sent it, never ours; what the planner says."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
import json

import aiohttp
from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.llm_warmth.const import CONF_PROTECTED_ENTITIES, DOMAIN, MAX_SCAN_INTERVAL
from custom_components.llm_warmth.core.usage import UsageRecord
from custom_components.llm_warmth.core.warm_plan import PatternClass, Plan
from custom_components.llm_warmth.usage import UsageWatch
from custom_components.llm_warmth.usage_entities import NEXT_USE

from .assist import hass_config_dir_fixture, setup_assist  # noqa: F401 (a fixture)
from .conftest import (
    ENTRY_ID,
    LLAMA,
    QWEN,
    add_ollama_agent,
    at_moment,
    model_id,
    ollama_request,
    start_load,
)
from .e2e import add_server, wait_until
from .llama_server_emulator import EmulatedLlamaModel, LlamaServerEmulator
from .llama_swap_emulator import LlamaSwapEmulator, SwapModel, format_go_time
from .ollama_emulator import OllamaEmulator

Poll = Callable[[], Awaitable[None]]
PLEX = "binary_sensor.plex_transcoding"
# The tests of learnt mornings start on this clock, whatever the day they run: a Friday
# 12:00 UTC, before the Monday they learn up to.
BEFORE_THE_MORNINGS = "2026-11-20 12:00:00+00:00"


async def other_chat(url: str) -> None:
    """Another client's chat with ``tiny`` (not streamed)."""
    body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/v1/chat/completions", json=body) as response,
    ):
        response.raise_for_status()
        await response.read()


def uses(entry: MockConfigEntry, model: str) -> list[datetime]:
    record = entry.runtime_data.usage.get(model)
    return list(record.planner.uses) if record else []


@pytest.mark.usefixtures("init_integration")
async def test_another_clients_requests_on_ollama_are_uses_and_ours_are_not(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    poll: Poll,
) -> None:
    # Another client loads the model: a use, seen at the next poll.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "prompt": "hi"})
    await poll()
    assert len(uses(mock_config_entry, LLAMA)) == 1
    # A minute later it asks again: the expiry moved on further than the clock.
    emulator.clock.advance(60)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "prompt": "hi"})
    await poll()
    assert len(uses(mock_config_entry, LLAMA)) == 2
    # Nobody asked: the clock moved, the expiry did not: nothing.
    emulator.clock.advance(60)
    await poll()
    assert len(uses(mock_config_entry, LLAMA)) == 2
    # A request with a shorter keep moves the expiry back: a use all the same.
    emulator.clock.advance(60)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 30})
    await poll()
    assert len(uses(mock_config_entry, LLAMA)) == 3
    # Ours (a probe, a preload of another model) are never uses.
    emulator.clock.advance(60)
    await hass.services.async_call(
        DOMAIN, "probe", {"config_entry_id": ENTRY_ID, "model": LLAMA}, blocking=True
    )
    await hass.services.async_call(
        DOMAIN,
        "preload",
        {"config_entry_id": ENTRY_ID, "model": QWEN},
        blocking=True,
        return_response=True,
    )
    emulator.clock.advance(60)
    await poll()
    assert len(uses(mock_config_entry, LLAMA)) == 3
    assert uses(mock_config_entry, QWEN) == []
    # The first request waited for the load: a cold start on the scoreboard; the
    # preload of ours was no cold start (nobody waited).
    cold = "sensor.{}_cold_starts_7_days"
    assert hass.states.get(model_id(mock_config_entry, cold.format("llama3_2_3b"))).state == "1"
    assert hass.states.get(model_id(mock_config_entry, cold.format("qwen3_8b"))) is None
    # The diagnostics count the uses; they do not tell when the household was at home.
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, mock_config_entry)
    assert diagnostics["usage"][LLAMA]["uses"] == 3
    assert diagnostics["usage"][LLAMA]["scoreboard_7_days"] == [0, 1, 0, 0]
    assert str(emulator.clock.now().year) not in json.dumps(diagnostics["usage"])
    # Kept across a restart.
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    assert len(uses(mock_config_entry, LLAMA)) == 3
    assert hass.states.get(model_id(mock_config_entry, cold.format("llama3_2_3b"))).state == "1"


async def test_home_assistants_agent_is_heard_once_at_its_reply(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll: Poll,
) -> None:
    """The agent's state tells each message at once; the poll after does not count it again."""
    assist = await setup_assist(hass, hass_client, emulator.url, LLAMA, emulator=emulator)
    # The agent's state is on Home Assistant's clock, the polls on the server's: as one.
    emulator.clock.set(dt_util.utcnow())
    await poll()
    before = len(uses(init_integration, LLAMA))
    await conversation.async_converse(
        hass, "What time is it?", None, Context(), agent_id=assist.agent_entity_id
    )
    assert len(uses(init_integration, LLAMA)) == before + 1
    agent_state = hass.states.get(assist.agent_entity_id)
    assert uses(init_integration, LLAMA)[-1] == dt_util.parse_datetime(agent_state.state)
    emulator.clock.advance(60)
    await poll()
    assert len(uses(init_integration, LLAMA)) == before + 1


async def test_llama_swaps_activity_are_uses_at_their_start_and_ours_are_not(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    swap = LlamaSwapEmulator([SwapModel("tiny", load_seconds=0.2)])
    await swap.start()
    try:
        entry = await add_server(hass, swap.url)
        usage = entry.runtime_data.usage
        coordinator = entry.runtime_data.coordinator
        # Its activity is read at each poll: a use is seen a poll late at most.
        assert usage.uses_seen_within() == round(coordinator.normal_interval.total_seconds())
        # A request before the first page read is history, not counted.
        await other_chat(swap.url)
        await wait_until(lambda: usage._server._activity_seen is not None, 10, "the first page")
        # Another client's chat: one use, at the request's start as llama-swap logged it.
        await other_chat(swap.url)
        await wait_until(lambda: "tiny" in usage and usage.get("tiny").planner.uses, 10, "the use")
        logged = swap.activity[-1]
        recorded = usage.get("tiny").planner.uses[-1]
        ended = dt_util.parse_datetime(logged["timestamp"])
        assert ended is not None
        assert recorded == dt_util.as_local(ended - timedelta(milliseconds=logged["duration_ms"]))
        # A probe of ours: llama-swap logs it; it is not a use.
        await hass.services.async_call(
            DOMAIN, "probe", {"config_entry_id": entry.entry_id, "model": "tiny"}, blocking=True
        )
        seen = len(swap.activity)
        await wait_until(lambda: (usage._server._activity_seen or 0) >= seen, 10, "our probe read")
        assert len(usage.get("tiny").planner.uses) == 1
        own = entry.runtime_data.own_requests
        assert own.during("tiny", ended, dt_util.utcnow())
        # A request that failed (llama-swap logs it with its status) is no use.
        failed = {
            **swap.activity[-1],
            "id": len(swap.activity) + 1,
            "resp_status_code": 400,
            # Well after our probe (not ours by its time): left out by its status alone.
            "timestamp": format_go_time(datetime.now(UTC) + timedelta(seconds=30)),
        }
        swap.activity.append(failed)
        seen = len(swap.activity)
        await wait_until(
            lambda: (usage._server._activity_seen or 0) >= seen, 10, "the failure read"
        )
        assert len(usage.get("tiny").planner.uses) == 1
        # llama-swap restarted, its ids begin again: that page is a first page, and the
        # request after it is a use (its id is below the last one read before).
        swap.activity.clear()
        await other_chat(swap.url)
        await wait_until(lambda: usage._server._activity_seen == 1, 10, "the new first page")
        await other_chat(swap.url)
        await wait_until(lambda: len(usage.get("tiny").planner.uses) == 2, 10, "a use after")
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await swap.stop()


async def test_llama_swaps_activity_is_read_once_at_a_time_and_not_after_a_failed_poll(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    swap = LlamaSwapEmulator([SwapModel("tiny", load_seconds=0.2)])
    await swap.start()
    try:
        # Polled seldom: the two polls below are the test's alone.
        entry = await add_server(hass, swap.url, interval=MAX_SCAN_INTERVAL)
        server = entry.runtime_data.usage._server
        server.polled()
        await wait_until(lambda: server._activity_seen is not None, 10, "the first page")
        await wait_until(lambda: not server._reading, 10, "the first read done")
        path = "GET /api/metrics/activity"
        before = swap.requests[path]
        # Two polls heard while the first read runs: one read.
        server.polled()
        server.polled()
        await wait_until(lambda: not server._reading, 10, "the read done")
        assert swap.requests[path] == before + 1
        # A poll that failed reads nothing.
        coordinator = entry.runtime_data.coordinator
        coordinator.last_update_success = False
        server.polled()
        assert not server._reading
        coordinator.last_update_success = True
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await swap.stop()


@pytest.mark.usefixtures("init_integration")
@pytest.mark.freeze_time(BEFORE_THE_MORNINGS)
async def test_a_learnt_morning_shows_in_the_usage_sensors(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Two weeks of weekday mornings at 06:45: the next Monday's is expected, then seen.

    Home Assistant's clock (the minute timer) and the coordinator's (the server's, which
    the tests align with the emulator's) move together.
    """
    usage = mock_config_entry.runtime_data.usage
    next_use = model_id(mock_config_entry, "sensor.llama3_2_3b_next_expected_use")
    # The first use: the sensors appear; no use is expected yet, and it says why.
    emulator.clock.set(dt_util.utcnow())
    usage.record(LLAMA, emulator.clock.now())
    await hass.async_block_till_done()
    state = hass.states.get(next_use)
    assert state.state == "unknown"
    assert state.attributes["reason"] == "learning"
    assert state.attributes["days_learnt"] == 0
    # The same words as a state of their own, where the device page shows it.
    rhythm = model_id(mock_config_entry, "sensor.llama3_2_3b_usage_rhythm")
    assert hass.states.get(rhythm).state == "learning"
    # A Monday after today (the minute timer fires only forward).
    monday = dt_util.start_of_local_day(datetime(2026, 12, 7))
    await learn_mornings(hass, usage, emulator, monday)
    freezer.move_to(monday + timedelta(hours=6))
    emulator.clock.set(monday + timedelta(hours=6))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    in_window = model_id(mock_config_entry, "binary_sensor.llama3_2_3b_in_a_usage_window")
    today = model_id(mock_config_entry, "sensor.llama3_2_3b_uses_today")
    expected = monday + timedelta(hours=6, minutes=40)
    state = hass.states.get(next_use)
    assert dt_util.parse_datetime(state.state) == expected
    assert "reason" not in state.attributes  # it has a value
    assert state.attributes["days_learnt"] >= 14
    assert hass.states.get(rhythm).state == "use_expected"
    assert hass.states.get(in_window).state == "off"
    assert hass.states.get(today).state == "0"
    # The entities look again every minute: at 06:41 the window is on.
    freezer.move_to(expected + timedelta(minutes=1))
    emulator.clock.set(expected + timedelta(minutes=1))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    # (A poll the jump in time made may have timed out on the frozen clock: poll again.)
    await mock_config_entry.runtime_data.coordinator.async_refresh()
    await hass.async_block_till_done()
    assert hass.states.get(in_window).state == "on"
    usage.record(LLAMA, emulator.clock.now())
    await hass.async_block_till_done()
    assert hass.states.get(today).state == "1"


async def learn_mornings(
    hass: HomeAssistant, usage: UsageWatch, emulator: OllamaEmulator, monday: datetime
) -> None:
    """Two weeks of weekday mornings at 06:45, each use at its time on the server's clock."""
    for day in range(14):
        start = monday - timedelta(days=14 - day)
        if start.weekday() < 5:
            for minutes in (45, 48, 50):
                emulator.clock.set(start + timedelta(hours=6, minutes=minutes))
                usage.record(LLAMA, emulator.clock.now())
                await hass.async_block_till_done()


async def set_up_with_plex_on(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """Set the entry up with Plex as a protected entity, transcoding now."""
    hass.states.async_set(PLEX, "on")
    entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(
        entry, options={**entry.options, CONF_PROTECTED_ENTITIES: [PLEX]}
    )
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()


@pytest.mark.usefixtures("init_integration")
@pytest.mark.freeze_time(BEFORE_THE_MORNINGS)
async def test_auto_warm_loads_ahead_of_the_expected_morning_through_the_guard(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    usage = mock_config_entry.runtime_data.usage
    monday = dt_util.start_of_local_day(datetime(2026, 12, 7))
    await learn_mornings(hass, usage, emulator, monday)
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=5))
    switch = model_id(mock_config_entry, "switch.llama3_2_3b_auto_warm")
    assert hass.states.get(switch).state == "off"  # off by default
    await hass.services.async_call("switch", "turn_on", {"entity_id": switch}, blocking=True)
    # Not yet: the stretch starts at 06:40, warming 90 s before it (30 s load assumed, 60).
    before = len(emulator.requests)
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=6, minutes=37))
    assert [r for r in emulator.requests[before:] if r.path == "/api/generate"] == []
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=6, minutes=38, seconds=40))
    loads = [r for r in emulator.requests[before:] if r.path == "/api/generate"]
    assert len(loads) == 1
    assert not loads[0].json.get("prompt")  # a load, no prompt
    # Kept until the stretch's end (07:00), then the server's own keep.
    assert loads[0].json["keep_alive"] == pytest.approx(21 * 60 + 20, abs=2)
    # Once per stretch.
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=6, minutes=40))
    assert len([r for r in emulator.requests[before:] if r.path == "/api/generate"]) == 1
    state = hass.states.get(switch)
    assert (state.attributes["warm_ups"], state.attributes["refused_by_the_guard"]) == (1, 0)
    # A use at 06:42 finds it warm: scored, and the warm-up's GiB-hours end there.
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=6, minutes=42))
    coordinator = mock_config_entry.runtime_data.coordinator
    await coordinator.async_refresh()
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "prompt": "hi"})
    await coordinator.async_refresh()
    await hass.async_block_till_done()
    helped = hass.states.get(
        model_id(mock_config_entry, "sensor.llama3_2_3b_warm_thanks_to_the_clock_7_days")
    )
    assert (helped.state, helped.attributes["today"]) == ("1", 1)
    spent = hass.states.get(
        model_id(mock_config_entry, "sensor.llama3_2_3b_gib_hours_spent_warming_7_days")
    )
    size = coordinator.data.resident[LLAMA].size_vram / 1024**3
    assert float(spent.state) == pytest.approx(size * (200 / 3600), abs=0.01)  # 3 min 20 s
    cold = model_id(mock_config_entry, "sensor.llama3_2_3b_cold_starts_7_days")
    assert hass.states.get(cold).state == "0"


@pytest.mark.usefixtures("init_integration")
@pytest.mark.freeze_time(BEFORE_THE_MORNINGS)
async def test_an_evening_is_held_through_half_an_hour_at_a_time(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A stretch of four hours is asked for 30 minutes at a time, renewed while it lasts.

    Ollama keeps the last keep asked for when a request sends none (an OpenAI-compatible
    client): asked for the whole evening at once, each such request would keep the model
    four hours more, long after the evening.
    """
    usage = mock_config_entry.runtime_data.usage
    monday = dt_util.start_of_local_day(datetime(2026, 12, 7))
    for day in range(14):  # two weeks of weekday evenings, a use every 20 min 18:00-22:00
        start = monday - timedelta(days=14 - day)
        if start.weekday() < 5:
            for minutes in range(0, 241, 20):
                emulator.clock.set(start + timedelta(hours=18, minutes=minutes))
                usage.record(LLAMA, emulator.clock.now())
    await hass.async_block_till_done()
    usage.set_auto_warm(LLAMA, True)
    plan = usage.plan(LLAMA, monday + timedelta(hours=17))
    assert plan is not None
    assert plan.window_end is not None
    assert plan.window_start == monday + timedelta(hours=18)
    assert plan.window_end - plan.window_start > timedelta(hours=4)
    before = len(emulator.requests)

    def keeps() -> list[float]:
        sent = [r.json for r in emulator.requests[before:] if r.path == "/api/generate"]
        return [r["keep_alive"] for r in sent if "prompt" not in r]

    await at_moment(hass, freezer, emulator, monday + timedelta(hours=17, minutes=58, seconds=40))
    assert keeps() == [1800]  # the first half hour, not the evening
    # 18:05: a request that sends no keep (as every OpenAI-compatible one): the server
    # keeps the model the last keep asked for, our 30 minutes.
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=18, minutes=5))
    used = len(uses(mock_config_entry, LLAMA))
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "prompt": "hi"})
    coordinator = mock_config_entry.runtime_data.coordinator
    await coordinator.async_refresh()
    await hass.async_block_till_done(wait_background_tasks=True)
    assert len(uses(mock_config_entry, LLAMA)) == used + 1
    expires = coordinator.data.resident[LLAMA].expires_at
    assert expires == monday + timedelta(hours=18, minutes=35)
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=18, minutes=19))
    assert keeps() == [1800]  # more than 15 minutes left: nothing
    await coordinator.async_refresh()
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=18, minutes=21))
    assert keeps() == [1800, 1800]  # renewed, half an hour on
    await coordinator.async_refresh()
    expires = coordinator.data.resident[LLAMA].expires_at
    assert expires == monday + timedelta(hours=18, minutes=51)
    switch = hass.states.get(model_id(mock_config_entry, "switch.llama3_2_3b_auto_warm"))
    assert switch.attributes["kept_for"] == "expected_use"
    assert dt_util.parse_datetime(switch.attributes["kept_until"]) == plan.window_end


@pytest.mark.freeze_time(BEFORE_THE_MORNINGS)
async def test_auto_warm_is_refused_while_the_household_needs_the_gpu(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
) -> None:
    await set_up_with_plex_on(hass, mock_config_entry)
    usage = mock_config_entry.runtime_data.usage
    monday = dt_util.start_of_local_day(datetime(2026, 12, 7))
    await learn_mornings(hass, usage, emulator, monday)
    usage.set_auto_warm(LLAMA, True)
    before = len(emulator.requests)
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=6, minutes=39))
    assert [r for r in emulator.requests[before:] if r.path == "/api/generate"] == []
    record = usage.get(LLAMA)
    assert (record.warmed, record.refused) == (0, 1)
    # Asked again a minute later (still refused): counted once.
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=6, minutes=40))
    assert (record.warmed, record.refused) == (0, 1)
    # Plex stops: the next minute of the stretch warms it.
    hass.states.async_set(PLEX, "off")
    await mock_config_entry.runtime_data.coordinator.async_refresh()
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=6, minutes=41))
    assert [r for r in emulator.requests[before:] if r.path == "/api/generate"]
    # Kept across a restart: the option and the counts.
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    record = mock_config_entry.runtime_data.usage.get(LLAMA)
    assert (record.auto_warm, record.refused) == (True, 1)


def test_no_expected_use_says_why() -> None:
    """Learning (too few days), no rhythm (sporadic), or none within a day (rhythmic)."""
    plan = Plan(
        pattern=PatternClass.RHYTHMIC,
        warm=False,
        warm_until=None,
        window_start=None,
        window_end=None,
        next_use=None,
        keep=timedelta(minutes=5),
        used=False,
    )
    assert NEXT_USE.reason_fn(replace(plan, pattern=PatternClass.NEW)) == "learning"
    assert NEXT_USE.reason_fn(replace(plan, pattern=PatternClass.SPORADIC)) == "no_rhythm"
    assert NEXT_USE.reason_fn(plan) == "none_within_a_day"
    assert NEXT_USE.reason_fn(replace(plan, next_use=dt_util.utcnow())) is None


def test_stored_usage_records_that_do_not_read_are_refused() -> None:
    """Every stored value is checked; a record that does not read raises ValueError."""
    good = UsageRecord(auto_warm=True, warmed=2).as_dict()
    assert UsageRecord.from_dict(good) == UsageRecord(auto_warm=True, warmed=2)
    for damage in (
        "junk",
        {**good, "warmed": -1},
        {**good, "refused": True},
        {**good, "planner": 3},
        {**good, "days": {"2026-12-07": [1, 2]}},
        {**good, "days": {"2026-12-07": [1, 2, float("inf")]}},
    ):
        with pytest.raises(ValueError, match=r"\w"):
            UsageRecord.from_dict(damage)
    # A time without its zone is no time.
    assert UsageRecord.from_dict({**good, "warmed_for": "2026-12-07T06:40:00"}).warmed_for is None


async def test_on_ollama_0_30_an_agents_turn_on_a_cold_model_is_shown_loading(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll: Poll,
) -> None:
    """0.34.4 lists no loading model; the agent's turn began and its model is not resident.

    That is a load in progress: Warmth says loading at once, with when it should be ready
    (the turn's start plus the model's last exact load), until polling lists the model.
    """
    coordinator = init_integration.runtime_data.coordinator
    emulator.clock.set(dt_util.utcnow())  # the agent's state and the polls on one clock
    await emulator.stop()
    await poll()
    emulator.version = "0.34.4"
    await emulator.start()
    await poll()
    assert not coordinator.monitor.capabilities.lists_while_loading
    emulator.models[LLAMA].load_delay = 0.2
    answer = await hass.services.async_call(
        DOMAIN,
        "preload",
        {"config_entry_id": ENTRY_ID, "model": LLAMA},
        blocking=True,
        return_response=True,
    )
    assert answer is not None
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await poll()
    warmth = "sensor.ollama_test_llama3_2_3b"
    assert hass.states.get(warmth).state == "cold"
    assist = await setup_assist(hass, hass_client, emulator.url, LLAMA, emulator=emulator)
    emulator.hold_loads()
    # A plain task: the polls' block_till_done must not wait for the held load.
    turn = asyncio.create_task(
        conversation.async_converse(
            hass, "What time is it?", None, Context(), agent_id=assist.agent_entity_id
        )
    )
    await wait_until(lambda: hass.states.get(warmth).state == "loading", 5, "loading shown")
    state = hass.states.get(warmth)
    since = coordinator.data.loading_since[LLAMA]
    # Since the turn began, on the server's clock (the coordinator's).
    assert abs(since - coordinator.utcnow()) < timedelta(seconds=1)
    expected = since + timedelta(seconds=float(answer["load_seconds"]))  # type: ignore[arg-type]
    assert state.attributes["ready_expected_at"] == expected.isoformat()
    # Polls that still do not list it keep it loading; once listed, it is warm.
    await poll()
    assert hass.states.get(warmth).state == "loading"
    emulator.finish_loads()
    await turn
    await poll()
    await wait_until(lambda: hass.states.get(warmth).state != "loading", 5, "loaded")
    assert hass.states.get(warmth).state in ("warm", "kept_warm")
    assert hass.states.get(warmth).attributes["ready_expected_at"] is None


async def warmed_ahead(
    hass: HomeAssistant,
    freezer: FrozenDateTimeFactory,
    emulator: OllamaEmulator,
    entry: MockConfigEntry,
) -> datetime:
    """Learn the mornings, turn auto-warm on, and let it warm ahead of Monday's 06:40."""
    usage = entry.runtime_data.usage
    monday = dt_util.start_of_local_day(datetime(2026, 12, 7))
    await learn_mornings(hass, usage, emulator, monday)
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=5))
    switch = model_id(entry, "switch.llama3_2_3b_auto_warm")
    await hass.services.async_call("switch", "turn_on", {"entity_id": switch}, blocking=True)
    await at_moment(hass, freezer, emulator, monday + timedelta(hours=6, minutes=38, seconds=40))
    assert usage.get(LLAMA).warmed == 1
    await entry.runtime_data.coordinator.async_refresh()
    assert LLAMA in entry.runtime_data.coordinator.data.held
    return monday


def scores(hass: HomeAssistant, entry: MockConfigEntry) -> tuple[str, str]:
    """Return today's requests warm thanks to auto-warm, and cold starts."""
    helped = "sensor.llama3_2_3b_warm_thanks_to_the_clock_7_days"
    cold = "sensor.llama3_2_3b_cold_starts_7_days"
    return (
        hass.states.get(model_id(entry, helped)).state,
        hass.states.get(model_id(entry, cold)).state,
    )


@pytest.mark.freeze_time(BEFORE_THE_MORNINGS)
@pytest.mark.usefixtures("init_integration")
@pytest.mark.parametrize("seen_gone", [True, False], ids=["evicted_seen", "reloaded_between"])
async def test_a_request_that_waited_for_a_load_is_never_also_warm_thanks_to_auto_warm(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    freezer: FrozenDateTimeFactory,
    seen_gone: bool,
) -> None:
    """Auto-warm's model is evicted before the household's request, which cold-loads it.

    Whether a poll saw it gone or not, that request is one cold start, not also a use
    warm thanks to auto-warm; the warm-up's GiB-hours end when it was gone.
    """
    await warmed_ahead(hass, freezer, emulator, mock_config_entry)
    coordinator = mock_config_entry.runtime_data.coordinator
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    if seen_gone:
        await coordinator.async_refresh()
        assert mock_config_entry.runtime_data.usage.get(LLAMA).holding_since is None
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "prompt": "hi"})
    for _ in range(3):
        await coordinator.async_refresh()
    await hass.async_block_till_done()
    helped, cold = scores(hass, mock_config_entry)
    assert helped == "0"
    if seen_gone:  # polling saw the load the request waited for
        assert cold == "1"


@pytest.mark.usefixtures("init_integration")
async def test_auto_warm_sends_nothing_while_another_clients_load_runs_and_turns_off(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """On the usage's own clock (the test's): due at 06:38:40, while a load runs."""
    usage = mock_config_entry.runtime_data.usage
    monday = dt_util.start_of_local_day(datetime(2026, 12, 7))
    await learn_mornings(hass, usage, emulator, monday)
    now = monday + timedelta(hours=6, minutes=38, seconds=40)
    usage.utcnow = lambda: now
    # Another client's load runs when the warm-up is due: nothing is sent alongside it.
    load = await start_load(emulator, LLAMA, None)
    await mock_config_entry.runtime_data.coordinator.async_refresh()
    assert LLAMA in mock_config_entry.runtime_data.coordinator.data.loading
    before = len(emulator.requests)
    switch = model_id(mock_config_entry, "switch.llama3_2_3b_auto_warm")
    await hass.services.async_call("switch", "turn_on", {"entity_id": switch}, blocking=True)
    await hass.async_block_till_done()
    assert [r for r in emulator.requests[before:] if r.path == "/api/generate"] == []
    assert usage.get(LLAMA).warmed == 0
    emulator.finish_loads()
    await load
    # Off is off (and stays so across a reload).
    await hass.services.async_call("switch", "turn_off", {"entity_id": switch}, blocking=True)
    assert hass.states.get(switch).state == "off"
    assert usage.get(LLAMA).auto_warm is False
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    assert hass.states.get(switch).state == "off"


@pytest.mark.usefixtures("init_integration")
async def test_auto_warm_turned_on_in_its_stretch_warms_at_once_unless_the_model_is_warm(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    """On the usage's own clock (the test's): 06:38:40 of a learnt morning, due."""
    usage = mock_config_entry.runtime_data.usage
    coordinator = mock_config_entry.runtime_data.coordinator
    monday = dt_util.start_of_local_day(datetime(2026, 12, 7))
    await learn_mornings(hass, usage, emulator, monday)
    now = monday + timedelta(hours=6, minutes=38, seconds=40)
    usage.utcnow = lambda: now
    # Resident already (another client's): turning it on sends nothing.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": "1m"})
    await coordinator.async_refresh()
    before = len(emulator.requests)
    usage.set_auto_warm(LLAMA, True)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [r for r in emulator.requests[before:] if r.path == "/api/generate"] == []
    usage.set_auto_warm(LLAMA, False)
    # Cold: turned on in its stretch, it warms there and then, not at the next minute.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await coordinator.async_refresh()
    before = len(emulator.requests)
    usage.set_auto_warm(LLAMA, False)  # off again: nothing
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [r for r in emulator.requests[before:] if r.path == "/api/generate"] == []
    usage.set_auto_warm(LLAMA, True)
    await hass.async_block_till_done(wait_background_tasks=True)
    loads = [r for r in emulator.requests[before:] if r.path == "/api/generate"]
    assert len(loads) == 1
    assert usage.get(LLAMA).warmed == 1


@pytest.mark.usefixtures("init_integration")
async def test_a_model_never_used_scores_nothing_and_a_use_at_midnight_is_todays(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry
) -> None:
    usage = mock_config_entry.runtime_data.usage
    assert usage.scoreboard("never-used", 0) == (0.0, 0.0)
    assert usage.uses_today("never-used") == 0
    assert usage.plan("never-used") is None
    midnight = dt_util.start_of_local_day(datetime(2026, 12, 7))
    usage.record(LLAMA, midnight)
    usage.record(LLAMA, midnight - timedelta(microseconds=1))
    assert usage.uses_today(LLAMA, midnight + timedelta(hours=9)) == 1


@pytest.mark.usefixtures("init_integration")
async def test_after_a_use_auto_warm_keeps_the_model_through_its_sessions_gaps(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    poll: Poll,
) -> None:
    """The planner's session keep (22 min here), sent once, never shorter than the server's.

    Another client's request keeps the model 5 minutes (the server's default); the keep
    moves its expiry to the session's end, with the context it was loaded with.
    """
    usage = mock_config_entry.runtime_data.usage
    usage.set_auto_warm(LLAMA, True)
    record = usage.get(LLAMA)
    assert record is not None
    record.planner.gaps = [1200.0] * 10  # gaps of 20 minutes: kept 22
    await ollama_request(
        emulator, "/api/generate", {"model": LLAMA, "prompt": "hi", "options": {"num_ctx": 4096}}
    )
    before = len(emulator.requests)
    await poll()  # the use is seen
    await hass.async_block_till_done(wait_background_tasks=True)
    sent = [r.json for r in emulator.requests[before:] if r.path == "/api/generate"]
    assert len(sent) == 1
    assert sent[0]["keep_alive"] == pytest.approx(22 * 60, abs=3)
    assert sent[0]["options"] == {"num_ctx": 4096}  # no reload for another context
    assert emulator.loaded[LLAMA].num_ctx == 4096
    assert len(uses(mock_config_entry, LLAMA)) == 1  # our keep is no use
    switch = hass.states.get(model_id(mock_config_entry, "switch.llama3_2_3b_auto_warm"))
    assert switch.attributes["kept_for"] == "session_keep"
    # How the planner reads the model, its keep, and how late its uses are seen (a poll).
    coordinator = mock_config_entry.runtime_data.coordinator
    assert switch.attributes["pattern"] == "new"
    assert switch.attributes["session_keep_minutes"] == 22.0
    assert switch.attributes["uses_seen_within_seconds"] == round(
        coordinator.normal_interval.total_seconds()
    )
    kept_until = dt_util.parse_datetime(switch.attributes["kept_until"])
    assert kept_until is not None
    # The server shows it; the next polls and minutes send nothing more.
    for _ in range(2):
        await poll()
        async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=1))
        await hass.async_block_till_done(wait_background_tasks=True)
    assert len([r for r in emulator.requests[before:] if r.path == "/api/generate"]) == 1
    expires = mock_config_entry.runtime_data.coordinator.data.resident[LLAMA].expires_at
    assert expires is not None
    assert abs((expires - kept_until).total_seconds()) < 5
    # Off: nothing is kept after a use.
    usage.set_auto_warm(LLAMA, False)
    emulator.clock.advance(60)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "prompt": "hi"})
    before = len(emulator.requests)
    await poll()
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [r for r in emulator.requests[before:] if r.path == "/api/generate"] == []


@pytest.mark.usefixtures("init_integration")
async def test_a_session_keep_another_request_overwrote_is_asked_for_again(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    poll: Poll,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Ollama's last writer wins: the session's next request sets its own 5 minutes.

    A client that sends its keep with each request (Open WebUI's 5 minutes) sets it again
    seconds after our keep (within the slack that stops a keep being asked twice): the
    keep is asked for again, so the model stays to the session's end and not 5 minutes.
    """
    usage = mock_config_entry.runtime_data.usage
    usage.set_auto_warm(LLAMA, True)
    record = usage.get(LLAMA)
    assert record is not None
    record.planner.gaps = [1200.0] * 10  # gaps of 20 minutes: kept 22
    body = {"model": LLAMA, "prompt": "hi", "keep_alive": "5m", "options": {"num_ctx": 4096}}
    before = len(emulator.requests)

    def keeps() -> list[float]:
        sent = [r.json for r in emulator.requests[before:] if r.path == "/api/generate"]
        return [r["keep_alive"] for r in sent if "prompt" not in r]

    await ollama_request(emulator, "/api/generate", body)
    await poll()  # the use is seen; the keep answers
    await hass.async_block_till_done(wait_background_tasks=True)
    assert keeps() == [pytest.approx(22 * 60, abs=3)]
    await poll()  # the server shows our keep: nothing more is asked
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=1))
    await hass.async_block_till_done(wait_background_tasks=True)
    assert len(keeps()) == 1
    # Seconds on, the session's next request: 5 minutes again. Our keep ran within that
    # poll's window, so the poll cannot tell whose request it was (no use), but it shows
    # the expiry cut.
    freezer.tick(timedelta(seconds=3))
    emulator.clock.advance(3)
    await ollama_request(emulator, "/api/generate", body)
    await poll()
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=2))
    await hass.async_block_till_done(wait_background_tasks=True)
    assert len(uses(mock_config_entry, LLAMA)) == 1
    assert keeps() == [pytest.approx(22 * 60, abs=3), pytest.approx(22 * 60, abs=5)]
    await poll()
    expires = mock_config_entry.runtime_data.coordinator.data.resident[LLAMA].expires_at
    assert expires is not None
    assert expires - emulator.clock.now() > timedelta(minutes=21)


@pytest.mark.usefixtures("init_integration")
async def test_no_session_keep_cuts_short_what_the_agent_keeps(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    poll: Poll,
) -> None:
    """Home Assistant's agent keeps its model for ever: a keep of ours would shorten it."""
    add_ollama_agent(hass, emulator.url, LLAMA, num_ctx=8192.0, keep_alive=-1)
    await hass.async_block_till_done()
    usage = mock_config_entry.runtime_data.usage
    usage.set_auto_warm(LLAMA, True)
    record = usage.get(LLAMA)
    assert record is not None
    record.planner.gaps = [1200.0] * 10
    await ollama_request(
        emulator, "/api/generate", {"model": LLAMA, "prompt": "hi", "options": {"num_ctx": 8192}}
    )
    before = len(emulator.requests)
    await poll()
    await hass.async_block_till_done(wait_background_tasks=True)
    assert len(uses(mock_config_entry, LLAMA)) == 1
    assert [r for r in emulator.requests[before:] if r.path == "/api/generate"] == []


@pytest.mark.usefixtures("init_integration")
async def test_a_session_keep_longer_than_the_agents_raises_no_keep_alive_repair(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    poll: Poll,
) -> None:
    """Auto-warm keeps the model past the agent's 5 minutes, in step with its turns.

    The agent's next turn sets its own keep again (the last writer wins) and auto-warm asks
    again: that is no conflict to repair (it was one, raised whenever auto-warm kept a
    model an agent uses: seen in the demo, issue 32).
    """
    add_ollama_agent(hass, emulator.url, LLAMA, num_ctx=4096.0, keep_alive=300.0)
    await hass.async_block_till_done()
    usage = mock_config_entry.runtime_data.usage
    usage.set_auto_warm(LLAMA, True)
    record = usage.get(LLAMA)
    assert record is not None
    record.planner.gaps = [1200.0] * 10
    await ollama_request(
        emulator, "/api/generate", {"model": LLAMA, "prompt": "hi", "options": {"num_ctx": 4096}}
    )
    before = len(emulator.requests)
    await poll()
    await hass.async_block_till_done(wait_background_tasks=True)
    sent = [r.json for r in emulator.requests[before:] if r.path == "/api/generate"]
    assert [keep["keep_alive"] for keep in sent] == [pytest.approx(22 * 60, abs=3)]
    await poll()
    issues = ir.async_get(hass).issues
    assert [issue_id for (domain, issue_id) in issues if domain == DOMAIN] == []


async def test_no_session_keep_while_the_household_needs_the_gpu(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    await set_up_with_plex_on(hass, mock_config_entry)
    usage = mock_config_entry.runtime_data.usage
    coordinator = mock_config_entry.runtime_data.coordinator
    usage.set_auto_warm(LLAMA, True)
    record = usage.get(LLAMA)
    assert record is not None
    record.planner.gaps = [1200.0] * 10
    body = {"model": LLAMA, "prompt": "hi", "options": {"num_ctx": 4096}}
    await ollama_request(emulator, "/api/generate", body)
    before = len(emulator.requests)
    await coordinator.async_refresh()
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [r for r in emulator.requests[before:] if r.path == "/api/generate"] == []
    # Plex stops: the next minute keeps it through the session.
    hass.states.async_set(PLEX, "off")
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=1))
    await hass.async_block_till_done(wait_background_tasks=True)
    sent = [r.json for r in emulator.requests[before:] if r.path == "/api/generate"]
    assert [r["keep_alive"] > 20 * 60 for r in sent] == [True]


async def test_llama_server_shows_no_use_of_another_client(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    """llama-server tells its timings only to the client that asked: no use is seen late."""
    server = LlamaServerEmulator([EmulatedLlamaModel("tiny", load_seconds=0.01)])
    await server.start()
    try:
        entry = await add_server(hass, server.url)
        assert entry.runtime_data.usage.uses_seen_within() is None
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await server.stop()
