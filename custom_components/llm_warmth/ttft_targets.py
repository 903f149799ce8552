"""Each model's TTFT target (seconds): set by its number entity, read by its sensors."""

from __future__ import annotations

from typing import Final

from homeassistant.config_entries import ConfigEntry

from .const import DEFAULT_TTFT_TARGET
from .coordinator import LlmWarmthCoordinator
from .feature import ModelRecords
from .storage import EntryStore

# The number entity's range (seconds).
TTFT_TARGET_MIN: Final = 0.1
TTFT_TARGET_MAX: Final = 600


def _target(value: object) -> float:
    """Return a TTFT target (seconds); raise ValueError when it is not one."""
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not TTFT_TARGET_MIN <= value <= TTFT_TARGET_MAX
    ):
        raise ValueError(f"not a TTFT target: {value!r}")
    return float(value)


class TtftTargets(ModelRecords[float]):
    """The TTFT targets of one server's models (stored in the section "ttft_targets")."""

    def __init__(
        self, entry: ConfigEntry, store: EntryStore, coordinator: LlmWarmthCoordinator
    ) -> None:
        """Start from the stored targets."""
        super().__init__(
            entry,
            store,
            coordinator,
            "ttft_targets",
            records=(_target, float),  # stored as the seconds they are
            what="TTFT target",
        )

    def seconds(self, model: str) -> float:
        """Return the target of ``model`` (the default until one is set)."""
        target = self.get(model)
        return DEFAULT_TTFT_TARGET if target is None else target
