"""The warm assistant's subentry flow: its primary agent, its fall-backs, the accepted wait."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentryFlow, SubentryFlowResult
from homeassistant.const import CONF_NAME
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.selector import (
    EntitySelector,
    EntitySelectorConfig,
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    TextSelector,
)
import probatio as vol

from .const import CONF_ASSISTANT_FALLBACKS, CONF_ASSISTANT_PRIMARY, CONF_ASSISTANT_WAIT, DOMAIN
from .warm_assistant import MAX_WAIT_SECONDS, AssistantSettings

DEFAULT_ASSISTANT_WAIT = 3.0


class WarmAssistantFlow(ConfigSubentryFlow):
    """Add or change a warm assistant: its primary agent, its fall-backs, the accepted wait."""

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Ask for a name and the agents of a new warm assistant."""
        return await self._ask("user", user_input, {})

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change the agents and the wait of a warm assistant."""
        return await self._ask("reconfigure", user_input, self._get_reconfigure_subentry().data)

    async def _ask(
        self, step_id: str, user_input: dict[str, Any] | None, current: Mapping[str, Any]
    ) -> SubentryFlowResult:
        errors: dict[str, str] = {}
        if user_input is not None:
            data = {
                CONF_ASSISTANT_PRIMARY: user_input[CONF_ASSISTANT_PRIMARY],
                CONF_ASSISTANT_FALLBACKS: list(user_input.get(CONF_ASSISTANT_FALLBACKS) or []),
                CONF_ASSISTANT_WAIT: float(user_input[CONF_ASSISTANT_WAIT]),
            }
            if (field := self._refused(data)) is not None:
                errors[field[0]] = field[1]
            elif step_id == "user":
                return self.async_create_entry(title=user_input[CONF_NAME], data=data)
            else:
                return self.async_update_and_abort(
                    self._get_entry(), self._get_reconfigure_subentry(), data=data
                )
            current = data
        schema: dict[Any, Any] = {}
        if step_id == "user":
            schema[vol.Required(CONF_NAME, default="Warm assistant")] = TextSelector()
        schema |= {
            vol.Required(CONF_ASSISTANT_PRIMARY): EntitySelector(
                EntitySelectorConfig(domain="conversation")
            ),
            vol.Optional(CONF_ASSISTANT_FALLBACKS): EntitySelector(
                EntitySelectorConfig(domain="conversation", multiple=True)
            ),
            vol.Required(CONF_ASSISTANT_WAIT, default=DEFAULT_ASSISTANT_WAIT): NumberSelector(
                NumberSelectorConfig(
                    min=0,
                    max=MAX_WAIT_SECONDS,
                    step=0.5,
                    unit_of_measurement="s",
                    mode=NumberSelectorMode.BOX,
                )
            ),
        }
        # Suggested, not defaults: fall-backs emptied in the form stay empty.
        return self.async_show_form(
            step_id=step_id,
            data_schema=self.add_suggested_values_to_schema(vol.Schema(schema), current),
            errors=errors,
        )

    def _refused(self, data: dict[str, Any]) -> tuple[str, str] | None:
        """Return the field and the error of a setting that cannot work, or None."""
        try:
            AssistantSettings.from_data(data)
        except ValueError as err:
            field, error = err.args
            return str(field), str(error)
        registry = er.async_get(self.hass)
        for field, agent_ids in (
            (CONF_ASSISTANT_PRIMARY, [data[CONF_ASSISTANT_PRIMARY]]),
            (CONF_ASSISTANT_FALLBACKS, data[CONF_ASSISTANT_FALLBACKS]),
        ):
            for agent_id in agent_ids:
                entity = registry.async_get(agent_id)
                # A warm assistant hands on to other agents, never to one like itself.
                if entity is not None and entity.platform == DOMAIN:
                    return field, "assistant_delegates_to_assistant"
                # An agent Home Assistant does not know would fail every turn it is given.
                if conversation.async_get_agent_info(self.hass, agent_id) is None:
                    return field, "assistant_agent_unknown"
        return None
