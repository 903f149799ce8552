"""The demo household's constants."""

from typing import Final

DOMAIN: Final = "llm_warmth_demo"
