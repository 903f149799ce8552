"""The integration's own requests to each model, and when: they are never a household's use.

A probe, a preload, a pin's load, a warm-up at a wake: each is noted when it is sent and
when it ends. Whatever the server shows of a request in that time (an expiry that jumps
forward, an entry in its activity log) is ours, not demand.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

# The requests kept per model: the latest.
KEPT: Final = 32
# A request's end as the server records it may come a little after ours.
SLACK: Final = timedelta(seconds=2)


@dataclass(slots=True)
class _Span:
    """One request of ours: sent, and ended (None while it runs)."""

    started: datetime
    ended: datetime | None = None


@dataclass(slots=True)
class OwnRequestLog:
    """When the integration's own requests to each model ran (UTC)."""

    _spans: dict[str, list[_Span]] = field(default_factory=dict)

    def started(self, model: str, at: datetime) -> None:
        """Note a request of ours to ``model``, sent ``at``."""
        spans = self._spans.setdefault(model, [])
        spans.append(_Span(at))
        del spans[:-KEPT]

    def ended(self, model: str, at: datetime) -> None:
        """Note that the earliest of our running requests to ``model`` ended ``at``."""
        for span in self._spans.get(model, []):
            if span.ended is None:
                span.ended = at
                return

    def during(self, model: str, begin: datetime, end: datetime) -> bool:
        """Return True when a request of ours to ``model`` ran at some time in [begin, end]."""
        return any(
            span.started <= end + SLACK and (span.ended is None or span.ended + SLACK >= begin)
            for span in self._spans.get(model, [])
        )
