"""What core says to a person, without the words: a key and its typed figures (pure).

The shell renders each ``Sentence`` from the integration's translations (the ``common``
section of ``translations/<language>.json``, under the sentence's key), so every word a
person reads comes from a translation file; core only decides which sentence and with
which numbers and names.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
import math

from .json_value import JsonValue


@dataclass(frozen=True, slots=True)
class Duration:
    """A duration, shown in ms below a second and in s from there."""

    ms: float


@dataclass(frozen=True, slots=True)
class Size:
    """A memory size in bytes, shown in GiB."""

    bytes: int


@dataclass(frozen=True, slots=True)
class Number:
    """A number shown with ``digits`` decimals."""

    value: float
    digits: int


type Figure = Duration | Size | Number | int | str

# Every sentence there is, by key, with the figures its translation shows. A sentence is
# checked against it when made, and the translations check compares each translation's
# placeholders with it.
PLACEHOLDERS: Mapping[str, frozenset[str]] = {
    key: frozenset(names.split())
    for key, names in {
        # A probe's summary.
        "probe_cold": "ttft",
        "probe_cold_load": "ttft load",
        "probe_cold_prefill": "ttft prefill",
        "probe_cold_load_prefill": "ttft load prefill",
        "probe_warm": "ttft",
        "probe_warm_slow_unreported": "ttft",
        "probe_warm_slow_load": "ttft spent",
        "probe_warm_slow_queue": "ttft spent",
        "probe_warm_slow_prefill": "ttft spent",
        "probe_warm_slow_first_decode": "ttft spent",
        "probe_warm_slow_overhead": "ttft spent",
        # A diagnosis' verdict.
        "diagnosis_no_clear_stage": "cold repeat",
        "diagnosis_context_reload": "num_ctx previous_num_ctx load",
        "diagnosis_context_reload_from_default": "num_ctx load",
        "diagnosis_reloaded_in_place": "load",
        "diagnosis_evicted": "load ttft",
        "diagnosis_prompt_cache": "prefill cached_prefill",
        "diagnosis_first_token_slower": "more",
        "diagnosis_always_slow_prompt": "ttft",
        "diagnosis_always_slow_generation": "ttft",
        "diagnosis_prefill_unreported": "",
        "diagnosis_prompt_cost": "per_token long_tokens long_prefill short_tokens short_prefill",
        "diagnosis_switch_both_resident": "",
        "diagnosis_switch_no_clear_stage": "",
        "diagnosis_switch_evicts": "load",
        "diagnosis_switch_evicts_sized": "load model model_size other_model other_size",
        "diagnosis_switch_evicts_sized_free": ("load model model_size other_model other_size free"),
        "diagnosis_competing_load_evicts": "load",
        "diagnosis_competing_load_evicts_sized": "load model model_size other_model other_size",
        "diagnosis_competing_load_evicts_sized_free": (
            "load model model_size other_model other_size free"
        ),
        # A verdict stored before verdicts were sentences: its words as they were.
        "diagnosis_as_stored": "words",
        # An idle profile's verdict, one sentence a finding.
        "idle_no_results": "",
        "idle_resident_through": "minutes",
        "idle_evicted_by": "minutes",
        "idle_evicted_by_load": "minutes load",
        "idle_load_grew": "minutes load first_load first_minutes",
        "idle_within_target": "target",
        "idle_target_breaks": "target minutes ttft",
        "idle_target_breaks_cost": "target minutes ttft gib_hours",
        # The residency actions' summaries.
        "evict_unloaded": "models",
        "evict_not_resident": "models",
        "evict_nothing": "",
        "evict_unpinned": "models",
        "pushed_out": "models",
        "preload_already_resident": "model",
        "preload_loaded": "model seconds",
        "pin_until": "model until",
        "pin_until_unpinned": "model",
        "unpinned": "model",
        "not_pinned": "model",
        "unpin_unloaded": "",
        "unpin_handed_back": "",
        "unpin_kept": "",
        "unpin_not_resident": "",
        "unpin_unchanged": "",
        # The warm assistant, when no agent answered a turn.
        "assistant_unanswered": "servers",
        "assistant_agent_gone": "agent",
    }.items()
}


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence by key (its translation) and the figures its placeholders show."""

    key: str
    figures: Mapping[str, Figure] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse a sentence that does not exist or lacks (or adds) a figure."""
        names = PLACEHOLDERS.get(self.key)
        if names is None:
            raise ValueError(f"no sentence {self.key!r}")
        if set(self.figures) != names:
            raise ValueError(f"{self.key} shows {sorted(names)}, not {sorted(self.figures)}")

    def render(self, template: str) -> str:
        """Return ``template`` (the sentence's translation) with its figures shown."""
        return template.format(**{name: shown(f) for name, f in self.figures.items()})

    def as_dict(self) -> dict[str, JsonValue]:
        """Return the sentence as stored (JSON types)."""
        figures = {name: _figure_as_stored(figure) for name, figure in self.figures.items()}
        return {"key": self.key, "figures": figures}

    @classmethod
    def from_dict(cls, values: object) -> Sentence:
        """Read a stored sentence; raise ValueError when it is damaged."""
        if not isinstance(values, Mapping):
            raise ValueError("a sentence is not a mapping")
        key, figures = values.get("key"), values.get("figures", {})
        if not isinstance(key, str) or not key or not isinstance(figures, Mapping):
            raise ValueError(f"not a sentence: {values!r}")
        return cls(key, {_name(n): _figure(f) for n, f in figures.items()})


GIB = 1024**3


def shown(figure: Figure) -> str:
    """Return a figure as a person reads it: "349 ms", "7.5 s", "1.2" (GiB), "0.18"."""
    match figure:
        case Duration(ms=ms):
            return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.0f} ms"
        case Size(bytes=size):
            return f"{size / GIB:.1f}"
        case Number(value=value, digits=digits):
            return f"{value:.{digits}f}"
    return str(figure)


def _figure_as_stored(figure: Figure) -> JsonValue:
    match figure:
        case Duration():
            return {"ms": figure.ms}
        case Size():
            return {"bytes": figure.bytes}
        case Number():
            return {"value": figure.value, "digits": figure.digits}
    return figure


def _name(name: object) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"not a figure's name: {name!r}")
    return name


def _finite(value: object) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    return float(value)


def _whole(value: object, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
        raise ValueError(f"not a whole number up to {high}: {value!r}")
    return value


def _figure(value: object) -> Figure:
    """Read a stored figure; raise ValueError when it is none."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        match sorted(value):
            case ["ms"]:
                return Duration(_finite(value["ms"]))
            case ["bytes"]:
                return Size(_whole(value["bytes"], 2**63))
            case ["digits", "value"]:
                return Number(_finite(value["value"]), _whole(value["digits"], 6))
    raise ValueError(f"not a figure: {value!r}")
