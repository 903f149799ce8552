"""The NVML source against the deterministic fake NVML."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from custom_components.llm_warmth.core.gpu.errors import GpuSourceError, GpuSourceUnavailableError
from custom_components.llm_warmth.core.gpu.nvml import NvmlSource
from custom_components.llm_warmth.core.gpu.types import GpuProcess, ProcessKind

from .fake_nvml import (
    MIB,
    NVML_ERROR_DRIVER_NOT_LOADED,
    NVML_ERROR_LIBRARY_NOT_FOUND,
    NVML_ERROR_UNKNOWN,
    RTX_3060,
    RTX_4090,
    FakeNvml,
    FakeProcess,
    skip_if_nvidia_driver_works,
    two_gpus,
)

executor_calls: list[str] = []


async def run_blocking(call: Callable[[], Any]) -> Any:
    """Stand-in for hass.async_add_executor_job: records that the call went through it."""
    executor_calls.append(getattr(call, "__name__", "call"))
    return call()


@pytest.fixture
def proc(tmp_path: Path) -> Path:
    for pid, name in ((4242, "ollama"), (5151, "ffmpeg"), (7373, "frigate.detector")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "comm").write_text(f"{name}\n")
    return tmp_path


async def test_reads_every_gpu(proc: Path) -> None:
    nvml = FakeNvml(two_gpus())
    source = NvmlSource(nvml, run_blocking, proc=proc)
    executor_calls.clear()
    big, small = await source.read()
    assert executor_calls == ["_read_blocking"]
    assert (big.index, big.uuid, big.name) == (0, RTX_4090, "NVIDIA GeForce RTX 4090")
    assert big.memory_total == 24564 * MIB
    assert big.memory_used == 14336 * MIB
    assert big.memory_free == (24564 - 14336 - 424) * MIB
    assert (big.utilization_gpu, big.utilization_memory) == (37.0, 21.0)
    assert big.temperature == 61.0
    assert (big.power_draw, big.power_limit) == (182.5, 450.0)
    assert big.performance_state == 2
    assert (big.sm_clock, big.graphics_clock) == (2520.0, 2520.0)
    assert big.processes == (
        GpuProcess(4242, "ollama", 12288 * MIB, ProcessKind.COMPUTE),
        GpuProcess(5151, "ffmpeg", 1536 * MIB, ProcessKind.COMPUTE),
        GpuProcess(6161, None, None, ProcessKind.GRAPHICS),  # not in our /proc, no figure
    )
    assert big.error is None
    assert small.uuid == RTX_3060
    assert small.processes == (
        GpuProcess(7373, "frigate.detector", 640 * MIB, ProcessKind.COMPUTE),
    )
    assert nvml.init_calls == 1
    await source.read()
    assert nvml.init_calls == 1  # initialised once


async def test_processes_come_and_go(proc: Path) -> None:
    gpus = two_gpus()
    source = NvmlSource(FakeNvml(gpus), run_blocking, proc=proc)
    gpus[1].processes.append(FakeProcess(pid=5151, used_mib=900))
    gpus[1].processes.append(FakeProcess(pid=5151, used_mib=900, graphics=True))
    _, small = await source.read()
    assert [p.pid for p in small.processes or ()] == [5151, 7373]  # counted once
    gpus[1].processes.clear()
    _, small = await source.read()
    assert small.processes == ()


async def test_unsupported_readings_are_none(proc: Path) -> None:
    gpus = two_gpus()
    gpus[1].unsupported = {
        "utilization",
        "power",
        "power_limit",
        "clock",
        "temperature",
        "processes",
    }
    gpus[1].pstate = 32  # NVML_PSTATE_UNKNOWN
    _, small = await NvmlSource(FakeNvml(gpus), run_blocking, proc=proc).read()
    assert small.memory_total == 12288 * MIB
    assert small.utilization_gpu is None
    assert small.power_draw is None
    assert small.power_limit is None
    assert small.sm_clock is None
    assert small.temperature is None
    assert small.performance_state is None
    assert small.processes is None


async def test_lost_gpu_is_reported_not_fatal(proc: Path) -> None:
    gpus = two_gpus()
    gpus[0].lost = True
    big, small = await NvmlSource(FakeNvml(gpus), run_blocking, proc=proc).read()
    assert big.error == "GPU is lost"
    assert big.memory_total is None
    assert small.error is None


@pytest.mark.parametrize(
    ("code", "message", "error"),
    [
        (
            NVML_ERROR_LIBRARY_NOT_FOUND,
            r"libnvidia-ml\.so\) was not found",
            GpuSourceUnavailableError,
        ),
        (NVML_ERROR_DRIVER_NOT_LOADED, "driver is not loaded", GpuSourceUnavailableError),
        (NVML_ERROR_UNKNOWN, "NVML failed: Unknown Error", GpuSourceError),
    ],
)
async def test_unusable_nvml(code: int, message: str, error: type[Exception]) -> None:
    nvml = FakeNvml(two_gpus())
    nvml.init_error = code
    source = NvmlSource(nvml, run_blocking)
    with pytest.raises(error, match=message):
        await source.read()
    await source.close()
    assert nvml.shutdown_calls == 0  # never initialised, nothing to shut down


async def test_close_shuts_nvml_down_once() -> None:
    nvml = FakeNvml(two_gpus())
    source = NvmlSource(nvml, run_blocking)
    await source.read()
    await source.close()
    await source.close()
    assert nvml.shutdown_calls == 1
    assert nvml.initialised == 0
    assert source.description == "local NVML"


async def test_shutdown_error_is_swallowed() -> None:
    nvml = FakeNvml(two_gpus())
    source = NvmlSource(nvml, run_blocking)
    await source.read()
    nvml.initialised = 0  # the driver went away: shutdown fails
    await source.close()
    assert nvml.shutdown_calls == 1


async def test_real_pynvml_without_a_driver() -> None:
    """On a machine without an NVIDIA driver the real module gives the normal 'unavailable'."""
    import pynvml  # noqa: PLC0415

    skip_if_nvidia_driver_works()
    with pytest.raises(GpuSourceUnavailableError, match="NVML cannot be used"):
        await NvmlSource(pynvml, run_blocking).read()
