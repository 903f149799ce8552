"""What an entry measured, kept across restarts: one versioned store, with its migrations."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, override

from homeassistant.core import HomeAssistant
from homeassistant.helpers.storage import Store

from .const import DOMAIN, LOGGER
from .core.ttft import ModelTiming

STORAGE_VERSION: Final = 1
# 1.2: the polling figure stored as "load_seconds" (the request that loaded a model, as
# polls saw it) became "cold_request_seconds"; "load_seconds" is now the server's own.
# 1.3: "load_source" says who measured "load_seconds" (until then only Ollama: "server");
# stages a server did not report are null.
STORAGE_MINOR_VERSION: Final = 3
# Seconds to gather writes to the store.
STORE_DELAY: Final = 5


class _TimingStore(Store[dict[str, Any]]):
    @override
    async def _async_migrate_func(
        self, old_major_version: int, old_minor_version: int, old_data: dict[str, Any]
    ) -> dict[str, Any]:
        if old_minor_version < 2:
            models = old_data.get("models")
            for values in models.values() if isinstance(models, dict) else ():
                if isinstance(values, dict) and (seconds := values.pop("load_seconds", None)):
                    values["cold_request_seconds"] = seconds
                    values["cold_request_source"] = "polling"
        if old_minor_version < 3:
            models = old_data.get("models")
            for values in models.values() if isinstance(models, dict) else ():
                if isinstance(values, dict) and values.get("load_seconds") is not None:
                    values.setdefault("load_source", "server")
        return old_data


class TimingStorage:
    """Reads and writes the per-model measurements of one config entry."""

    def __init__(self, hass: HomeAssistant, entry_id: str) -> None:
        """Use the entry's own store file."""
        self._store = _TimingStore(
            hass, STORAGE_VERSION, f"{DOMAIN}.{entry_id}", minor_version=STORAGE_MINOR_VERSION
        )

    async def async_load(self) -> dict[str, ModelTiming]:
        """Return what earlier runs measured; a damaged record is dropped, not fatal."""
        stored = await self._store.async_load() or {}
        models = stored.get("models")
        timings: dict[str, ModelTiming] = {}
        for name, values in (models if isinstance(models, dict) else {}).items():
            try:
                timings[name] = ModelTiming.from_dict(values)
            except ValueError as err:
                LOGGER.warning("Ignoring the stored measurements of %s: %s", name, err)
        return timings

    def async_delay_save(self, timings: Callable[[], Mapping[str, ModelTiming]]) -> None:
        """Write the measurements a few seconds from now (writes close together merge)."""
        self._store.async_delay_save(lambda: _as_stored(timings()), STORE_DELAY)

    async def async_save(self, timings: Mapping[str, ModelTiming]) -> None:
        """Write the measurements now."""
        await self._store.async_save(_as_stored(timings))

    async def async_remove(self) -> None:
        """Delete the store file (the entry is being removed)."""
        await self._store.async_remove()


def _as_stored(timings: Mapping[str, ModelTiming]) -> dict[str, Any]:
    return {"models": {name: timing.as_dict() for name, timing in timings.items()}}
