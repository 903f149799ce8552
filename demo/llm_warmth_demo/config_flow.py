"""The demo household is added once, with nothing to ask."""

from __future__ import annotations

from typing import Any, override

from homeassistant.config_entries import ConfigFlow, ConfigFlowResult

from .const import DOMAIN


class DemoHouseholdFlow(ConfigFlow, domain=DOMAIN):
    """Add the demo household: its voice satellite and its speech services."""

    VERSION = 1

    @override
    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Add it (once)."""
        await self.async_set_unique_id(DOMAIN)
        self._abort_if_unique_id_configured()
        return self.async_create_entry(title="Demo household", data={})
