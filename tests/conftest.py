"""Fixtures: the Ollama emulator on loopback and a config entry pointing at it."""

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection, Generator
from datetime import datetime
from pathlib import Path
import socket
import threading
from typing import Any
from unittest.mock import patch

import aiohttp
from aiohttp import web
from freezegun.api import FrozenDateTimeFactory
from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryChange,
)
from homeassistant.const import CONF_API_KEY, CONF_SCAN_INTERVAL, CONF_URL, CONF_VERIFY_SSL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.util import slugify
from hypothesis import settings
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
    async_fire_time_changed_exact,
)
from syrupy.assertion import SnapshotAssertion

from custom_components.llm_warmth.const import DOMAIN
from custom_components.llm_warmth.coordinator import LlmWarmthCoordinator
from custom_components.llm_warmth.core.gpu.exporter import ExporterKind

from .e2e import server_url
from .llama_swaps import Swaps
from .ollama_emulator import EmulatedModel, OllamaEmulator

GPU_FIXTURES = Path(__file__).parent / "fixtures" / "gpu"
EXPORTER_FILES = {
    ExporterKind.DCGM: "dcgm_exporter.txt",
    ExporterKind.NVIDIA_GPU_EXPORTER: "nvidia_gpu_exporter.txt",
    ExporterKind.LLAMA_SWAP: "llama_swap_metrics.txt",
}


def exporter_fixture(kind: ExporterKind) -> str:
    """Return an exporter's published metrics text for the tests' two-GPU host."""
    return (GPU_FIXTURES / EXPORTER_FILES[kind]).read_text()


pytest_plugins = ["pytest_homeassistant_custom_component"]

# The real servers the e2e tests run on (scripts/llm_servers starts them): each Ollama test
# runs on both releases, the variable naming the server's URL (and, with _RESTART instead of
# _URL, the command that restarts it).
OLLAMA_SERVERS = {
    "ollama-0.9.3": "LLM_WARMTH_OLLAMA",
    "ollama-current": "LLM_WARMTH_OLLAMA_CURRENT",
}


@pytest.fixture(params=list(OLLAMA_SERVERS.values()), ids=list(OLLAMA_SERVERS))
def ollama_server(request: pytest.FixtureRequest) -> str:
    """Return the variable prefix of one real Ollama release (the test runs on each)."""
    prefix: str = request.param
    return prefix


@pytest.fixture
def ollama_url(ollama_server: str, socket_enabled: None) -> str:
    """Return the URL of a real Ollama (skipped without one; CI fails instead)."""
    return server_url(f"{ollama_server}_URL")


@pytest.fixture(params=["emulator", pytest.param("real", marks=pytest.mark.e2e)])
async def swaps(
    request: pytest.FixtureRequest, tmp_path: Path, socket_enabled: None
) -> AsyncGenerator[Swaps]:
    """Start llama-swaps of the test's own: the emulator, then the real binary (e2e)."""
    started = Swaps(request.param, tmp_path)
    yield started
    await started.close()


@pytest.fixture
def llama_url(socket_enabled: None) -> str:
    """Return the URL of the real llama-server in router mode."""
    return server_url("LLM_WARMTH_LLAMA_URL")


ENTRY_ID = "01JLLMWARMTHTESTENTRY0000"
LLAMA = "llama3.2:3b"
QWEN = "qwen3:8b"
GIB = 1024**3


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations(request: pytest.FixtureRequest) -> None:
    """Load custom integrations in every test.

    The recorder must be set up before ``hass`` exists: tests marked ``browser`` (which show
    history and the logbook) or ``recorder`` get it first.
    """
    if request.node.get_closest_marker("browser") or request.node.get_closest_marker("recorder"):
        request.getfixturevalue("recorder_mock")
    request.getfixturevalue("enable_custom_integrations")


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """Use Home Assistant's snapshot serializer."""
    from pytest_homeassistant_custom_component.syrupy import (  # noqa: PLC0415
        HomeAssistantSnapshotExtension,
    )

    return snapshot.use_extension(HomeAssistantSnapshotExtension)


@pytest.fixture
def entity_registry_enabled_by_default() -> Generator[None]:
    """Create entities that are disabled by default enabled."""
    with patch(
        "homeassistant.helpers.entity.Entity.entity_registry_enabled_default", return_value=True
    ):
        yield


