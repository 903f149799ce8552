"""What every feature's state has: its listeners and its section of the entry's store."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, override

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback

from .const import LOGGER
from .coordinator import LlmWarmthCoordinator
from .storage import EntryStore, stored_records


class Feature(ABC):
    """A feature's state: entities and other features listen to it; it saves itself.

    The entry owns it: saves it starts are the entry's tasks (a delayed one is written
    when Home Assistant stops at the latest), and the store writes every section once
    more when the entry unloads.
    """

    def __init__(
        self, hass: HomeAssistant, entry: ConfigEntry, store: EntryStore, section: str
    ) -> None:
        """Own the store's ``section``; ``stored`` then holds what it held."""
        self.hass = hass
        self.entry = entry
        self._store = store
        self._listeners: list[CALLBACK_TYPE] = []
        self.stored = store.section(section, self.as_stored)

    @abstractmethod
    def as_stored(self) -> object:
        """Return the section as it is written (JSON types only)."""

    @callback
    def async_add_listener(self, listener: CALLBACK_TYPE) -> CALLBACK_TYPE:
        """Call ``listener`` whenever the state changes; return what stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    @callback
    def async_changed(self, *, save_now: bool = False) -> None:
        """Save soon, or now (a restart right after must not lose it); tell the listeners.

        A listener that fails is logged and the others are told all the same, as a
        coordinator does.
        """
        if save_now:
            # An entry task, not a background one: Home Assistant waits for it when it
            # stops, and the entry when it unloads.
            self.entry.async_create_task(
                self.hass, self._store.async_save(), f"{self.entry.title} save"
            )
        else:
            self._store.async_delay_save()
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                LOGGER.exception("%s: a listener of %s failed", self.entry.title, self)


class ModelRecords[T](Feature):
    """A feature that keeps one record per model; a deleted model's record goes with it."""

    def __init__(
        self,
        entry: ConfigEntry,
        store: EntryStore,
        coordinator: LlmWarmthCoordinator,
        section: str,
        *,
        records: tuple[Callable[[Any], T], Callable[[T], object]],
        what: str,
    ) -> None:
        """Start from the stored records; ``records``: how one is read, how it is written.

        ``what`` names one record in the log ("TTFT target").
        """
        super().__init__(coordinator.hass, entry, store, section)
        self._coordinator = coordinator
        self._read, self._write = records
        self._records = stored_records(self.stored, self._read, what)

    @override
    def as_stored(self) -> dict[str, object]:
        """Return the records, by model."""
        return {model: self._write(record) for model, record in self._records.items()}

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Forget the records of deleted models from now on; return what stops it."""
        coordinator = self._coordinator
        return coordinator.async_add_listener(lambda: self.forget(coordinator.data.models))

    def get(self, model: str) -> T | None:
        """Return the record of ``model``."""
        return self._records.get(model)

    def __contains__(self, model: object) -> bool:
        """Return True when ``model`` has a record."""
        return model in self._records

    @callback
    def set(self, model: str, record: T) -> None:
        """Keep ``record`` for ``model`` (checked as a stored one would be)."""
        self._records[model] = self._read(self._write(record))
        self.async_changed()

    @callback
    def forget(self, present: frozenset[str]) -> None:
        """Drop the records of models the server no longer has (deleted from it)."""
        if gone := self._records.keys() - present:
            for model in gone:
                del self._records[model]
            self.async_changed()
