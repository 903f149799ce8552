"""Core's sentences in the user's words: each rendered from the translations' ``common``.

``core`` decides what is said (a key and typed figures, shown as "7.5 s", "1.2"); this
module finds the key's translation in Home Assistant's language (English where one lacks
it) and fills the figures in.
"""

from __future__ import annotations

from homeassistant.core import HomeAssistant
from homeassistant.helpers.translation import (
    async_get_cached_translations,
    async_get_translations,
)

from .const import DOMAIN, LOGGER
from .core.sentence import Sentence

# Between the sentences of one finding list (an idle profile's, an action's summary).
_BETWEEN = "; "


async def async_load_sentences(hass: HomeAssistant) -> None:
    """Load the translations the sentences are rendered from (once, at setup)."""
    for language in {hass.config.language, "en"}:
        await async_get_translations(hass, language, "common", {DOMAIN})


def say(hass: HomeAssistant, *sentences: Sentence) -> str:
    """Return the sentences in Home Assistant's language, one after the other."""
    return _BETWEEN.join(_said(hass, sentence) for sentence in sentences)


def _said(hass: HomeAssistant, sentence: Sentence) -> str:
    key = f"component.{DOMAIN}.common.{sentence.key}"
    for language in (hass.config.language, "en"):
        template = async_get_cached_translations(hass, language, "common", DOMAIN).get(key)
        if template is not None:
            return sentence.render(template)
    LOGGER.warning("No words for %s: are the translations loaded?", sentence.key)
    return sentence.key
