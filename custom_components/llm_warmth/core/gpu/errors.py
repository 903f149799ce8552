"""Errors of the GPU telemetry sources."""


class GpuSourceError(Exception):
    """Base class: the source cannot give a reading now; the message says why."""


class GpuSourceUnavailableError(GpuSourceError):
    """The source cannot work on this machine (no NVIDIA driver, NVML library missing)."""


class GpuSourceConnectionError(GpuSourceError):
    """A remote exporter could not be reached or did not answer in time."""


class GpuSourceResponseError(GpuSourceError):
    """A remote exporter answered with something that holds no GPU metrics we know."""
