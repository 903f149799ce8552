"""What an entry measured and decided, kept across restarts: one versioned store.

It holds the per-model measurements and the pins (with their keep-warm switches); its
migrations bring older files up to date.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, override

from homeassistant.core import HomeAssistant
from homeassistant.helpers.storage import Store

from .const import DOMAIN, LOGGER
from .core.guard import GuardRecord
from .core.idle_profile import IdleProfile
from .core.pins import Pin
from .core.ttft import ModelTiming

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
STORAGE_MINOR_VERSION: Final = 5
# Seconds to gather writes to the store.
STORE_DELAY: Final = 5


class _EntryStore(Store[dict[str, Any]]):
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
        if old_minor_version < 5:
            for section in ("diagnoses", "ttft_targets", "idle_profiles"):
                old_data.setdefault(section, {})
        return old_data


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """What one entry keeps: measurements and pins, by model."""

    timings: Mapping[str, ModelTiming] = field(default_factory=dict)
    pins: Mapping[str, Pin] = field(default_factory=dict)
    guard: GuardRecord = field(default_factory=GuardRecord)
    diagnoses: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    ttft_targets: Mapping[str, float] = field(default_factory=dict)
    idle_profiles: Mapping[str, IdleProfile] = field(default_factory=dict)


class EntryStorage:
    """Reads and writes what one config entry keeps."""

    def __init__(self, hass: HomeAssistant, entry_id: str) -> None:
        """Use the entry's own store file."""
        self._store = _EntryStore(
            hass, STORAGE_VERSION, f"{DOMAIN}.{entry_id}", minor_version=STORAGE_MINOR_VERSION
        )

    async def async_load(self) -> StoredEntry:
        """Return what earlier runs kept; a damaged record is dropped, not fatal."""
        stored = await self._store.async_load() or {}
        return StoredEntry(
            timings=_records(stored.get("models"), ModelTiming.from_dict, "measurements"),
            pins=_records(stored.get("pins"), Pin.from_dict, "pin"),
            guard=_guard(stored.get("guard")),
            diagnoses=_records(stored.get("diagnoses"), _diagnosis, "diagnosis"),
            ttft_targets=_records(stored.get("ttft_targets"), _target, "TTFT target"),
            idle_profiles=_records(
                stored.get("idle_profiles"), IdleProfile.from_dict, "idle profile"
            ),
        )

    def async_delay_save(self, entry: Callable[[], StoredEntry]) -> None:
        """Write a few seconds from now (writes close together merge)."""
        self._store.async_delay_save(lambda: _as_stored(entry()), STORE_DELAY)

    async def async_save(self, entry: StoredEntry) -> None:
        """Write now."""
        await self._store.async_save(_as_stored(entry))

    async def async_remove(self) -> None:
        """Delete the store file (the entry is being removed)."""
        await self._store.async_remove()


def _records[T](records: object, read: Callable[[Any], T], what: str) -> dict[str, T]:
    """Return the readable records of a by-model mapping; log and drop the others."""
    readable: dict[str, T] = {}
    for name, values in (records if isinstance(records, dict) else {}).items():
        try:
            readable[name] = read(values)
        except (ValueError, TypeError) as err:
            LOGGER.warning("Ignoring the stored %s of %s: %s", what, name, err)
    return readable


def _diagnosis(values: object) -> Mapping[str, Any]:
    """Return a stored diagnosis (an action's answer); raise ValueError when damaged."""
    if not isinstance(values, dict) or not isinstance(values.get("pattern"), str):
        raise ValueError("not a diagnosis")
    return values


def _target(value: object) -> float:
    """Return a stored TTFT target (seconds); raise ValueError when damaged."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value <= 600:
        raise ValueError(f"not a TTFT target: {value!r}")
    return float(value)


def _guard(record: object) -> GuardRecord:
    if record is None:
        return GuardRecord()
    try:
        return GuardRecord.from_dict(record)
    except (ValueError, TypeError) as err:
        LOGGER.warning("Ignoring the household guard's stored record: %s", err)
        return GuardRecord()


def _as_stored(entry: StoredEntry) -> dict[str, Any]:
    return {
        "models": {name: timing.as_dict() for name, timing in entry.timings.items()},
        "pins": {name: pin.as_dict() for name, pin in entry.pins.items()},
        "guard": entry.guard.as_dict(),
        "diagnoses": {name: dict(values) for name, values in entry.diagnoses.items()},
        "ttft_targets": dict(entry.ttft_targets),
        "idle_profiles": {name: p.as_dict() for name, p in entry.idle_profiles.items()},
    }
