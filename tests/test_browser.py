"""What people see, in a real browser: the shipped dashboard and the device pages.

Headless Chromium (Debian's ``chromium``) loads Home Assistant's own frontend, served by the
test Home Assistant on loopback, with the integration set up against the Ollama emulator.
The test fails on any error card, any "entity not available" warning and any uncaught
script error. ``LLM_WARMTH_SCREENSHOTS=<folder>`` also saves the screenshots there
(``scripts/screenshots`` refreshes the README's).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
import contextlib
from dataclasses import dataclass
from datetime import timedelta
import os
from pathlib import Path
from types import MappingProxyType
from typing import Any

import aiohttp
from homeassistant.components.onboarding.const import STEPS
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockUser,
    async_capture_events,
)
from pytest_homeassistant_custom_component.components.recorder.common import (
    async_wait_recording_done,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.llm_warmth.const import (
    CONF_ASSISTANT_MODEL,
    CONF_RESERVE_GIB,
    CONF_SIGNAL_ENTITIES,
    CONF_SIGNAL_MODEL,
    DOMAIN,
    EVENT_VOICE_TURN,
    SUBENTRY_WARMING_SIGNALS,
)
from custom_components.llm_warmth.devices import server_device_identifier
from custom_components.llm_warmth.voice import voice_subject
from demo.home_assistant import http_storage

from .assist import hass_config_dir_fixture, setup_assist  # noqa: F401 (a fixture)
from .chromium import Page, chromium_page, look, require_browser, sign_in_script
from .conftest import ENTRY_ID, LLAMA, QWEN, free_port, model_device, ollama_request
from .e2e import wait_until
from .ollama_emulator import OllamaEmulator
from .signal_lessons import teach
from .test_gpu import NVML_OPTIONS, nvml, setup_with  # noqa: F401 (nvml: a fixture)
from .test_warm_assistant import House, house_fixture, make_warm  # noqa: F401 (a fixture)

pytestmark = pytest.mark.browser

require_browser()


async def _websocket(url: str, token: str, *commands: dict[str, Any]) -> None:
    """Send commands over Home Assistant's websocket API, as the frontend does."""
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{url}/api/websocket") as ws,
    ):
        assert (await ws.receive_json())["type"] == "auth_required"
        await ws.send_json({"type": "auth", "access_token": token})
        assert (await ws.receive_json())["type"] == "auth_ok"
        for number, command in enumerate(commands, start=1):
            await ws.send_json({"id": number, **command})
            answer = await ws.receive_json()
            assert answer["success"], answer


@pytest.fixture
def disable_http_server() -> None:
    """Let Home Assistant's HTTP server start: the browser talks to it (the harness stops it)."""


@pytest.fixture
async def frontend(
    recorder_mock: object,
    hass: HomeAssistant,
    hass_storage: dict[str, object],
    socket_enabled: None,
) -> str:
    """Serve Home Assistant's frontend on loopback, onboarding done; return its URL."""
    hass_storage["onboarding"] = {
        "version": 4,
        "minor_version": 1,
        "key": "onboarding",
        "data": {"done": list(STEPS)},
    }
    # The listening address as a confirmed setting, as the UI stores it: an ``http:`` block in
    # YAML would be a pending trial with a confirmation dialog over every page.
    port = free_port()
    hass_storage["http"] = http_storage(port)
    assert await async_setup_component(hass, "http", {})
    # What a real installation always loads beside the frontend (its pages call them).
    for component in (
        "persistent_notification",
        "logger",
        "frontend",
        "history",
        "logbook",
        "labs",
        "brands",
        "trace",
    ):
        assert await async_setup_component(hass, component, {})
    await hass.async_block_till_done()
    return f"http://127.0.0.1:{port}"


@dataclass
class Browser:
    """A browser tab signed in as an administrator, its token, where screenshots go."""

    page: Page
    url: str
    access_token: str
    screenshots: Path
    # Where screenshots go that are not the README's.
    scratch: Path


