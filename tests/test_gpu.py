"""GPU devices and sensors in Home Assistant, from a fake NVML and from an exporter."""

from collections.abc import Generator
from functools import partial
import logging
from pathlib import Path
from unittest.mock import patch

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import (
    CONF_SCAN_INTERVAL,
    STATE_OFF,
    STATE_ON,
    STATE_UNAVAILABLE,
    Platform,
)
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import (
    device_registry as dr,
    entity_registry as er,
    issue_registry as ir,
)
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from syrupy.assertion import SnapshotAssertion

from custom_components.llm_warmth.const import (
    CONF_EXPORTER_KIND,
    CONF_EXPORTER_URL,
    CONF_GPU_SOURCE,
    CONF_RESERVE_GIB,
    DOMAIN,
)
from custom_components.llm_warmth.core.gpu.nvml import NvmlSource

from .conftest import ENTRY_ID, LLAMA, ollama_request
from .fake_nvml import (
    NVML_ERROR_DRIVER_NOT_LOADED,
    NVML_ERROR_LIBRARY_NOT_FOUND,
    RTX_3060,
    RTX_4090,
    FakeNvml,
    two_gpus,
)
from .ollama_emulator import OllamaEmulator

GPU0 = "sensor.gpu_0_nvidia_geforce_rtx_4090"
GPU1 = "sensor.gpu_1_nvidia_geforce_rtx_3060"
GPU1_ALONE = "sensor.gpu_0_nvidia_geforce_rtx_3060"
NVML_OPTIONS = {CONF_SCAN_INTERVAL: 10, CONF_GPU_SOURCE: "nvml", CONF_RESERVE_GIB: 10.0}


@pytest.fixture
def nvml(tmp_path: Path) -> Generator[FakeNvml]:
    """Put the fake NVML where the integration imports pynvml, with a fake /proc."""
    for pid, name in ((4242, "ollama"), (5151, "ffmpeg"), (7373, "frigate.detector")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "comm").write_text(f"{name}\n")
    fake = FakeNvml(two_gpus())
    with (
        patch("custom_components.llm_warmth.gpu_coordinator.pynvml", fake),
        patch(
            "custom_components.llm_warmth.gpu_coordinator.NvmlSource",
            partial(NvmlSource, proc=tmp_path),
        ),
    ):
        yield fake


async def setup_with(hass: HomeAssistant, entry: MockConfigEntry, options: dict) -> None:
    entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(entry, options=options)
    await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()


@pytest.mark.usefixtures("entity_registry_enabled_by_default", "nvml")
@pytest.mark.parametrize("platform", [Platform.SENSOR, Platform.BINARY_SENSOR])
async def test_gpu_entities(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    entity_registry: er.EntityRegistry,
    snapshot: SnapshotAssertion,
    platform: Platform,
) -> None:
    with patch("custom_components.llm_warmth.PLATFORMS", [platform]):
        await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    entries = er.async_entries_for_config_entry(entity_registry, mock_config_entry.entry_id)
    gpu_entries = [e for e in entries if "_gpu_GPU-" in (e.unique_id or "")]
    assert gpu_entries
    for entity_entry in sorted(gpu_entries, key=lambda e: e.entity_id):
        assert entity_entry == snapshot(name=f"{entity_entry.entity_id}-entry")
        state = hass.states.get(entity_entry.entity_id)
        assert state == snapshot(name=f"{entity_entry.entity_id}-state")


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_nvml_values_and_attribution(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    nvml: FakeNvml,
    device_registry: dr.DeviceRegistry,
) -> None:
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    gib = lambda entity: float(hass.states.get(entity).state)  # noqa: E731
    assert gib(f"{GPU0}_memory_total") == pytest.approx(23.99, abs=0.01)
    assert gib(f"{GPU0}_memory_free") == pytest.approx(9.57, abs=0.01)
    # 9804 MiB free less the 10 GiB reserve: negative headroom, and the binary sensor is on.
    assert gib(f"{GPU0}_headroom") == pytest.approx(-0.43, abs=0.01)
    assert hass.states.get("binary_sensor.gpu_0_nvidia_geforce_rtx_4090_headroom_low").state == (
        STATE_ON
    )
    assert hass.states.get("binary_sensor.gpu_1_nvidia_geforce_rtx_3060_headroom_low").state == (
        STATE_OFF
    )
    # The ollama process holds 12 GiB; the rest of the used 14 GiB is everyone else's.
    assert gib(f"{GPU0}_memory_used_by_models") == 12.0
    other = hass.states.get(f"{GPU0}_memory_used_by_other_processes")
    assert float(other.state) == 2.0
    assert other.attributes["processes"] == [
        {"pid": 5151, "name": "ffmpeg", "mib": 1536},
        {"pid": 6161, "name": None, "mib": None},
    ]
    # Two GPUs and no LLM process on the second: its model share is unknown.
    assert hass.states.get(f"{GPU1}_memory_used_by_models").state == "unknown"
    assert hass.states.get(f"{GPU1}_memory_used_by_other_processes").state == "unknown"
    assert hass.states.get(f"{GPU0}_utilization").state == "37.0"
    assert hass.states.get(f"{GPU0}_temperature").state == "61.0"
    assert hass.states.get(f"{GPU0}_power").state == "182.5"
    assert hass.states.get(f"{GPU0}_performance_state").state == "p2"
    assert hass.states.get(f"{GPU0}_sm_clock").state == "2520.0"
    gpu_device = device_registry.async_get_device_by_identifier(
        (DOMAIN, f"{ENTRY_ID}_gpu_{RTX_4090}"), ENTRY_ID
    )
    server = device_registry.async_get_device_by_identifier((DOMAIN, ENTRY_ID), ENTRY_ID)
    assert gpu_device is not None
    assert server is not None
    assert gpu_device.via_device_id == server.id
    assert gpu_device.serial_number == RTX_4090


