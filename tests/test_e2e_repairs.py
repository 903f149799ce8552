"""Reload thrash on the real llama-server (e2e): two models that do not fit displace each other.

With ``--models-max 1``, another client loading tiny, then big, then tiny, then big makes
each displace the other twice: the integration, on its own timers, raises the repair with
its cause.
"""

from __future__ import annotations

import asyncio

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
import pytest

from custom_components.llm_warmth.const import DOMAIN

from .e2e import add_server, wait_until
from .test_e2e_llama_server import call, statuses, unload_all


async def load(url: str, model: str) -> None:
    """Load ``model`` as another client would, and wait until the server has it."""
    await call(url, "/models/load", {"model": model})
    for _ in range(600):
        if (await statuses(url)).get(model) == "loaded":
            return
        await asyncio.sleep(0.1)
    pytest.fail(f"{model} did not load")


@pytest.mark.e2e
async def test_two_models_that_do_not_fit_raise_the_thrash_repair(
    hass: HomeAssistant,
    llama_url: str,
    issue_registry: ir.IssueRegistry,
) -> None:
    await unload_all(llama_url)
    entry = await add_server(hass, llama_url, interval=2.0)
    issue_id = f"reload_thrash_{entry.entry_id}_big_tiny"
    coordinator = entry.runtime_data.coordinator
    for model in ("tiny", "big", "tiny", "big", "tiny"):
        assert issue_registry.async_get_issue(DOMAIN, issue_id) is None
        await load(llama_url, model)
        await wait_until(lambda m=model: m in coordinator.data.held, 10, f"{model} seen")
        await asyncio.sleep(2.5)  # a poll after the load (the events may be quicker)
    issue = issue_registry.async_get_issue(DOMAIN, issue_id)
    assert issue is not None
    # llama-server reports no model sizes: the repair says they do not fit, without sizes.
    assert issue.translation_key == "reload_thrash_do_not_fit_unsized"
    print(f"\nthrash repair: {issue.translation_placeholders}")
    assert int(issue.translation_placeholders["count"]) == 4
    await unload_all(llama_url)
    await hass.config_entries.async_unload(entry.entry_id)
    assert issue_registry.async_get_issue(DOMAIN, issue_id) is None
