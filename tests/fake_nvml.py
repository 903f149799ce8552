"""A deterministic stand-in for the ``pynvml`` module: GPUs, processes and NVML's errors."""

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

# Return codes and constants as nvml.h / pynvml define them.
NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_PSTATE_UNKNOWN = 32
MIB = 1024 * 1024

_MESSAGES = {
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    """Like pynvml.NVMLError: carries the NVML return code in ``value``."""

    def __init__(self, value: int) -> None:
        super().__init__(_MESSAGES.get(value, str(value)))
        self.value = value


@dataclass
class FakeProcess:
    pid: int
    used_mib: int | None
    graphics: bool = False


@dataclass
class FakeGpu:
    uuid: str
    name: str
    total_mib: int
    used_mib: int
    reserved_mib: int = 0
    utilization: tuple[int, int] = (0, 0)
    temperature: int = 40
    power_mw: int = 15_000
    power_limit_mw: int = 170_000
    pstate: int = 8
    sm_clock: int = 210
    graphics_clock: int = 210
    processes: list[FakeProcess] = field(default_factory=list)
    unsupported: set[str] = field(default_factory=set)
    lost: bool = False


class FakeNvml:
    """Behaves like the parts of ``pynvml`` the integration calls."""

    NVMLError = NVMLError

    def __init__(self, gpus: list[FakeGpu] | None = None) -> None:
        for name, value in globals().items():
            if name.startswith("NVML_"):
                setattr(self, name, value)
        self.gpus = gpus if gpus is not None else []
        self.init_error: int | None = None
        self.initialised = 0
        self.init_calls = 0
        self.shutdown_calls = 0

    # --- library
    def nvmlInit(self) -> None:
        self.init_calls += 1
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.shutdown_calls += 1
        if not self.initialised:
            raise NVMLError(NVML_ERROR_UNKNOWN)
        self.initialised -= 1

    def _check(self) -> None:
        if not self.initialised:
            raise NVMLError(NVML_ERROR_UNKNOWN)

    def nvmlDeviceGetCount(self) -> int:
        self._check()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        self._check()
        gpu = self.gpus[index]
        if gpu.lost:
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        return gpu

    def _get(self, gpu: FakeGpu, what: str) -> None:
        if gpu.lost:
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        if what in gpu.unsupported:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)

    # --- per device
    def nvmlDeviceGetUUID(self, gpu: FakeGpu) -> str:
        self._get(gpu, "uuid")
        return gpu.uuid

    def nvmlDeviceGetName(self, gpu: FakeGpu) -> bytes:
        self._get(gpu, "name")
        return gpu.name.encode()  # older bindings return bytes

    def nvmlDeviceGetMemoryInfo(self, gpu: FakeGpu) -> Any:
        self._get(gpu, "memory")
        free = gpu.total_mib - gpu.used_mib - gpu.reserved_mib
        return SimpleNamespace(total=gpu.total_mib * MIB, used=gpu.used_mib * MIB, free=free * MIB)

    def nvmlDeviceGetUtilizationRates(self, gpu: FakeGpu) -> Any:
        self._get(gpu, "utilization")
        return SimpleNamespace(gpu=gpu.utilization[0], memory=gpu.utilization[1])

    def nvmlDeviceGetTemperature(self, gpu: FakeGpu, sensor: int) -> int:
        self._get(gpu, "temperature")
        assert sensor == NVML_TEMPERATURE_GPU
        return gpu.temperature

    def nvmlDeviceGetPowerUsage(self, gpu: FakeGpu) -> int:
        self._get(gpu, "power")
        return gpu.power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, gpu: FakeGpu) -> int:
        self._get(gpu, "power_limit")
        return gpu.power_limit_mw

    def nvmlDeviceGetPerformanceState(self, gpu: FakeGpu) -> int:
        self._get(gpu, "pstate")
        return gpu.pstate

    def nvmlDeviceGetClockInfo(self, gpu: FakeGpu, clock: int) -> int:
        self._get(gpu, "clock")
        return gpu.sm_clock if clock == NVML_CLOCK_SM else gpu.graphics_clock

    def _processes(self, gpu: FakeGpu, graphics: bool) -> list[Any]:
        self._get(gpu, "processes")
        return [
            SimpleNamespace(
                pid=p.pid, usedGpuMemory=p.used_mib * MIB if p.used_mib is not None else None
            )
            for p in gpu.processes
            if p.graphics == graphics
        ]

    def nvmlDeviceGetComputeRunningProcesses(self, gpu: FakeGpu) -> list[Any]:
        return self._processes(gpu, graphics=False)

    def nvmlDeviceGetGraphicsRunningProcesses(self, gpu: FakeGpu) -> list[Any]:
        return self._processes(gpu, graphics=True)


RTX_4090 = "GPU-5f2a1c3e-8b7d-4e6f-9a01-23456789abcd"
RTX_3060 = "GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"


def two_gpus() -> list[FakeGpu]:
    """The household GPU box of the tests (the same figures as the exporter fixtures)."""
    return [
        FakeGpu(
            uuid=RTX_4090,
            name="NVIDIA GeForce RTX 4090",
            total_mib=24564,
            used_mib=14336,
            reserved_mib=424,
            utilization=(37, 21),
            temperature=61,
            power_mw=182_500,
            power_limit_mw=450_000,
            pstate=2,
            sm_clock=2520,
            graphics_clock=2520,
            processes=[
                FakeProcess(pid=4242, used_mib=12288),  # ollama runner
                FakeProcess(pid=5151, used_mib=1536),  # ffmpeg transcode
                FakeProcess(pid=6161, used_mib=None, graphics=True),  # Xorg, no figure (WDDM-like)
            ],
        ),
        FakeGpu(
            uuid=RTX_3060,
            name="NVIDIA GeForce RTX 3060",
            total_mib=12288,
            used_mib=900,
            reserved_mib=258,
            utilization=(0, 0),
            temperature=38,
            power_mw=14_200,
            power_limit_mw=170_000,
            pstate=8,
            sm_clock=210,
            graphics_clock=210,
            processes=[FakeProcess(pid=7373, used_mib=640)],  # frigate detector
        ),
    ]


def skip_if_nvidia_driver_works() -> None:
    """Skip a test that needs a machine without a usable NVIDIA driver (like CI)."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return
    pynvml.nvmlShutdown()  # pragma: no cover - only on a machine with a GPU
    pytest.skip("this machine has a working NVIDIA driver")  # pragma: no cover
