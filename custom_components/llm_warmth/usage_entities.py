"""A model's usage entities: next expected use, uses today, usage window, signals, Auto-warm.

They appear once a use of the model was recorded (``usage``), and follow the usage
feature: each use, and every minute (what is expected moves with the clock).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
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
from .core.usage import COLD, GIB_HOURS, HELPED, SIGNAL_HELPED
from .core.usage_readings import (
    RHYTHMS,
    NoUseExpected,
    auto_warm_attributes,
    in_usage_window,
    next_use,
    next_use_attributes,
    no_use_expected,
    score_shown,
    signals_reading,
    usage_rhythm,
)
from .core.warm_plan import Plan
from .data import LlmWarmthConfigEntry
from .entity import Followed, ModelEntity, async_add_model_entities
from .usage import UsageWatch


@dataclass(frozen=True, kw_only=True)
class UsageSensorDescription(SensorEntityDescription):
    """A sensor of what the planner expects, and why it expects nothing when it does not."""

    reason_fn: Callable[[Plan], NoUseExpected | None]
    reasons: tuple[NoUseExpected, ...] = tuple(NoUseExpected)


NEXT_USE = UsageSensorDescription(
    key="next_expected_use",
    translation_key="next_expected_use",
    device_class=SensorDeviceClass.TIMESTAMP,
    reason_fn=no_use_expected,
)
USAGE_RHYTHM = SensorEntityDescription(
    key="usage_rhythm",
    translation_key="usage_rhythm",
    device_class=SensorDeviceClass.ENUM,
    options=list(RHYTHMS),
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
        key="warm_thanks_to_a_signal",
        translation_key="warm_thanks_to_a_signal",
        state_class=SensorStateClass.MEASUREMENT,
        column=SIGNAL_HELPED,
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
        return next_use(self.usage.plan(self.model))

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return why no use is expected (``reason``), and the days of uses learnt from."""
        return next_use_attributes(
            self.usage.plan(self.model),
            self.usage.get(self.model),
            self.entity_description.reason_fn,
        )


class UsageRhythm(UsageEntity, SensorEntity):
    """What the planner makes of the model's uses: a use expected, or why none is."""

    @property
    @override
    def native_value(self) -> str | None:
        """Return the rhythm (the next expected use's reason, or that one is expected)."""
        return usage_rhythm(self.usage.plan(self.model))


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
        """Return a figure as shown, to the description's digits."""
        return score_shown(value, self.entity_description.digits)

    @property
    @override
    def native_value(self) -> float | int:
        """Return the last 7 days' sum."""
        return self._shown(self.usage.scoreboard(self.model, self.entity_description.column)[1])

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return today's figure."""
        today = self.usage.scoreboard(self.model, self.entity_description.column)[0]
        return {"today": self._shown(today)}


WARMING_SIGNALS = SensorEntityDescription(
    key="warming_signals",
    translation_key="warming_signals",
    state_class=SensorStateClass.MEASUREMENT,
)


class WarmingSignals(UsageEntity, SensorEntity):
    """How many of the household's signals warm the model now; what each was learnt to lead.

    Its ``signals`` attribute (not recorded: it changes with every edge) lists each
    entity picked and edge seen: what it leads (a use within ``within_minutes``,
    ``share_percent`` of the time), how often it led and was wrong, its lift, and whether
    it acts.
    """

    _unrecorded_attributes = frozenset({"signals"})

    def _reading(self) -> tuple[int, Mapping[str, object]]:
        chosen = self.usage.chosen_signals(self.model)
        names = {e: s.name for e in chosen if (s := self.hass.states.get(e)) is not None}
        return signals_reading(
            self.usage.plan(self.model), self.usage.leads(self.model), chosen, names
        )

    @property
    @override
    def native_value(self) -> int:
        """Return how many signals warm the model now."""
        return self._reading()[0]

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return the signals learnt, and why none acts when none does (``reason``)."""
        return self._reading()[1]


class InUsageWindow(UsageEntity, BinarySensorEntity):
    """On while now is in a stretch of the day the model is expected to be used in."""

    @property
    @override
    def is_on(self) -> bool:
        """Return True inside an expected stretch."""
        return in_usage_window(self.usage.plan(self.model), self.usage.utcnow())


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
            UsageRhythm(coordinator, USAGE_RHYTHM, model),
            UsesToday(coordinator, USES_TODAY, model),
            *(ScoreSensor(coordinator, description, model) for description in SCOREBOARD),
            WarmingSignals(coordinator, WARMING_SIGNALS, model),
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
            "signal",
            "warmed_by",
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
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return the loads it sent, those the guard refused, and why it holds the model.

        What each means: ``core.usage_readings.auto_warm_attributes``.
        """
        return auto_warm_attributes(
            self.usage.get(self.model),
            self.usage.plan(self.model),
            self.usage.utcnow(),
            uses_seen_within=self.usage.uses_seen_within(),
        )

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
