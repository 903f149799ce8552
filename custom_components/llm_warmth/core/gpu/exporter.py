"""Remote GPUs through the Prometheus text of an exporter on the GPU host.

Three exporters are understood: NVIDIA's DCGM exporter, utkuozdemir's
nvidia_gpu_exporter (``nvidia_smi_*``) and llama-swap's ``/metrics``. The text is parsed
by ``prometheus_client``'s parser; the kind is given or recognised from the metric names.
"""

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
import math
import re
from typing import Final

import aiohttp
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from yarl import URL

from ..backends.replies import read_limited
from .errors import GpuSourceConnectionError, GpuSourceResponseError
from .types import GpuStatus

MIB: Final = 1024 * 1024
MAX_PERFORMANCE_STATE: Final = 15
DEFAULT_TIMEOUT: Final = 10.0
# An exporter page of a box with eight GPUs is tens of kilobytes; it is parsed on the event
# loop, so a larger one is refused rather than read.
MAX_TEXT_BYTES: Final = 1024 * 1024
# Labels that become device names and identities.
MAX_LABEL: Final = 256
MAX_GPU_INDEX: Final = 1023


class ExporterKind(StrEnum):
    """The exporters whose metrics this source reads."""

    AUTO = "auto"
    DCGM = "dcgm"
    NVIDIA_GPU_EXPORTER = "nvidia_gpu_exporter"
    LLAMA_SWAP = "llama_swap"


@dataclass(frozen=True, slots=True)
class _Metric:
    """Where one exporter metric goes, its scale to our unit, and its sane range there."""

    field: str
    scale: float = 1.0
    low: float = 0.0
    high: float = float(2**53)  # bytes: 8 PiB


# Sane ranges in our units, for values that are not memory sizes.
_PERCENT = {"low": 0.0, "high": 100.0}
_CELSIUS = {"low": -60.0, "high": 250.0}
_WATTS = {"low": 0.0, "high": 10_000.0}
_MHZ = {"low": 0.0, "high": 100_000.0}
_PSTATE = {"low": 0.0, "high": 32.0}  # 32 is NVML's "unknown", dropped later


@dataclass(frozen=True, slots=True)
class _Format:
    """How one exporter names its GPUs and metrics."""

    marker: str  # a metric only this exporter writes
    id_labels: tuple[str, ...]  # labels that tell GPUs apart, best first
    index_label: str | None
    name_label: str | None
    metrics: Mapping[str, _Metric]
    info_metric: str | None = None  # carries the GPU name as a label (nvidia_gpu_exporter)
    index_metric: str | None = None  # carries the GPU index as its value
    memory_reserved: str | None = None  # counted into the total where the total is missing
    extra: Mapping[str, str] = field(default_factory=dict)


