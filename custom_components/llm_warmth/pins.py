"""The pins of one server (keep-warm switches too): kept, stored, and heard of.

``core.pins.PinBook`` decides; this feature owns the book, its store section ("pins")
and its listeners. The controller asserts the pins; the household guard releases and
re-applies them. Beside them, until when each model's last ``llm_warmth.preload`` asked
the server to keep it (not stored): what the keep_alive repair holds an agent's keep
against.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import override

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import Context, HomeAssistant, callback

from .core.backends.base import Capabilities
from .core.backends.types import ResidentModel
from .core.pins import Pin, PinBook, Reassertion
from .feature import Feature
from .storage import EntryStore, stored_records


class Pins(Feature):
    """The models the household wants kept resident."""

    def __init__(
        self,
        hass: HomeAssistant,
        entry: ConfigEntry,
        store: EntryStore,
        capabilities: Capabilities,
    ) -> None:
        """Start from the stored pins."""
        super().__init__(hass, entry, store, "pins")
        self._book = PinBook(capabilities, stored_records(self.stored, Pin.from_dict, "pin"))
        # The action (and the automation or script that called it) changing the pins now.
        self._context: Context | None = None
        # Until when the preload action last asked the server to keep each model. Only the
        # action's: the features' own keeps (auto-warm's, the wake's) follow the agent's
        # keep_alive by design, and an agent's turn overriding them is no conflict.
        self.preloads: dict[str, datetime] = {}

    @property
    def context(self) -> Context | None:
        """Return the context of the action changing the pins now (None: none)."""
        return self._context

    @contextmanager
    def changed_by(self, context: Context) -> Iterator[None]:
        """Tell, while the block runs, that ``context`` changes the pins.

        The Keep warm switch writes its state in it, so that the logbook tells who pinned
        ("turned on triggered by automation ..."): an automation's pin loads nothing when
        the model is warm already, and would otherwise be an unattributed line.
        """
        self._context = context
        try:
            yield
        finally:
            self._context = None

    @override
    def as_stored(self) -> dict[str, object]:
        """Return the pins, by model."""
        return {name: pin.as_dict() for name, pin in self._book.pins.items()}

    @property
    def pins(self) -> dict[str, Pin]:
        """Return the pins, by model."""
        return self._book.pins

    def get(self, model: str) -> Pin | None:
        """Return the pin of ``model``, if it has one."""
        return self._book.get(model)

    @callback
    def preloaded(self, model: str, until: datetime | None) -> None:
        """Note until when the preload action asked to keep ``model`` (None: no end asked)."""
        if until is None:
            self.preloads.pop(model, None)
        else:
            self.preloads[model] = until

    @callback
    def pin(self, pin: Pin) -> None:
        """Add or replace the pin of ``pin.model``."""
        self._book.pin(pin)
        self.async_changed(save_now=True)

    @callback
    def unpin(self, models: list[str]) -> list[Pin]:
        """Remove the pins of ``models``; return those there were."""
        removed = [pin for model in models if (pin := self._book.unpin(model)) is not None]
        if removed:
            self.async_changed(save_now=True)
        return removed

    @callback
    def release(self, models: list[str], reason: str, now: datetime) -> None:
        """Mark the pins released by the guard (kept, not asserted until re-applied)."""
        for model in models:
            self._book.release(model, reason, now)
        if models:
            self.async_changed(save_now=True)

    @callback
    def reapply(self, models: list[str]) -> None:
        """Hold the released pins again."""
        for model in models:
            self._book.reapply(model)
        if models:
            self.async_changed(save_now=True)

    @callback
    def drop_expired(self, now: datetime) -> None:
        """Remove the pins whose end has passed."""
        if self._book.drop_expired(now):
            self.async_changed(save_now=True)

    def due(
        self, resident: Mapping[str, ResidentModel], available: frozenset[str], now: datetime
    ) -> list[Reassertion]:
        """Return the pins to assert again now, highest priority first."""
        return self._book.due(resident, available, now)

    def asserted(self, due: Reassertion, now: datetime) -> None:
        """Note that a pin was asserted again at ``now`` (for the back-off; not stored)."""
        self._book.asserted(due, now)