def free_port() -> int:
    """Return a TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def add_entry(hass: HomeAssistant, entry: MockConfigEntry) -> MockConfigEntry:
    """Add another integration's entry as Home Assistant does: kept, and announced.

    (``MockConfigEntry.add_to_hass`` keeps it without saying so; Home Assistant's own
    ``async_add`` sends the change that LLM Warmth reads its agents again on.)
    """
    entry.add_to_hass(hass)
    async_dispatcher_send(hass, SIGNAL_CONFIG_ENTRY_CHANGED, ConfigEntryChange.ADDED, entry)
    return entry


def add_ollama_agent(
    hass: HomeAssistant,
    url: str,
    model: str,
    *,
    title: str = "Kitchen assistant",
    **settings: Any,
) -> MockConfigEntry:
    """Home Assistant's Ollama integration at ``url`` with one conversation agent (a subentry)."""
    return add_entry(
        hass,
        MockConfigEntry(
            domain="ollama",
            data={"url": url},
            subentries_data=[
                {
                    "data": {"model": model, **settings},
                    "subentry_type": "conversation",
                    "title": title,
                    "unique_id": None,
                }
            ],
        ),
    )


def model_id(entry: ConfigEntry, entity_id: str) -> str:
    """Return a model entity's id as Home Assistant makes it: the server's name comes first.

    ``model_id(entry, "sensor.big")`` is ``sensor.<server>_big`` (models are
    child devices of their server, so their ids name it).
    """
    domain, object_id = entity_id.split(".", 1)
    return f"{domain}.{slugify(entry.title)}_{object_id}"


def model_device(
    registry: dr.DeviceRegistry, model: str, entry_id: str = ENTRY_ID
) -> dr.ChildDeviceEntry | None:
    """Return a model's device: a child device of its server."""
    return registry.async_get_child_device_by_identifier((DOMAIN, f"{entry_id}_{model}"), entry_id)


def make_models() -> list[EmulatedModel]:
    """Two installed models: a small one that fits the GPU, a bigger one."""
    return [
        EmulatedModel(name=LLAMA, size=3 * GIB, parameter_size="3.2B", context_length=131072),
        EmulatedModel(
            name=QWEN,
            size=6 * GIB,
            family="qwen3",
            parameter_size="8.2B",
            quantization_level="Q4_K_M",
            context_length=40960,
        ),
    ]


@pytest.fixture
async def emulator(socket_enabled: None) -> AsyncGenerator[OllamaEmulator]:
    """Start an Ollama emulator on 127.0.0.1 with two installed models."""
    server = OllamaEmulator(vram_budget=8 * GIB)
    for model in make_models():
        server.add_model(model)
    await server.start()
    # The coordinator compares the server's expiries with this clock: align both.
    with patch.object(LlmWarmthCoordinator, "utcnow", staticmethod(server.clock.now)):
        yield server
    await server.stop()


@pytest.fixture
def mock_config_entry(emulator: OllamaEmulator) -> MockConfigEntry:
    """A config entry for the emulator."""
    return MockConfigEntry(
        domain=DOMAIN,
        title="Ollama test",
        entry_id=ENTRY_ID,
        unique_id=emulator.url,
        version=2,
        data={
            CONF_URL: emulator.url,
            CONF_API_KEY: "",
            CONF_VERIFY_SSL: True,
            "server_kind": "ollama",
        },
        options={CONF_SCAN_INTERVAL: 10},
    )


@pytest.fixture
async def init_integration(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry
) -> MockConfigEntry:
    """Set up the integration against the emulator."""
    mock_config_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    return mock_config_entry


@pytest.fixture
def poll(hass: HomeAssistant, mock_config_entry: MockConfigEntry) -> Callable[[], Awaitable[None]]:
    """Return a coroutine function that runs one poll of the coordinator now."""

    async def run_poll() -> None:
        await mock_config_entry.runtime_data.coordinator.async_refresh()
        await hass.async_block_till_done()

    return run_poll


@pytest.fixture
def make_resident(
    emulator: OllamaEmulator, poll: Callable[[], Awaitable[None]]
) -> Callable[..., Awaitable[None]]:
    """Return a coroutine function: load a model as another client would, then poll twice.

    The second poll confirms a model first seen with a steady expiry: after it the
    integration holds the model as loaded (its loaded event fired).
    """

    async def resident(model: str, **payload: Any) -> None:
        await ollama_request(emulator, "/api/generate", {"model": model, **payload})
        await poll()
        await poll()

    return resident


async def start_load(
    emulator: OllamaEmulator,
    model: str,
    load_delay: float | None,
    path: str = "/api/generate",
    **payload: Any,
) -> asyncio.Task[Any]:
    """Start loading ``model`` as another client would; return once the server lists it.

    ``load_delay=None`` holds the load until ``emulator.finish_loads()`` (the test says when
    it ends). ``payload`` goes into the request (``options={"num_ctx": 8192}`` reloads a
    resident model).

    A plain asyncio task, not ``hass.async_create_task``: ``async_block_till_done`` must not
    wait for the load, or the coordinator's own fast poll would see it end first.
    """
    if load_delay is None:
        emulator.hold_loads()
    else:
        emulator.models[model].load_delay = load_delay
    load = asyncio.create_task(ollama_request(emulator, path, {"model": model, **payload}))
    async with asyncio.timeout(5):
        await emulator.wait_loading(model)
    return load


