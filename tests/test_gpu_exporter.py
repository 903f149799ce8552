"""The exporter source: published exporter formats, detection, and every failure."""

from homeassistant.core import HomeAssistant
from homeassistant.helpers.aiohttp_client import async_get_clientsession
import pytest

from custom_components.llm_warmth.core.gpu.errors import (
    GpuSourceConnectionError,
    GpuSourceResponseError,
)
from custom_components.llm_warmth.core.gpu.exporter import (
    ExporterKind,
    ExporterSource,
    detect_kind,
    parse_exporter_text,
)
from custom_components.llm_warmth.core.gpu.types import GpuStatus

from .conftest import EXPORTER_FILES as FILES, exporter_fixture as fixture
from .fake_nvml import MIB, RTX_3060, RTX_4090
from .ollama_emulator import OllamaEmulator


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


def test_numbers_that_overflow_or_leave_their_range_are_unknown() -> None:
    """What fuzzing found: huge integers, values infinite once scaled, odd digits."""
    text = (
        f'DCGM_FI_DEV_FB_FREE{{gpu="0",UUID="GPU-1"}} {"9" * 400}\n'
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1"} 1e308\n'
        'DCGM_FI_DEV_FB_TOTAL{gpu="0",UUID="GPU-1"} 24564\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1"} 250\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1"} -1e9\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1"} 182.5\n'
        'DCGM_FI_DEV_FB_FREE{gpu="²",UUID="GPU-2"} 10\n'
    )
    first, second = parse_exporter_text(text)
    assert first.memory_free is None
    assert first.memory_used is None
    assert first.memory_total == 24564 * MIB
    assert first.utilization_gpu is None
    assert first.temperature is None
    assert first.power_draw == 182.5
    # "²" is no index: the GPU is placed after the ones that have one.
    assert (second.uuid, second.index) == ("GPU-2", 1)


def test_an_index_metric_must_be_a_small_whole_number() -> None:
    text = (
        'nvidia_smi_memory_free_bytes{uuid="a"} 1\n'
        'nvidia_smi_index{uuid="a"} 1.5\n'
        'nvidia_smi_memory_free_bytes{uuid="b"} 1\n'
        'nvidia_smi_index{uuid="b"} 1e30\n'
        f'nvidia_smi_memory_free_bytes{{uuid="{"c" * 300}"}} 1\n'
    )
    gpus = parse_exporter_text(text)
    assert [(g.uuid, g.index) for g in gpus] == [("a", 0), ("b", 1)]


@pytest.mark.parametrize("charset", ["hex", "base64", "zlib", "rot13", "idna", "no-such", "utf-8"])
async def test_a_charset_in_the_header_cannot_break_the_reading(
    hass: HomeAssistant, emulator: OllamaEmulator, charset: str
) -> None:
    emulator.inject(
        "/metrics",
        status=200,
        body=fixture(ExporterKind.DCGM),
        content_type=f"text/plain; charset={charset}",
    )
    source = ExporterSource(async_get_clientsession(hass), f"{emulator.url}/metrics")
    assert [g.uuid for g in await source.read()] == [RTX_4090, RTX_3060]