@pytest.fixture
async def browser(
    hass: HomeAssistant, frontend: str, hass_admin_user: MockUser, tmp_path: Path
) -> AsyncGenerator[Browser]:
    """A browser tab signed in as an administrator."""
    refresh = await hass.auth.async_create_refresh_token(hass_admin_user, f"{frontend}/")
    access_token = hass.auth.async_create_access_token(refresh)
    sign_in = sign_in_script(frontend, access_token, refresh.token)
    screenshots = Path(os.environ.get("LLM_WARMTH_SCREENSHOTS") or tmp_path)
    # Tall enough for the whole dashboard: the logbook card renders its rows only in view
    # (at 1500 px the Load times graph's lower bounds pushed its rows out of view).
    async with chromium_page(tmp_path / "profile", height=2400, init_script=sign_in) as page:
        yield Browser(page, frontend, access_token, screenshots, tmp_path)


async def _paste_dashboard(hass: HomeAssistant, browser: Browser, url_path: str) -> None:
    """Paste what llm_warmth.dashboard returns into a new dashboard, as the README says.

    Over the websocket the UI uses.
    """
    dashboard = await hass.services.async_call(
        DOMAIN, "dashboard", {}, blocking=True, return_response=True
    )
    assert dashboard is not None
    await _websocket(
        browser.url,
        browser.access_token,
        {
            "type": "lovelace/dashboards/create",
            "url_path": url_path,
            "title": "LLM Warmth",
            "mode": "storage",
            "show_in_sidebar": True,
            "require_admin": False,
        },
        {"type": "lovelace/config/save", "url_path": url_path, "config": dashboard["config"]},
    )


async def _look(browser: Browser, path: str, expected: list[str], name: str) -> str:
    """Open a page of the test Home Assistant: see ``chromium.look``."""
    return await look(browser.page, f"{browser.url}{path}", expected, browser.screenshots / name)


async def test_dashboard_and_device_pages_in_a_browser(
    hass: HomeAssistant,
    browser: Browser,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    make_resident: Callable[..., Awaitable[None]],
) -> None:
    """The shipped dashboard and the device pages render with no error, as a person sees them."""
    # The emulator's clock is fixed for other tests; here the browser reads real time.
    emulator.clock.set(dt_util.utcnow())
    # The household's assistant runs on llama; another client loads qwen; a probe finds
    # llama cold.
    hass.config_entries.async_update_entry(
        init_integration, options={**init_integration.options, CONF_ASSISTANT_MODEL: LLAMA}
    )
    await hass.async_block_till_done()
    await make_resident(QWEN)
    emulator.models[LLAMA].load_delay = 0.5
    await hass.services.async_call(
        DOMAIN, "probe", {"config_entry_id": ENTRY_ID, "model": LLAMA}, blocking=True
    )
    await hass.async_block_till_done()
    await async_wait_recording_done(hass)

    await _paste_dashboard(hass, browser, "llm-warmth")

    await _look(
        browser,
        "/llm-warmth/llm-warmth",
        # The logbook card tells the events in words, one line for a load and its cold start.
        # Another client's use of qwen: its learned warming, and why no use is expected.
        [
            "Ollama test",
            "Warm",
            "Load times",
            "Loads, unloads, cold starts and pins",
            "(a cold start)",
            "Learned warming",
            "Learning (under 5 days)",
        ],
        "dashboard",
    )
    # Nothing cut short at a desktop's width: a newcomer read "Next exp..." and
    # "Assistant (llama3.2..." beside their states.
    assert await browser.page.cut_labels() == []

    devices = dr.async_get(hass)
    server = devices.async_get_device_by_identifier(server_device_identifier(ENTRY_ID), ENTRY_ID)
    model = model_device(devices, LLAMA)
    assert server is not None
    assert model is not None
    await _look(browser, f"/config/devices/device/{server.id}", ["Assistant warmth"], "server")
    await _look(browser, f"/config/devices/device/{model.id}", ["Last probe", "Model"], "model")
    # The integration's page calls the server and its models devices, not services.
    text = await _look(
        browser, f"/config/integrations/integration/{DOMAIN}", ["Ollama test"], "integration"
    )
    assert "3 devices" in text, text
    assert "service" not in text.lower()


