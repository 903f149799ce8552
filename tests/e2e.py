"""Shared helpers of the end-to-end tests against the real servers from ../shared/servers."""

import os

import aiohttp
import pytest


def server_url(variable: str) -> str:
    """Return the server URL from the environment, or skip (fail in CI) without it."""
    url = os.environ.get(variable)
    if url:
        return url.rstrip("/")
    reason = f"{variable} is not set: start ../shared/servers/start_servers.sh and export it"
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
