"""The README's quick start, as a newcomer runs it: ``scripts/demo``, then the dashboard.

Runs ``scripts/demo`` in the background (its own Home Assistant and emulated Ollama), waits
for it, signs in with the credentials it prints, drives headless Chromium to the dashboard
it prints, checks that the warmth entities and the morning's events are there, and stops it
as a person would (Ctrl+C). Home Assistant's log must hold no error.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
import contextlib
import json
import os
from pathlib import Path
import re
import shutil
import signal

import aiohttp
import pytest

from demo.home_assistant import write_config

from .chromium import chromium_page, look, require_browser, sign_in_script
from .conftest import free_port

ROOT = Path(__file__).resolve().parent.parent


class Demo:
    """``scripts/demo`` running in the background, and what it printed."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []

    async def until(self, pattern: str, timeout: float) -> re.Match[str]:
        """Read the demo's output until a line matches ``pattern``."""
        assert self.process.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                for line in self.lines:
                    if match := re.search(pattern, line):
                        return match
                raw = await self.process.stdout.readline()
                if not raw:
                    raise AssertionError(f"the demo ended early:\n{''.join(self.lines)}")
                self.lines.append(raw.decode())


async def start_demo(state: Path, *arguments: str) -> Demo:
    """Start ``scripts/demo`` on a free port with its files in ``state``."""
    process = await asyncio.create_subprocess_exec(
        str(ROOT / "scripts" / "demo"),
        "--port",
        str(free_port()),
        "--state-dir",
        str(state),
        "--no-browser",
        *arguments,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL,
    )
    return Demo(process)


@pytest.fixture
async def demo(socket_enabled: None, tmp_path: Path) -> AsyncGenerator[tuple[Demo, Path]]:
    """Start ``scripts/demo`` with its files in ``tmp_path``; kill it if a test left it up."""
    running = await start_demo(tmp_path / "demo")
    process = running.process
    try:
        yield running, tmp_path / "demo"
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _sign_in(url: str, username: str, password: str) -> tuple[str, str]:
    """Sign in with a username and password, as the login page does; return the tokens."""
    client_id = f"{url}/"
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{url}/auth/login_flow",
            json={
                "client_id": client_id,
                "handler": ["homeassistant", None],
                "redirect_uri": f"{url}/",
            },
        ) as answer:
            flow = await answer.json()
        async with http.post(
            f"{url}/auth/login_flow/{flow['flow_id']}",
            json={"client_id": client_id, "username": username, "password": password},
        ) as answer:
            result = await answer.json()
        assert result["type"] == "create_entry", result
        async with http.post(
            f"{url}/auth/token",
            data={
                "grant_type": "authorization_code",
                "code": result["result"],
                "client_id": client_id,
            },
        ) as answer:
            tokens = await answer.json()
    return tokens["access_token"], tokens["refresh_token"]


async def test_the_demo_shows_warmth_and_events_in_a_browser(
    demo: tuple[Demo, Path], tmp_path: Path
) -> None:
    require_browser()
    running, state = demo
    signed = await running.until(r"Sign in as '(\w+)' with password '([\w-]+)'", timeout=420)
    dashboard = await running.until(r"Dashboard: (http://127\.0\.0\.1:\d+)(/\S+)", timeout=30)
    await running.until(r"^ready", timeout=30)
    # The morning: a cold probe, an eviction, a cold start by another client, a warm probe.
    await running.until(r"a probe of llama3\.2:3b right after: warm", timeout=120)
    await running.until(r"^\s+warm: ", timeout=60)

    url, path = dashboard.group(1), dashboard.group(2)
    access, refresh = await _sign_in(url, signed.group(1), signed.group(2))
    screenshots = Path(os.environ.get("LLM_WARMTH_SCREENSHOTS") or tmp_path)
    async with chromium_page(
        tmp_path / "profile", height=1500, init_script=sign_in_script(url, access, refresh)
    ) as page:
        text = await look(
            page,
            f"{url}{path}",
            [
                "Assistant",
                "llama3.2:3b Warmth",
                "qwen3:8b Warmth",
                "Time to first token (probes)",
                "had a cold start",
                "was loaded in",
                "was unloaded",
            ],
            screenshots / "demo",
        )
    assert "Warm" in text

    # Ctrl+C: the demo stops Home Assistant and itself, cleanly.
    running.process.send_signal(signal.SIGINT)
    await running.until(r"^Demo stopped", timeout=120)
    async with asyncio.timeout(30):
        assert await running.process.wait() == 0
    output = "".join(running.lines)
    assert "Traceback" not in output
    assert "ERROR" not in output
    log = (state / "home-assistant.log").read_text()
    errors = [line for line in log.splitlines() if " ERROR " in line]
    assert errors == [], errors
    # Nothing waits in Settings -> Repairs either.
    registry = state / "config" / ".storage" / "repairs.issue_registry"
    issues = json.loads(registry.read_text())["data"]["issues"] if registry.exists() else []
    assert [issue["issue_id"] for issue in issues] == []


