"""What people see, in a real browser: the shipped dashboard and the device pages.

Headless Chromium (Debian's ``chromium``) loads Home Assistant's own frontend, served by the
test Home Assistant on loopback, with the integration set up against the Ollama emulator.
The test fails on any error card, any "entity not available" warning and any uncaught
script error. ``LLM_WARMTH_SCREENSHOTS=<folder>`` also saves the screenshots there
(``scripts/screenshots`` refreshes the README's).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
import os
from pathlib import Path
from typing import Any

import aiohttp
from homeassistant.components.onboarding.const import STEPS
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser
from pytest_homeassistant_custom_component.components.recorder.common import (
    async_wait_recording_done,
)

from custom_components.llm_warmth.const import CONF_ASSISTANT_MODEL, DOMAIN
from custom_components.llm_warmth.devices import server_device_identifier
from demo.home_assistant import http_storage

from .chromium import Page, chromium_page, look, require_browser, sign_in_script
from .conftest import ENTRY_ID, LLAMA, QWEN, free_port, model_device
from .ollama_emulator import OllamaEmulator

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


@pytest.fixture
async def browser(
    hass: HomeAssistant, frontend: str, hass_admin_user: MockUser, tmp_path: Path
) -> AsyncGenerator[Browser]:
    """A browser tab signed in as an administrator."""
    refresh = await hass.auth.async_create_refresh_token(hass_admin_user, f"{frontend}/")
    access_token = hass.auth.async_create_access_token(refresh)
    sign_in = sign_in_script(frontend, access_token, refresh.token)
    screenshots = Path(os.environ.get("LLM_WARMTH_SCREENSHOTS") or tmp_path)
    # Tall enough for the whole dashboard: the logbook card renders its rows only in view.
    async with chromium_page(tmp_path / "profile", height=1500, init_script=sign_in) as page:
        yield Browser(page, frontend, access_token, screenshots)


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

    dashboard = await hass.services.async_call(
        DOMAIN, "dashboard", {}, blocking=True, return_response=True
    )
    assert dashboard is not None
    # Pasted into a new dashboard, as the README says (over the websocket the UI uses).
    await _websocket(
        browser.url,
        browser.access_token,
        {
            "type": "lovelace/dashboards/create",
            "url_path": "llm-warmth",
            "title": "LLM Warmth",
            "mode": "storage",
            "show_in_sidebar": True,
            "require_admin": False,
        },
        {"type": "lovelace/config/save", "url_path": "llm-warmth", "config": dashboard["config"]},
    )

    await _look(
        browser,
        "/llm-warmth/llm-warmth",
        # The logbook card tells the events in words.
        ["Ollama test", "Warm", "Load times", "Loads, unloads and cold starts", "was loaded"],
        "dashboard",
    )

    devices = dr.async_get(hass)
    server = devices.async_get_device_by_identifier(server_device_identifier(ENTRY_ID), ENTRY_ID)
    model = model_device(devices, LLAMA)
    assert server is not None
    assert model is not None
    await _look(browser, f"/config/devices/device/{server.id}", ["Assistant warmth"], "server")
    await _look(browser, f"/config/devices/device/{model.id}", ["Warmth", "Last probe"], "model")
    # The integration's page calls the server and its models devices, not services.
    text = await _look(
        browser, f"/config/integrations/integration/{DOMAIN}", ["Ollama test"], "integration"
    )
    assert "3 devices" in text, text
    assert "service" not in text.lower()