async def test_the_voice_silence_graphed_in_the_dashboard(
    hass: HomeAssistant,
    browser: Browser,
    hass_client: ClientSessionGenerator,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
) -> None:
    """Voice turns through a real Assist pipeline, graphed as the household sees them.

    A cold turn (the model loads for 1 s after the transcript), then a warm one: the
    shipped dashboard's voice graph shows the silence, speech-to-text and the agent's
    first words of the pipeline.
    """
    emulator.clock.set(dt_util.utcnow())
    assist = await setup_assist(hass, hass_client, emulator.url, LLAMA, emulator=emulator)
    turns = async_capture_events(hass, EVENT_VOICE_TURN)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    emulator.models[LLAMA].load_delay = 1.0
    for count, stt_seconds in enumerate((0.8, 0.3), start=1):
        await assist.turn(stt_seconds=stt_seconds)
        await wait_until(lambda n=count: len(turns) >= n, 10, "the voice turn")
        await asyncio.sleep(1.0)  # the graph's next point a second later
    assert turns[0].data["dominant_stage"] == "load"
    await async_wait_recording_done(hass)
    await _paste_dashboard(hass, browser, "llm-voice")
    text = await _look(
        browser,
        "/llm-voice/llm-warmth",
        ["Voice: the silence before the reply", "Harness silence", "Harness speech-to-text"],
        "voice",
    )
    assert "Harness agent's first words" in text
    # The assistant's row beside "Warm, no expiry", the voice rows: none cut short.
    assert await browser.page.cut_labels() == []
    # The pipeline's device page says what it is, connected via the server; as a child
    # device of the server it read "Ollama server by Ollama, Firmware 0.12.6".
    device = dr.async_get(hass).async_get_device_by_identifier(
        (DOMAIN, f"{init_integration.entry_id}_{voice_subject(assist.pipeline_id)}"),
        init_integration.entry_id,
    )
    assert device is not None
    page = await _look(
        browser, f"/config/devices/device/{device.id}", ["Assist pipeline"], "voice-device"
    )
    assert "Connected via" in page
    assert "Ollama server" not in page
    assert "Firmware" not in page


# The card's parts, read from its shadow root wherever the dashboard put it.
# The card element, wherever the dashboard put it (through shadow roots), or null.
_FIND_CARD = """(() => {
  const find = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.localName === 'llm-warmth-card') return el;
      if (el.shadowRoot) { const found = find(el.shadowRoot); if (found) return found; }
    }
    return null;
  };
  return find(document);
})()"""

_CARD_JS = (
    """(() => {
  const card = """
    + _FIND_CARD
    + """;
  if (!card || !card.shadowRoot || !card.shadowRoot.querySelector('ha-card')) return null;
  const root = card.shadowRoot;
  const count = (selector) => root.querySelectorAll(selector).length;
  const box = card.getBoundingClientRect();
  const svgs = [...root.querySelectorAll('svg')];
  const right = svgs.length
    ? Math.max(...svgs.map((s) => s.getBoundingClientRect().right)) : box.right;
  return {
    models: count('.model-row'), segments: count('.segment'), loads: count('.load'),
    exact: count('.load.exact'), lowerBound: count('.load.lower-bound'),
    coldStarts: count('.cold-start'), layers: count('.memory-layer'), reserve: count('.reserve'),
    pins: count('rect.pin'),
    stages: count('.stage'), text: root.textContent.replace(/\\s+/g, ' '),
    segmentsPerModel: [...root.querySelectorAll('.model-row')].map(
      (m) => m.querySelectorAll('.segment').length),
    box: {x: box.x, y: box.y, width: box.width, height: box.height}, overflow: right - box.right,
  };
})()"""
)

