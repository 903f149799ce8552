"""What an entry measured and decided, kept across restarts: one versioned store.

Each feature owns a section of it (``EntryStore.section``): the coordinator the
measurements ("models"), the pins ("pins"), the household guard ("guard"), the
diagnoses, the TTFT targets and the idle profiles theirs. Its migrations bring older
files up to date.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, override

from homeassistant.core import HomeAssistant
from homeassistant.helpers.storage import Store

from .const import DOMAIN, LOGGER
from .core.backends.base import LlmBackend
from .core.model_timing import ModelTiming
from .core.monitor import ServerMonitor
from .core.store_migration import STORAGE_MINOR_VERSION, STORAGE_VERSION, migrate

# Seconds to gather writes to the store.
STORE_DELAY: Final = 5


class _EntryStore(Store[dict[str, object]]):
    @override
    async def _async_migrate_func(
        self, old_major_version: int, old_minor_version: int, old_data: dict[str, object]
    ) -> dict[str, object]:
        """Bring a file an older release wrote to this version (``core.store_migration``)."""
        return migrate(old_data, old_minor_version)


class EntryStore:
    """The one store of an entry; each feature keeps its own section of it.

    A feature registers its section with what writes it (``section``) and reads its
    part of what was loaded. Sections nobody registered (yet) are written back as they
    were read, so a save during setup loses nothing.
    """

    def __init__(self, hass: HomeAssistant, entry_id: str) -> None:
        """Use the entry's own store file."""
        self._store = _EntryStore(
            hass, STORAGE_VERSION, f"{DOMAIN}.{entry_id}", minor_version=STORAGE_MINOR_VERSION
        )
        self._loaded: dict[str, object] = {}
        self._sections: dict[str, Callable[[], object]] = {}
        # Once the entry unloaded, nothing of this run is written any more: a later write
        # would overwrite what the entry's next run keeps.
        self._closed = False

    async def async_load(self) -> Mapping[str, object]:
        """Read what earlier runs kept, by section (migrated to this version)."""
        stored = await self._store.async_load()
        self._loaded = stored if isinstance(stored, dict) else {}
        return self._loaded

    def section(self, name: str, write: Callable[[], object]) -> object:
        """Own the section ``name``, written by ``write``; return what it holds now."""
        if name in self._sections:
            raise ValueError(f"the store section {name} has an owner already")
        self._sections[name] = write
        return self._loaded.get(name)

    def async_delay_save(self) -> None:
        """Write a few seconds from now (writes close together merge)."""
        if not self._closed:
            self._store.async_delay_save(self._data, STORE_DELAY)

    async def async_save(self) -> None:
        """Write now."""
        if not self._closed:
            await self._store.async_save(self._data())

    async def async_close(self) -> None:
        """Write every section a last time (the entry unloads); write nothing after.

        Closed before the write starts: a change that comes while it is written would
        otherwise schedule a write of its own, after the last one.
        """
        if self._closed:
            return
        data = self._data()
        self._closed = True
        await self._store.async_save(data)

    async def async_remove(self) -> None:
        """Delete the store file (the entry is being removed)."""
        await self._store.async_remove()

    def _data(self) -> dict[str, object]:
        return {**self._loaded, **{name: write() for name, write in self._sections.items()}}


def stored_records[T](records: object, read: Callable[[Any], T], what: str) -> dict[str, T]:
    """Return the readable records of a by-model mapping; log and drop the others."""
    readable: dict[str, T] = {}
    for name, values in (records if isinstance(records, dict) else {}).items():
        try:
            readable[name] = read(values)
        except (ValueError, TypeError) as err:
            LOGGER.warning("Ignoring the stored %s of %s: %s", what, name, err)
    return readable


def stored_monitor(client: LlmBackend, store: EntryStore) -> ServerMonitor:
    """Return the server's monitor, from what earlier runs measured (the section "models")."""
    monitor: ServerMonitor
    timings = store.section(
        "models", lambda: {name: t.as_dict() for name, t in monitor.timings.items()}
    )
    monitor = ServerMonitor(
        client.capabilities,
        timings=stored_records(timings, ModelTiming.from_dict, "measurements"),
    )
    return monitor