async def test_single_gpu_takes_the_llm_share_from_the_backend(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    nvml: FakeNvml,
    emulator: OllamaEmulator,
) -> None:
    nvml.gpus = nvml.gpus[1:]  # the RTX 3060 alone, whose process list names no LLM server
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    assert float(hass.states.get(f"{GPU1_ALONE}_memory_used_by_models").state) == 3.0
    # 900 MiB used, 3 GiB "resident": the rest cannot be negative.
    assert hass.states.get(f"{GPU1_ALONE}_memory_used_by_other_processes").state == "0.0"


async def test_missing_driver_raises_a_repair_and_the_rest_works(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    nvml: FakeNvml,
    issue_registry: ir.IssueRegistry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    nvml.init_error = NVML_ERROR_LIBRARY_NOT_FOUND
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    assert mock_config_entry.state is ConfigEntryState.LOADED
    assert hass.states.get("sensor.ollama_test_resident_models").state == "0"
    assert hass.states.get(f"{GPU0}_headroom") is None  # never seen: no GPU entities
    issue = issue_registry.async_get_issue(DOMAIN, f"gpu_source_{ENTRY_ID}")
    assert issue is not None
    assert issue.translation_key == "gpu_source_unavailable"
    assert "libnvidia-ml.so" in issue.translation_placeholders["reason"]
    # One line for the user; the traceback only in the debug log.
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.INFO]
    assert "GPU telemetry (local NVML) is unavailable" in caplog.text
    # The driver comes back: the GPUs appear and the repair goes away.
    nvml.init_error = None
    await mock_config_entry.runtime_data.gpu.async_refresh()
    await hass.async_block_till_done()
    assert hass.states.get(f"{GPU0}_headroom") is not None
    assert issue_registry.async_get_issue(DOMAIN, f"gpu_source_{ENTRY_ID}") is None


async def test_lost_gpu_goes_unavailable_alone(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, nvml: FakeNvml
) -> None:
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    nvml.gpus[0].lost = True
    await mock_config_entry.runtime_data.gpu.async_refresh()
    await hass.async_block_till_done()
    assert hass.states.get(f"{GPU0}_headroom").state == STATE_UNAVAILABLE
    assert hass.states.get(f"{GPU1}_headroom").state != STATE_UNAVAILABLE
    # Reported under its UUID: the same device, no stray "index-0" one.
    devices = dr.async_entries_for_config_entry(dr.async_get(hass), ENTRY_ID)
    assert not [d for d in devices if any("index-" in i for _, i in d.identifiers)]
    nvml.gpus[0].lost = False
    await mock_config_entry.runtime_data.gpu.async_refresh()
    await hass.async_block_till_done()
    assert hass.states.get(f"{GPU0}_headroom").state != STATE_UNAVAILABLE


