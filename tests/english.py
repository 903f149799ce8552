"""Core's sentences in the English of ``translations/en.json``, for tests without Home Assistant."""

from __future__ import annotations

import json
from pathlib import Path

from custom_components.llm_warmth.core.sentence import Sentence

_EN = Path(__file__).parents[1] / "custom_components/llm_warmth/translations/en.json"
COMMON: dict[str, str] = json.loads(_EN.read_text(encoding="utf-8"))["common"]


def english(*sentences: Sentence) -> str:
    """Return the sentences as an English-speaking household reads them."""
    return "; ".join(sentence.render(COMMON[sentence.key]) for sentence in sentences)
