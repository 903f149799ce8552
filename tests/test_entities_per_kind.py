"""The entities each server kind gets: what it reports is shown, what it lacks is not created."""

from collections.abc import AsyncIterator
from unittest.mock import patch

from homeassistant.const import CONF_URL, CONF_VERIFY_SSL, Platform
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, snapshot_platform
from syrupy.assertion import SnapshotAssertion

from custom_components.llm_warmth.const import DOMAIN

from .conftest import ENTRY_ID
from .llama_server_emulator import EmulatedLlamaModel, LlamaServerEmulator
from .llama_swap_emulator import LlamaSwapEmulator, SwapModel


@pytest.fixture(params=["llama_server", "llama_swap"])
async def server(
    request: pytest.FixtureRequest, socket_enabled: None
) -> AsyncIterator[tuple[str, str]]:
    """A server of each kind (emulated), with the model ``tiny`` loaded: (kind, URL)."""
    emulator: LlamaServerEmulator | LlamaSwapEmulator
    if request.param == "llama_server":
        emulator = LlamaServerEmulator([EmulatedLlamaModel("tiny", load_seconds=0.01)])
    else:
        emulator = LlamaSwapEmulator([SwapModel("tiny", load_seconds=0.01)])
    await emulator.start()
    await emulator.load_by_other_client("tiny")
    yield request.param, emulator.url
    await emulator.stop()


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
@pytest.mark.parametrize(
    "platform", [Platform.SENSOR, Platform.BINARY_SENSOR, Platform.SWITCH, Platform.NUMBER]
)
async def test_entities_of_a_kind(
    hass: HomeAssistant,
    entity_registry: er.EntityRegistry,
    snapshot: SnapshotAssertion,
    server: tuple[str, str],
    platform: Platform,
) -> None:
    """Snapshot every entity of a server of this kind with one model loaded."""
    kind, url = server
    entry = MockConfigEntry(
        domain=DOMAIN,
        title=f"{kind} test",
        entry_id=ENTRY_ID,
        unique_id=url,
        version=2,
        data={CONF_URL: url, CONF_VERIFY_SSL: True, "server_kind": kind},
    )
    entry.add_to_hass(hass)
    with patch("custom_components.llm_warmth.PLATFORMS", [platform]):
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
    await snapshot_platform(hass, entity_registry, snapshot, entry.entry_id)
    await hass.config_entries.async_unload(entry.entry_id)