async def test_unload_shuts_nvml_down(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, nvml: FakeNvml
) -> None:
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    assert nvml.initialised == 1
    assert await hass.config_entries.async_unload(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    assert nvml.initialised == 0
    assert nvml.shutdown_calls == 1


async def test_switching_the_source_off_removes_gpu_devices(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    nvml: FakeNvml,
    device_registry: dr.DeviceRegistry,
) -> None:
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    identifier = (DOMAIN, f"{ENTRY_ID}_gpu_{RTX_3060}")
    assert device_registry.async_get_device_by_identifier(identifier, ENTRY_ID)
    result = await hass.config_entries.options.async_init(mock_config_entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {**NVML_OPTIONS, CONF_GPU_SOURCE: "none"}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert device_registry.async_get_device_by_identifier(identifier, ENTRY_ID) is None


async def test_gpu_devices_can_be_removed_once_gone(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    nvml: FakeNvml,
    device_registry: dr.DeviceRegistry,
) -> None:
    from custom_components.llm_warmth import async_remove_config_entry_device  # noqa: PLC0415

    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    device = device_registry.async_get_device_by_identifier(
        (DOMAIN, f"{ENTRY_ID}_gpu_{RTX_3060}"), ENTRY_ID
    )
    assert device is not None
    assert not await async_remove_config_entry_device(hass, mock_config_entry, device)
    nvml.gpus = nvml.gpus[:1]
    await mock_config_entry.runtime_data.gpu.async_refresh()
    assert await async_remove_config_entry_device(hass, mock_config_entry, device)


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_exporter_source(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    emulator: OllamaEmulator,
    exporter_url: str,
) -> None:
    options = {
        CONF_SCAN_INTERVAL: 10,
        CONF_GPU_SOURCE: "exporter",
        CONF_EXPORTER_URL: f"{exporter_url}/nvidia_gpu_exporter/metrics",
        CONF_EXPORTER_KIND: "auto",
        CONF_RESERVE_GIB: 1.0,
    }
    await setup_with(hass, mock_config_entry, options)
    assert float(hass.states.get(f"{GPU0}_headroom").state) == pytest.approx(8.57, abs=0.01)
    assert hass.states.get(f"{GPU0}_performance_state").state == "p2"
    # No process list from an exporter: the "other" sensor has no process attribute.
    other = hass.states.get(f"{GPU0}_memory_used_by_other_processes")
    assert other.attributes["processes"] is None


@pytest.mark.usefixtures("emulator")
async def test_options_flow_checks_the_gpu_source(
    hass: HomeAssistant, init_integration: MockConfigEntry, exporter_url: str
) -> None:
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    # The exporter's fields are asked only once an exporter is chosen.
    assert CONF_EXPORTER_URL not in result["data_schema"].schema
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {CONF_SCAN_INTERVAL: 10, CONF_GPU_SOURCE: "exporter", CONF_RESERVE_GIB: 2},
    )
    assert result["step_id"] == "exporter"
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {CONF_EXPORTER_KIND: "auto", CONF_EXPORTER_URL: " "}
    )
    assert result["errors"] == {CONF_EXPORTER_URL: "exporter_url_required"}
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {CONF_EXPORTER_KIND: "auto", CONF_EXPORTER_URL: f"{exporter_url}/broken"},
    )
    assert result["errors"] == {"base": "gpu_source_failed"}
    assert "HTTP 500" in result["description_placeholders"]["reason"]
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {CONF_EXPORTER_KIND: "auto", CONF_EXPORTER_URL: f"{exporter_url}/dcgm/metrics"},
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert init_integration.options[CONF_RESERVE_GIB] == 2.0
    await hass.async_block_till_done()
    assert hass.states.get(f"{GPU1}_headroom") is not None


async def test_gpu_lost_from_the_start_gets_no_device_until_identified(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    nvml: FakeNvml,
    device_registry: dr.DeviceRegistry,
) -> None:
    nvml.gpus[1].lost = True
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    devices = dr.async_entries_for_config_entry(device_registry, ENTRY_ID)
    gpu_devices = [d for d in devices if any("_gpu_" in i for _, i in d.identifiers)]
    assert [d.serial_number for d in gpu_devices] == [RTX_4090]
    nvml.gpus[1].lost = False
    await mock_config_entry.runtime_data.gpu.async_refresh()
    await hass.async_block_till_done()
    assert hass.states.get(f"{GPU1}_headroom").state != STATE_UNAVAILABLE


