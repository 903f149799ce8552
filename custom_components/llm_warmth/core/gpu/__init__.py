"""GPU telemetry sources (local NVML, remote Prometheus exporters); no Home Assistant imports."""
