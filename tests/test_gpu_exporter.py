"""The exporter source: published exporter formats, detection, and every failure."""

from homeassistant.core import HomeAssistant
from homeassistant.helpers.aiohttp_client import async_get_clientsession
import pytest

from custom_components.llm_warmth.gpu.errors import (
    GpuSourceConnectionError,
    GpuSourceResponseError,
)
from custom_components.llm_warmth.gpu.exporter import (
    ExporterKind,
    ExporterSource,
    detect_kind,
    parse_exporter_text,
)

from .conftest import EXPORTER_FILES as FILES, exporter_fixture as fixture
from .fake_nvml import MIB, RTX_3060, RTX_4090


@pytest.mark.parametrize("kind", list(FILES))
@pytest.mark.parametrize("given", [True, False])
def test_parse_published_formats(kind: ExporterKind, given: bool) -> None:
    big, small = parse_exporter_text(fixture(kind), kind if given else ExporterKind.AUTO)
    assert (big.index, big.uuid, big.name) == (0, RTX_4090, "NVIDIA GeForce RTX 4090")
    assert (small.index, small.uuid, small.name) == (1, RTX_3060, "NVIDIA GeForce RTX 3060")
    assert big.memory_used == 14336 * MIB
    assert big.memory_total == 24564 * MIB
    assert small.memory_total == 12288 * MIB
    assert big.utilization_gpu == 37
    assert big.temperature == 61
    assert big.power_draw == 182.5
    assert small.power_draw == 14.2
    assert big.processes is None  # exporters list no processes
    if kind is not ExporterKind.LLAMA_SWAP:
        assert big.memory_free == 9804 * MIB
        assert small.memory_free == 11130 * MIB
        assert big.sm_clock == 2520
        assert small.sm_clock == 210
    if kind is ExporterKind.NVIDIA_GPU_EXPORTER:
        assert (big.performance_state, small.performance_state) == (2, 8)
        assert big.power_limit == 450
        assert big.utilization_memory == 21
        assert small.graphics_clock == 210


def test_llama_swap_reports_no_free_memory_but_a_total() -> None:
    """llama-swap publishes used and total; free is derived from them."""
    big, _ = parse_exporter_text(fixture(ExporterKind.LLAMA_SWAP), ExporterKind.LLAMA_SWAP)
    assert big.memory_free == (24564 - 14336) * MIB


def test_detect_kind() -> None:
    assert detect_kind(["DCGM_FI_DEV_FB_FREE", "x"]) is ExporterKind.DCGM
    assert detect_kind(["process_cpu_seconds_total"]) is None


@pytest.mark.parametrize(
    ("text", "kind", "message"),
    [
        ("process_cpu_seconds_total 1.5\n", ExporterKind.AUTO, "no GPU metrics"),
        ("<html><body>Grafana</body></html>", ExporterKind.AUTO, "not Prometheus text|no GPU"),
        ("DCGM_FI_DEV_FB_FREE 12\n", ExporterKind.DCGM, "without GPU labels"),
        ('nvidia_smi_memory_free_bytes{uuid="x"} 1\n', ExporterKind.DCGM, "not a dcgm"),
        ('DCGM_FI_DEV_FB_FREE{gpu="0"} not-a-number\n', ExporterKind.DCGM, "not Prometheus"),
    ],
)
def test_unusable_text(text: str, kind: ExporterKind, message: str) -> None:
    with pytest.raises(GpuSourceResponseError, match=message):
        parse_exporter_text(text, kind)


async def test_source_over_http(hass: HomeAssistant, exporter_url: str) -> None:
    session = async_get_clientsession(hass)
    source = ExporterSource(session, f"{exporter_url}/dcgm/metrics")
    assert source.description == "auto exporter"
    gpus = await source.read()
    assert [g.uuid for g in gpus] == [RTX_4090, RTX_3060]
    await source.close()


async def test_source_failures(hass: HomeAssistant, exporter_url: str) -> None:
    session = async_get_clientsession(hass)
    with pytest.raises(GpuSourceConnectionError, match="HTTP 500"):
        await ExporterSource(session, f"{exporter_url}/broken").read()
    with pytest.raises(GpuSourceConnectionError, match="in time"):
        await ExporterSource(session, f"{exporter_url}/slow", timeout=0.2).read()
    with pytest.raises(GpuSourceConnectionError, match="cannot reach"):
        await ExporterSource(session, "http://127.0.0.1:1/metrics").read()
    with pytest.raises(GpuSourceResponseError, match="not a llama_swap"):
        await ExporterSource(
            session, f"{exporter_url}/dcgm/metrics", ExporterKind.LLAMA_SWAP
        ).read()


def test_non_finite_and_out_of_range_readings_are_unknown() -> None:
    text = (
        'DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-1"} 100\n'
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1"} NaN\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1"} +Inf\n'
        'DCGM_FI_DEV_PSTATE{gpu="0",UUID="GPU-1"} 32\n'
    )
    (gpu,) = parse_exporter_text(text)
    assert gpu.memory_free == 100 * MIB
    assert gpu.memory_used is None
    assert gpu.memory_total is None
    assert gpu.temperature is None
    assert gpu.performance_state is None


async def test_errors_never_show_url_credentials(hass: HomeAssistant, socket_enabled: None) -> None:
    session = async_get_clientsession(hass)
    with pytest.raises(GpuSourceConnectionError) as err:
        await ExporterSource(session, "http://me:s3cret@127.0.0.1:1/metrics").read()
    assert "s3cret" not in str(err.value)
