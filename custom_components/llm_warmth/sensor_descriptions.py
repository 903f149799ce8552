"""What each sensor shows: the descriptions of the server's and the models' sensors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.const import (
    PERCENTAGE,
    EntityCategory,
    UnitOfTime,
)

from .core.backends.base import Capabilities
from .core.load_figures import FigureSource
from .core.model_readings import (
    Unknown,
    classification,
    classification_attrs,
    context_length,
    gpu_share,
    kept_forever_attrs,
    last_figure,
    load_figure_attrs,
    load_figure_unknown,
    lower_bound_unknown,
    make,
    make_attrs,
    timing,
    total,
    unloads_at,
    unloads_at_unknown,
    vram,
    warmth_attrs,
    warmth_state,
)
from .core.model_timing import ModelTiming
from .core.monitor import ServerSnapshot
from .core.ttft import Classification
from .core.warmth import Warmth
from .gpu_sensor import MemorySize, SensorValue


@dataclass(frozen=True, kw_only=True)
class ServerSensorDescription(SensorEntityDescription):
    """A sensor of the server's device."""

    value_fn: Callable[[ServerSnapshot], SensorValue]
    attrs_fn: Callable[[ServerSnapshot], Mapping[str, object]] | None = None
    has_fn: Callable[[Capabilities], bool] = lambda _: True


