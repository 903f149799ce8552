"""A model's usage entities: next expected use, uses today, usage window, Auto-warm.

They appear once a use of the model was recorded (``usage``), and follow the usage
feature: each use, and every minute (what is expected moves with the clock).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, override

from homeassistant.components.binary_sensor import (
    BinarySensorEntity,
    BinarySensorEntityDescription,
)
from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.components.switch import SwitchEntity, SwitchEntityDescription
from homeassistant.core import callback
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .coordinator import LlmWarmthCoordinator
from .core.usage import COLD, GIB_HOURS, HELPED
from .core.warm_plan import PatternClass, Plan
from .data import LlmWarmthConfigEntry
from .entity import Followed, ModelEntity, async_add_model_entities
from .usage import UsageWatch


class NoUseExpected(StrEnum):
    """Why no next use is expected: the ``reason`` attribute (words: translations)."""

    # Fewer days of uses than the planner trusts a rhythm from.
    LEARNING = "learning"
    # Its uses come at no time of day that repeats: kept after each use, not warmed ahead.
    NO_RHYTHM = "no_rhythm"
    # A rhythm, but no expected stretch within the next day.
    NONE_WITHIN_A_DAY = "none_within_a_day"


def _no_use_expected(plan: Plan) -> NoUseExpected | None:
    """Return why the plan expects no next use (None: it expects one)."""
    if plan.next_use is not None:
        return None
    if plan.pattern is PatternClass.NEW:
        return NoUseExpected.LEARNING
    if plan.pattern is PatternClass.SPORADIC:
        return NoUseExpected.NO_RHYTHM
    return NoUseExpected.NONE_WITHIN_A_DAY


@dataclass(frozen=True, kw_only=True)
class UsageSensorDescription(SensorEntityDescription):
    """A sensor of what the planner expects, and why it expects nothing when it does not."""

    reason_fn: Callable[[Plan], NoUseExpected | None]
    reasons: tuple[NoUseExpected, ...] = tuple(NoUseExpected)


NEXT_USE = UsageSensorDescription(
    key="next_expected_use",
    translation_key="next_expected_use",
    device_class=SensorDeviceClass.TIMESTAMP,
    reason_fn=_no_use_expected,
)
USES_TODAY = SensorEntityDescription(
    key="uses_today",
    translation_key="uses_today",
    state_class=SensorStateClass.TOTAL_INCREASING,
)
IN_WINDOW = BinarySensorEntityDescription(key="in_usage_window", translation_key="in_usage_window")


@dataclass(frozen=True, kw_only=True)
class ScoreDescription(SensorEntityDescription):
    """A column of the model's scoreboard: the last 7 days' sum, today's as an attribute."""

    column: int
    digits: int = 0


SCOREBOARD = (
    ScoreDescription(
        key="warm_thanks_to_auto_warm",
        translation_key="warm_thanks_to_auto_warm",
        state_class=SensorStateClass.MEASUREMENT,
        column=HELPED,
    ),
    ScoreDescription(
        key="cold_starts_7_days",
        translation_key="cold_starts_7_days",
        state_class=SensorStateClass.MEASUREMENT,
        column=COLD,
    ),
    ScoreDescription(
        key="warming_gib_hours",
        translation_key="warming_gib_hours",
        state_class=SensorStateClass.MEASUREMENT,
        native_unit_of_measurement="GiB·h",
        column=GIB_HOURS,
        digits=2,
    ),
)


class UsageEntity(ModelEntity):
    """An entity of a model's usage."""

    @property
    def usage(self) -> UsageWatch:
        """Return the entry's usage feature."""
        return self.coordinator.config_entry.runtime_data.usage

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the uses (and the usage feature's minute)."""
        return (self.usage,)


class NextExpectedUse(UsageEntity, SensorEntity):
    """When the model's next use is expected (unknown: no rhythm learnt, or none ahead)."""

    entity_description: UsageSensorDescription

    @property
    @override
    def native_value(self) -> datetime | None:
        """Return the start of the expected stretch ahead (or now's, before its use)."""
        plan = self.usage.plan(self.model)
        return plan.next_use if plan else None

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, Any]:
        """Return why no use is expected (``reason``), and the days of uses learnt from."""
        plan = self.usage.plan(self.model)
        record = self.usage.get(self.model)
        reason = self.entity_description.reason_fn(plan) if plan else NoUseExpected.LEARNING
        return {
            "days_learnt": record.planner.days if record else 0,
            **({"reason": reason.value} if reason else {}),
        }


class UsesToday(UsageEntity, SensorEntity):
    """How many uses of the model were recorded since local midnight."""

    @property
    @override
    def native_value(self) -> int:
        """Return the count."""
        return self.usage.uses_today(self.model)


