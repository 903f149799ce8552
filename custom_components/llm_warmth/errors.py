"""Server errors in Home Assistant's words: one table, used by polls, actions and flows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.update_coordinator import UpdateFailed

from .const import DOMAIN
from .core.backends.detection import OpenAiCompatibleError
from .core.backends.errors import (
    LlmModelNotFoundError,
    LlmModelOnPeerError,
    LlmModelStartError,
    LlmServerAuthenticationError,
    LlmServerBusyError,
    LlmServerConnectionError,
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerOutOfMemoryError,
    LlmServerTimeoutError,
    LlmServerTlsError,
)
from .data import LlmWarmthConfigEntry

# Most specific first: a timeout is a connection error too. The keys are the
# translations' ``exceptions`` (and, where a flow shows them, ``config.error``).
_TRANSLATION_KEYS: Final[tuple[tuple[type[LlmServerError], str], ...]] = (
    (LlmServerAuthenticationError, "invalid_auth"),
    (OpenAiCompatibleError, "openai_compatible"),
    (LlmServerTimeoutError, "timeout"),
    (LlmServerTlsError, "tls_error"),
    (LlmServerConnectionError, "cannot_connect"),
    (LlmServerNotSupportedError, "not_supported"),
    (LlmModelNotFoundError, "model_not_found"),
    (LlmServerBusyError, "server_busy"),
    (LlmServerOutOfMemoryError, "out_of_memory"),
    (LlmModelStartError, "model_failed_to_start"),
    (LlmModelOnPeerError, "model_on_peer"),
)
UNEXPECTED: Final = "unexpected_response"
# What a request that names no model (a poll, finding out the server) can meet.
_SERVER_KEYS: Final = frozenset(
    {
        "invalid_auth",
        "timeout",
        "tls_error",
        "cannot_connect",
        "not_supported",
        "openai_compatible",
        "server_busy",
    }
)


def translation_key(err: LlmServerError) -> str:
    """Return the translation key that tells the user what went wrong."""
    return next((key for kind, key in _TRANSLATION_KEYS if isinstance(err, kind)), UNEXPECTED)


def server_translation_key(err: LlmServerError) -> str:
    """Return the key for a request that names no model (a poll, the config flow).

    What only a model's request can meet ("not found", "out of memory") is an unexpected
    reply there.
    """
    key = translation_key(err)
    return key if key in _SERVER_KEYS else UNEXPECTED


def update_failed(err: LlmServerError, url: str) -> UpdateFailed:
    """Return the coordinator's translated update failure for a client error."""
    return UpdateFailed(
        translation_domain=DOMAIN,
        translation_key=server_translation_key(err),
        translation_placeholders={"url": url, "error": str(err)},
    )


@contextmanager
def translated_errors(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry, placeholders: Mapping[str, str]
) -> Iterator[None]:
    """Turn a client error inside an action into a translated ``HomeAssistantError``.

    A refused API key starts re-authentication of the entry too.
    """
    try:
        yield
    except LlmServerError as err:
        if isinstance(err, LlmServerAuthenticationError):
            entry.async_start_reauth(hass)
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key=translation_key(err),
            translation_placeholders={**placeholders, "error": str(err)},
        ) from err
