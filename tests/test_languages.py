"""Words in the household's language: every translation is whole, and spoken words follow
the turn's language.

Each file of translations/ has exactly English's keys, each value a non-empty string with
exactly English's placeholders (``{model}``), Markdown code spans and ``[%key:…%]``
references; the card's own words likewise. A turn in Dutch (``nl``, ``nl-BE``) is answered in
Dutch; a language the integration does not speak falls back to Home Assistant's, then English.
"""

import json
from pathlib import Path
import re
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest

from custom_components.llm_warmth.core.sentence import Sentence
from custom_components.llm_warmth.sentences import (
    LANGUAGES,
    async_load_sentences,
    async_say_in,
    local_time,
    local_timestamp,
    say,
    translation_for,
)

TRANSLATIONS = Path(__file__).resolve().parent.parent / "custom_components/llm_warmth/translations"
ENGLISH = json.loads((TRANSLATIONS / "en.json").read_text())
OTHERS = sorted(p.stem for p in TRANSLATIONS.glob("*.json") if p.stem != "en")
PLACEHOLDER = re.compile(r"\{[^{}]*\}")
REFERENCE = re.compile(r"\[%key:[^%]*%\]")
CODE = re.compile(r"`[^`]*`")


def leaves(tree: dict[str, Any], path: str = "") -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in tree.items():
        where = f"{path}.{key}" if path else key
        if isinstance(value, dict):
            found |= leaves(value, where)
        else:
            found[where] = value
    return found


def differences(english: dict[str, str], other: dict[str, str]) -> list[str]:
    """Return, in words, where a translation is not English's shape."""
    said = [f"missing {k}" for k in english.keys() - other.keys()]
    said += [f"extra {k}" for k in other.keys() - english.keys()]
    for key in english.keys() & other.keys():
        text, source = other[key], english[key]
        if not isinstance(text, str) or not text.strip():
            said.append(f"empty {key}")
            continue
        for name, pattern in (("placeholders", PLACEHOLDER), ("references", REFERENCE)):
            if sorted(pattern.findall(text)) != sorted(pattern.findall(source)):
                said.append(f"{name} of {key}: {pattern.findall(text)}")
        if len(CODE.findall(text)) != len(CODE.findall(source)):
            said.append(f"code spans of {key}")
    return sorted(said)


def test_the_languages_are_the_files() -> None:
    assert {"de", "nl", "fr", "es"} <= set(OTHERS)
    assert frozenset(["en", *OTHERS]) == LANGUAGES


@pytest.mark.parametrize("language", OTHERS)
def test_a_translation_has_every_key_with_englishs_placeholders(language: str) -> None:
    other = json.loads((TRANSLATIONS / f"{language}.json").read_text())
    assert differences(leaves(ENGLISH), leaves(other)) == []


def test_a_translation_that_differs_is_told() -> None:
    """The comparison's own check: a missing key, an extra one, a changed placeholder."""
    english = {"a": "Load {model}", "b": "Use `keep_alive`", "c": "x"}
    other = {"a": "Laad {modell}", "b": "Gebruik keep_alive", "d": "y"}
    assert differences(english, other) == [
        "code spans of b",
        "extra d",
        "missing c",
        "placeholders of a: ['{modell}']",
    ]


@pytest.mark.parametrize(
    ("tag", "language"),
    [
        ("nl", "nl"),
        ("nl-BE", "nl"),
        ("de-CH", "de"),
        ("fr_CA", "fr"),
        ("es-419", "es"),
        ("en-GB", "en"),
        ("pt-BR", None),
        ("", None),
        (None, None),
    ],
)
def test_a_language_tag_speaks_its_language(tag: str | None, language: str | None) -> None:
    assert translation_for(tag) == language


async def test_the_assistants_words_follow_the_turns_language(hass: HomeAssistant) -> None:
    """Dutch for a Dutch (or Flemish) turn; a language not spoken: Home Assistant's."""
    sentence = Sentence("assistant_unanswered", {"servers": "NAS"})
    dutch = json.loads((TRANSLATIONS / "nl.json").read_text())["common"]["assistant_unanswered"]
    german = json.loads((TRANSLATIONS / "de.json").read_text())["common"]["assistant_unanswered"]
    assert await async_say_in(hass, "nl-BE", sentence) == dutch.replace("{servers}", "NAS")
    hass.config.language = "de"
    assert await async_say_in(hass, "pt-BR", sentence) == german.replace("{servers}", "NAS")
    hass.config.language = "en"
    english = ENGLISH["common"]["assistant_unanswered"].replace("{servers}", "NAS")
    assert await async_say_in(hass, "pt-BR", sentence) == english
    assert dutch != ENGLISH["common"]["assistant_unanswered"]


async def test_home_assistants_language_speaks_the_findings(hass: HomeAssistant) -> None:
    """``say`` (a diagnosis, an action's summary) in Home Assistant's language, each
    sentence after the other; a language not loaded: English."""
    hass.config.language = "de-AT"
    gone = Sentence("assistant_agent_gone", {"agent": "conversation.x"})
    await async_load_sentences(hass)
    german = json.loads((TRANSLATIONS / "de.json").read_text())["common"]
    said = say(
        hass,
        Sentence("assistant_unanswered", {"servers": "NAS"}),
        Sentence("assistant_agent_gone", {"agent": "conversation.x"}),
    )
    assert said == "; ".join(
        [
            german["assistant_unanswered"].replace("{servers}", "NAS"),
            german["assistant_agent_gone"].replace("{agent}", "conversation.x"),
        ]
    )
    hass.config.language = "fr"  # not loaded: English, loaded at setup
    english = ENGLISH["common"]["assistant_agent_gone"].replace("{agent}", "conversation.x")
    assert say(hass, gone) == english


@pytest.mark.freeze_time("2026-07-01 06:30:00+00:00")
async def test_times_are_said_in_home_assistants_zone(hass: HomeAssistant) -> None:
    await hass.config.async_set_time_zone("Europe/Amsterdam")
    when = dt_util.utcnow()
    assert local_time(when) == "2026-07-01 08:30"
    assert local_timestamp(when) == "2026-07-01T08:30:00+02:00"
    assert local_timestamp(None) is None