_FORMATS: Final[Mapping[ExporterKind, _Format]] = {
    ExporterKind.DCGM: _Format(
        marker="DCGM_FI_DEV_FB_FREE",
        id_labels=("UUID", "gpu"),
        index_label="gpu",
        name_label="modelName",
        memory_reserved="DCGM_FI_DEV_FB_RESERVED",
        metrics={
            "DCGM_FI_DEV_FB_FREE": _Metric("memory_free", MIB),
            "DCGM_FI_DEV_FB_USED": _Metric("memory_used", MIB),
            "DCGM_FI_DEV_FB_TOTAL": _Metric("memory_total", MIB),
            "DCGM_FI_DEV_FB_RESERVED": _Metric("memory_reserved", MIB),
            "DCGM_FI_DEV_GPU_UTIL": _Metric("utilization_gpu", **_PERCENT),
            "DCGM_FI_DEV_MEM_COPY_UTIL": _Metric("utilization_memory", **_PERCENT),
            "DCGM_FI_DEV_GPU_TEMP": _Metric("temperature", **_CELSIUS),
            "DCGM_FI_DEV_POWER_USAGE": _Metric("power_draw", **_WATTS),
            "DCGM_FI_DEV_POWER_MGMT_LIMIT": _Metric("power_limit", **_WATTS),
            "DCGM_FI_DEV_PSTATE": _Metric("performance_state", **_PSTATE),
            "DCGM_FI_DEV_SM_CLOCK": _Metric("sm_clock", **_MHZ),
        },
    ),
    ExporterKind.NVIDIA_GPU_EXPORTER: _Format(
        marker="nvidia_smi_memory_free_bytes",
        id_labels=("uuid",),
        index_label=None,
        name_label="name",
        info_metric="nvidia_smi_gpu_info",
        index_metric="nvidia_smi_index",
        memory_reserved="nvidia_smi_memory_reserved_bytes",
        metrics={
            "nvidia_smi_memory_free_bytes": _Metric("memory_free"),
            "nvidia_smi_memory_used_bytes": _Metric("memory_used"),
            "nvidia_smi_memory_total_bytes": _Metric("memory_total"),
            "nvidia_smi_memory_reserved_bytes": _Metric("memory_reserved"),
            "nvidia_smi_utilization_gpu_ratio": _Metric("utilization_gpu", 100, **_PERCENT),
            "nvidia_smi_utilization_memory_ratio": _Metric("utilization_memory", 100, **_PERCENT),
            "nvidia_smi_temperature_gpu": _Metric("temperature", **_CELSIUS),
            "nvidia_smi_power_draw_watts": _Metric("power_draw", **_WATTS),
            "nvidia_smi_enforced_power_limit_watts": _Metric("power_limit", **_WATTS),
            "nvidia_smi_pstate": _Metric("performance_state", **_PSTATE),
            "nvidia_smi_clocks_current_sm_clock_hz": _Metric("sm_clock", 1e-6, **_MHZ),
            "nvidia_smi_clocks_current_graphics_clock_hz": _Metric("graphics_clock", 1e-6, **_MHZ),
        },
    ),
    ExporterKind.LLAMA_SWAP: _Format(
        marker="llamaswap_gpu_memory_used_bytes",
        id_labels=("uuid", "id"),
        index_label="id",
        name_label="name",
        metrics={
            "llamaswap_gpu_memory_used_bytes": _Metric("memory_used"),
            "llamaswap_gpu_memory_total_bytes": _Metric("memory_total"),
            "llamaswap_gpu_util_percent": _Metric("utilization_gpu", **_PERCENT),
            # llamaswap_gpu_memory_util_percent is used / total, not memory activity: skipped.
            "llamaswap_gpu_temperature_celsius": _Metric("temperature", **_CELSIUS),
            "llamaswap_gpu_power_draw_watts": _Metric("power_draw", **_WATTS),
        },
    ),
}
_BARE_UUID: Final = re.compile(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")
_INDEX_LABEL: Final = re.compile(r"[0-9]{1,4}")
_INT_FIELDS: Final = {"memory_free", "memory_used", "memory_total", "memory_reserved"}


def detect_kind(names: Iterable[str]) -> ExporterKind | None:
    """Return the exporter whose marker metric is among ``names``."""
    present = set(names)
    for kind, fmt in _FORMATS.items():
        if fmt.marker in present:
            return kind
    return None


def parse_exporter_text(text: str, kind: ExporterKind = ExporterKind.AUTO) -> tuple[GpuStatus, ...]:
    """Return the GPUs in an exporter's Prometheus text.

    Raise ``GpuSourceResponseError`` when the text does not parse or holds no GPU metrics
    of the given (or any known) exporter.
    """
    try:
        samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    except (ValueError, TypeError, IndexError, KeyError, RecursionError) as err:
        raise GpuSourceResponseError(f"not Prometheus text: {err}") from err
    names = {s.name for s in samples}
    if kind is ExporterKind.AUTO:
        detected = detect_kind(names)
        if detected is None:
            raise GpuSourceResponseError("no GPU metrics of a known exporter in the text")
        kind = detected
    fmt = _FORMATS[kind]
    if fmt.marker not in names:
        raise GpuSourceResponseError(f"no {fmt.marker} in the text: not a {kind} exporter")
    return _gpus(fmt, samples)


def _gpu_id(fmt: _Format, sample: Sample) -> str | None:
    for label in fmt.id_labels:
        if value := sample.labels.get(label):
            return value if len(value) <= MAX_LABEL else None
    return None


def _reading(value: float, scale: float, low: float, high: float) -> float | None:
    """Return ``value * scale`` when it is a finite number in [low, high], else None.

    The parser gives an ``int`` for an integer literal, of any size: a 400-digit one does
    not fit a float (``OverflowError``), and ``1e308`` MiB is infinite once scaled.
    """
    try:
        scaled = float(value) * scale
    except OverflowError:
        return None
    return scaled if math.isfinite(scaled) and low <= scaled <= high else None


def _gpus(fmt: _Format, samples: list[Sample]) -> tuple[GpuStatus, ...]:
    values: dict[str, dict[str, float]] = {}
    labels: dict[str, dict[str, str]] = {}
    for sample in samples:
        gpu = _gpu_id(fmt, sample)
        if gpu is None:
            continue
        if sample.name == fmt.info_metric:
            labels.setdefault(gpu, {}).update(sample.labels)
        elif sample.name == fmt.index_metric:
            index = _reading(sample.value, 1.0, 0.0, MAX_GPU_INDEX)
            if index is not None and index.is_integer():
                values.setdefault(gpu, {})["index"] = index
        elif (metric := fmt.metrics.get(sample.name)) is not None:
            # A NaN, infinite or out-of-range reading is no reading.
            reading = _reading(sample.value, metric.scale, metric.low, metric.high)
            if reading is not None:
                values.setdefault(gpu, {})[metric.field] = reading
            labels.setdefault(gpu, {}).update(sample.labels)
    gpus = []
    for position, gpu in enumerate(sorted(values, key=lambda g: _order(fmt, g, values, labels))):
        fields = values[gpu]
        gpu_labels = labels.get(gpu, {})
        gpus.append(_status(fmt, gpu, position, fields, gpu_labels))
    if not gpus:
        raise GpuSourceResponseError(f"{fmt.marker} without GPU labels")
    return tuple(gpus)


def _order(
    fmt: _Format, gpu: str, values: dict[str, dict[str, float]], labels: dict[str, dict[str, str]]
) -> tuple[float, str]:
    index = _index(fmt, values[gpu], labels.get(gpu, {}))
    return (index if index is not None else float("inf"), gpu)


def _index(fmt: _Format, fields: Mapping[str, float], gpu_labels: Mapping[str, str]) -> int | None:
    if "index" in fields:
        return int(fields["index"])
    raw = gpu_labels.get(fmt.index_label) if fmt.index_label else None
    # Digits only: "²" is a digit to str.isdigit() but not to int().
    if raw is None or not _INDEX_LABEL.fullmatch(raw) or int(raw) > MAX_GPU_INDEX:
        return None
    return int(raw)


def _status(
    fmt: _Format, gpu: str, position: int, fields: dict[str, float], gpu_labels: Mapping[str, str]
) -> GpuStatus:
    numbers: dict[str, float | int] = {
        name: round(value) if name in _INT_FIELDS else value for name, value in fields.items()
    }
    reserved = int(numbers.pop("memory_reserved", 0))
    total, used, free = (numbers.get(k) for k in ("memory_total", "memory_used", "memory_free"))
    if total is None and used is not None and free is not None:
        total = int(used + free + reserved)
    if free is None and total is not None and used is not None and total >= used + reserved:
        free = int(total - used - reserved)
    pstate = numbers.get("performance_state")
    if pstate is not None and not 0 <= pstate <= MAX_PERFORMANCE_STATE:
        pstate = None  # 32 is NVML's "unknown"
    index = _index(fmt, fields, gpu_labels)
    uuid = gpu_labels.get("UUID") or gpu_labels.get("uuid") or gpu
    if len(uuid) > MAX_LABEL:
        uuid = gpu  # the identity that told this GPU apart, checked in _gpu_id
    if _BARE_UUID.fullmatch(uuid):
        uuid = f"GPU-{uuid}"  # nvidia_gpu_exporter drops NVML's prefix; keep one identity
    name = gpu_labels.get(fmt.name_label) if fmt.name_label else None
    return GpuStatus(
        index=index if index is not None else position,
        uuid=uuid,
        name=name if name and len(name) <= MAX_LABEL else None,
        memory_total=int(total) if total is not None else None,
        memory_used=int(used) if used is not None else None,
        memory_free=int(free) if free is not None else None,
        utilization_gpu=_float(numbers, "utilization_gpu"),
        utilization_memory=_float(numbers, "utilization_memory"),
        temperature=_float(numbers, "temperature"),
        power_draw=_float(numbers, "power_draw"),
        power_limit=_float(numbers, "power_limit"),
        performance_state=int(pstate) if pstate is not None else None,
        sm_clock=_float(numbers, "sm_clock"),
        graphics_clock=_float(numbers, "graphics_clock"),
    )


def _float(numbers: Mapping[str, float | int], name: str) -> float | None:
    value = numbers.get(name)
    return round(float(value), 3) if value is not None else None


class ExporterSource:
    """Reads a GPU exporter's ``/metrics`` over an injected ``aiohttp.ClientSession``."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        kind: ExporterKind = ExporterKind.AUTO,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        """Read ``url`` (the full metrics URL) as an exporter of ``kind``."""
        self._session = session
        self._url = url
        # Error messages end up in logs, repair issues and diagnostics: no credentials.
        self._shown_url = str(URL(url).with_user(None))
        self._kind = kind
        self._timeout = timeout

    @property
    def description(self) -> str:
        """Return a short name of the source (for diagnostics)."""
        return f"{self._kind} exporter"

    async def read(self) -> tuple[GpuStatus, ...]:
        """Fetch and parse the exporter's metrics."""
        try:
            async with (
                asyncio.timeout(self._timeout),
                self._session.get(self._url) as response,
            ):
                status = response.status
                body = await read_limited(response, MAX_TEXT_BYTES)
        except TimeoutError as err:
            raise GpuSourceConnectionError(f"{self._shown_url} did not answer in time") from err
        except aiohttp.ClientError as err:
            raise GpuSourceConnectionError(f"cannot reach {self._shown_url}: {err}") from err
        if status >= 400:
            raise GpuSourceConnectionError(f"{self._shown_url} answered HTTP {status}")
        if body is None:
            raise GpuSourceResponseError(f"{self._shown_url} sent more than {MAX_TEXT_BYTES} bytes")
        # The text format is UTF-8 whatever the header claims: a "charset" of zlib, rot13
        # or idna must not decide how the bytes are read.
        return parse_exporter_text(body.decode("utf-8", "replace"), self._kind)

    async def close(self) -> None:
        """Nothing to release: the session belongs to the caller."""
