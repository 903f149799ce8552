"""The dashboard card is served by the integration and loaded by the frontend, once."""

import re

from homeassistant.components.frontend import DATA_EXTRA_MODULE_URL
from homeassistant.config_entries import SOURCE_USER, ConfigFlowResult
from homeassistant.const import CONF_URL, CONF_VERIFY_SSL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.llm_warmth.card import CARD_DIRECTORY, CARD_MODULE, CARD_URL, URL_BASE
from custom_components.llm_warmth.const import DOMAIN

from .llama_server_emulator import LlamaServerEmulator
from .ollama_emulator import OllamaEmulator
from .test_config_flow import llama_fixture  # noqa: F401 (a fixture)


async def test_the_frontend_loads_the_card_from_the_integration(
    hass: HomeAssistant, hass_client: ClientSessionGenerator
) -> None:
    assert await async_setup_component(hass, "frontend", {})
    assert await async_setup_component(hass, DOMAIN, {})
    await hass.async_block_till_done()
    urls = [u for u in hass.data[DATA_EXTRA_MODULE_URL].urls if u.startswith(URL_BASE)]
    # One module for every dashboard, under a path that changes with the card's files:
    # their fingerprint, 16 hex digits.
    assert len(urls) == 1
    assert re.fullmatch(rf"{URL_BASE}/[0-9a-f]{{16}}/{CARD_MODULE}", urls[0]), urls[0]
    assert hass.data[CARD_URL] == urls[0]
    client = await hass_client()
    for name in (CARD_MODULE, "llm-warmth-card-data.js"):
        response = await client.get(urls[0].replace(CARD_MODULE, name))
        assert response.status == 200, name
        assert "javascript" in response.headers["Content-Type"]
        assert "max-age" in response.headers.get("Cache-Control", "")
        assert await response.text() == (CARD_DIRECTORY / name).read_text()
    # The entry point imports the data module by its relative path.
    assert 'from "./llm-warmth-card-data.js"' in (CARD_DIRECTORY / CARD_MODULE).read_text()


async def test_without_a_frontend_nothing_is_served(hass: HomeAssistant) -> None:
    assert await async_setup_component(hass, DOMAIN, {})
    assert DATA_EXTRA_MODULE_URL not in hass.data


def test_the_card_is_plain_modules_without_dependencies() -> None:
    """No build step, no package: every import is one of the card's own files."""
    imported: set[str] = set()
    for path in CARD_DIRECTORY.glob("*.js"):
        text = path.read_text()
        assert "import(" not in text, path.name
        imported.update(re.findall(r'^(?:import|} from) .*"([^"]+)";$', text, re.MULTILINE))
    assert imported == {
        f"./{path.name}" for path in CARD_DIRECTORY.glob("*.js") if path.name != CARD_MODULE
    }


async def test_the_first_server_added_says_to_reload_the_page_for_the_card(
    hass: HomeAssistant, emulator: OllamaEmulator, llama: LlamaServerEmulator
) -> None:
    """A page opened before the integration's first setup never gets the card's module
    (the frontend reads its modules when a page opens): the first server's success says
    to reload; a second server, once the card is served, does not."""
    assert await async_setup_component(hass, "frontend", {})
    first = await _add_server(hass, emulator.url)
    assert first["description"] == "reload_for_the_card"
    assert hass.data[CARD_URL].endswith(f"/{CARD_MODULE}")
    second = await _add_server(hass, llama.url)
    assert second["type"] is FlowResultType.CREATE_ENTRY
    assert second["description"] is None


async def _add_server(hass: HomeAssistant, url: str) -> ConfigFlowResult:
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: url, CONF_VERIFY_SSL: True}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    return result