async def test_an_oversize_page_is_a_response_error(
    hass: HomeAssistant, emulator: OllamaEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("custom_components.llm_warmth.core.gpu.exporter.MAX_TEXT_BYTES", 1024)
    emulator.inject("/metrics", status=200, body="# " + "x" * 4096, content_type="text/plain")
    source = ExporterSource(async_get_clientsession(hass), f"{emulator.url}/metrics")
    with pytest.raises(GpuSourceResponseError, match="more than 1024 bytes"):
        await source.read()


def test_labels_out_of_range_give_no_index_and_no_long_identity() -> None:
    text = (
        f'llamaswap_gpu_memory_used_bytes{{id="5000",UUID="{"u" * 5000}"}} 1\n'
        'llamaswap_gpu_memory_used_bytes{id="1",UUID="GPU-2"} 1\n'
    )
    gpus = parse_exporter_text(text)
    # An index past 1023 is no index; an identity label past 256 characters is not used.
    assert [(g.uuid, g.index) for g in gpus] == [("GPU-2", 1), ("5000", 1)]


# ---------------------------------------------------------------- each range at its edges

ID = 'gpu="0",UUID="GPU-1"'


def _one(*lines: str) -> GpuStatus:
    """The one GPU of a DCGM page with a free-memory line and ``lines``."""
    (gpu,) = parse_exporter_text(
        "".join(f"{line}\n" for line in (f"DCGM_FI_DEV_FB_FREE{{{ID}}} 100", *lines))
    )
    return gpu


@pytest.mark.parametrize(
    ("metric", "field", "low", "high", "step"),
    [
        ("DCGM_FI_DEV_GPU_UTIL", "utilization_gpu", 0.0, 100.0, 0.5),
        ("DCGM_FI_DEV_GPU_TEMP", "temperature", -60.0, 250.0, 0.5),
        ("DCGM_FI_DEV_POWER_USAGE", "power_draw", 0.0, 10_000.0, 0.5),
        ("DCGM_FI_DEV_SM_CLOCK", "sm_clock", 0.0, 100_000.0, 0.5),
    ],
)
def test_a_reading_at_the_edges_of_its_range_is_read_and_past_them_is_unknown(
    metric: str, field: str, low: float, high: float, step: float
) -> None:
    """Percent 0 to 100, -60 to 250 °C, 0 to 10 kW, 0 to 100 GHz: the sane ranges."""
    for value, read in ((low, low), (high, high), (low - step, None), (high + step, None)):
        assert getattr(_one(f"{metric}{{{ID}}} {value}"), field) == read, value


@pytest.mark.parametrize(("pstate", "read"), [(0, 0), (15, 15), (16, None), (32, None)])
def test_a_performance_state_is_p0_to_p15(pstate: int, read: int | None) -> None:
    assert _one(f"DCGM_FI_DEV_PSTATE{{{ID}}} {pstate}").performance_state == read


def test_memory_in_bytes_from_0_to_8_pib() -> None:
    """nvidia_gpu_exporter's bytes are read as they are, 0 and 2**53 included."""
    text = (
        'nvidia_smi_memory_free_bytes{uuid="a"} 0\n'
        f'nvidia_smi_memory_total_bytes{{uuid="a"}} {2**53}\n'
        f'nvidia_smi_memory_used_bytes{{uuid="a"}} {2**53 + 2}\n'
    )
    (gpu,) = parse_exporter_text(text)
    assert (gpu.memory_free, gpu.memory_total, gpu.memory_used) == (0, 2**53, None)


def test_free_memory_is_derived_from_the_total_the_used_and_the_reserved() -> None:
    exact = _free("DCGM_FI_DEV_FB_TOTAL 10", "DCGM_FI_DEV_FB_USED 7", "DCGM_FI_DEV_FB_RESERVED 2")
    assert exact == 1 * MIB
    assert _free("DCGM_FI_DEV_FB_TOTAL 10", "DCGM_FI_DEV_FB_USED 10") == 0
    # Used and reserved past the total: readings that do not add up give no free memory.
    assert (
        _free("DCGM_FI_DEV_FB_TOTAL 10", "DCGM_FI_DEV_FB_USED 8", "DCGM_FI_DEV_FB_RESERVED 3")
        is None
    )


def _free(*lines: str) -> int | None:
    text = "".join(f"{line.replace(' ', f'{{{ID}}} ')}\n" for line in lines)
    # The marker metric for another GPU: this one's free memory is not told.
    gpus = parse_exporter_text('DCGM_FI_DEV_FB_FREE{gpu="9",UUID="GPU-9"} 1\n' + text)
    return {gpu.uuid: gpu for gpu in gpus}["GPU-1"].memory_free


def test_labels_of_256_characters_and_index_1023_are_read() -> None:
    uuid, name = "GPU-" + "u" * 252, "n" * 256
    text = (
        f'DCGM_FI_DEV_FB_FREE{{gpu="1023",UUID="{uuid}",modelName="{name}"}} 1\n'
        f'DCGM_FI_DEV_FB_FREE{{gpu="1024",UUID="GPU-2",modelName="{name}n"}} 1\n'
    )
    first, second = parse_exporter_text(text)
    assert (first.uuid, first.name, first.index) == (uuid, name, 1023)
    assert (second.uuid, second.name, second.index) == ("GPU-2", None, 1)
    (by_id,) = parse_exporter_text(f'llamaswap_gpu_memory_used_bytes{{id="{"7" * 256}"}} 1\n')
    assert by_id.uuid == "7" * 256
    (labelled,) = parse_exporter_text(
        f'llamaswap_gpu_memory_used_bytes{{id="3",UUID="{uuid}"}} 1\n'
    )
    assert labelled.uuid == uuid


def test_a_reading_is_kept_to_three_decimals() -> None:
    assert _one(f"DCGM_FI_DEV_GPU_TEMP{{{ID}}} 45.12345").temperature == 45.123


async def test_a_page_of_1_mib_is_read_and_a_refusal_from_400_up_is_said(
    hass: HomeAssistant, emulator: OllamaEmulator
) -> None:
    page = f"DCGM_FI_DEV_FB_FREE{{{ID}}} 100\n# "
    page += "x" * (1024 * 1024 - len(page) - 1) + "\n"
    assert len(page.encode()) == 1024 * 1024
    source = ExporterSource(async_get_clientsession(hass), f"{emulator.url}/metrics")
    emulator.inject("/metrics", status=200, body=page, content_type="text/plain")
    assert [g.uuid for g in await source.read()] == ["GPU-1"]
    emulator.inject("/metrics", status=200, body=page + "#", content_type="text/plain")
    with pytest.raises(GpuSourceResponseError, match="more than"):
        await source.read()
    emulator.inject("/metrics", status=400, body="bad request", content_type="text/plain")
    with pytest.raises(GpuSourceConnectionError, match="answered HTTP 400"):
        await source.read()
