"""One diagnosis as it is kept: its verdict, what it ran with, its runs (pure).

Written as the action answers it (the verdict's codes first, the runs table last) and
read back checked, field by field: a damaged or unknown record is a ``ValueError``.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
import math

from .diagnose import (
    Pattern,
    Recommendation,
    Run,
    Scenario,
    Verdict,
    runs_table,
    verdict_as_dict,
)
from .json_value import JsonValue
from .sentence import Sentence
from .ttft import Stage, StageBreakdown


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """One diagnosis of a model: its verdict, what it ran with, and its runs."""

    model: str
    scenario: Scenario
    verdict: Verdict
    at: datetime
    runs: tuple[Run, ...]
    # The context its probes asked for (None: the server's), and whose it is.
    num_ctx: int | None = None
    agent: str | None = None
    # The agent the model was left loaded for, as it asks (None: left as the runs left it).
    left_for_agent: str | None = None
    # short_vs_long: what one prompt token costs to prefill (ms).
    prefill_ms_per_token: float | None = None

    def as_dict(self) -> dict[str, JsonValue]:
        """Return the diagnosis as the action answers it and the store keeps it.

        The verdict first, then what it is about, then the raw figures; the shell puts the
        verdict's words before all of it.
        """
        extra: dict[str, JsonValue] = (
            {"prefill_ms_per_token": _rounded(self.prefill_ms_per_token, 3)}
            if self.scenario is Scenario.SHORT_VS_LONG
            else {}
        )
        return {
            **verdict_as_dict(self.verdict),
            "model": self.model,
            "scenario": self.scenario.value,
            "at": self.at.isoformat(),
            "num_ctx": self.num_ctx,
            "agent": self.agent,
            "left_for_agent": self.left_for_agent,
            **extra,
            "runs": runs_table(self.runs),
        }

    @classmethod
    def from_dict(cls, values: object) -> Diagnosis:
        """Read a stored diagnosis; raise ValueError when it is damaged."""
        if not isinstance(values, Mapping):
            raise ValueError("not a diagnosis")
        try:
            at = datetime.fromisoformat(_text(values["at"]))
            if at.tzinfo is None:
                raise ValueError("a diagnosis time without zone")
            stage, recommendation = values.get("stage"), values.get("recommendation")
            runs = values.get("runs", [])
            if not isinstance(runs, list):
                raise ValueError("runs are not a list")
            return cls(
                model=_text(values["model"]),
                scenario=Scenario(values["scenario"]),
                verdict=Verdict(
                    pattern=Pattern(values["pattern"]),
                    stage=None if stage is None else Stage(stage),
                    expanded_ms=_number(values.get("expanded_ms")),
                    said=Sentence.from_dict(values["said"]),
                    recommendation=None
                    if recommendation is None
                    else Recommendation(recommendation),
                ),
                at=at,
                runs=tuple(_run(row) for row in runs),
                num_ctx=_count(values.get("num_ctx")),
                agent=_optional_text(values.get("agent")),
                left_for_agent=_optional_text(values.get("left_for_agent")),
                prefill_ms_per_token=_number(values.get("prefill_ms_per_token")),
            )
        except KeyError as err:
            raise ValueError(f"a diagnosis without {err}") from err


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"not a text: {value!r}")
    return value


def _optional_text(value: object) -> str | None:
    return None if value is None else _text(value)


def _number(value: object) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


def _count(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"not a count: {value!r}")
    return value


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"not a flag: {value!r}")
    return value


def _run(row: object) -> Run:
    """Read one row of a stored runs table."""
    if not isinstance(row, Mapping):
        raise ValueError("a run is not a mapping")
    models = row.get("resident_models", [])
    gpus = row.get("gpus", [])
    if not isinstance(models, list) or not isinstance(gpus, list):
        raise ValueError("a run's models or GPUs are not lists")
    if not all(isinstance(gpu, Mapping) for gpu in gpus):
        raise ValueError("a run's GPU is not a mapping")
    return Run(
        label=_text(row["run"]),
        model=_text(row["model"]),
        sample=StageBreakdown.from_dict(row),
        resident_before=_flag(row["resident_before"]),
        resident_after=_flag(row["resident_after"]),
        resident_models=tuple(_text(model) for model in models),
        gpus=tuple(gpus),
    )
