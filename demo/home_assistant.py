"""A Home Assistant of its own for the demo: config, start, onboarding, integration, dashboard.

Everything after the start goes through Home Assistant's public HTTP and websocket APIs,
the way the frontend does it: onboarding creates the user, the config flow adds the server,
the ``llm_warmth.dashboard`` action's dashboard is saved as a new dashboard.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
import json
import os
from pathlib import Path
import shutil
import sys
from typing import Any

import aiohttp
from homeassistant.components.http.config import (
    HTTP_STORAGE_SCHEMA,
    STORAGE_MINOR_VERSION,
    STORAGE_VERSION,
)

ROOT = Path(__file__).resolve().parent.parent
USERNAME = "demo"
PASSWORD = "warmth-demo"  # a demo on loopback: printed for the user
DASHBOARD = "llm-warmth"
BLUEPRINTS = ROOT / "blueprints" / "automation" / "llm_warmth"
# The integration as it is in the repository, and the demo's household beside it.
INTEGRATIONS = {
    "llm_warmth": ROOT / "custom_components" / "llm_warmth",
    "llm_warmth_demo": ROOT / "demo" / "llm_warmth_demo",
}
# The live view's span on the demo's dashboard at first: its fast-forwarded morning fills
# the load and probe graphs (a household's dashboard shows 6 hours). The household script
# widens it as the demo runs (``household.SPANS``).
DASHBOARD_HOURS = 0.05
_CONFIGURATION = """\
# Written by scripts/demo (it is rewritten on every start).
homeassistant:
  name: LLM Warmth demo
  # What onboarding's location step would ask (that step is skipped: see prepare_storage).
  country: US

frontend:
config:
history:
logbook:

# As in Home Assistant's own first configuration (its default_config is left out: some of
# its integrations reach the internet): what the UI's automation, script and scene editors
# save goes to these files, and an automation made from a blueprint loads at once.
automation: !include automations.yaml
script: !include scripts.yaml
scene: !include scenes.yaml

# A stand-in for a household service that needs the GPU (a Plex transcode): turn it on to
# try the "free the GPU" blueprint on the emulated server.
input_boolean:
  plex_transcoding:
    name: Plex transcoding (pretend)
    icon: mdi:plex

logger:
  default: warning
  logs:
    custom_components.llm_warmth: info
    # Text-to-speech checks for an ffmpeg binary at every start; the demo does not speak.
    haffmpeg: critical
"""


def write_config(state: Path, port: int) -> None:
    """Write a fresh configuration for the demo under ``state/config``.

    With it, the project's blueprints as copied from the repository (each start: as they
    are now), under ``blueprints/automation/llm_warmth`` where an imported one goes; Home
    Assistant then does not add its example blueprints (it does only into no folder).

    Only a folder the demo made (it leaves a marker) is wiped: ``--state-dir`` pointing at
    a real Home Assistant's folder is refused.
    """
    marker = state / ".llm-warmth-demo"
    config_dir = state / "config"
    if state.exists() and any(state.iterdir()) and not marker.exists():
        raise SystemExit(f"{state} is not a folder scripts/demo made: choose another --state-dir")
    state.mkdir(parents=True, exist_ok=True)
    marker.touch()
    shutil.rmtree(config_dir, ignore_errors=True)
    config_dir.mkdir()
    (config_dir / "configuration.yaml").write_text(_CONFIGURATION)
    # The files Home Assistant's first start writes for its own configuration's includes.
    (config_dir / "automations.yaml").write_text("[]\n")
    (config_dir / "scripts.yaml").write_text("")
    (config_dir / "scenes.yaml").write_text("")
    shutil.copytree(BLUEPRINTS, config_dir / "blueprints" / "automation" / "llm_warmth")
    install_integrations(config_dir)
    prepare_storage(config_dir, port)


def install_integrations(config_dir: Path) -> None:
    """Link the integration and the demo's household into ``custom_components``.

    Links, not copies: the integration runs as it is in the repository. Home Assistant
    imports ``custom_components`` from its configuration folder first, so the
    repository's own (on the path for the household's imports) is not the one it reads.
    """
    folder = config_dir / "custom_components"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""Linked by scripts/demo."""\n')
    for domain, source in INTEGRATIONS.items():
        (folder / domain).symlink_to(source, target_is_directory=True)


