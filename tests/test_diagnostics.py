"""The diagnostics download, with the API key and URL credentials redacted."""

import logging

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_API_KEY, CONF_URL, CONF_VERIFY_SSL, MATCH_ALL
from homeassistant.core import Event, HomeAssistant
from homeassistant.helpers import issue_registry as ir
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator
from syrupy.assertion import SnapshotAssertion

from custom_components.llm_warmth.const import DOMAIN

from .conftest import ENTRY_ID, LLAMA, ollama_request
from .ollama_emulator import OllamaEmulator


async def test_diagnostics(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    snapshot: SnapshotAssertion,
    emulator: OllamaEmulator,
) -> None:
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    emulator.api_key = "s3cret"
    entry = await _setup(hass, emulator.url, api_key="s3cret")
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    assert "s3cret" not in str(diagnostics)
    assert diagnostics["entry"]["data"][CONF_URL] == emulator.url
    diagnostics["entry"]["data"][CONF_URL] = "http://127.0.0.1:PORT"
    assert diagnostics == snapshot


async def test_diagnostics_redact_url_credentials(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, emulator: OllamaEmulator
) -> None:
    url = emulator.url.replace("http://", "http://user:pa55@")
    entry = await _setup(hass, url, api_key="")
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    assert "pa55" not in str(diagnostics)
    assert diagnostics["entry"]["data"][CONF_URL] == emulator.url.replace(
        "http://", "http://**REDACTED**@"
    )


async def _setup(hass: HomeAssistant, url: str, api_key: str) -> MockConfigEntry:
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Ollama test",
        entry_id=ENTRY_ID,
        unique_id=url,
        version=2,
        data={
            CONF_URL: url,
            CONF_API_KEY: api_key,
            CONF_VERIFY_SSL: True,
            "server_kind": "ollama",
        },
    )
    entry.add_to_hass(hass)
    await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    return entry


async def test_diagnostics_redact_the_exporter_url(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    emulator: OllamaEmulator,
    exporter_url: str,
) -> None:
    entry = MockConfigEntry(
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
        options={
            "gpu_source": "exporter",
            "exporter_url": exporter_url.replace("http://", "http://me:pa55@") + "/dcgm/metrics",
            "exporter_kind": "dcgm",
            "reserve_gib": 1.0,
        },
    )
    entry.add_to_hass(hass)
    await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    assert "pa55" not in str(diagnostics)
    assert diagnostics["gpu"]["source"] == "dcgm exporter"
    assert diagnostics["gpu"]["last_update_success"] is True
    assert [g["status"]["name"] for g in diagnostics["gpu"]["gpus"]] == [
        "NVIDIA GeForce RTX 4090",
        "NVIDIA GeForce RTX 3060",
    ]


async def test_credentials_reach_no_log_event_issue_retry_reason_or_diagnostics(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    emulator: OllamaEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A URL password and an API key, through setup, a load, an outage and a failed setup."""
    caplog.set_level(logging.DEBUG)
    seen: list[Event] = []
    hass.bus.async_listen(MATCH_ALL, seen.append)
    url = emulator.url.replace("http://", "http://user:url-pa55word@")
    with_password = await _setup(hass, url, api_key="")
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    await with_password.runtime_data.coordinator.async_refresh()
    await hass.async_block_till_done()
    # An outage: the poll fails and says why, naming the server.
    await emulator.stop()
    await with_password.runtime_data.coordinator.async_refresh()
    await hass.async_block_till_done()
    assert with_password.runtime_data.coordinator.last_exception is not None
    failure = str(with_password.runtime_data.coordinator.last_exception)
    assert "127.0.0.1" in failure
    diagnostics = str(await get_diagnostics_for_config_entry(hass, hass_client, with_password))
    await hass.config_entries.async_unload(with_password.entry_id)
    # A second server with an API key that cannot be set up: its retry reason.
    with_key = MockConfigEntry(
        domain=DOMAIN,
        title="Ollama keyed",
        unique_id=emulator.url,
        version=2,
        data={
            CONF_URL: emulator.url,
            CONF_API_KEY: "sk-api-key-0042",
            CONF_VERIFY_SSL: True,
            "server_kind": "ollama",
        },
    )
    with_key.add_to_hass(hass)
    await hass.config_entries.async_setup(with_key.entry_id)
    await hass.async_block_till_done()
    assert with_key.state is ConfigEntryState.SETUP_RETRY
    issues = [
        str(issue.translation_placeholders)
        for issue in ir.async_get(hass).issues.values()
        if issue.domain == DOMAIN
    ]
    everything = "\n".join(
        [
            caplog.text,
            failure,
            str(with_key.reason),
            diagnostics,
            *(str(event.data) for event in seen),
            *issues,
        ]
    )
    assert seen  # the events were read
    for secret in ("url-pa55word", "sk-api-key-0042"):
        assert secret not in everything