# The card stops fetching history (each fetch it would have made is counted instead):
# whatever it draws from then on came from the state changes it was given.
_NO_FETCH_JS = (
    "(() => { const card = "
    + _FIND_CARD
    + "; card._fetch = async () => { card._fetchesLeftOut = (card._fetchesLeftOut ?? 0) + 1; };"
    + " return true; })()"
)


async def _card(browser: Browser, path: str, name: str, ready: str) -> dict[str, Any]:
    """Open a dashboard, wait until its card drew what ``ready`` (JS on ``card``) says.

    Fails on what a person would notice (``chromium.look``); saves the card alone as
    ``<name>.png`` (the whole page goes to the scratch folder).
    """
    await look(browser.page, f"{browser.url}{path}", ["Warmth, "], browser.scratch / name)
    expression = f"(() => {{ const card = {_CARD_JS}; return !!card && ({ready}); }})()"
    try:
        await browser.page.wait_for(expression, timeout=30)
    except TimeoutError:
        drawn = await browser.page.evaluate(_CARD_JS)
        raise AssertionError(f"the card did not draw: {drawn}") from None
    card: dict[str, Any] = await browser.page.evaluate(_CARD_JS)
    assert browser.page.exceptions == [], browser.page.exceptions
    # Nothing drawn beyond the card's edge, at any width.
    assert card["overflow"] <= 1, card
    await asyncio.sleep(0.5)
    await browser.page.screenshot(browser.screenshots / f"{name}.png", card["box"])
    return card


async def _save_dashboard(browser: Browser, url_path: str, config: dict[str, Any]) -> None:
    await _websocket(
        browser.url,
        browser.access_token,
        {
            "type": "lovelace/dashboards/create",
            "url_path": url_path,
            "title": url_path,
            "mode": "storage",
        },
        {"type": "lovelace/config/save", "url_path": url_path, "config": config},
    )


