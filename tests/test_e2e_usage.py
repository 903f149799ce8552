"""Usage on the real Ollama, on the integration's own timers: whose requests are uses.

Another client's requests (straight to the server) are recorded as uses at the poll that
sees the expiry move on; ours (a probe, through the recording proxy) are not. Auto-warm,
on a clock of the test's (``UsageWatch.utcnow``), loads the real server ahead of an
expected stretch, kept only until the stretch ends, and the server lets go after it.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest

from custom_components.llm_warmth.const import DOMAIN
from custom_components.llm_warmth.core.usage import COLD, EXPIRY_JUMP, GIB_HOURS, HELPED
from custom_components.llm_warmth.core.warm_plan import PatternClass

from .e2e import add_server, evict, ollama_call, ollama_get, wait_until
from .recording_proxy import RecordingProxy

pytestmark = pytest.mark.e2e


async def test_uses_are_another_clients_and_auto_warm_loads_ahead_then_lets_go(
    hass: HomeAssistant, ollama_url: str
) -> None:
    proxy = RecordingProxy(ollama_url)
    await proxy.start()
    try:
        entry = await add_server(hass, proxy.url)
        coordinator, usage = entry.runtime_data.coordinator, entry.runtime_data.usage
        model = coordinator.resolve_model("tiny")
        await evict(ollama_url, model)
        await wait_until(lambda: model not in coordinator.data.held, 10, "tiny gone")

        def used() -> int:
            record = usage.get(model)
            return len(record.planner.uses) if record else 0

        # Another client loads and asks (straight to the server): a use at the next poll.
        other = {"model": model, "prompt": "hi", "options": {"num_predict": 2}}
        await ollama_call(ollama_url, "/api/generate", other)
        await wait_until(lambda: used() == 1, 10, "the first use")
        await asyncio.sleep(2.5)  # its expiry moves on with the next request
        await ollama_call(ollama_url, "/api/generate", other)
        await wait_until(lambda: used() == 2, 10, "the second use")
        # Ours: a probe through the proxy; the polls after it record nothing.
        await hass.services.async_call(
            DOMAIN, "probe", {"config_entry_id": entry.entry_id, "model": model}, blocking=True
        )
        polls = proxy.sent("/api/ps")
        await wait_until(lambda: len(proxy.sent("/api/ps")) >= len(polls) + 2, 10, "two polls")
        assert used() == 2

        # Auto-warm on the test's clock: two weeks of weekday mornings at 06:45 learnt;
        # 8 s before the expected stretch (06:40-07:00) ends, no use in it yet. The Monday
        # is one to two weeks ahead of today, whatever today is: some of the history is
        # older than the two real uses above (recorded first), and is kept all the same.
        today = dt_util.start_of_local_day()
        monday = today + timedelta(days=7 + (7 - today.weekday()) % 7)
        for day in range(14):
            start = monday - timedelta(days=14 - day)
            if start.weekday() < 5:
                for minutes in (45, 48, 50):
                    usage.record(model, start + timedelta(hours=6, minutes=minutes))
        await evict(ollama_url, model)
        await wait_until(lambda: model not in coordinator.data.held, 10, "tiny gone again")
        now = monday + timedelta(hours=6, minutes=59, seconds=52)
        usage.utcnow = lambda: now
        started = asyncio.get_running_loop().time()
        usage.set_auto_warm(model, True)
        # Counted once its load answered (the polls may see it held while it loads).
        await wait_until(lambda: usage.get(model).warmed == 1, 20, "tiny warmed")
        assert model in coordinator.data.held
        loads = [r.json() for r in proxy.requests if r.path == "/api/generate"][-1:]
        assert loads
        assert not loads[0].get("prompt")
        assert loads[0]["keep_alive"] == pytest.approx(8, abs=1)  # until the stretch ends
        # The real server lets it go once the stretch is over (its keep runs out).
        await wait_until(lambda: model not in coordinator.data.held, 30, "tiny let go")
        assert asyncio.get_running_loop().time() - started >= 7
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()


async def test_after_another_clients_use_auto_warm_keeps_the_model_for_its_session(
    hass: HomeAssistant, ollama_url: str
) -> None:
    """The real server's expiry moves to the session's end: one request of ours, no more.

    Ollama 0.30+ tells the context a model runs with, so the keep cannot load it again;
    Ollama 0.9 does not, and without an agent's context nothing is sent there.
    """
    proxy = RecordingProxy(ollama_url)
    await proxy.start()
    try:
        entry = await add_server(hass, proxy.url)
        coordinator, usage = entry.runtime_data.coordinator, entry.runtime_data.usage
        model = coordinator.resolve_model("tiny")
        usage.set_auto_warm(model, True)
        record = usage.get(model)
        assert record is not None
        # Sessions with gaps of 400 s: kept 440 s, past the 5 minutes a model with no idle
        # times yet is kept at least (the planner's answer is the longer of the two).
        record.planner.gaps = [400.0] * 10
        assert record.planner.keep == timedelta(seconds=440)
        other = {"model": model, "prompt": "hi", "keep_alive": "10s", "options": {"num_predict": 2}}
        await ollama_call(ollama_url, "/api/generate", other)
        used_at = dt_util.utcnow()
        await wait_until(lambda: len(record.planner.uses) == 1, 10, "the use")
        polls = proxy.sent("/api/ps")
        await wait_until(lambda: len(proxy.sent("/api/ps")) >= len(polls) + 2, 10, "two polls")
        keeps = [r.json() for r in proxy.requests if r.path == "/api/generate"]
        resident = coordinator.data.resident[model]
        if resident.context_length is None:  # Ollama 0.9
            assert keeps == []
            return
        assert len(keeps) == 1
        assert keeps[0]["keep_alive"] == pytest.approx(440, abs=12)
        assert keeps[0]["options"] == {"num_ctx": resident.context_length}
        # The server's own expiry, read straight from it: the session's end, not 10 s on.
        listed = (await ollama_get(ollama_url, "/api/ps"))["models"]
        assert isinstance(listed, list)
        (found,) = [m for m in listed if m["name"] == model]
        expires = dt_util.parse_datetime(found["expires_at"])
        assert expires is not None
        assert timedelta(seconds=425) <= expires - used_at <= timedelta(seconds=455)
        switch = next(
            s for s in hass.states.async_all("switch") if s.entity_id.endswith("_auto_warm")
        )
        assert switch.attributes["kept_for"] == "session_keep"
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await proxy.stop()


async def test_a_morning_routine_is_warm_for_every_use_let_go_after_and_scored_as_sent(
    hass: HomeAssistant, ollama_url: str
) -> None:
    """The scoreboard counts what happened on the real server, use by use.

    Two weeks of a routine at the time of day the test runs (three requests ten minutes
    apart), so the expected stretch is now, on the household's real clock: auto-warm loads
    the model at once; another client's session of three requests finds it warm each
    time; each is one use, the first one warm thanks to auto-warm, no cold start, the
    memory held until then scored; after the session the planner lets the model go, and
    the server's own expiry says so.
    """
    proxy = RecordingProxy(ollama_url)
    await proxy.start()
    try:
        entry = await add_server(hass, proxy.url)
        coordinator, usage = entry.runtime_data.coordinator, entry.runtime_data.usage
        loop = asyncio.get_running_loop()
        model = coordinator.resolve_model("tiny")
        await evict(ollama_url, model)
        await wait_until(lambda: model not in coordinator.data.held, 10, "tiny gone")
        now = dt_util.now()
        for day in range(1, 15):
            for minutes in (0, 10, 20):
                usage.record(model, now - timedelta(days=day) + timedelta(minutes=minutes))
        plan = usage.plan(model)
        assert plan is not None
        assert plan.pattern is PatternClass.RHYTHMIC
        assert plan.window_start is not None
        assert plan.window_end is not None
        assert plan.window_start <= now < plan.window_end
        assert plan.window_end - now >= timedelta(minutes=20)
        session_keep = plan.keep
        assert session_keep == timedelta(seconds=660)  # gaps of 10 minutes, and 10 %
        uses_before = usage.uses_today(model)

        switched_on = loop.time()
        usage.set_auto_warm(model, True)  # in its stretch: warmed at once
        await wait_until(lambda: usage.get(model).warmed == 1, 20, "tiny warmed")
        warm_since = loop.time()
        assert model in coordinator.data.held

        def generates() -> list[dict[str, object]]:
            return [r.json() for r in proxy.requests if r.path == "/api/generate"]

        (warm_up,) = generates()
        # Ollama 0.30+ tells the context the model runs with: a session keep is sent with
        # it after each use. Ollama 0.9 does not, and nothing is sent there.
        kept = coordinator.data.resident[model].context_length is not None
        assert not warm_up.get("prompt")
        stretch_left = (plan.window_end - dt_util.now()).total_seconds()
        assert warm_up["keep_alive"] == pytest.approx(stretch_left, abs=5)

        sent_at: list[float] = []  # loop.time() is time.monotonic(), the proxy's clock

        async def clear_of_the_last_request() -> None:
            """Wait for a poll that shows the next request as a use of its own.

            What a poll shows in a window that one of ours ran in (with 2 s of slack) is
            taken for ours; a request that moves the expiry by no more than EXPIRY_JUMP
            from the last poll's reads as the same one.
            """
            ours = max(r.at for r in proxy.requests if r.path == "/api/generate") + 2.5
            other = sent_at[-1] + EXPIRY_JUMP.total_seconds() + 1 if sent_at else 0.0
            since = max(ours, other)
            await wait_until(lambda: proxy.sent("/api/ps", since=since), 15, "a clear poll")

        # Another client's session: three requests, each seen at a poll of its own (after
        # the poll that shows our keep, which would hide it: ours ran in that window). It
        # sends its own 5 minutes each time, as Open WebUI does: the last writer wins.
        other = {"model": model, "prompt": "hi", "keep_alive": "5m", "options": {"num_predict": 2}}
        seen_at: list[float] = []
        for count in range(1, 4):
            await clear_of_the_last_request()
            sent_at.append(loop.time())
            reply = await ollama_call(ollama_url, "/api/generate", other)
            assert reply["load_duration"] < 50_000_000  # warm: no load (ns)
            await wait_until(
                lambda c=count: usage.uses_today(model) == uses_before + c, 10, f"use {count}"
            )
            seen_at.append(loop.time())
            if kept:  # our keep of the session answered
                await wait_until(lambda c=count: len(generates()) == 1 + c, 10, f"keep {count}")
        assert model in coordinator.data.held

        # The scoreboard: the requests as sent, the first one warm thanks to auto-warm.
        today = {column: usage.scoreboard(model, column)[0] for column in (HELPED, COLD)}
        assert today == {HELPED: 1.0, COLD: 0.0}
        assert usage.uses_today(model) == uses_before + 3
        assert usage.get(model).warmed == 1
        resident = coordinator.data.resident[model]
        gib = (resident.size_vram or resident.size or 0) / 2**30
        held = usage.scoreboard(model, GIB_HOURS)[0]
        assert gib * (sent_at[0] - warm_since) / 3600 <= held
        assert held <= gib * (seen_at[0] - switched_on) / 3600
        # What Ollama was sent: the one warm-up, and a keep after each use on 0.30+ (our
        # keep is cut by each request's 5 minutes); on 0.9, which tells no context, none.
        keeps = generates()[1:]
        if not kept:
            assert keeps == []
        else:
            assert [k["keep_alive"] for k in keeps] == [pytest.approx(660, abs=12)] * 3
            # Let go after: the server's own expiry is the session's end (a keep past the
            # last use), and the planner holds it no longer from then on.
            # Our last keep was seen sent; Ollama applies it once it answers it (read again
            # for a few seconds: under load the first read may come before that).
            record = usage.get(model)
            end = record.planner.uses[-1] + session_keep
            expires = None
            for _ in range(50):
                listed = (await ollama_get(ollama_url, "/api/ps"))["models"]
                assert isinstance(listed, list)
                (found,) = [m for m in listed if m["name"] == model]
                expires = dt_util.parse_datetime(found["expires_at"])
                assert expires is not None
                if abs((expires - end).total_seconds()) < 12:
                    break
                await asyncio.sleep(0.1)
            assert expires is not None
            assert abs((expires - end).total_seconds()) < 12
            after = usage.plan(model, expires + timedelta(seconds=1))
            assert after is not None
            assert after.warm_until is None
            assert after.used or after.window_start != plan.window_start
        await hass.config_entries.async_unload(entry.entry_id)
        await evict(ollama_url, model)
    finally:
        await proxy.stop()


async def test_a_request_that_sends_no_keep_keeps_the_last_one_asked_for(ollama_url: str) -> None:
    """Why auto-warm asks for its holds half an hour at a time, read from the real server.

    A load that asks for 1800 s, then an OpenAI-compatible request (it has no keep): the
    server's expiry is that request's end plus 1800 s, not its 5-minute default; a
    request that sends its own keep replaces it (the last writer wins).
    """
    tiny = "tiny:latest"
    await evict(ollama_url, tiny)
    await ollama_call(ollama_url, "/api/generate", {"model": tiny, "keep_alive": 1800})

    async def expiry() -> datetime:
        listed = (await ollama_get(ollama_url, "/api/ps"))["models"]
        assert isinstance(listed, list)
        (found,) = [m for m in listed if m["name"] == tiny]
        when = dt_util.parse_datetime(found["expires_at"])
        assert when is not None
        return when

    body = {"model": tiny, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    await ollama_call(ollama_url, "/v1/chat/completions", body)
    answered = dt_util.utcnow()
    kept = (await expiry()) - answered
    assert timedelta(seconds=1790) <= kept <= timedelta(seconds=1801)
    other = {"model": tiny, "prompt": "hi", "keep_alive": "5m", "options": {"num_predict": 2}}
    await ollama_call(ollama_url, "/api/generate", other)
    kept = (await expiry()) - dt_util.utcnow()
    assert timedelta(seconds=290) <= kept <= timedelta(seconds=301)
    await evict(ollama_url, tiny)
