"""What was measured for one model, as its sensors read it and the store keeps it (pure).

``ModelTiming`` gathers a model's figures: its last probe (the stage breakdown and the
verdict ``ttft.py`` gave it), its last cold and warm times to first token, its warm
baseline, and its load and cold-request figures with who measured them (an exact figure
is never replaced by a polled lower bound). It reads and writes itself as stored.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from .load_figures import FigureSource, LoadFigures
from .ttft import (
    BASELINE_SIZE,
    Classification,
    Stage,
    StageBreakdown,
    Verdict,
    WarmBaseline,
    optional_float,
)


@dataclass(frozen=True, slots=True)
class ModelTiming:
    """What was measured for one model; the sensors read it and it is stored."""

    last: StageBreakdown | None = None
    last_probe_at: datetime | None = None
    last_verdict: Verdict | None = None
    last_cold_ttft_ms: float | None = None
    last_warm_ttft_ms: float | None = None
    baseline: WarmBaseline = field(default_factory=WarmBaseline)
    # The last load measured on its own (queue wait included), and who measured it: an
    # exact figure (the server's, ours, the server's events), never a polled lower bound.
    load_seconds: float | None = None
    load_source: FigureSource | None = None
    # The last request that loaded the model, start to finish, timed exactly.
    cold_request_seconds: float | None = None
    cold_request_source: FigureSource | None = None
    # A newer load, or cold request, that only polls saw: it lasted at least this long.
    # None once an exact figure of a newer one replaces it.
    load_at_least_seconds: float | None = None
    cold_request_at_least_seconds: float | None = None

    def with_load(self, figures: LoadFigures) -> ModelTiming:
        """Return the timing with the figures of one more load (unknown ones kept).

        A lower bound (polling saw only part of the load) never replaces an exact
        figure: it is kept beside it, as what the newer load lasted at least.
        """
        timing = self
        if figures.load_seconds is None:
            pass
        elif figures.load_source is FigureSource.POLLING:
            timing = replace(timing, load_at_least_seconds=figures.load_seconds)
        else:
            timing = replace(
                timing,
                load_seconds=figures.load_seconds,
                load_source=figures.load_source,
                load_at_least_seconds=None,
            )
        if figures.cold_request_seconds is None:
            pass
        elif figures.cold_request_source is FigureSource.POLLING:
            timing = replace(timing, cold_request_at_least_seconds=figures.cold_request_seconds)
        else:
            timing = replace(
                timing,
                cold_request_seconds=figures.cold_request_seconds,
                cold_request_source=figures.cold_request_source,
                cold_request_at_least_seconds=None,
            )
        return timing

    def with_probe(self, sample: StageBreakdown, verdict: Verdict, at: datetime) -> ModelTiming:
        """Return the timing with one more probe recorded."""
        cold = verdict.classification is Classification.COLD
        return replace(
            self,
            last=sample,
            last_probe_at=at,
            last_verdict=verdict,
            last_cold_ttft_ms=sample.ttft_ms if cold else self.last_cold_ttft_ms,
            last_warm_ttft_ms=self.last_warm_ttft_ms if cold else sample.ttft_ms,
            baseline=self.baseline if cold else self.baseline.add(sample),
        )

    def as_dict(self) -> dict[str, object]:
        """Return the timing as plain data for the store."""
        return {
            "last": self.last.as_dict() if self.last else None,
            "last_probe_at": self.last_probe_at.isoformat() if self.last_probe_at else None,
            "classification": self.last_verdict.classification if self.last_verdict else None,
            "dominant_stage": self.last_verdict.dominant_stage if self.last_verdict else None,
            "last_cold_ttft_ms": self.last_cold_ttft_ms,
            "last_warm_ttft_ms": self.last_warm_ttft_ms,
            "baseline": [sample.as_dict() for sample in self.baseline.samples],
            "load_seconds": self.load_seconds,
            "load_source": self.load_source.value if self.load_source else None,
            "cold_request_seconds": self.cold_request_seconds,
            "cold_request_source": (
                self.cold_request_source.value if self.cold_request_source else None
            ),
            "load_at_least_seconds": self.load_at_least_seconds,
            "cold_request_at_least_seconds": self.cold_request_at_least_seconds,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ModelTiming:
        """Rebuild stored timing; raise ``ValueError`` when the data is not one."""
        try:
            last = data.get("last")
            at = data.get("last_probe_at")
            classification = data.get("classification")
            samples = _samples(data.get("baseline") or ())
            return cls(
                last=StageBreakdown.from_dict(_mapping(last)) if last else None,
                last_probe_at=_aware_time(at) if at else None,
                last_verdict=Verdict(
                    Classification(str(classification)), Stage(str(data.get("dominant_stage")))
                )
                if classification
                else None,
                last_cold_ttft_ms=optional_float(data.get("last_cold_ttft_ms")),
                last_warm_ttft_ms=optional_float(data.get("last_warm_ttft_ms")),
                baseline=WarmBaseline(
                    tuple(StageBreakdown.from_dict(_mapping(s)) for s in samples)[-BASELINE_SIZE:]
                ),
                load_seconds=optional_float(data.get("load_seconds")),
                load_source=_optional_source(data.get("load_source"), LOAD_SOURCES),
                cold_request_seconds=optional_float(data.get("cold_request_seconds")),
                cold_request_source=_optional_source(
                    data.get("cold_request_source"), COLD_REQUEST_SOURCES
                ),
                load_at_least_seconds=optional_float(data.get("load_at_least_seconds")),
                cold_request_at_least_seconds=optional_float(
                    data.get("cold_request_at_least_seconds")
                ),
            )
        except (AttributeError, TypeError) as err:
            raise ValueError(f"not stored model timing: {err}") from err


def _samples(value: object) -> Sequence[object]:
    if not isinstance(value, list | tuple):
        raise TypeError(f"a baseline that is not a list: {value!r}")
    return value


def _mapping(value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise TypeError(f"not a stored breakdown: {value!r}")
    return value


def _aware_time(value: object) -> datetime:
    if not isinstance(value, str):
        raise TypeError(f"not a time: {value!r}")
    when = datetime.fromisoformat(value)
    if when.tzinfo is None:
        raise ValueError(f"a time without a timezone: {value!r}")
    return when


# The sources of an exact figure: a polled one is kept as a lower bound ("at least").
COLD_REQUEST_SOURCES = (FigureSource.CLIENT, FigureSource.EVENTS)
LOAD_SOURCES = (FigureSource.SERVER, FigureSource.CLIENT, FigureSource.EVENTS)


def _optional_source(value: object, sources: tuple[FigureSource, ...]) -> FigureSource | None:
    if value is None:
        return None
    if isinstance(value, str) and value in sources:
        return FigureSource(value)
    raise ValueError(f"not a source: {value!r}")
