"""Which model is the household's assistant on a server: its agent's, or the chosen one."""

from __future__ import annotations

from typing import Final

from homeassistant.const import CONF_URL
from homeassistant.core import HomeAssistant, callback

from .const import CONF_ASSISTANT_MODEL
from .core.server_url import normalize_url, unique_id_for
from .data import LlmWarmthConfigEntry

# Home Assistant's own Ollama integration: its conversation agents name their model.
OLLAMA_DOMAIN: Final = "ollama"
_AGENT_SUBENTRY: Final = "conversation"


@callback
def assistant_model(hass: HomeAssistant, entry: LlmWarmthConfigEntry) -> tuple[str | None, str]:
    """Return the assistant model of the entry's server and where that comes from.

    ``agent``: a conversation agent of Home Assistant's Ollama integration at the same
    address uses it; ``option``: the one chosen in the options; ``none``: neither.
    """
    # Entries in use only (not disabled, not ignored), in a fixed order.
    for ollama in hass.config_entries.async_entries(
        OLLAMA_DOMAIN, include_ignore=False, include_disabled=False
    ):
        url = ollama.data.get(CONF_URL)
        try:
            same = isinstance(url, str) and unique_id_for(normalize_url(url, 11434)) == (
                entry.unique_id
            )
        except ValueError:
            continue
        subentries = sorted(ollama.subentries.values(), key=lambda s: s.subentry_id)
        for subentry in subentries if same else ():
            model = subentry.data.get("model")
            if subentry.subentry_type == _AGENT_SUBENTRY and isinstance(model, str) and model:
                return model, "agent"
    if chosen := entry.options.get(CONF_ASSISTANT_MODEL):
        return str(chosen), "option"
    return None, "none"
