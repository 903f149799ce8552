"""Config flow: add an LLM server (its kind found out), reconfigure, re-authenticate, options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, override

import aiohttp
from homeassistant.config_entries import (
    ConfigEntry,
    ConfigFlow,
    ConfigFlowResult,
    ConfigSubentryFlow,
)
from homeassistant.const import (
    CONF_API_KEY,
    CONF_URL,
    CONF_VERIFY_SSL,
)
from homeassistant.core import callback
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.selector import (
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)
import probatio as vol

from .assistant_flow import WarmAssistantFlow
from .card import card_needs_a_reload
from .const import (
    CONF_HOST,
    CONF_HOUSEHOLD,
    CONF_SERVER_KIND,
    DOMAIN,
    LOGGER,
    SUBENTRY_WARM_ASSISTANT,
    SUBENTRY_WARMING_SIGNALS,
)
from .core.backends.base import ServerKind
from .core.backends.detection import Detected, detect
from .core.backends.errors import LlmServerError, LlmServerNotSupportedError
from .core.server_settings import (
    KIND_TITLES,
    InputRefused,
    candidate_urls,
    entry_title,
    most_telling,
)
from .core.server_url import host_of, redact_url, unique_id_for
from .data import LlmWarmthConfigEntry
from .errors import server_translation_key
from .household_entry import is_household
from .options_flow import LlmWarmthOptionsFlow
from .signals_flow import WarmingSignalsFlow

_PASSWORD = TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))


class _ServerData(TypedDict):
    """A server entry's data: where it is, how to reach it, and its kind (a ServerKind)."""

    url: str
    api_key: str
    verify_ssl: bool
    server_kind: str


def _server_schema(defaults: Mapping[str, object]) -> vol.Schema:
    return vol.Schema(
        {
            # Plain text: a URL field marks the plain address "192.168.1.20" invalid.
            vol.Required(CONF_URL, default=defaults.get(CONF_URL, "")): TextSelector(),
            vol.Optional(CONF_API_KEY, default=defaults.get(CONF_API_KEY, "")): _PASSWORD,
            vol.Required(CONF_VERIFY_SSL, default=defaults.get(CONF_VERIFY_SSL, True)): bool,
        }
    )


