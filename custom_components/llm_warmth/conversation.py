"""The warm assistants of an entry: one conversation agent for each of its subentries."""

from __future__ import annotations

from typing import Final, Literal, override

from homeassistant.components import conversation
from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryChange,
    ConfigSubentry,
)
from homeassistant.const import MATCH_ALL
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .const import SUBENTRY_WARM_ASSISTANT
from .data import LlmWarmthConfigEntry
from .devices import assistant_device_identifier
from .warm_assistant import WarmAssistant

# Each turn is handed to one delegate; two turns at once are two delegates' business.
PARALLEL_UPDATES = 0
# Attributes that change with every turn: left out of the recorder.
_PER_TURN: Final = frozenset(
    {
        "primary_ready_in",
        "switched_from",
        "failed",
        "failures",
        "warming_primary",
        "primary_readiness",
    }
)


async def async_setup_entry(
    hass: HomeAssistant,
    entry: LlmWarmthConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the entry's warm assistants, and each one added later, without a reload.

    A warm assistant reconfigured takes its new settings in place; one removed goes with
    its subentry (Home Assistant removes the subentry's entities and device).
    """
    entities: dict[str, WarmAssistantEntity] = {}

    @callback
    def follow(_change: ConfigEntryChange, changed: ConfigEntry) -> None:
        if changed.entry_id != entry.entry_id:
            return
        for subentry in changed.subentries.values():
            if subentry.subentry_type != SUBENTRY_WARM_ASSISTANT:
                continue
            if (entity := entities.get(subentry.subentry_id)) is not None:
                entity.follow(subentry)
                continue
            entities[subentry.subentry_id] = WarmAssistantEntity(
                WarmAssistant(hass, subentry), subentry
            )
            async_add_entities(
                [entities[subentry.subentry_id]], config_subentry_id=subentry.subentry_id
            )
        for gone in entities.keys() - changed.subentries.keys():
            del entities[gone]

    follow(ConfigEntryChange.UPDATED, entry)
    entry.async_on_unload(async_dispatcher_connect(hass, SIGNAL_CONFIG_ENTRY_CHANGED, follow))


class WarmAssistantEntity(conversation.ConversationEntity):
    """A conversation agent that hands each turn to the agent whose model is ready."""

    _attr_has_entity_name = True
    _attr_name = None
    _attr_translation_key = "warm_assistant"
    # Inside an Assist pipeline the delegate writes into the pipeline's chat log, which
    # streams what it writes.
    _attr_supports_streaming = True
    _unrecorded_attributes = _PER_TURN

    def __init__(self, assistant: WarmAssistant, subentry: ConfigSubentry) -> None:
        """Show ``assistant`` as its own device."""
        self.assistant = assistant
        self._attr_unique_id = subentry.subentry_id
        self._attr_device_info = DeviceInfo(
            identifiers={assistant_device_identifier(subentry.subentry_id)},
            name=subentry.title,
            manufacturer="LLM Warmth",
            model="Warm assistant",
            entry_type=DeviceEntryType.SERVICE,
        )

    @callback
    def follow(self, subentry: ConfigSubentry) -> None:
        """Take a reconfigured subentry's settings (and its name) at once."""
        if self.assistant.follow(subentry) and self.hass is not None:
            self.async_write_ha_state()

    @property
    @override
    def supported_languages(self) -> list[str] | Literal["*"]:
        """Return every language: the delegates decide what they understand."""
        return MATCH_ALL

    @override
    async def async_added_to_hass(self) -> None:
        """Write the state after each turn's route."""
        await super().async_added_to_hass()
        self.async_on_remove(self.assistant.async_add_listener(self.async_write_ha_state))
        self.async_on_remove(self.assistant.async_stop)

    @property
    @override
    def extra_state_attributes(self) -> dict[str, object]:
        """Return the settings and the last turn's route."""
        settings = self.assistant.settings
        attributes: dict[str, object] = {
            "primary_agent": settings.primary,
            "fallback_agents": list(settings.fallbacks),
            "max_wait_seconds": settings.wait_s,
        }
        if (last := self.assistant.last) is not None:
            attributes |= {"routed_at": last.at.isoformat(), **last.as_dict()}
        return attributes

    @override
    async def async_process(
        self, user_input: conversation.ConversationInput
    ) -> conversation.ConversationResult:
        """Hand the turn to the agent the route picks (it keeps its own chat log)."""
        return await self.assistant.async_converse(user_input, self.entity_id)
