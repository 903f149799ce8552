"""The diagnostics download, with the API key and URL credentials redacted."""

from homeassistant.const import CONF_API_KEY, CONF_URL, CONF_VERIFY_SSL
from homeassistant.core import HomeAssistant
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