@dataclass(frozen=True, kw_only=True)
class ModelSensorDescription(SensorEntityDescription):
    """A sensor of one model's device."""

    value_fn: Callable[[ServerSnapshot, str], SensorValue]
    attrs_fn: Callable[[ServerSnapshot, str], Mapping[str, object]] | None = None
    has_fn: Callable[[Capabilities], bool] = lambda _: True
    # Name the conversation agents that use the model (an attribute).
    names_agents: bool = False
    # Why the value is unknown, while it is (the ``reason`` attribute), and every reason
    # it can give (each has its words in the translations).
    reason_fn: Callable[[ServerSnapshot, str], Unknown | None] | None = None
    reasons: tuple[Unknown, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ServerMemorySensorDescription(MemorySize, ServerSensorDescription):
    """A memory size on the server's device."""


@dataclass(frozen=True, kw_only=True)
class ModelMemorySensorDescription(MemorySize, ModelSensorDescription):
    """A memory size on a model's device."""


def _stage_sensor(
    key: str,
    value_fn: Callable[[ModelTiming], float | None],
    *,
    enabled: bool = True,
    seconds: bool = False,
    has_fn: Callable[[Capabilities], bool] = lambda _: True,
) -> ModelSensorDescription:
    """Describe a TTFT or stage sensor: measured in milliseconds.

    Shown in seconds (``seconds``) where it runs to seconds when cold (the TTFT, the
    load); in milliseconds where the sub-second value is the point (prefill, decode).
    """
    return ModelSensorDescription(
        key=key,
        translation_key=key,
        entity_registry_enabled_default=enabled,
        device_class=SensorDeviceClass.DURATION,
        native_unit_of_measurement=UnitOfTime.MILLISECONDS,
        suggested_unit_of_measurement=UnitOfTime.SECONDS if seconds else None,
        state_class=SensorStateClass.MEASUREMENT,
        suggested_display_precision=2 if seconds else 0,
        value_fn=lambda s, m: value_fn(timing(s, m)),
        has_fn=has_fn,
    )


def _seconds_sensor(
    key: str,
    value_fn: Callable[[ModelTiming], float | None],
    has_fn: Callable[[Capabilities], bool],
    *,
    reason_fn: Callable[[ServerSnapshot, str], Unknown | None],
    reasons: tuple[Unknown, ...],
    attrs_fn: Callable[[ServerSnapshot, str], Mapping[str, object]] | None = None,
) -> ModelSensorDescription:
    """Describe a model's figure in seconds, to a tenth (a load's or a cold request's)."""
    return ModelSensorDescription(
        key=key,
        translation_key=key,
        device_class=SensorDeviceClass.DURATION,
        state_class=SensorStateClass.MEASUREMENT,
        native_unit_of_measurement=UnitOfTime.SECONDS,
        suggested_display_precision=1,
        value_fn=lambda s, m: value_fn(timing(s, m)),
        attrs_fn=attrs_fn,
        has_fn=has_fn,
        reason_fn=reason_fn,
        reasons=reasons,
    )


def _load_figure_sensor(
    key: str,
    value_fn: Callable[[ModelTiming], float | None],
    source_fn: Callable[[ModelTiming], FigureSource | None],
    at_least_fn: Callable[[ModelTiming], float | None],
    has_fn: Callable[[Capabilities], bool] = lambda _: True,
) -> ModelSensorDescription:
    """Describe a load figure: the last exact one, in seconds, and who measured it.

    A newer one that only polls saw is no figure of its own: it shows as an attribute,
    ``at_least_seconds``, and never as the state (the state stays the last exact figure,
    Unknown until there is one).
    """
    return _seconds_sensor(
        key,
        value_fn,
        has_fn,
        attrs_fn=lambda s, m: load_figure_attrs(source_fn(timing(s, m)), at_least_fn(timing(s, m))),
        # Unknown until an exact figure: none timed yet, or polls saw only part of a load.
        reason_fn=lambda s, m: load_figure_unknown(at_least_fn(timing(s, m))),
        reasons=(Unknown.NOT_TIMED_YET, Unknown.LOWER_BOUND_ONLY),
    )


def _lower_bound_sensor(
    key: str,
    at_least_fn: Callable[[ModelTiming], float | None],
    has_fn: Callable[[Capabilities], bool] = lambda _: True,
) -> ModelSensorDescription:
    """Describe what a load figure's newest load lasted at least: polls saw part of it.

    Named for what it measures, beside the exact figure's sensor (whose state it never
    replaces), so that the device page and the graphs tell the load as the card does
    ("at least 4.6 s"). Unknown while the newest load was timed exactly, or none was seen.
    """
    return _seconds_sensor(
        key,
        at_least_fn,
        has_fn,
        reason_fn=lambda s, m: lower_bound_unknown(at_least_fn(timing(s, m))),
        reasons=(Unknown.NO_PARTLY_SEEN_LOAD,),
    )


def _reports_memory(capabilities: Capabilities) -> bool:
    return capabilities.reports_memory


SERVER_SENSORS: tuple[ServerSensorDescription, ...] = (
    ServerSensorDescription(
        key="resident_models",
        translation_key="resident_models",
        state_class=SensorStateClass.MEASUREMENT,
        value_fn=lambda s: len(s.held),
        attrs_fn=lambda s: {"names": sorted(s.held)},
    ),
    ServerMemorySensorDescription(
        key="resident_ram_spill",
        translation_key="resident_ram_spill",
        value_fn=lambda s: total([m.ram_spill for m in s.resident.values()]),
        has_fn=_reports_memory,
    ),
    ServerSensorDescription(
        key="installed_models",
        translation_key="installed_models",
        entity_category=EntityCategory.DIAGNOSTIC,
        state_class=SensorStateClass.MEASUREMENT,
        value_fn=lambda s: len(s.installed),
        attrs_fn=lambda s: {"names": sorted(s.installed)},
    ),
)

MODEL_SENSORS: tuple[ModelSensorDescription, ...] = (
    ModelSensorDescription(
        key="warmth",
        translation_key="warmth",
        # The model's main entity: named as its device, the model ("qwen3:8b"), so that
        # a dashboard row and a logbook line name the model, not "Warmth".
        name=None,
        device_class=SensorDeviceClass.ENUM,
        options=[w.value for w in Warmth],
        value_fn=warmth_state,
        attrs_fn=warmth_attrs,
        names_agents=True,
    ),
    ModelSensorDescription(
        key="unloads_at",
        translation_key="unloads_at",
        device_class=SensorDeviceClass.TIMESTAMP,
        value_fn=unloads_at,
        attrs_fn=kept_forever_attrs,
        has_fn=lambda c: c.reports_expiry,
        reason_fn=unloads_at_unknown,
        reasons=(Unknown.NOT_LOADED, Unknown.LOADING, Unknown.KEPT_FOREVER),
    ),
    # A model's device is a child device of its server, which Home Assistant shows with
    # the server's make: the model's own make is this sensor, on its device page.
    ModelSensorDescription(
        key="make",
        translation_key="make",
        entity_category=EntityCategory.DIAGNOSTIC,
        value_fn=make,
        attrs_fn=make_attrs,
        has_fn=lambda c: c.reports_model_make,
    ),
    ModelSensorDescription(
        key="context_length",
        translation_key="context_length",
        entity_category=EntityCategory.DIAGNOSTIC,
        entity_registry_enabled_default=False,
        native_unit_of_measurement="tokens",
        value_fn=context_length,
        has_fn=lambda c: c.reports_context_length,
    ),
    _load_figure_sensor(
        "last_measured_load_duration",
        lambda t: t.load_seconds,
        lambda t: t.load_source,
        lambda t: t.load_at_least_seconds,
        has_fn=lambda c: c.reports_load_duration or c.reports_loading,
    ),
    _load_figure_sensor(
        "last_cold_request_duration",
        lambda t: t.cold_request_seconds,
        lambda t: t.cold_request_source,
        lambda t: t.cold_request_at_least_seconds,
    ),
    _lower_bound_sensor(
        "last_load_at_least",
        lambda t: t.load_at_least_seconds,
        has_fn=lambda c: c.reports_load_duration or c.reports_loading,
    ),
    _lower_bound_sensor("last_cold_request_at_least", lambda t: t.cold_request_at_least_seconds),
)
# What a probe measures: created for a model once it has been probed.
PROBE_SENSORS: tuple[ModelSensorDescription, ...] = (
    _stage_sensor("last_ttft", lambda t: t.last.ttft_ms if t.last else None, seconds=True),
    _stage_sensor("last_cold_ttft", lambda t: t.last_cold_ttft_ms, seconds=True),
    _stage_sensor("last_warm_ttft", lambda t: t.last_warm_ttft_ms, seconds=True),
    _stage_sensor(
        "load_stage", lambda t: t.last.queue_and_load_ms if t.last else None, seconds=True
    ),
    _stage_sensor(
        "queue_stage",
        lambda t: t.last.queue_ms if t.last else None,
        has_fn=lambda c: c.reports_queue,
    ),
    _stage_sensor("prefill_stage", lambda t: t.last.prefill_ms if t.last else None),
    _stage_sensor(
        "first_decode_stage", lambda t: t.last.first_decode_ms if t.last else None, enabled=False
    ),
    _stage_sensor(
        "overhead_stage", lambda t: t.last.overhead_ms if t.last else None, enabled=False
    ),
    ModelSensorDescription(
        key="prompt_cache_reuse",
        translation_key="prompt_cache_reuse",
        native_unit_of_measurement=PERCENTAGE,
        state_class=SensorStateClass.MEASUREMENT,
        suggested_display_precision=0,
        value_fn=lambda s, m: last_figure(s, m, lambda b: b.prompt_cache_reuse),
        has_fn=lambda c: c.reports_prompt_cache,
    ),
    ModelSensorDescription(
        key="decode_rate",
        translation_key="decode_rate",
        native_unit_of_measurement="tokens/s",
        state_class=SensorStateClass.MEASUREMENT,
        suggested_display_precision=1,
        value_fn=lambda s, m: last_figure(s, m, lambda b: b.decode_rate),
    ),
    ModelSensorDescription(
        key="last_probe",
        translation_key="last_probe",
        device_class=SensorDeviceClass.TIMESTAMP,
        entity_category=EntityCategory.DIAGNOSTIC,
        entity_registry_enabled_default=False,
        value_fn=lambda s, m: timing(s, m).last_probe_at,
    ),
    ModelSensorDescription(
        key="last_classification",
        translation_key="last_classification",
        device_class=SensorDeviceClass.ENUM,
        options=[c.value for c in Classification],
        value_fn=classification,
        attrs_fn=classification_attrs,
    ),
)


# GPU memory, created once the server has held model weights on a GPU: a CPU-only server
# would show "GPU memory 0 GiB" for ever (its models' memory is "in system RAM").
SERVER_GPU_SENSORS: tuple[ServerSensorDescription, ...] = (
    ServerMemorySensorDescription(
        key="resident_vram",
        translation_key="resident_vram",
        value_fn=lambda s: s.resident_vram,
        has_fn=_reports_memory,
    ),
)
MODEL_GPU_SENSORS: tuple[ModelSensorDescription, ...] = (
    ModelMemorySensorDescription(
        key="vram",
        translation_key="vram",
        value_fn=vram,
        has_fn=_reports_memory,
    ),
    ModelSensorDescription(
        has_fn=_reports_memory,
        key="gpu_share",
        translation_key="gpu_share",
        native_unit_of_measurement=PERCENTAGE,
        state_class=SensorStateClass.MEASUREMENT,
        suggested_display_precision=0,
        # Not resident: nothing of it is on the GPU, as its GPU memory says (0 GiB).
        value_fn=gpu_share,
    ),
)