async def test_develop_starts_clean(socket_enabled: None, tmp_path: Path) -> None:
    """scripts/develop: up on loopback, no HTTP trial to confirm, no error in its log."""
    config = tmp_path / "config"
    config.mkdir()
    shutil.copy(ROOT / "config" / "configuration.yaml", config)
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        str(ROOT / "scripts" / "develop"),
        "--port",
        str(port),
        "--config",
        str(config),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        async with aiohttp.ClientSession() as http, asyncio.timeout(300):
            while True:
                with contextlib.suppress(aiohttp.ClientError):
                    async with http.get(f"http://127.0.0.1:{port}/api/onboarding") as answer:
                        steps = await answer.json()
                        break
                await asyncio.sleep(1)
        # Only the owner is left to create (the first run's one step in the browser).
        assert [s["step"] for s in steps if not s["done"]] == ["user"]
        await asyncio.sleep(5)  # what the start logs after the HTTP server is up
    finally:
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(60):
            await process.wait()
    http_store = json.loads((config / ".storage" / "http").read_text())["data"]
    assert http_store["pending"] is None
    assert http_store["stable"]["server_host"] == ["127.0.0.1"]
    log = (config / "home-assistant.log").read_text()
    assert [line for line in log.splitlines() if " ERROR " in line] == []


@pytest.mark.e2e
async def test_the_demo_against_a_real_server(ollama_url: str, tmp_path: Path) -> None:
    """``scripts/demo --server URL``: the real Ollama instead of the emulated GPU box."""
    ollama = ollama_url
    running = await start_demo(tmp_path / "demo", "--server", ollama)
    process = running.process
    try:
        signed = await running.until(r"Sign in as '(\w+)' with password '([\w-]+)'", 420)
        dashboard = await running.until(r"Dashboard: (http://127\.0\.0\.1:\d+)/", 30)
        await running.until(r"^ready", 30)
        url = dashboard.group(1)
        access, _refresh = await _sign_in(url, signed.group(1), signed.group(2))
        async with (
            aiohttp.ClientSession(headers={"Authorization": f"Bearer {access}"}) as http,
            http.get(f"{url}/api/states") as answer,
        ):
            states = {s["entity_id"]: s["state"] for s in await answer.json()}
        # The real server's models, with their warmth, and no scripted morning.
        assert {e for e in states if e.endswith(("_tiny_warmth", "_big_warmth"))} != set()
        assert not any("probes the assistant model" in line for line in running.lines)
        process.send_signal(signal.SIGINT)
        await running.until(r"^Demo stopped", 120)
        assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_ctrl_c_while_the_demo_starts(socket_enabled: None, tmp_path: Path) -> None:
    """Stopped before Home Assistant is up: it still stops everything, cleanly."""
    running = await start_demo(tmp_path / "demo")
    try:
        await running.until(r"^Starting Home Assistant", timeout=60)
        running.process.send_signal(signal.SIGINT)
        await running.until(r"^Demo stopped", timeout=120)
        async with asyncio.timeout(30):
            assert await running.process.wait() == 0
        assert "Traceback" not in "".join(running.lines)
    finally:
        if running.process.returncode is None:
            running.process.kill()
            await running.process.wait()


def test_the_demo_installs_the_blueprints_and_loads_automations(tmp_path: Path) -> None:
    """Each start: automations, scripts and scenes as the UI saves them; the blueprints."""
    state = tmp_path / "demo"
    write_config(state, 8123)
    config = state / "config"
    (config / "blueprints" / "automation" / "llm_warmth" / "old.yaml").write_text("stale")
    (config / "automations.yaml").write_text("- id: '1'\n")
    write_config(state, 8123)  # the second start: written again
    text = (config / "configuration.yaml").read_text()
    for line in (
        "automation: !include automations.yaml",
        "script: !include scripts.yaml",
        "scene: !include scenes.yaml",
    ):
        assert line in text.splitlines()
    assert (config / "automations.yaml").read_text() == "[]\n"
    assert (config / "scripts.yaml").read_text() == ""
    assert (config / "scenes.yaml").read_text() == ""
    installed = config / "blueprints" / "automation" / "llm_warmth"
    shipped = ROOT / "blueprints" / "automation" / "llm_warmth"
    assert sorted(p.name for p in installed.iterdir()) == sorted(p.name for p in shipped.iterdir())
    for blueprint in shipped.iterdir():
        assert (installed / blueprint.name).read_bytes() == blueprint.read_bytes()


def test_the_demo_refuses_a_folder_it_did_not_make(tmp_path: Path) -> None:
    """--state-dir pointing at a real Home Assistant's folder is refused, not wiped."""
    (tmp_path / "configuration.yaml").write_text("homeassistant:\n")
    with pytest.raises(SystemExit, match="not a folder scripts/demo made"):
        write_config(tmp_path, 8123)
    assert (tmp_path / "configuration.yaml").exists()