def prepare_storage(config_dir: Path, port: int) -> None:
    """Seed what a first start needs, where not there yet (``scripts/develop`` uses it too).

    The listening address goes into ``.storage/http`` as a confirmed setting: an ``http:``
    block in YAML would be a pending trial in Home Assistant 2026.10, reverted (and Home
    Assistant restarted) unless someone confirms it in the UI within 5 minutes. And only
    onboarding's first step (the owner) is left: its other steps add the weather, radio and
    speech integrations, which reach the internet and log errors without it.
    """
    storage = config_dir / ".storage"
    storage.mkdir(parents=True, exist_ok=True)
    if not (storage / "http").exists():
        (storage / "http").write_text(json.dumps(http_storage(port), indent=2))
    if not (storage / "onboarding").exists():
        (storage / "onboarding").write_text(
            json.dumps(
                {
                    "version": 4,
                    "minor_version": 1,
                    "key": "onboarding",
                    "data": {"done": ["core_config", "analytics", "integration"]},
                }
            )
        )


def http_storage(port: int) -> dict[str, Any]:
    """Return Home Assistant's HTTP store with 127.0.0.1:``port`` as the confirmed setting.

    Its defaults come from Home Assistant's own schema of that store.
    """
    stable = HTTP_STORAGE_SCHEMA({"server_host": ["127.0.0.1"], "server_port": port})
    return {
        "version": STORAGE_VERSION,
        "minor_version": STORAGE_MINOR_VERSION,
        "key": "http",
        "data": {
            "stable": {
                **stable,
                "created_at": "2026-11-30T00:00:00+00:00",
                "error": None,
                "error_message": None,
            },
            "pending": None,
            "yaml_migration_done": True,
        },
    }


async def start(config_dir: Path, log: Path) -> asyncio.subprocess.Process:
    """Start Home Assistant on ``config_dir``; its output goes to ``log``."""
    env = dict(os.environ)
    # Home Assistant imports custom integrations as ``custom_components.<domain>``: the
    # repository root on the path makes it find this one without a copy or a link.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    with log.open("wb") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "homeassistant",
            "--config",
            str(config_dir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
        )


@dataclass
class Session:
    """A signed-in API session with the Home Assistant of the demo."""

    url: str
    http: aiohttp.ClientSession
    access_token: str

    @property
    def headers(self) -> dict[str, str]:
        """Return the authorization header."""
        return {"Authorization": f"Bearer {self.access_token}"}

    async def post(self, path: str, data: dict[str, Any]) -> Any:
        """POST JSON to the REST API and return the JSON answer."""
        async with self.http.post(f"{self.url}{path}", json=data, headers=self.headers) as answer:
            answer.raise_for_status()
            return await answer.json()

    async def websocket(self, *commands: dict[str, Any]) -> list[Any]:
        """Send websocket commands; return their results."""
        results: list[Any] = []
        async with self.http.ws_connect(f"{self.url}/api/websocket") as ws:
            await ws.receive_json()
            await ws.send_json({"type": "auth", "access_token": self.access_token})
            if (await ws.receive_json())["type"] != "auth_ok":
                raise RuntimeError("the websocket did not accept the token")
            for number, command in enumerate(commands, start=1):
                await ws.send_json({"id": number, **command})
                answer = await ws.receive_json()
                if not answer.get("success"):
                    raise RuntimeError(f"{command['type']} failed: {answer.get('error')}")
                results.append(answer.get("result"))
        return results


async def wait_until_up(http: aiohttp.ClientSession, url: str, process: Any) -> None:
    """Wait until Home Assistant answers (its first start takes a while)."""
    async with asyncio.timeout(600):
        while True:
            if process.returncode is not None:
                raise RuntimeError("Home Assistant exited during its start")
            try:
                async with http.get(f"{url}/api/onboarding") as answer:
                    if answer.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(1)


