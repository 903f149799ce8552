"""Core's sentences in the user's words: each rendered from the translations' ``common``.

``core`` decides what is said (a key and typed figures, shown as "7.5 s", "1.2"); this
module finds the key's translation in the language asked for (a turn's, else Home
Assistant's; a regional tag speaks its language: "de-CH" is German) and fills the figures
in. English is the last resort, where no translation fits.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from homeassistant.core import HomeAssistant
from homeassistant.helpers.translation import (
    async_get_cached_translations,
    async_get_translations,
)
from homeassistant.util import dt as dt_util

from .const import DOMAIN, LOGGER
from .core.sentence import Sentence

# Between the sentences of one finding list (an idle profile's, an action's summary).
_BETWEEN = "; "
# The languages of translations/ (a test keeps this equal to the files there).
LANGUAGES: Final = frozenset({"de", "en", "es", "fr", "nl"})


def translation_for(language: str | None) -> str | None:
    """Return the translation that speaks a language tag: its own, else its language's.

    "nl" and "nl-BE" are Dutch; None where the integration has no translation for it.
    Home Assistant fills a missing language with English, so a tag is matched here first.
    """
    if not language:
        return None
    if language in LANGUAGES:
        return language
    base = language.replace("_", "-").split("-", 1)[0].lower()
    return base if base in LANGUAGES else None


def _languages(hass: HomeAssistant, language: str | None = None) -> tuple[str, ...]:
    """Return the languages to try in turn: the one asked for, Home Assistant's, English."""
    tried = (translation_for(language), translation_for(hass.config.language), "en")
    return tuple(dict.fromkeys(lang for lang in tried if lang))


async def async_load_sentences(hass: HomeAssistant) -> None:
    """Load the translations the sentences are rendered from (once, at setup)."""
    for language in _languages(hass):
        await async_get_translations(hass, language, "common", {DOMAIN})


def say(hass: HomeAssistant, *sentences: Sentence) -> str:
    """Return the sentences in Home Assistant's language, one after the other."""
    return _BETWEEN.join(_said(hass, sentence, _languages(hass)) for sentence in sentences)


async def async_say_in(hass: HomeAssistant, language: str | None, *sentences: Sentence) -> str:
    """Return the sentences in ``language`` (a turn's), else Home Assistant's, else English."""
    languages = _languages(hass, language)
    for lang in languages:
        await async_get_translations(hass, lang, "common", {DOMAIN})
    return _BETWEEN.join(_said(hass, sentence, languages) for sentence in sentences)


def _said(hass: HomeAssistant, sentence: Sentence, languages: tuple[str, ...]) -> str:
    key = f"component.{DOMAIN}.common.{sentence.key}"
    for language in languages:
        template = async_get_cached_translations(hass, language, "common", DOMAIN).get(key)
        if template is not None:
            return sentence.render(template)
    LOGGER.warning("No words for %s: are the translations loaded?", sentence.key)
    return sentence.key


def local_time(when: datetime) -> str:
    """Return a time as a household reads it: in Home Assistant's time zone, to the minute.

    "2026-12-02 09:30": the date first, so that a time tomorrow is not read as today's.
    """
    return dt_util.as_local(when).strftime("%Y-%m-%d %H:%M")


def local_timestamp(when: datetime | None) -> str | None:
    """Return a time for an action's answer: ISO 8601 in Home Assistant's time zone."""
    return dt_util.as_local(when).isoformat(timespec="seconds") if when else None