@pytest.mark.usefixtures("nvml")
async def test_the_card_draws_loads_cold_starts_memory_and_the_last_probe(
    hass: HomeAssistant,
    browser: Browser,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    make_resident: Callable[..., Awaitable[None]],
) -> None:
    """The shipped dashboard's card, on real history: at a desktop's width and a phone's."""
    emulator.clock.set(dt_util.utcnow())
    # A reserve of 2 GiB a GPU leaves room for both models.
    await setup_with(hass, mock_config_entry, {**NVML_OPTIONS, CONF_RESERVE_GIB: 2.0})
    entry = {"config_entry_id": mock_config_entry.entry_id}
    # Another client loads qwen (polling times it); a probe finds llama cold (a cold start
    # the probe waited for); qwen is evicted and preloaded again (exact, nobody waited);
    # llama is evicted and pinned (loaded again, exact).
    await make_resident(QWEN)
    emulator.models[LLAMA].load_delay = 0.5
    await hass.services.async_call(DOMAIN, "probe", {**entry, "model": LLAMA}, blocking=True)
    await hass.services.async_call(DOMAIN, "evict", {**entry, "model": QWEN}, blocking=True)
    await hass.services.async_call(DOMAIN, "preload", {**entry, "model": QWEN}, blocking=True)
    # Whether qwen's preload pushed llama out depends on the emulated GPU's room: llama
    # leaves first, so that the pin loads it again (a third load, exact) in every run.
    await hass.services.async_call(DOMAIN, "evict", {**entry, "model": LLAMA}, blocking=True)
    # Another length than the probe's load: the load sensor's state changes (the same
    # figure to the millisecond, seen once in CI, is no new state: one bar fewer). Longer
    # than the card's window of one probe's writes (SAME_PROBE_MS, 1 s), so that the warm
    # probe after it is never read as part of the cold one (a 0.8 s load left the two
    # probes 0.9-1.0 s apart: the cold probe's panel missing in one run of several).
    emulator.models[LLAMA].load_delay = 1.5
    # A pin with an end, as a blueprint's: the model reads "warm", the pin shows as a band.
    await hass.services.async_call(
        DOMAIN, "pin", {**entry, "model": LLAMA, "for": {"hours": 1}}, blocking=True
    )
    # A warm probe after the cold one: the card keeps the cold one's stages in sight.
    await hass.services.async_call(DOMAIN, "probe", {**entry, "model": LLAMA}, blocking=True)
    await hass.async_block_till_done()
    await async_wait_recording_done(hass)
    dashboard = await hass.services.async_call(
        DOMAIN, "dashboard", {}, blocking=True, return_response=True
    )
    assert dashboard is not None
    config: dict[str, Any] = dashboard["config"]
    assert any(c["type"] == "custom:llm-warmth-card" for c in config["views"][0]["cards"])
    await _save_dashboard(browser, "llm-warmth", config)

    ready = "card.loads >= 3 && card.coldStarts >= 1 && card.stages >= 2 && card.layers >= 3"
    for name, width in (("card-desktop", 1280), ("card-phone", 390)):
        await browser.page.set_viewport(width, 2000, mobile=width < 600)
        card = await _card(browser, "/llm-warmth/llm-warmth", name, ready)
        assert card["box"]["width"] <= width
        # A timeline per model, each load a bar: the probe's and the preloads exact.
        assert card["models"] == 2
        assert all(n >= 1 for n in card["segmentsPerModel"]), card
        assert card["exact"] >= 2, card
        # Who waited how long: the probe, for llama's load.
        assert "probe waited" in card["text"], card["text"]
        # Models, the other processes and the household's reserve, stacked.
        assert card["reserve"] == 1
        assert "reserve 4.0 GiB" in card["text"]  # 2 GiB on each of the two GPUs
        assert "first token after" in card["text"]
        assert "queue and load" in card["text"]
        # The pin on llama's timeline, though its warmth reads "warm" (issue 32).
        assert card["pins"] == 1, card
        assert "pinned" in card["text"]
        # The warm probe last, the cold one beside it with its load (issue 32).
        assert "Last probe: time to first token" in card["text"], card["text"]
        assert "Last cold probe: time to first token" in card["text"], card["text"]
        # A new installation: the charts begin with its first recorded minutes.
        assert "Warmth, since" in card["text"], card["text"]
        # No word cut short or hidden past the card's edge, at a desktop's and a phone's width.
        cut = await browser.page.cut_labels()
        assert cut == [], (name, cut)

    # Live: loads while the card is open are drawn from the state changes, each of them:
    # not from a history fetch (the periodic one, a minute on this span), and not only
    # the last one (the card once drew the current state alone until a fetch 5 s later).
    # Its fetches are switched off first, so nothing but the state changes can draw them;
    # the wait is one a loaded 2-core CI machine allows (the real servers read prompts on
    # both cores beside the browser), not a figure of the card's speed.
    before = card["loads"]
    assert await browser.page.evaluate(_NO_FETCH_JS) is True
    await hass.services.async_call(
        DOMAIN, "unpin", {**entry, "model": LLAMA, "evict": True}, blocking=True
    )
    for delay in (0.3, 0.6):  # two loads of their own length
        emulator.models[LLAMA].load_delay = delay
        await hass.services.async_call(DOMAIN, "preload", {**entry, "model": LLAMA}, blocking=True)
        await hass.services.async_call(DOMAIN, "evict", {**entry, "model": LLAMA}, blocking=True)
    await hass.async_block_till_done()
    drawn = f"(() => {{ const card = {_CARD_JS}; return !!card && card.loads >= {before + 2}; }})()"
    await browser.page.wait_for(drawn, timeout=30)
    assert browser.page.exceptions == []


