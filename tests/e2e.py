"""Shared helpers of the end-to-end tests against the real servers of scripts/llm_servers."""

import asyncio
from collections.abc import Callable
import os
from typing import Any

import aiohttp
from homeassistant.config_entries import SOURCE_USER, ConfigEntry, ConfigEntryState
from homeassistant.const import CONF_SCAN_INTERVAL, CONF_URL, CONF_VERIFY_SSL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest

from custom_components.llm_warmth.const import (
    CONF_GUARD_CLEAR_MINUTES,
    CONF_PROTECTED_ENTITIES,
    DOMAIN,
)


def server_url(variable: str) -> str:
    """Return the server URL from the environment, or skip (fail in CI) without it."""
    url = os.environ.get(variable)
    if url:
        return url.rstrip("/")
    reason = (
        f"{variable} is not set: start the real servers with `scripts/llm_servers start`"
        " and export what `scripts/llm_servers env` prints"
    )
    if os.environ.get("LLM_WARMTH_REQUIRE_E2E"):
        pytest.fail(reason)
    pytest.skip(reason)


async def ollama_call(url: str, path: str, payload: dict[str, object]) -> dict[str, object]:
    """POST to the real Ollama as another client would (no streaming), and return the reply."""
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session,
        session.post(f"{url}{path}", json={"stream": False, **payload}) as response,
    ):
        response.raise_for_status()
        reply: dict[str, object] = await response.json()
        return reply


async def ollama_get(url: str, path: str) -> dict[str, object]:
    """GET from the real Ollama directly, as another client would."""
    async with aiohttp.ClientSession() as session, session.get(f"{url}{path}") as response:
        response.raise_for_status()
        reply: dict[str, object] = await response.json()
        return reply


async def evict(url: str, model: str, *, within: float = 30.0) -> None:
    """Unload ``model`` and wait until the server no longer lists it (its runner exited)."""
    await ollama_call(url, "/api/generate", {"model": model, "keep_alive": 0})
    deadline = asyncio.get_running_loop().time() + within
    async with aiohttp.ClientSession() as session:
        while asyncio.get_running_loop().time() < deadline:
            async with session.get(f"{url}/api/ps") as response:
                # Ollama 0.9.3 has answered a 500 with no body while a runner exited (seen
                # once in CI): asked again, as for a model still listed.
                listed = (
                    [m["name"] for m in (await response.json())["models"] or []]
                    if response.status == 200
                    else [model]
                )
            if not any(name == model or name.startswith(f"{model}:") for name in listed):
                return
            await asyncio.sleep(0.2)
    pytest.fail(f"{model} was still resident {within:g} s after its eviction")


async def lists_only_once_loaded(url: str) -> bool:
    """Return True for an Ollama that lists a model in /api/ps only once it is loaded.

    Measured on the real servers: 0.9.3 lists it 0.05 s into its load, 0.34.4 only when
    its llama-server runner is up (tests/fixtures/ollama_current/README.md).
    """
    version = str((await ollama_get(url, "/api/version"))["version"])
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) >= (0, 30)


def drop_from_page_cache(path: str) -> None:
    """Make the next read of ``path`` come from disk (the cold start of a fresh boot)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


async def model_file(url: str, model: str) -> str:
    """Return the path of a model's weights on the server (the FROM line of /api/show)."""
    shown = await ollama_call(url, "/api/show", {"model": model})
    return next(
        line.removeprefix("FROM ").strip()
        for line in str(shown["modelfile"]).splitlines()
        if line.startswith("FROM /")
    )


async def call(hass: HomeAssistant, action: str, **data: Any) -> dict[str, Any]:
    """Call one of the integration's actions and return its answer."""
    response = await hass.services.async_call(
        DOMAIN, action, data, blocking=True, return_response=True
    )
    assert response is not None
    return dict(response)


async def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Let the event loop (and the integration's own timers) run until ``condition`` holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"{what} did not happen within {timeout:g} s")
        await asyncio.sleep(0.05)


async def add_server(hass: HomeAssistant, url: str, interval: float = 2.0) -> ConfigEntry:
    """Add the server through the config flow, as a user would, polled every ``interval``."""
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: url, CONF_VERIFY_SSL: True}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    entry: ConfigEntry = result["result"]
    await hass.async_block_till_done()
    result = await hass.config_entries.options.async_init(entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {CONF_SCAN_INTERVAL: interval}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()  # the new options reload the entry
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data.coordinator.update_interval.total_seconds() == interval
    return entry


async def protect(hass: HomeAssistant, entry: ConfigEntry, *entities: str) -> None:
    """Give the entry's household guard these protected entities (none waits to clear)."""
    hass.config_entries.async_update_entry(
        entry,
        options={
            **entry.options,
            CONF_PROTECTED_ENTITIES: list(entities),
            CONF_GUARD_CLEAR_MINUTES: 0,
        },
    )
    await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()
