"""Local GPUs through NVML (the ``pynvml`` module of ``nvidia-ml-py``).

NVML calls block: every one runs through the ``run_blocking`` callable the caller passes
(Home Assistant's executor). NVML is initialised once, on the first reading, and shut down
by ``close``. A machine without an NVIDIA driver raises ``GpuSourceUnavailableError``:
the normal case there, told in one line, no traceback.
"""

from collections.abc import Awaitable, Callable
import contextlib
from pathlib import Path
from typing import Any

from .errors import GpuSourceError, GpuSourceUnavailableError
from .types import GpuProcess, GpuStatus, ProcessKind

# A plain alias, not a `type` statement: scripts/gpu_check imports this on Python 3.11 too.
RunBlocking = Callable[[Callable[[], Any]], Awaitable[Any]]

# NVML return codes (nvml.h) that mean "no usable NVML on this machine".
_UNUSABLE = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": "the NVIDIA driver library (libnvidia-ml.so) was not found",
    "NVML_ERROR_DRIVER_NOT_LOADED": "the NVIDIA driver is not loaded",
    "NVML_ERROR_NO_PERMISSION": "no permission to use NVML",
    "NVML_ERROR_FUNCTION_NOT_FOUND": "the NVIDIA driver is too old for this NVML",
}
_UNKNOWN_PSTATE = 32


class NvmlSource:
    """Reads every local NVIDIA GPU through NVML."""

    def __init__(self, nvml: Any, run_blocking: RunBlocking, *, proc: Path = Path("/proc")) -> None:
        """Use ``nvml`` (the ``pynvml`` module, or a stand-in with its names).

        Blocking calls go through ``run_blocking``; process names are read under ``proc``.
        """
        self._nvml = nvml
        self._run = run_blocking
        self._proc = proc
        self._initialised = False
        # The UUID of each index, to report a GPU that fell off the bus under its identity.
        self._uuids: dict[int, str] = {}

    @property
    def description(self) -> str:
        """Return a short name of the source (for diagnostics)."""
        return "local NVML"

    async def read(self) -> tuple[GpuStatus, ...]:
        """Return every GPU's status; raise ``GpuSourceError`` when NVML cannot be used."""
        result: tuple[GpuStatus, ...] = await self._run(self._read_blocking)
        return result

    async def close(self) -> None:
        """Shut NVML down if this source initialised it."""
        if self._initialised:
            self._initialised = False
            await self._run(self._shutdown_blocking)

    def _shutdown_blocking(self) -> None:
        with contextlib.suppress(self._nvml.NVMLError):  # nothing left to release
            self._nvml.nvmlShutdown()

    def _read_blocking(self) -> tuple[GpuStatus, ...]:
        nvml = self._nvml
        try:
            if not self._initialised:
                nvml.nvmlInit()
                self._initialised = True
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as err:
            raise self._unusable(err) from err
        return tuple(self._read_gpu(index) for index in range(count))

    def _unusable(self, err: Exception) -> GpuSourceError:
        code = getattr(err, "value", None)
        for name, reason in _UNUSABLE.items():
            if code == getattr(self._nvml, name, object()):
                return GpuSourceUnavailableError(f"NVML cannot be used: {reason}")
        return GpuSourceError(f"NVML failed: {err}")

    def _read_gpu(self, index: int) -> GpuStatus:
        """Return one GPU's status; a GPU that fails is reported with its error.

        A GPU that failed before it was ever identified is reported as ``index-N``.
        """
        nvml = self._nvml
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            uuid = self._uuids[index] = _text(nvml.nvmlDeviceGetUUID(handle))
            name = _text(nvml.nvmlDeviceGetName(handle))
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        except nvml.NVMLError as err:
            uuid = self._uuids.get(index, f"index-{index}")
            return GpuStatus(index=index, uuid=uuid, name=None, error=str(err))

        def optional(call: Callable[[], Any]) -> Any:
            """Return an optional reading, or None where the GPU does not support it."""
            try:
                return call()
            except nvml.NVMLError:
                return None

        utilization = optional(lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
        power = optional(lambda: nvml.nvmlDeviceGetPowerUsage(handle))
        limit = optional(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
        pstate = optional(lambda: nvml.nvmlDeviceGetPerformanceState(handle))
        processes = optional(lambda: self._processes(handle))
        return GpuStatus(
            index=index,
            uuid=uuid,
            name=name,
            memory_total=int(memory.total),
            memory_used=int(memory.used),
            memory_free=int(memory.free),
            utilization_gpu=float(utilization.gpu) if utilization is not None else None,
            utilization_memory=float(utilization.memory) if utilization is not None else None,
            temperature=optional(
                lambda: float(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
            ),
            power_draw=power / 1000 if power is not None else None,
            power_limit=limit / 1000 if limit is not None else None,
            performance_state=pstate if pstate is not None and pstate != _UNKNOWN_PSTATE else None,
            sm_clock=optional(
                lambda: float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
            ),
            graphics_clock=optional(
                lambda: float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_GRAPHICS))
            ),
            processes=processes,
        )

    def _processes(self, handle: Any) -> tuple[GpuProcess, ...]:
        nvml = self._nvml
        found: dict[int, GpuProcess] = {}
        for kind, call in (
            (ProcessKind.COMPUTE, nvml.nvmlDeviceGetComputeRunningProcesses),
            (ProcessKind.GRAPHICS, nvml.nvmlDeviceGetGraphicsRunningProcesses),
        ):
            for process in call(handle):
                pid = int(process.pid)
                if pid in found:
                    continue  # a process that both computes and draws counts once
                used = process.usedGpuMemory
                found[pid] = GpuProcess(
                    pid=pid,
                    name=self._process_name(pid),
                    used_bytes=int(used) if isinstance(used, int) else None,
                    kind=kind,
                )
        return tuple(sorted(found.values(), key=lambda p: p.pid))

    def _process_name(self, pid: int) -> str | None:
        """Return a local process's name from /proc (None in another PID namespace)."""
        try:
            return (self._proc / str(pid) / "comm").read_text().strip() or None
        except OSError:
            return None


def _text(value: str | bytes) -> str:
    """Return NVML's string (older bindings return bytes)."""
    return value.decode() if isinstance(value, bytes) else value
