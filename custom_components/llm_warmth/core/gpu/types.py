"""What a GPU telemetry source reports: immutable, the same for every source."""

from dataclasses import dataclass
from enum import StrEnum


class ProcessKind(StrEnum):
    """How a process uses the GPU."""

    COMPUTE = "compute"
    GRAPHICS = "graphics"


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process holding GPU memory."""

    pid: int
    name: str | None
    used_bytes: int | None
    kind: ProcessKind


@dataclass(frozen=True, slots=True)
class GpuStatus:
    """One GPU at one reading. Fields a source cannot tell are None.

    ``processes`` is None when the source has no process list (remote exporters), and an
    empty tuple when the GPU runs none. ``error`` names why a GPU the source knows could
    not be read (e.g. it fell off the bus); its other fields are then None.
    """

    index: int
    uuid: str
    name: str | None
    memory_total: int | None = None
    memory_used: int | None = None
    memory_free: int | None = None
    utilization_gpu: float | None = None
    utilization_memory: float | None = None
    temperature: float | None = None
    power_draw: float | None = None
    power_limit: float | None = None
    performance_state: int | None = None
    sm_clock: float | None = None
    graphics_clock: float | None = None
    processes: tuple[GpuProcess, ...] | None = None
    error: str | None = None