async def test_repair_issue_goes_when_the_source_is_switched_off(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    nvml: FakeNvml,
    issue_registry: ir.IssueRegistry,
) -> None:
    nvml.init_error = NVML_ERROR_LIBRARY_NOT_FOUND
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    assert issue_registry.async_get_issue(DOMAIN, f"gpu_source_{ENTRY_ID}") is not None
    hass.config_entries.async_update_entry(
        mock_config_entry, options={**NVML_OPTIONS, CONF_GPU_SOURCE: "none"}
    )
    await hass.config_entries.async_reload(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    assert issue_registry.async_get_issue(DOMAIN, f"gpu_source_{ENTRY_ID}") is None
    assert mock_config_entry.runtime_data.gpu is None


@pytest.mark.usefixtures("emulator")
async def test_options_flow_tries_nvml_before_saving(
    hass: HomeAssistant, init_integration: MockConfigEntry, nvml: FakeNvml
) -> None:
    """NVML is tried on the first step; a machine without the driver is told why."""
    nvml.init_error = NVML_ERROR_DRIVER_NOT_LOADED
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    choice = {CONF_SCAN_INTERVAL: 10, CONF_GPU_SOURCE: "nvml", CONF_RESERVE_GIB: 1}
    result = await hass.config_entries.options.async_configure(result["flow_id"], choice)
    assert result["step_id"] == "init"
    assert result["errors"] == {"base": "gpu_source_failed"}
    assert result["description_placeholders"]["reason"]
    nvml.init_error = None
    result = await hass.config_entries.options.async_configure(result["flow_id"], choice)
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert init_integration.options[CONF_GPU_SOURCE] == "nvml"


@pytest.mark.usefixtures("nvml")
async def test_only_the_memory_of_a_gpu_is_recorded_by_default(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, entity_registry: er.EntityRegistry
) -> None:
    """What changes on every poll (clocks, power, temperature, load) starts disabled."""
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    entries = er.async_entries_for_config_entry(entity_registry, mock_config_entry.entry_id)
    gpu0 = [e for e in entries if e.entity_id.startswith(GPU0)]
    enabled = sorted(e.entity_id.removeprefix(GPU0) for e in gpu0 if e.disabled_by is None)
    assert enabled == [
        "_headroom",
        "_memory_free",
        "_memory_total",
        "_memory_used",
        "_memory_used_by_models",
        "_memory_used_by_other_processes",
    ]
    disabled = {e.entity_id.removeprefix(GPU0) for e in gpu0 if e.disabled_by is not None}
    assert {"_utilization", "_temperature", "_power", "_sm_clock"} <= disabled


async def test_gpu_devices_stay_while_their_source_is_configured_even_when_it_is_down(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    nvml: FakeNvml,
    device_registry: dr.DeviceRegistry,
) -> None:
    """The driver goes away and the server's polls go on: the GPUs' devices and history stay."""
    await setup_with(hass, mock_config_entry, NVML_OPTIONS)
    identifier = (DOMAIN, f"{ENTRY_ID}_gpu_{RTX_3060}")
    assert device_registry.async_get_device_by_identifier(identifier, ENTRY_ID)
    nvml.init_error = NVML_ERROR_LIBRARY_NOT_FOUND
    nvml.initialised = 0
    await mock_config_entry.runtime_data.gpu.async_refresh()
    for _ in range(2):  # each poll of the server syncs the devices
        await mock_config_entry.runtime_data.coordinator.async_refresh()
        await hass.async_block_till_done()
    assert not mock_config_entry.runtime_data.gpu.last_update_success
    assert device_registry.async_get_device_by_identifier(identifier, ENTRY_ID)
    # A restart with the source still down keeps them too.
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    assert device_registry.async_get_device_by_identifier(identifier, ENTRY_ID)


@pytest.mark.usefixtures("emulator", "nvml")
async def test_a_reserve_that_leaves_no_room_for_models_is_refused(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """The smaller GPU has 12 GiB: a reserve must leave 1 GiB of it for the models."""
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    choice = {CONF_SCAN_INTERVAL: 10, CONF_GPU_SOURCE: "nvml", CONF_RESERVE_GIB: 11.5}
    result = await hass.config_entries.options.async_configure(result["flow_id"], choice)
    assert result["errors"] == {CONF_RESERVE_GIB: "reserve_too_large"}
    assert result["description_placeholders"]["total"] == "12.0"
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {**choice, CONF_RESERVE_GIB: 11.0}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert init_integration.options[CONF_RESERVE_GIB] == 11.0


@pytest.mark.usefixtures("emulator")
async def test_an_exporters_gpu_too_small_for_the_reserve_is_said(
    hass: HomeAssistant, init_integration: MockConfigEntry, exporter_url: str
) -> None:
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {CONF_SCAN_INTERVAL: 10, CONF_GPU_SOURCE: "exporter", CONF_RESERVE_GIB: 200},
    )
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {CONF_EXPORTER_KIND: "auto", CONF_EXPORTER_URL: f"{exporter_url}/dcgm/metrics"},
    )
    assert result["errors"] == {"base": "reserve_too_large"}
    assert float(result["description_placeholders"]["total"]) < 200
