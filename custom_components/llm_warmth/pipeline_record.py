"""Home Assistant's record of the Assist pipelines' runs, read for each voice turn.

``hass.data["assist_pipeline"].pipeline_debug`` (internal) keeps every event of a
pipeline's last runs with Home Assistant's own timestamp. It is read by duck typing, after
the turn, each shape checked; when it does not read, this says so once (a log line and a
repair) and the turns go on untimed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from homeassistant.const import __version__ as HA_VERSION
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir

from .const import DOMAIN, LOGGER
from .core.voice import VoiceTurn, run_events

_PIPELINE_DOMAIN: Final = "assist_pipeline"


class PipelineRecord:
    """Reads the pipelines' record of their runs for one entry's voice feature."""

    def __init__(self, hass: HomeAssistant, title: str, issue_id: str) -> None:
        """Say what does not read under ``title``, in the repair ``issue_id``."""
        self._hass = hass
        self._title = title
        self._issue_id = issue_id
        # Said once: the record does not read (until the entry reloads).
        self.unreadable = False

    def read_turn(self, satellite: str) -> VoiceTurn | None:
        """Return the satellite's latest turn (None: not there, or it does not read)."""
        events = self.latest_run(satellite)
        parsed = run_events(events) if events is not None else None
        turn = VoiceTurn.from_events(parsed) if parsed else None
        if events is not None and turn is None:
            self._say("its events do not read")
        return turn

    def latest_run(self, satellite: str) -> list[tuple[object, object, object]] | None:
        """Return the events of the satellite's latest run, from the pipeline's record."""
        debug = getattr(self._hass.data.get(_PIPELINE_DOMAIN), "pipeline_debug", None)
        if not isinstance(debug, Mapping):
            self._say("pipeline_debug is not there")
            return None
        latest: tuple[str, list[tuple[object, object, object]]] | None = None
        try:
            for runs in debug.values():
                for run in runs.values():
                    start, events = _events_of(run)
                    if start is None or start.get("satellite_id") != satellite:
                        continue  # not started yet, or another satellite's
                    stamp = str(events[0][1])
                    if latest is None or stamp > latest[0]:
                        latest = (stamp, events)
        except (AttributeError, TypeError) as err:
            self._say(f"{type(err).__name__}: {err}")
            return None
        return latest[1] if latest else None

    def _say(self, why: str) -> None:
        """Say once that the pipeline's record does not read: a log line and a repair."""
        if self.unreadable:
            return
        self.unreadable = True
        LOGGER.warning(
            "%s: Home Assistant %s's Assist pipeline record does not read (%s): voice turns "
            "are not timed stage by stage",
            self._title,
            HA_VERSION,
            why,
        )
        ir.async_create_issue(
            self._hass,
            DOMAIN,
            self._issue_id,
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key="voice_internals_changed",
            translation_placeholders={"version": HA_VERSION, "server": self._title},
        )


def _events_of(
    run: object,
) -> tuple[Mapping[str, Any] | None, list[tuple[object, object, object]]]:
    """Return a recorded run's first event's data and its events; raise when not a run.

    Each event as (type, timestamp, data). A run that starts with an event of another
    shape is a changed format, not a run; one with no event yet has not started.
    """
    events: list[tuple[object, object, object]] = [
        (getattr(e, "type", None), getattr(e, "timestamp", None), getattr(e, "data", None))
        for e in run.events  # type: ignore[attr-defined]
    ]
    if not events:
        return None, events
    kind, _stamp, data = events[0]
    if not isinstance(kind, str) or not isinstance(data, Mapping):
        raise TypeError(f"a run starts with {events[0]!r}")
    return data, events
