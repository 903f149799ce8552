"""The dashboard card (``custom:llm-warmth-card``): served here, loaded by the frontend.

The card is plain ES modules in ``frontend/`` with no build step. It is served under a path
that carries a fingerprint of its files, so browsers may cache it for as long as they like
and still load a new release at once (the modules import each other by relative path, so a
query string on the entry point alone would not reach the data module).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from homeassistant.components.frontend import add_extra_js_url
from homeassistant.components.http.server import StaticPathConfig
from homeassistant.core import HomeAssistant
from homeassistant.util.hass_dict import HassKey

from .const import DOMAIN, LOGGER

CARD_DIRECTORY = Path(__file__).parent / "frontend"
CARD_MODULE = "llm-warmth-card.js"
URL_BASE = f"/{DOMAIN}/frontend"
# The card's URL once the frontend was told to load it on every page.
CARD_URL: HassKey[str] = HassKey(f"{DOMAIN}_card_url")


def card_needs_a_reload(hass: HomeAssistant) -> bool:
    """Return True when pages open now were served before the card was added to them.

    The frontend loads the card with each page it serves (its extra modules, read when the
    page opens); a page opened before the integration's first setup in this run of Home
    Assistant (a first server added from the UI) never loads it: it shows "Configuration
    error" where the card is until it is reloaded.
    """
    return "frontend" in hass.config.components and CARD_URL not in hass.data


def _fingerprint() -> str:
    """Return a short hash of the card's files (read from disk: run in the executor)."""
    digest = hashlib.sha256()
    for path in sorted(CARD_DIRECTORY.glob("*.js")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


async def async_register_card(hass: HomeAssistant) -> None:
    """Serve the card and have the frontend load it on every page (its URL: ``CARD_URL``).

    Called once per Home Assistant, from ``async_setup``. Without the frontend (which
    depends on the HTTP server) there is no dashboard to show the card on: nothing is
    registered. A real installation always loads the frontend before the integrations.
    """
    if "frontend" not in hass.config.components:
        LOGGER.debug("No frontend loaded: the dashboard card is not served")
        return
    url_path = f"{URL_BASE}/{await hass.async_add_executor_job(_fingerprint)}"
    await hass.http.async_register_static_paths(
        [StaticPathConfig(url_path, str(CARD_DIRECTORY), cache_headers=True)]
    )
    url = f"{url_path}/{CARD_MODULE}"
    add_extra_js_url(hass, url)
    hass.data[CARD_URL] = url