def _month_of_history(hass: HomeAssistant, days: int) -> dict[str, Any]:
    """Write a month of a household's mornings into the recorder; return the card for it.

    Every morning at seven the assistant's model loads (8 s, the server's figure) and stays
    warm for a while; on odd days another client waits for it first (a cold start polling
    saw: at least 9 s); every evening a transcode takes 4 GiB of the GPU for two hours.
    """
    # Within the card's span: the recorder has no row from before it started.
    start = dt_util.utcnow() - timedelta(days=days, minutes=-1)
    day0 = start.replace(hour=0, minute=0, second=0, microsecond=0)
    seconds = {"unit_of_measurement": "s"}
    gib = {"unit_of_measurement": "GiB"}
    rows: list[tuple[float, str, str, dict[str, Any]]] = [
        (start.timestamp(), "sensor.month_small_warmth", "cold", {}),
        (start.timestamp(), "sensor.month_big_warmth", "cold", {}),
        (start.timestamp(), "sensor.month_small_vram", "0", gib),
        (start.timestamp(), "sensor.month_big_vram", "0", gib),
        (start.timestamp(), "sensor.month_gpu_total", "24", gib),
        (start.timestamp(), "sensor.month_gpu_other", "0.5", gib),
    ]
    for day in range(1, days + 1):
        morning = (day0 + timedelta(days=day, hours=7)).timestamp()
        warm = 20 * 60 + (day % 5) * 30 * 60
        rows += [
            (morning, "sensor.month_small_warmth", "loading", {}),
            (morning + 8, "sensor.month_small_warmth", "warm", {}),
            (
                morning + 8,
                "sensor.month_small_load",
                f"{7.5 + day % 3 / 10:.1f}",
                {**seconds, "source": "server"},
            ),
            (morning + 8, "sensor.month_small_vram", "3.2", gib),
            (morning + warm, "sensor.month_small_warmth", "cold", {}),
            (morning + warm, "sensor.month_small_vram", "0", gib),
            (morning + 3 * 3600, "sensor.month_gpu_other", "4.5", gib),
            (morning + 5 * 3600, "sensor.month_gpu_other", "0.5", gib),
        ]
        if day % 2:
            rows.append(
                (
                    morning + 9,
                    "sensor.month_small_cold",
                    f"{9 + day % 4}",
                    {**seconds, "source": "polling"},
                )
            )
        if day % 7 == 0:  # the big model, kept warm for an afternoon
            noon = morning + 6 * 3600
            rows += [
                (noon, "sensor.month_big_warmth", "loading", {}),
                (noon + 25, "sensor.month_big_warmth", "kept_warm", {}),
                (noon + 25, "sensor.month_big_load", "25.3", {**seconds, "source": "client"}),
                (noon + 25, "sensor.month_big_vram", "11.5", gib),
                (noon + 4 * 3600, "sensor.month_big_warmth", "cold", {}),
                (noon + 4 * 3600, "sensor.month_big_vram", "0", gib),
            ]
    now = dt_util.utcnow().timestamp()
    for at, entity_id, state, attributes in sorted(rows, key=lambda row: row[0]):
        if at < now:
            hass.states.async_set(entity_id, state, attributes, timestamp=at)
    hass.states.async_set(
        "binary_sensor.month_gpu_headroom_low", "off", {"reserve_bytes": 6 * 1024**3}
    )
    probe = {"ttft": 9.6, "load": 8.1, "prefill": 1200.0, "first_decode": 95.0}
    for key, value in probe.items():
        unit = "s" if key in ("ttft", "load") else "ms"
        hass.states.async_set(
            f"sensor.month_small_probe_{key}", str(value), {"unit_of_measurement": unit}
        )
    return {
        "type": "custom:llm-warmth-card",
        "title": "A month of mornings",
        "hours_to_show": days * 24,
        "models": [
            {
                "name": "small:3b",
                "warmth": "sensor.month_small_warmth",
                "load": "sensor.month_small_load",
                "cold_request": "sensor.month_small_cold",
                "vram": "sensor.month_small_vram",
                "probe": {k: f"sensor.month_small_probe_{k}" for k in probe},
            },
            {
                "name": "big:14b",
                "warmth": "sensor.month_big_warmth",
                "load": "sensor.month_big_load",
                "vram": "sensor.month_big_vram",
            },
        ],
        "gpus": [
            {
                "total": "sensor.month_gpu_total",
                "other": "sensor.month_gpu_other",
                "headroom_low": "binary_sensor.month_gpu_headroom_low",
            }
        ],
    }


