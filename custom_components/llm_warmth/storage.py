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

STORAGE_VERSION: Final = 1
# 1.2: the polling figure stored as "load_seconds" (the request that loaded a model, as
# polls saw it) became "cold_request_seconds"; "load_seconds" is now the server's own.
# 1.3: "load_source" says who measured "load_seconds" (until then only Ollama: "server");
# stages a server did not report are null.
# 1.4: "pins" (by model) and "guard" (the household guard's record) added; files
# without them have none.
# 1.5: "diagnoses" (the last diagnosis of each model, as its action answered it),
# "ttft_targets" (seconds, by model) and "idle_profiles" (by model). They were written
# by releases that still called the file 1.4: a 1.4 file may have them or not.
# 1.6: a diagnosis keeps its verdict as a sentence ("said": key and figures, put in
# words from the translations when shown) instead of English words ("verdict"); one
# stored before keeps its words, said as they were.
# 1.7: a figure polls saw ("load_source" or "cold_request_source" "polling": a lower bound)
# is kept apart, as "load_at_least_seconds" / "cold_request_at_least_seconds", so that it
# never shows as if it were exact.
STORAGE_MINOR_VERSION: Final = 7
# Seconds to gather writes to the store.
STORE_DELAY: Final = 5


def _models(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the stored figures of each model (what is not a mapping is left alone)."""
    models = data.get("models")
    return [v for v in models.values() if isinstance(v, dict)] if isinstance(models, dict) else []


def _to_1_2(data: dict[str, Any]) -> None:
    for values in _models(data):
        if seconds := values.pop("load_seconds", None):
            values["cold_request_seconds"] = seconds
            values["cold_request_source"] = "polling"


def _to_1_3(data: dict[str, Any]) -> None:
    for values in _models(data):
        if values.get("load_seconds") is not None:
            values.setdefault("load_source", "server")


def _to_1_5(data: dict[str, Any]) -> None:
    for section in ("diagnoses", "ttft_targets", "idle_profiles"):
        data.setdefault(section, {})


def _to_1_6(data: dict[str, Any]) -> None:
    diagnoses = data.get("diagnoses")
    for values in diagnoses.values() if isinstance(diagnoses, dict) else ():
        if isinstance(values, dict) and "said" not in values:
            words = values.pop("verdict", "")
            values["said"] = {
                "key": "diagnosis_as_stored",
                "figures": {"words": words if isinstance(words, str) else ""},
            }


def _to_1_7(data: dict[str, Any]) -> None:
    for values in _models(data):
        for figure in ("load", "cold_request"):
            if values.get(f"{figure}_source") == "polling":
                values[f"{figure}_at_least_seconds"] = values.pop(f"{figure}_seconds", None)
                values[f"{figure}_source"] = None


# Each migration, by the minor version it brings a file to.
_MIGRATIONS: Final = {2: _to_1_2, 3: _to_1_3, 5: _to_1_5, 6: _to_1_6, 7: _to_1_7}


class _EntryStore(Store[dict[str, Any]]):
    @override
    async def _async_migrate_func(
        self, old_major_version: int, old_minor_version: int, old_data: dict[str, Any]
    ) -> dict[str, Any]:
        for minor_version, migrate in _MIGRATIONS.items():
            if old_minor_version < minor_version:
                migrate(old_data)
        return old_data


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
        self._loaded: dict[str, Any] = {}
        self._sections: dict[str, Callable[[], object]] = {}
        # Once the entry unloaded, nothing of this run is written any more: a later write
        # would overwrite what the entry's next run keeps.
        self._closed = False

    async def async_load(self) -> Mapping[str, Any]:
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

    def _data(self) -> dict[str, Any]:
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