async def onboard(http: aiohttp.ClientSession, url: str) -> Session:
    """Create the owner through the onboarding API (the last step left); sign in."""
    client_id = f"{url}/"
    async with http.post(
        f"{url}/api/onboarding/users",
        json={
            "client_id": client_id,
            "name": "Demo",
            "username": USERNAME,
            "password": PASSWORD,
            "language": "en",
        },
    ) as answer:
        answer.raise_for_status()
        code = (await answer.json())["auth_code"]
    async with http.post(
        f"{url}/auth/token",
        data={"grant_type": "authorization_code", "code": code, "client_id": client_id},
    ) as answer:
        answer.raise_for_status()
        tokens = await answer.json()
    return Session(url, http, tokens["access_token"])


async def add_server(
    session: Session, server_url: str, assistant_model: str | None, exporter_url: str | None = None
) -> str:
    """Add the LLM server through the integration's config flow; return the entry id.

    With ``assistant_model``: the options too (the assistant model, polls every 10 s, a
    household reserve of 1 GiB; the GPU read from the exporter at ``exporter_url``).
    """
    flow = await session.post("/api/config/config_entries/flow", {"handler": "llm_warmth"})
    result = await session.post(
        f"/api/config/config_entries/flow/{flow['flow_id']}",
        {"url": server_url, "api_key": "", "verify_ssl": True},
    )
    if result.get("type") != "create_entry":
        raise RuntimeError(f"the config flow did not add {server_url}: {result}")
    entry_id: str = result["result"]["entry_id"]
    if assistant_model:
        options = await session.post(
            "/api/config/config_entries/options/flow", {"handler": entry_id}
        )
        step = await session.post(
            f"/api/config/config_entries/options/flow/{options['flow_id']}",
            {
                "scan_interval": 10,
                "assistant_model": assistant_model,
                "gpu_source": "exporter" if exporter_url else "none",
                "reserve_gib": 1.0,
            },
        )
        if exporter_url:
            step = await session.post(
                f"/api/config/config_entries/options/flow/{options['flow_id']}",
                {"exporter_url": exporter_url, "exporter_kind": "nvidia_gpu_exporter"},
            )
        if step.get("type") != "create_entry":
            raise RuntimeError(f"the options of {server_url} were not saved: {step}")
    return entry_id


async def add_dashboard(session: Session) -> str:
    """Create a dashboard with the ``llm_warmth.dashboard`` action's cards; return its path."""
    await session.websocket(
        {
            "type": "lovelace/dashboards/create",
            "url_path": DASHBOARD,
            "title": "LLM Warmth",
            "icon": "mdi:thermometer",
            "mode": "storage",
            "show_in_sidebar": True,
            "require_admin": False,
        }
    )
    return await save_dashboard(session)


async def save_dashboard(session: Session, hours: float = DASHBOARD_HOURS) -> str:
    """Build the dashboard again (new sensors: after a first probe) and save it.

    ``hours``: its live view's span. An open dashboard shows the new one at once (Home
    Assistant tells the frontend that it changed).
    """
    (answer,) = await session.websocket(
        {
            "type": "call_service",
            "domain": "llm_warmth",
            "service": "dashboard",
            "service_data": {"hours_to_show": hours},
            "return_response": True,
        }
    )
    config = answer["response"]["config"]
    await session.websocket(
        {"type": "lovelace/config/save", "url_path": DASHBOARD, "config": config}
    )
    return f"/{DASHBOARD}/{config['views'][0]['path']}"


async def probe(session: Session, entry_id: str, model: str) -> str:
    """Run the probe action; return its one-line summary."""
    (answer,) = await session.websocket(
        {
            "type": "call_service",
            "domain": "llm_warmth",
            "service": "probe",
            "service_data": {"config_entry_id": entry_id, "model": model},
            "return_response": True,
        }
    )
    return str(answer["response"]["summary"])


async def flow(session: Session, path: str, handler: Any, *steps: dict[str, Any]) -> Any:
    """Run a config flow (or a subentry flow) through the REST API, as the UI does."""
    result = await session.post(f"{path}", {"handler": handler})
    for step in steps:
        result = await session.post(f"{path}/{result['flow_id']}", step)
    if result.get("type") != "create_entry":
        raise RuntimeError(f"the flow of {handler} did not finish: {result}")
    return result