async def test_the_card_keeps_a_month_legible(
    hass: HomeAssistant, browser: Browser, init_integration: MockConfigEntry
) -> None:
    """A month of history: short states grouped, every load and cold start still there."""
    month = _month_of_history(hass, 30)
    await hass.async_block_till_done()
    await async_wait_recording_done(hass)
    day = {**month, "title": "The last day", "hours_to_show": 24}
    await _save_dashboard(
        browser, "llm-month", {"views": [{"title": "Month", "path": "m", "cards": [month, day]}]}
    )
    ready = "card.loads >= 25 && card.coldStarts >= 13 && card.layers === 3"
    for name, width in (("card-month", 1280), ("card-month-phone", 390)):
        await browser.page.set_viewport(width, 2000, mobile=width < 600)
        card = await _card(browser, "/llm-month/m", name, ready)
        # One segment per state a person can tell apart: a month of 20-minute mornings
        # at a pixel per hours is grouped, not hundreds of slivers.
        assert all(1 <= n <= 120 for n in card["segmentsPerModel"]), card["segmentsPerModel"]
        # Polling's cold starts are lower bounds, said as what polls saw (not "waited":
        # beside the last timed load that read as the same load said twice).
        assert "polling saw a client wait at least" in card["text"]
        assert "last timed load" in card["text"]
        assert "reserve 6.0 GiB" in card["text"]
        assert "30 days" in card["text"]


async def test_the_household_section_in_a_browser(
    hass: HomeAssistant, browser: Browser, house: House
) -> None:
    """Two hosts and the warm assistant, as the ready dashboard shows them: every server's
    line under its host, and the assistant's last turn (the NAS answered: the big box was
    cold)."""
    house.big.clock.set(dt_util.utcnow())
    await make_warm(house, house.nas, LLAMA)
    await house.turn("turn on the kitchen light")
    await hass.async_block_till_done()
    await _paste_dashboard(hass, browser, "llm-household")
    card = await _card(
        browser,
        "/llm-household/llm-warmth",
        "household",
        "card.text.includes('Warm assistants') && card.text.includes('answered by')",
    )
    text = card["text"]
    assert "Host 127.0.0.1" in text, text
    assert "Big box" in text
    assert "NAS" in text
    assert "llama3.2:3b: warm, no expiry" in text, text
    assert "fall-back: primary cold" in text
    # The household device's page: a line per server.
    (household,) = [e for e in hass.config_entries.async_entries(DOMAIN) if e.title == "Household"]
    (device,) = dr.async_entries_for_config_entry(dr.async_get(hass), household.entry_id)
    await _look(
        browser, f"/config/devices/device/{device.id}", ["Big box", "NAS"], "household-device"
    )