class ScoreSensor(UsageEntity, SensorEntity):
    """A column of the scoreboard over the last 7 days (today included); today's apart."""

    entity_description: ScoreDescription

    def _shown(self, value: float) -> float | int:
        digits = self.entity_description.digits
        return round(value, digits) if digits else round(value)

    @property
    @override
    def native_value(self) -> float | int:
        """Return the last 7 days' sum."""
        return self._shown(self.usage.scoreboard(self.model, self.entity_description.column)[1])

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, Any]:
        """Return today's figure."""
        today = self.usage.scoreboard(self.model, self.entity_description.column)[0]
        return {"today": self._shown(today)}


class InUsageWindow(UsageEntity, BinarySensorEntity):
    """On while now is in a stretch of the day the model is expected to be used in."""

    @property
    @override
    def is_on(self) -> bool:
        """Return True inside an expected stretch."""
        plan = self.usage.plan(self.model)
        if plan is None or plan.window_start is None or plan.window_end is None:
            return False
        now = self.usage.utcnow()
        return plan.window_start <= now < plan.window_end


def _add_once_used(
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
    entities: Callable[[LlmWarmthCoordinator, str], list[Entity]],
) -> None:
    """Add a model's usage entities once a use of it was recorded."""
    coordinator, usage = entry.runtime_data.coordinator, entry.runtime_data.usage
    async_add_model_entities(
        entry,
        async_add_entities,
        lambda model: entities(coordinator, model),
        when=lambda _snapshot, model: model in usage,
        when_changes=[usage],
    )


@callback
def async_add_usage_sensors(
    entry: LlmWarmthConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add a model's usage sensors and scoreboard once a use of it was recorded."""
    _add_once_used(
        entry,
        async_add_entities,
        lambda coordinator, model: [
            NextExpectedUse(coordinator, NEXT_USE, model),
            UsesToday(coordinator, USES_TODAY, model),
            *(ScoreSensor(coordinator, description, model) for description in SCOREBOARD),
        ],
    )


@callback
def async_add_usage_binary_sensors(
    entry: LlmWarmthConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add a model's usage-window sensor once a use of it was recorded."""
    _add_once_used(
        entry,
        async_add_entities,
        lambda coordinator, model: [InUsageWindow(coordinator, IN_WINDOW, model)],
    )


AUTO_WARM = SwitchEntityDescription(key="auto_warm", translation_key="auto_warm")


class AutoWarmSwitch(UsageEntity, SwitchEntity):
    """On: the model is loaded ahead of each use the planner expects (off by default).

    Through the household guard; what it did is in the attributes (not recorded).
    """

    _unrecorded_attributes = frozenset(
        {
            "warm_ups",
            "refused_by_the_guard",
            "kept_for",
            "kept_until",
            "session_keep_minutes",
            "uses_seen_within_seconds",
        }
    )

    @property
    @override
    def is_on(self) -> bool:
        """Return True while auto-warm is on."""
        record = self.usage.get(self.model)
        return record is not None and record.auto_warm

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, Any]:
        """Return the loads it sent, those the guard refused, and why it holds the model.

        ``kept_for``: ``expected_use`` (warmed ahead of, and held through, an expected
        stretch) or ``session_keep`` (kept through a session's gaps after a use), until
        ``kept_until``; None once that time is over. ``pattern``: how the planner reads
        the model's uses; ``session_keep_minutes``: its keep after a use;
        ``uses_seen_within_seconds``: how late the server shows another client's use at
        most (None: it shows none; Home Assistant's agents' turns are seen at once).
        """
        record = self.usage.get(self.model)
        plan = self.usage.plan(self.model)
        learnt = {
            # How the planner reads the model's uses (new, rhythmic: warmed ahead of its
            # stretches; sporadic: kept by its idle times), and its keep after a use.
            "pattern": plan.pattern.value if plan else None,
            "session_keep_minutes": round(plan.keep.total_seconds() / 60, 1) if plan else None,
            "uses_seen_within_seconds": self.usage.uses_seen_within(),
        }
        if record is None:
            return (
                dict.fromkeys(("kept_for", "kept_until"))
                | {"warm_ups": 0, "refused_by_the_guard": 0}
                | learnt
            )
        until, reason = record.kept_until, record.kept_for
        holding = until is not None and reason is not None and until > self.usage.utcnow()
        return {
            "warm_ups": record.warmed,
            "refused_by_the_guard": record.refused,
            "kept_for": reason.value if holding and reason else None,
            "kept_until": until.isoformat() if holding and until else None,
        } | learnt

    @override
    async def async_turn_on(self, **kwargs: Any) -> None:
        """Warm the model ahead of each expected use."""
        self.usage.set_auto_warm(self.model, True)

    @override
    async def async_turn_off(self, **kwargs: Any) -> None:
        """Stop warming it ahead."""
        self.usage.set_auto_warm(self.model, False)


@callback
def async_add_usage_switches(
    entry: LlmWarmthConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add a model's Auto-warm switch once a use of it was recorded."""
    _add_once_used(
        entry,
        async_add_entities,
        lambda coordinator, model: [AutoWarmSwitch(coordinator, AUTO_WARM, model)],
    )