async def at_moment(
    hass: HomeAssistant, freezer: FrozenDateTimeFactory, emulator: OllamaEmulator, when: datetime
) -> None:
    """Move Home Assistant's and the emulator's clocks to ``when``; let the timers run."""
    freezer.move_to(when)
    emulator.clock.set(when)
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)


async def advance(
    hass: HomeAssistant,
    freezer: FrozenDateTimeFactory,
    seconds: float,
    step: float = 0.05,
    *,
    besides: Collection[asyncio.Future[Any]] = (),
) -> None:
    """Let ``seconds`` pass on the frozen clock, ``step`` by ``step``, each timer on time.

    Each step fires the timers due by then, and only those (``async_fire_time_changed``
    would also fire those due within the next half second), then waits for what they
    started: the polls reach the server at the frozen time they were due. ``besides``:
    Home Assistant's tasks not to wait for (an action waiting on a load the test holds).
    """
    for _ in range(round(seconds / step)):
        freezer.tick(step)
        async_fire_time_changed_exact(hass)
        await within_real_seconds(block_till_done_besides(hass, besides), 10)


async def advance_until(
    hass: HomeAssistant,
    freezer: FrozenDateTimeFactory,
    condition: Callable[[], object],
    seconds: float,
    what: str,
    *,
    step: float = 0.05,
    besides: Collection[asyncio.Future[Any]] = (),
) -> None:
    """``advance`` until ``condition`` holds; fail if it does not within ``seconds``."""
    for _ in range(round(seconds / step)):
        if condition():
            return
        await advance(hass, freezer, step, step, besides=besides)
    if not condition():
        pytest.fail(f"{what} did not happen within {seconds:g} s")


async def block_till_done_besides(
    hass: HomeAssistant, besides: Collection[asyncio.Future[Any]]
) -> None:
    """``hass.async_block_till_done(wait_background_tasks=True)``, not waiting for ``besides``."""
    if not besides:
        await hass.async_block_till_done(wait_background_tasks=True)
        return
    await asyncio.sleep(0)
    while pending := [
        task
        for task in hass._tasks | hass._background_tasks
        if not task.done() and task not in besides
    ]:
        await asyncio.wait(pending)


async def within_real_seconds[T](awaitable: Awaitable[T], seconds: float) -> T:
    """Await ``awaitable``; fail if it takes more than ``seconds`` of real time.

    For a frozen clock, on which the loop's own timeouts never fire: a timer that is due
    again at once (a poll scheduled in the past) would spin for ever at one frozen instant.
    """
    task = asyncio.ensure_future(awaitable)
    loop = asyncio.get_running_loop()
    watchdog = threading.Timer(seconds, loop.call_soon_threadsafe, (task.cancel,))
    watchdog.start()
    try:
        return await task
    except asyncio.CancelledError:
        if watchdog.finished.is_set():
            pytest.fail(f"still not done after {seconds:g} s of real time")
        raise
    finally:
        watchdog.cancel()


async def ollama_request(emulator: OllamaEmulator, path: str, payload: dict[str, Any]) -> Any:
    """Send a request straight to the emulator, as another client (a chat UI) would."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{emulator.url}{path}", json={"stream": False, **payload}) as response,
    ):
        return await response.json()


@pytest.fixture
async def exporter_url(socket_enabled: None) -> AsyncGenerator[str]:
    """Serve the fixtures (and some failures) over HTTP on loopback."""

    async def metrics(request: web.Request) -> web.Response:
        kind = ExporterKind(request.match_info["kind"])
        return web.Response(text=exporter_fixture(kind), content_type="text/plain")

    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=500, text="exporter crashed")

    # The slow exporter answers only when the fixture ends (long after any timeout).
    ended = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        await ended.wait()
        return web.Response(text="")

    app = web.Application()
    app.router.add_get("/{kind}/metrics", metrics)
    app.router.add_get("/broken", broken)
    app.router.add_get("/slow", slow)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}"
    ended.set()
    await runner.cleanup()


# Property-based tests judge what a parser returns, never how fast: Hypothesis' default
# 200 ms deadline would make a busy 2-core machine fail a correct test.
settings.register_profile("llm_warmth", deadline=None)
settings.load_profile("llm_warmth")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep every e2e test on one xdist worker, one after the other.

    They share the kit's real servers (a test unloads what another loaded), so they must
    not overlap; the unit tests share the other worker. ``--dist loadgroup`` (scripts/test)
    honours the group, read by xdist's own hook of this name: this one must run first (it
    did not, and e2e tests ran side by side on both workers). Without xdist the mark does
    nothing.
    """
    for item in items:
        if item.get_closest_marker("e2e") is not None:
            item.add_marker(pytest.mark.xdist_group("real_servers"))