async def test_the_warming_signals_in_the_card_and_the_learned_warming_card(
    hass: HomeAssistant,
    browser: Browser,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
) -> None:
    """A model's signals as the ready dashboard shows them: the card's section, the rows."""
    emulator.clock.set(dt_util.utcnow())
    motion, attributes = "input_boolean.bedroom_motion", {"friendly_name": "Bedroom motion"}
    hass.states.async_set(motion, "off", attributes)
    mock_config_entry.add_to_hass(hass)
    hass.config_entries.async_add_subentry(
        mock_config_entry,
        ConfigSubentry(
            data=MappingProxyType({CONF_SIGNAL_MODEL: LLAMA, CONF_SIGNAL_ENTITIES: [motion]}),
            subentry_type=SUBENTRY_WARMING_SIGNALS,
            title=LLAMA,
            unique_id=None,
        ),
    )
    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    teach(mock_config_entry, LLAMA, {motion: 300}, now=dt_util.utcnow())
    mock_config_entry.runtime_data.usage.set_auto_warm(LLAMA, True)
    hass.states.async_set(motion, "on", attributes)  # an edge: the model is warmed on it
    await hass.async_block_till_done(wait_background_tasks=True)
    await _paste_dashboard(hass, browser, "llm-signals")
    card = await _card(
        browser,
        "/llm-signals/llm-warmth",
        "card-signals",
        "card.text.includes('Warming signals') && card.text.includes('warms it')",
    )
    text = card["text"]
    assert "Bedroom motion → on: a use follows within 6 min 100 % of the time" in text, text
    assert "1 signal warms it · warmed by the house's signals" in text, text
    assert "(led 20, wrong 0, warms it)" in text, text
    # The Learned warming card: the signals and the scoreboard's two columns.
    await _look(
        browser,
        "/llm-signals/llm-warmth",
        [
            "Warming signals",
            "Warm thanks to the clock (7 days)",
            "Warm thanks to a signal (7 days)",
        ],
        "learned-warming",
    )
    # The signals' rows and summaries wrap: none runs past its card's edge.
    assert await browser.page.cut_labels() == []


async def _ready_dashboard(hass: HomeAssistant, browser: Browser) -> str:
    """Save what llm_warmth.dashboard returns as a dashboard; return its URL."""
    dashboard = await hass.services.async_call(
        DOMAIN, "dashboard", {}, blocking=True, return_response=True
    )
    assert dashboard is not None
    await _save_dashboard(browser, "llm-warmth", dashboard["config"])
    return f"{browser.url}/llm-warmth/llm-warmth"


# Opened cold again and again, as the newcomer did (about 20 opens): how many showed an error
# card where the integration's card should be, once Home Assistant's wait was over.
COLD_OPENS = 20


async def test_the_card_is_defined_on_every_cold_open(
    hass: HomeAssistant, browser: Browser, init_integration: MockConfigEntry
) -> None:
    """Each open with the browser's cache off: the card drawn, never "Configuration error"."""
    url = await _ready_dashboard(hass, browser)
    await browser.page.send("Network.enable")
    await browser.page.send("Network.setCacheDisabled", {"cacheDisabled": True})
    failed: list[tuple[int, list[str]]] = []
    for number in range(COLD_OPENS):
        await browser.page.goto(url)
        with contextlib.suppress(TimeoutError):
            await browser.page.wait_for_text(["Warmth, "], timeout=15)
        await asyncio.sleep(2.5)  # past Home Assistant's wait for a custom element
        errors = (await browser.page.report())["errors"]
        if errors:
            failed.append((number, errors))
    assert failed == [], f"{len(failed)} of {COLD_OPENS} opens: {failed}"


async def test_the_card_speaks_the_users_language(
    hass: HomeAssistant, browser: Browser, init_integration: MockConfigEntry
) -> None:
    """A German profile: the card's headings, states and legend in German, no English left."""
    url = await _ready_dashboard(hass, browser)
    await browser.page.goto(url)
    # Where the frontend keeps the language a user picked in their profile.
    await browser.page.evaluate("localStorage.setItem('selectedLanguage', '\"de\"')")
    await browser.page.goto(url)
    await browser.page.wait_for_text(["Wärme, seit", "Laden (seine Dauer)"], timeout=30)
    card = await browser.page.evaluate(
        f"(() => {{ const card = {_FIND_CARD}; return card.shadowRoot.textContent; }})()"
    )
    for english in ("Warmth, since", "load (its length)", "cold start", "GPU memory"):
        assert english not in card, (english, card)
    assert "Kaltstart" in card
