"""Which server and model an action acts on, and the context its requests load it with.

The target: a model's device, or a server and a name. The context (Ollama's ``num_ctx``):
the call's, else that of Home Assistant's Ollama agent that uses the model, so that what an
action sends does not make the agent's next turn reload the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Final, cast

from homeassistant.const import ATTR_CONFIG_ENTRY_ID
from homeassistant.core import ServiceCall
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import config_validation as cv, device_registry as dr, service
import probatio as vol

from .agents import agent_context
from .const import DOMAIN
from .core.action_fields import Refused, context_asked
from .core.backends.base import GENERATION_TIMEOUT
from .core.server_url import redact_url
from .data import LlmWarmthConfigEntry
from .devices import server_device_identifier
from .household_entry import is_household
from .sentences import local_time

ATTR_DEVICE_ID: Final = "device_id"
ATTR_MODEL: Final = "model"
ATTR_NUM_CTX: Final = "num_ctx"
ATTR_TIMEOUT: Final = "timeout"
# Ollama: the context to load with (default: its agent's, so no reload follows).
NUM_CTX: Final = vol.All(vol.Coerce(int), vol.Range(min=256, max=1_048_576))

# How long an action waits for the server. Long where it loads a model: a client that
# gives up during a load makes Ollama abort the load.
LOAD_TIMEOUT_FIELD: Final[dict[vol.Marker, object]] = {
    vol.Optional(ATTR_TIMEOUT, default=GENERATION_TIMEOUT): vol.All(
        vol.Coerce(float), vol.Range(min=1, max=1800)
    )
}
UNLOAD_TIMEOUT_FIELD: Final[dict[vol.Marker, object]] = {
    vol.Optional(ATTR_TIMEOUT, default=60): vol.All(vol.Coerce(float), vol.Range(min=1, max=600))
}

# The fields that name the target of every action on a model.
TARGET_FIELDS: Final[dict[vol.Marker, object]] = {
    # A model's device, or a server's (device or entry) and the model's name.
    vol.Exclusive(ATTR_DEVICE_ID, "target"): cv.string,
    vol.Exclusive(ATTR_CONFIG_ENTRY_ID, "target"): cv.string,
    vol.Optional(ATTR_MODEL): vol.All(cv.string, vol.Length(min=1)),
}


@contextmanager
def refusals_in_words() -> Iterator[None]:
    """Say a call that core refused in Home Assistant's words (``ServiceValidationError``).

    A time it shows is shown as the household reads it (its time zone, to the minute).
    """
    try:
        yield
    except Refused as err:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key=err.key,
            translation_placeholders={
                name: local_time(value) if isinstance(value, datetime) else value
                for name, value in err.placeholders.items()
            },
        ) from None


def known_model(entry: LlmWarmthConfigEntry, requested: str) -> tuple[str, dict[str, str]]:
    """Return the model as the server names it, and the placeholders of errors about it.

    A model the server does not have is refused in words before anything is sent.
    """
    model = entry.runtime_data.coordinator.resolve_model(requested)
    placeholders = {"model": model, "url": redact_url(entry.runtime_data.client.base_url)}
    if model not in entry.runtime_data.coordinator.data.models:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="model_not_found",
            translation_placeholders=placeholders,
        )
    return model, placeholders


def known_model_target(call: ServiceCall) -> tuple[LlmWarmthConfigEntry, str, dict[str, str]]:
    """Return the entry, the model it has (else refused) and the errors' placeholders."""
    entry, requested = model_target(call)
    return entry, *known_model(entry, requested)


def model_target(call: ServiceCall) -> tuple[LlmWarmthConfigEntry, str]:
    """Return the server's entry and the model an action acts on (one is needed)."""
    entry, model = target(call)
    if model is None:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="no_model_target")
    return entry, model


def target(call: ServiceCall) -> tuple[LlmWarmthConfigEntry, str | None]:
    """Return the server's entry and the model an action acts on, if it names one.

    A model's device names both. A server's device, or the server's entry, names the
    server; the ``model`` field then names the model.
    """
    named = call.data.get(ATTR_MODEL)
    if device_id := call.data.get(ATTR_DEVICE_ID):
        device = dr.async_get(call.hass).async_get(device_id)
        entry_id = device.config_entry_id if device else ""
        entry = call.hass.config_entries.async_get_entry(entry_id)
        if device is None or entry is None or entry.domain != DOMAIN or is_household(entry):
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="not_a_model_device",
                translation_placeholders={"device_id": device_id},
            )
        server = cast(
            LlmWarmthConfigEntry, service.async_get_config_entry(call.hass, DOMAIN, entry_id)
        )
        # Models are their server's child devices; the server is a main device.
        if isinstance(device, dr.ChildDeviceEntry):
            model = next(
                i.removeprefix(f"{entry_id}_") for d, i in device.identifiers if d == DOMAIN
            )
            if named and server.runtime_data.coordinator.resolve_model(named) != model:
                raise ServiceValidationError(
                    translation_domain=DOMAIN,
                    translation_key="device_and_model_differ",
                    translation_placeholders={"device": device.name or model, "model": named},
                )
            return server, model
        if server_device_identifier(entry_id) not in device.identifiers:
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="not_a_model_device",
                translation_placeholders={"device_id": device_id},
            )
        return server, named
    if ATTR_CONFIG_ENTRY_ID not in call.data:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="no_model_target")
    entry = service.async_get_config_entry(call.hass, DOMAIN, call.data[ATTR_CONFIG_ENTRY_ID])
    if is_household(entry):
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key="household_not_a_server"
        )
    return cast(LlmWarmthConfigEntry, entry), named


def model_context(
    call: ServiceCall, entry: LlmWarmthConfigEntry, model: str, given: int | None = None
) -> tuple[int | None, str | None]:
    """Return the context to load ``model`` with (the call's, else its agent's), and the agent.

    The call's is its ``num_ctx`` field, else ``given`` (a probe's ``options.num_ctx``).
    Only Ollama takes a context per request: the other servers' configuration sets it, and
    a call that gives one there is refused.
    """
    with refusals_in_words():
        asked = context_asked(
            call.data.get(ATTR_NUM_CTX, given), entry.runtime_data.client.capabilities, entry.title
        )
    if asked is not None:
        return asked, None
    return agent_context(entry, model)
