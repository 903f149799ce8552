"""A device per Assist pipeline whose agent uses a model here: its last turn, stage by stage.

Durations with a state class (history graphs and long-term statistics work), the turn's
details as unrecorded attributes, the costliest stage, the warm-on-wake switch and what
it did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, override

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.components.switch import SwitchEntity, SwitchEntityDescription
from homeassistant.const import EntityCategory, UnitOfTime
from homeassistant.core import callback
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .coordinator import LlmWarmthCoordinator
from .core.voice import VoiceStage
from .core.voice_readings import (
    COUNT_FIGURES,
    SILENCE,
    TURN_FIGURES,
    WARM_UP_ATTRIBUTES,
    NoTurnFigure,
    turn_attributes,
    turn_reasons,
    warm_up_attributes,
)
from .core.voice_record import VoiceRecord, WakeCounts
from .data import LlmWarmthConfigEntry
from .devices import voice_device_info
from .entity import Followed, LlmWarmthEntity
from .voice import VoiceWatch, voice_subject
from .voice_wake import VoicePipeline


@dataclass(frozen=True, kw_only=True)
class VoiceSensorDescription(SensorEntityDescription):
    """A figure of a pipeline's last turn, or of what warming at the wake did."""

    turn_fn: Callable[[VoiceRecord], float | str | None] | None = None
    counts_fn: Callable[[WakeCounts], float | int] | None = None

    @property
    def reasons(self) -> tuple[NoTurnFigure, ...]:
        """Return why a figure of the last turn can be unknown (a count never is)."""
        return turn_reasons(self.key) if self.turn_fn is not None else ()


def _turn(key: str) -> VoiceSensorDescription:
    """Describe a duration of the pipeline's last turn."""
    return VoiceSensorDescription(
        key=key,
        translation_key=key,
        device_class=SensorDeviceClass.DURATION,
        native_unit_of_measurement=UnitOfTime.SECONDS,
        state_class=SensorStateClass.MEASUREMENT,
        suggested_display_precision=2,
        turn_fn=TURN_FIGURES[key],
    )


def _count(key: str) -> VoiceSensorDescription:
    """Describe a count of what warming at the wake did."""
    return VoiceSensorDescription(
        key=key,
        translation_key=key,
        state_class=SensorStateClass.TOTAL_INCREASING,
        entity_category=EntityCategory.DIAGNOSTIC,
        counts_fn=COUNT_FIGURES[key],
    )


VOICE_SENSORS: tuple[VoiceSensorDescription, ...] = (
    _turn(SILENCE),
    _turn("voice_wake_to_speech_end"),
    _turn("voice_stt"),
    _turn("voice_agent_first_text"),
    _turn("voice_agent_rest"),
    _turn("voice_tts_start"),
    VoiceSensorDescription(
        key="voice_dominant_stage",
        translation_key="voice_dominant_stage",
        device_class=SensorDeviceClass.ENUM,
        options=[stage.value for stage in VoiceStage],
        turn_fn=TURN_FIGURES["voice_dominant_stage"],
    ),
    _count("voice_warm_helped"),
    _count("voice_warm_too_late"),
    _count("voice_warm_refused"),
    VoiceSensorDescription(
        key="voice_warm_hidden",
        translation_key="voice_warm_hidden",
        device_class=SensorDeviceClass.DURATION,
        native_unit_of_measurement=UnitOfTime.SECONDS,
        state_class=SensorStateClass.TOTAL_INCREASING,
        entity_category=EntityCategory.DIAGNOSTIC,
        suggested_display_precision=1,
        counts_fn=COUNT_FIGURES["voice_warm_hidden"],
    ),
)
WARM_ON_WAKE = SwitchEntityDescription(
    key="voice_warm_on_wake",
    translation_key="voice_warm_on_wake",
    entity_category=EntityCategory.CONFIG,
)


@callback
def async_add_voice_entities(
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
    entities_for: Callable[[VoicePipeline], Iterable[Entity]],
) -> None:
    """Add a pipeline's entities when the pipeline is first found (now, and as they change)."""
    voice = entry.runtime_data.voice
    known: set[str] = set()

    @callback
    def add_new() -> None:
        new = [p for pid, p in sorted(voice.pipelines.items()) if pid not in known]
        known.update(p.id for p in new)
        if new:
            async_add_entities(entity for pipeline in new for entity in entities_for(pipeline))

    add_new()
    entry.async_on_unload(voice.async_add_listener(add_new))


class VoiceEntity(LlmWarmthEntity[LlmWarmthCoordinator]):
    """An entity of a pipeline's device (connected via the server)."""

    def __init__(
        self,
        coordinator: LlmWarmthCoordinator,
        description: SensorEntityDescription | SwitchEntityDescription,
        pipeline: VoicePipeline,
    ) -> None:
        """Attach the entity to the pipeline's device."""
        entry = coordinator.config_entry
        subject = voice_subject(pipeline.id)
        super().__init__(
            coordinator,
            description,
            voice_device_info(entry, subject, f"Assist {pipeline.name}"),
            entry.entry_id,
            subject,
        )
        self.pipeline_id = pipeline.id

    @property
    def voice(self) -> VoiceWatch:
        """Return the entry's voice feature."""
        return self.coordinator.config_entry.runtime_data.voice

    @override
    def followed(self) -> Iterable[Followed]:
        """Follow the voice turns."""
        return (self.voice,)

    @override
    def present(self) -> bool:
        """Return True while the pipeline's agent uses a model of this server."""
        return self.pipeline_id in self.voice.pipelines


class VoiceSensor(VoiceEntity, SensorEntity):
    """A figure of the pipeline's last turn, or a count of what warming at the wake did."""

    entity_description: VoiceSensorDescription
    # The turn's details change every turn: not recorded.
    _unrecorded_attributes = frozenset({"turn"})

    @property
    @override
    def native_value(self) -> float | str | None:
        """Return the figure."""
        description = self.entity_description
        if description.counts_fn is not None:
            return description.counts_fn(self.voice.counts.get(self.pipeline_id, WakeCounts()))
        record = self.voice.last.get(self.pipeline_id)
        return description.turn_fn(record) if record and description.turn_fn else None

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object] | None:
        """Return the last turn's details, on the silence sensor; why a figure is unknown."""
        record = self.voice.last.get(self.pipeline_id)
        return turn_attributes(self.entity_description.key, record, self.native_value)


class WarmOnWakeSwitch(VoiceEntity, SwitchEntity):
    """On: when a satellite of the pipeline wakes, its agent's model is made ready.

    Loaded if cold, then its prompt's prefix warmed where that ends in time; what the
    prompt warm-ups did is in the attributes (not recorded: they change every turn).
    """

    _unrecorded_attributes = WARM_UP_ATTRIBUTES

    @property
    @override
    def is_on(self) -> bool:
        """Return True while warming at the wake is on."""
        return self.voice.enabled(self.pipeline_id)

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, object]:
        """Return what the warm-ups of the agent's prompt prefix did."""
        return warm_up_attributes(self.voice.counts.get(self.pipeline_id, WakeCounts()))

    @override
    async def async_turn_on(self, **kwargs: Any) -> None:
        """Warm the agent's model when a satellite wakes."""
        self.voice.set_enabled(self.pipeline_id, True)

    @override
    async def async_turn_off(self, **kwargs: Any) -> None:
        """Stop warming at the wake."""
        self.voice.set_enabled(self.pipeline_id, False)
