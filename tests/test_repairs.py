"""Repair issues: a reload waiting to happen, reload thrash, an agent overriding a pin."""

from __future__ import annotations

from datetime import UTC, datetime

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.const import DOMAIN
from custom_components.llm_warmth.core.repair_issues import thrash_issue
from custom_components.llm_warmth.core.repairs import (
    KeepAliveConflict,
    Kept,
    Thrash,
    ThrashCause,
)
from custom_components.llm_warmth.repairs import keep_alive_issue

from .conftest import ENTRY_ID, LLAMA, QWEN, add_ollama_agent, ollama_request
from .ollama_emulator import OllamaEmulator
from .test_pin import call, next_poll


def issue(registry: ir.IssueRegistry, kind: str, *models: str) -> ir.IssueEntry | None:
    return registry.async_get_issue(DOMAIN, "_".join((kind, ENTRY_ID, *models)))


@pytest.fixture(autouse=True)
def clocks_agree(emulator: OllamaEmulator) -> None:
    emulator.clock.set(dt_util.utcnow())


async def test_a_model_loaded_with_another_context_than_its_agent(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    issue_registry: ir.IssueRegistry,
) -> None:
    add_ollama_agent(hass, emulator.url, LLAMA, num_ctx=8192.0)
    # Another client (a chat UI) loads the assistant's model with 2048.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "options": {"num_ctx": 2048}})
    await next_poll(hass, emulator)
    found = issue(issue_registry, "context_mismatch", LLAMA)
    assert found is not None
    assert found.translation_placeholders == {
        "server": "Ollama test",
        "model": LLAMA,
        "loaded": "2048",
        "agent": "Kitchen assistant",
        "wanted": "8192",
    }
    # A preload loads it with the agent's context: the issue goes.
    await call(hass, "preload", config_entry_id=ENTRY_ID, model=LLAMA)
    await next_poll(hass, emulator)
    assert issue(issue_registry, "context_mismatch", LLAMA) is None


async def test_two_models_that_do_not_fit_together(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    issue_registry: ir.IssueRegistry,
) -> None:
    """3 GiB + 6 GiB on an 8 GiB GPU: each request for the other one displaces the first."""
    for model in (LLAMA, QWEN, LLAMA, QWEN, LLAMA):
        assert issue(issue_registry, "reload_thrash", LLAMA, QWEN) is None
        await ollama_request(emulator, "/api/generate", {"model": model})
        await next_poll(hass, emulator)
        await next_poll(hass, emulator)
    found = issue(issue_registry, "reload_thrash", LLAMA, QWEN)
    assert found is not None
    assert found.translation_key == "reload_thrash_do_not_fit"
    assert {
        key: found.translation_placeholders[key]
        for key in ("model", "other_model", "model_gib", "other_gib")
    } == {"model": LLAMA, "other_model": QWEN, "model_gib": "3.0", "other_gib": "6.0"}
    assert int(found.translation_placeholders["count"]) >= 4
    # Unloading the entry clears its issues.
    await hass.config_entries.async_unload(ENTRY_ID)
    assert issue(issue_registry, "reload_thrash", LLAMA, QWEN) is None


async def test_an_agents_keep_alive_overrides_a_pin(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    issue_registry: ir.IssueRegistry,
) -> None:
    add_ollama_agent(hass, emulator.url, LLAMA, keep_alive=300.0)
    await call(hass, "pin", config_entry_id=ENTRY_ID, model=LLAMA)
    await next_poll(hass, emulator)
    found = issue(issue_registry, "keep_alive_conflict", LLAMA)
    assert found is not None
    # A pin without end: the words say so, the placeholders hold only the numbers.
    assert found.translation_key == "keep_alive_overrides_pin_no_end"
    assert found.translation_placeholders["keep_alive"] == "300"
    assert "until" not in found.translation_placeholders
    await call(hass, "unpin", config_entry_id=ENTRY_ID, model=LLAMA)
    await next_poll(hass, emulator)
    assert issue(issue_registry, "keep_alive_conflict", LLAMA) is None
    # A preload with a keep: overridden at the agent's next turn.
    await call(hass, "preload", config_entry_id=ENTRY_ID, model=LLAMA, keep_for="01:00:00")
    await next_poll(hass, emulator)
    found = issue(issue_registry, "keep_alive_conflict", LLAMA)
    assert found is not None
    assert found.translation_key == "keep_alive_overrides_preload"


def test_each_finding_has_its_words_and_only_names_and_numbers_in_placeholders() -> None:
    """The translation says every word; what is filled in is a name or a number."""
    gib = 1024**3
    cases = [
        (
            Thrash((LLAMA, QWEN), 4, 30, ThrashCause.DO_NOT_FIT, sizes=(3 * gib, 6 * gib)),
            "reload_thrash_do_not_fit",
        ),
        (Thrash((LLAMA, QWEN), 4, 30, ThrashCause.DO_NOT_FIT), "reload_thrash_do_not_fit_unsized"),
        (
            Thrash((LLAMA,), 4, 30, ThrashCause.AGENTS_DIFFER, contexts=(("K", 8192), ("O", 4096))),
            "reload_thrash_agents_differ",
        ),
        (
            Thrash((LLAMA,), 4, 30, ThrashCause.CONTEXT_MISMATCH, reloads=1),
            "reload_thrash_context_mismatch",
        ),
        (Thrash((LLAMA,), 4, 30, ThrashCause.KEPT_TOO_SHORT), "reload_thrash_kept_too_short"),
        (
            Thrash(
                (LLAMA,),
                4,
                30,
                ThrashCause.PUSHED_OUT,
                expired=1,
                pushed_out=2,
                pushed_out_by=(QWEN, "phi4"),
            ),
            "reload_thrash_pushed_out",
        ),
        (Thrash((LLAMA,), 4, 30, ThrashCause.LEFT_EARLY, left_early=3), "reload_thrash_left_early"),
    ]
    for thrash, key in cases:
        found_key, placeholders = thrash_issue(thrash, "Ollama test")
        assert found_key == key
        assert placeholders["model"] == LLAMA
        assert " and " not in str(placeholders)
    assert thrash_issue(cases[2][0], "s")[1]["agents"] == "K: 8192, O: 4096"
    assert thrash_issue(cases[3][0], "s")[1]["reloads"] == "1"
    assert thrash_issue(cases[5][0], "s")[1] | {"server": "s"} == {
        "server": "s",
        "model": LLAMA,
        "count": "4",
        "minutes": "30",
        "pushed_out": "2",
        "others": f"{QWEN}, phi4",
        "expired": "1",
    }
    end = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    for conflict, key in (
        (KeepAliveConflict(LLAMA, "K", -1, Kept.PIN, end), "keep_alive_overrides_pin_forever"),
        (KeepAliveConflict(LLAMA, "K", 300, Kept.PIN, end), "keep_alive_overrides_pin"),
        (KeepAliveConflict(LLAMA, "K", 300, Kept.PIN, None), "keep_alive_overrides_pin_no_end"),
        (KeepAliveConflict(LLAMA, "K", 300, Kept.PRELOAD, end), "keep_alive_overrides_preload"),
        (
            KeepAliveConflict(LLAMA, "K", -1, Kept.PRELOAD, end),
            "keep_alive_overrides_preload_forever",
        ),
    ):
        found_key, placeholders = keep_alive_issue(conflict, "s")
        assert found_key == key
        assert all("ever" not in value and "end" not in value for value in placeholders.values())
