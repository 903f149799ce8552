"""The entities each server kind gets: what it reports is shown, what it lacks is not created."""

from collections.abc import AsyncIterator
from unittest.mock import patch

from homeassistant.const import (
    CONF_URL,
    CONF_VERIFY_SSL,
    STATE_OFF,
    STATE_ON,
    Platform,
)
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
    # Beside the snapshot, what matters, each on its own.
    prefix = f"{platform}.{kind}_test"
    ids = {e.entity_id for e in er.async_entries_for_config_entry(entity_registry, ENTRY_ID)}
    match platform:
        case Platform.SENSOR:
            assert hass.states.get(f"{prefix}_tiny").state == "warm"
            assert hass.states.get(f"{prefix}_resident_models").state == "1"
            # Neither kind reports an expiry, memory sizes or a load duration per request.
            assert not {f"{prefix}_tiny_unloads_at", f"{prefix}_resident_gpu_memory"} & ids
            assert (
                not {f"{prefix}_resident_memory_in_system_ram", f"{prefix}_tiny_gpu_memory"} & ids
            )
            # llama-server gives each model's context (its --ctx-size); llama-swap does not.
            assert (f"{prefix}_tiny_context_length" in ids) is (kind == "llama_server")
        case Platform.BINARY_SENSOR:
            assert hass.states.get(f"{prefix}_tiny_resident").state == STATE_ON
            assert hass.states.get(f"{prefix}_connectivity").state == STATE_ON
        case Platform.SWITCH:
            assert hass.states.get(f"{prefix}_tiny_keep_warm").state == STATE_OFF
        case Platform.NUMBER:
            # The default target: 1.5 s to the first token.
            assert float(hass.states.get(f"{prefix}_tiny_ttft_target").state) == 1.5
    await hass.config_entries.async_unload(entry.entry_id)
