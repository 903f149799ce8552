"""The figures of one load, each with the source that measured it (pure data)."""

from dataclasses import dataclass
from enum import StrEnum

from .residency import ModelLoaded


class FigureSource(StrEnum):
    """Who measured a load figure."""

    # The server's own figure (Ollama's load_duration).
    SERVER = "server"
    # The integration, around a request it sent.
    CLIENT = "client"
    # Polls that saw it from its first sighting on: a lower bound.
    POLLING = "polling"
    # The server's event stream, which announced its start and its end.
    EVENTS = "events"


@dataclass(frozen=True, slots=True)
class LoadFigures:
    """The figures of one load, each with where it comes from.

    ``load_seconds`` is a load alone, queue wait included: ``load_source`` "server" for
    Ollama's ``load_duration`` of the request that loaded the model, "client" for the
    time until llama-server announced the model loaded (read by the client that sent the
    request), "polling" when polls saw the server's loading state end (a lower bound),
    "events" when the server's event stream announced its start and its end.
    ``cold_request_seconds`` is the request that loaded the model, from start to finish:
    "client" when the integration sent it and timed it, "polling" when polls saw the new
    runner busy (a lower bound: the time before the first sighting is not seen).
    """

    load_seconds: float | None = None
    load_source: FigureSource | None = None
    cold_request_seconds: float | None = None
    cold_request_source: FigureSource | None = None
    reloaded: bool = False

    @classmethod
    def from_polling(
        cls, change: ModelLoaded, source: FigureSource = FigureSource.POLLING
    ) -> LoadFigures:
        """Return what polling (or the server's event stream: "events") measured of a load."""
        seen = change.seconds
        told = source if seen is not None else None
        if change.load_end_seen:
            return cls(load_seconds=seen, load_source=told, reloaded=change.reloaded)
        return cls(cold_request_seconds=seen, cold_request_source=told, reloaded=change.reloaded)

    def as_event_data(self) -> dict[str, float | str | bool | None]:
        """Return the figures as event data."""
        return {
            "load_seconds": self.load_seconds,
            "load_source": _value(self.load_source),
            "cold_request_seconds": self.cold_request_seconds,
            "cold_request_source": _value(self.cold_request_source),
            "reloaded": self.reloaded,
        }


def _value(source: FigureSource | None) -> str | None:
    return None if source is None else source.value