class LlmWarmthConfigFlow(ConfigFlow, domain=DOMAIN):
    """Add an LLM server."""

    VERSION = 2
    MINOR_VERSION = 2

    @staticmethod
    @callback
    def async_get_options_flow(config_entry: LlmWarmthConfigEntry) -> LlmWarmthOptionsFlow:
        """Return the options flow."""
        return LlmWarmthOptionsFlow()

    @classmethod
    @callback
    @override
    def async_get_supported_subentry_types(
        cls, config_entry: ConfigEntry
    ) -> dict[str, type[ConfigSubentryFlow]]:
        """Return a server's kinds of subentry: warm assistants, a model's warming signals."""
        if is_household(config_entry):
            return {}
        return {
            SUBENTRY_WARM_ASSISTANT: WarmAssistantFlow,
            SUBENTRY_WARMING_SIGNALS: WarmingSignalsFlow,
        }

    @classmethod
    @callback
    @override
    def async_supports_options_flow(cls, config_entry: ConfigEntry) -> bool:
        """Return True for a server (the household entry has no options)."""
        return not is_household(config_entry)

    async def async_step_system(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Make the household entry (started by the integration once there are two servers)."""
        await self.async_set_unique_id(CONF_HOUSEHOLD)
        self._abort_if_unique_id_configured()
        return self.async_create_entry(title="Household", data={CONF_HOUSEHOLD: True})

    async def _async_validate(self, user_input: dict[str, Any]) -> tuple[_ServerData, str]:
        """Find the server; return the cleaned entry data (with its kind) and its version.

        Without a port in the URL each server's default port is tried. Raise
        ``_FlowError`` with the translated error key when no server LLM Warmth reads
        answers.
        """
        api_key = user_input.get(CONF_API_KEY) or ""
        verify_ssl = user_input.get(CONF_VERIFY_SSL, True)
        try:
            candidates = candidate_urls(user_input[CONF_URL], api_key)
        except InputRefused as err:
            raise _FlowError(err.key) from err
        session = async_get_clientsession(self.hass, verify_ssl=verify_ssl)
        failures: list[_FlowError] = []
        for url in candidates:
            try:
                found = await _detect(session, url, api_key)
            except _FlowError as err:
                failures.append(err)
                continue
            data: _ServerData = {
                CONF_URL: url,
                CONF_API_KEY: api_key,
                CONF_VERIFY_SSL: verify_ssl,
                CONF_SERVER_KIND: found.kind.value,
            }
            return data, found.version
        raise most_telling(failures, lambda err: err.key)

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Ask for the server's URL and credentials."""
        errors: dict[str, str] = {}
        placeholders = {"found": ""}
        if user_input is not None:
            try:
                data, version = await self._async_validate(user_input)
            except _FlowError as err:
                errors["base"] = err.key
                placeholders["found"] = err.found
            else:
                await self.async_set_unique_id(unique_id_for(data[CONF_URL]))
                self._abort_if_unique_id_configured()
                kind = ServerKind(data[CONF_SERVER_KIND])
                LOGGER.debug("Adding %s %s at %s", kind, version, redact_url(data[CONF_URL]))
                return self.async_create_entry(
                    title=entry_title(kind, data[CONF_URL]),
                    data=data,
                    # The host whose GPU it uses: its URL's, until the user names it.
                    options={CONF_HOST: host_of(data[CONF_URL])},
                    # The first server of this run: the open pages need a reload for the card.
                    description="reload_for_the_card" if card_needs_a_reload(self.hass) else None,
                )
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(_server_schema({}), user_input),
            errors=errors,
            description_placeholders=placeholders,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Change the URL, API key or TLS check of a configured server."""
        entry = self._get_reconfigure_entry()
        if is_household(entry):
            return self.async_abort(reason="household_not_a_server")
        errors: dict[str, str] = {}
        placeholders = {"found": ""}
        if user_input is not None:
            try:
                data, _ = await self._async_validate(user_input)
            except _FlowError as err:
                errors["base"] = err.key
                placeholders["found"] = err.found
            else:
                if data[CONF_SERVER_KIND] != entry.data[CONF_SERVER_KIND]:
                    # Another server: its pins, timings and entities would not fit it.
                    return self.async_abort(
                        reason="other_server_kind",
                        description_placeholders={
                            "kind": KIND_TITLES[ServerKind(data[CONF_SERVER_KIND])],
                            "configured": KIND_TITLES[ServerKind(entry.data[CONF_SERVER_KIND])],
                        },
                    )
                unique_id = unique_id_for(data[CONF_URL])
                if unique_id != entry.unique_id:
                    await self.async_set_unique_id(unique_id)
                    self._abort_if_unique_id_configured()
                return self.async_update_reload_and_abort(
                    entry, unique_id=unique_id, data_updates=data
                )
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(_server_schema(entry.data), user_input),
            errors=errors,
            description_placeholders=placeholders,
        )

    async def async_step_reauth(self, entry_data: Mapping[str, Any]) -> ConfigFlowResult:
        """Start re-authentication after the server refused the API key."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for a new API key."""
        entry = self._get_reauth_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            try:
                data, _ = await self._async_validate({**entry.data, **user_input})
            except _FlowError as err:
                errors["base"] = err.key
            else:
                return self.async_update_reload_and_abort(
                    entry, data_updates={CONF_API_KEY: data[CONF_API_KEY]}
                )
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=vol.Schema({vol.Optional(CONF_API_KEY, default=""): _PASSWORD}),
            description_placeholders={"url": redact_url(entry.data[CONF_URL]), "found": ""},
            errors=errors,
        )


async def _detect(session: aiohttp.ClientSession, url: str, api_key: str) -> Detected:
    """Return the server at ``url``, or raise ``_FlowError`` saying what is there instead."""
    try:
        found = await detect(session, url, api_key=api_key or None)
        # The version endpoint is open on servers behind an auth proxy: ask for a list too.
        await found.client.running_models()
    except LlmServerError as err:
        LOGGER.debug("%s did not work out: %s", redact_url(url), err)
        what = str(err) if isinstance(err, LlmServerNotSupportedError) else ""
        raise _FlowError(server_translation_key(err), what) from err
    except Exception as err:
        LOGGER.exception("Unexpected error while checking %s", redact_url(url))
        raise _FlowError("unknown") from err
    return found


class _FlowError(Exception):
    """A check failed; ``key`` is the translated error to show, ``found`` what answered."""

    def __init__(self, key: str, found: str = "") -> None:
        super().__init__(key)
        self.key = key
        self.found = found
