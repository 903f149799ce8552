"""A device per Assist pipeline whose agent uses a model here: its last turn, stage by stage.

Durations with a state class (history graphs and long-term statistics work), the turn's
details as unrecorded attributes, the costliest stage, the warm-on-wake switch and what
it did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
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
from homeassistant.helpers.device_registry import ChildDeviceInfo
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .const import DOMAIN
from .coordinator import LlmWarmthCoordinator
from .core.voice import WAKE_KEEP, VoiceStage, VoiceTurn
from .core.voice_record import VoiceRecord, WakeCounts
from .data import LlmWarmthConfigEntry
from .entity import Followed, LlmWarmthEntity
from .voice import VoiceWatch, voice_subject
from .voice_wake import VoicePipeline


class NoTurnFigure(StrEnum):
    """Why a figure of the last turn is unknown: the ``reason`` attribute (translations)."""

    # No turn of the pipeline was heard since it was found.
    NO_TURN_YET = "no_turn_yet"
    # The last turn did not show this stage (it ended early, or its run did not read).
    NOT_TIMED = "not_timed"


@dataclass(frozen=True, kw_only=True)
class VoiceSensorDescription(SensorEntityDescription):
    """A figure of a pipeline's last turn, or of what warming at the wake did."""

    turn_fn: Callable[[VoiceRecord], float | str | None] | None = None
    counts_fn: Callable[[WakeCounts], float | int] | None = None

    @property
    def reasons(self) -> tuple[NoTurnFigure, ...]:
        """Return why a figure of the last turn can be unknown (a count never is)."""
        return tuple(NoTurnFigure) if self.turn_fn is not None else ()


def _turn(key: str, figure: Callable[[VoiceTurn], float | None]) -> VoiceSensorDescription:
    return VoiceSensorDescription(
        key=key,
        translation_key=key,
        device_class=SensorDeviceClass.DURATION,
        native_unit_of_measurement=UnitOfTime.SECONDS,
        state_class=SensorStateClass.MEASUREMENT,
        suggested_display_precision=2,
        turn_fn=lambda record: figure(record.turn),
    )


def _count(key: str, value: Callable[[WakeCounts], float | int]) -> VoiceSensorDescription:
    return VoiceSensorDescription(
        key=key,
        translation_key=key,
        state_class=SensorStateClass.TOTAL_INCREASING,
        entity_category=EntityCategory.DIAGNOSTIC,
        counts_fn=value,
    )


VOICE_SENSORS: tuple[VoiceSensorDescription, ...] = (
    _turn("voice_silence", lambda t: t.silence),
    _turn("voice_wake_to_speech_end", lambda t: t.wake_to_speech_end),
    _turn("voice_stt", lambda t: t.stt),
    _turn("voice_agent_first_text", lambda t: t.agent_first_text),
    _turn("voice_agent_rest", lambda t: t.agent_rest),
    _turn("voice_tts_start", lambda t: t.tts_start),
    VoiceSensorDescription(
        key="voice_dominant_stage",
        translation_key="voice_dominant_stage",
        device_class=SensorDeviceClass.ENUM,
        options=[stage.value for stage in VoiceStage],
        turn_fn=lambda r: r.explained.dominant.value if r.explained.dominant else None,
    ),
    _count("voice_warm_helped", lambda c: c.helped),
    _count("voice_warm_too_late", lambda c: c.too_late),
    _count("voice_warm_refused", lambda c: c.refused),
    VoiceSensorDescription(
        key="voice_warm_hidden",
        translation_key="voice_warm_hidden",
        device_class=SensorDeviceClass.DURATION,
        native_unit_of_measurement=UnitOfTime.SECONDS,
        state_class=SensorStateClass.TOTAL_INCREASING,
        entity_category=EntityCategory.DIAGNOSTIC,
        suggested_display_precision=1,
        counts_fn=lambda c: round(c.hidden_seconds, 3),
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
    """An entity of a pipeline's device (a child device of the server)."""

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
            ChildDeviceInfo(
                identifiers={(DOMAIN, f"{entry.entry_id}_{subject}")},
                name=f"Assist {pipeline.name}",
                parent_device_id=entry.runtime_data.server_device_id,
            ),
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
    def extra_state_attributes(self) -> Mapping[str, Any] | None:
        """Return the last turn's details, on the silence sensor; why a figure is unknown."""
        record = self.voice.last.get(self.pipeline_id)
        attrs: dict[str, Any] = {}
        if self.entity_description.key == "voice_silence":
            ended = record.turn.ended_at if record else None
            attrs["turn"] = (
                {**record.details(), "ended_at": ended.isoformat() if ended else None}
                if record
                else None
            )
        if self.entity_description.turn_fn is not None and self.native_value is None:
            reason = NoTurnFigure.NOT_TIMED if record else NoTurnFigure.NO_TURN_YET
            attrs["reason"] = reason.value
        return attrs or None


class WarmOnWakeSwitch(VoiceEntity, SwitchEntity):
    """On: when a satellite of the pipeline wakes, its agent's model is made ready.

    Loaded if cold, then its prompt's prefix warmed where that ends in time; what the
    prompt warm-ups did is in the attributes (not recorded: they change every turn).
    """

    _unrecorded_attributes = frozenset(
        {
            "prompt_warm_ups_sent",
            "prompt_warm_ups_left_out",
            "prompt_warm_ups_overlapped",
            "prompt_warm_ups_held",
            "last_prompt_warm_up_seconds",
            "wasted_warm_ups",
            "wasted_gib_seconds",
            "wake_keep_seconds",
        }
    )

    @property
    @override
    def is_on(self) -> bool:
        """Return True while warming at the wake is on."""
        return self.voice.enabled(self.pipeline_id)

    @property
    @override
    def extra_state_attributes(self) -> Mapping[str, Any]:
        """Return what the warm-ups of the agent's prompt prefix did."""
        counts = self.voice.counts.get(self.pipeline_id, WakeCounts())
        return {
            "prompt_warm_ups_sent": counts.prefix_sent,
            "prompt_warm_ups_left_out": counts.prefix_skipped,
            "prompt_warm_ups_overlapped": counts.prefix_overlapped,
            "prompt_warm_ups_held": counts.prefix_held,
            "last_prompt_warm_up_seconds": counts.prefix_seconds,
            # Wakes no command followed whose load held the model, and for how long.
            "wasted_warm_ups": counts.wasted,
            "wasted_gib_seconds": round(counts.wasted_gib_seconds, 3),
            "wake_keep_seconds": WAKE_KEEP,
        }

    @override
    async def async_turn_on(self, **kwargs: Any) -> None:
        """Warm the agent's model when a satellite wakes."""
        self.voice.set_enabled(self.pipeline_id, True)

    @override
    async def async_turn_off(self, **kwargs: Any) -> None:
        """Stop warming at the wake."""
        self.voice.set_enabled(self.pipeline_id, False)
