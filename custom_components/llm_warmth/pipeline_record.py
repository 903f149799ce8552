"""Home Assistant's record of the Assist pipelines' runs, read for each voice turn.

``hass.data["assist_pipeline"].pipeline_debug`` (internal) keeps every event of a
pipeline's last runs with Home Assistant's own timestamp. It is read by duck typing, after
the turn, each shape checked; when it does not read, this says so once (a log line and a
repair) and the turns go on untimed.
"""

from __future__ import annotations

from typing import Final

from homeassistant.const import __version__ as HA_VERSION
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir

from .const import DOMAIN, LOGGER
from .core.pipeline_events import RunRead, latest_run, turn_of
from .core.voice import VoiceTurn

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
        read = turn_of(self.latest_run(satellite))
        if read.fault is not None:
            self._say(read.fault)
        return read.turn

    def latest_run(self, satellite: str) -> RunRead:
        """Return the events of the satellite's latest run, from the pipeline's record."""
        debug = getattr(self._hass.data.get(_PIPELINE_DOMAIN), "pipeline_debug", None)
        read = latest_run(debug, satellite)
        if read.fault is not None:
            self._say(read.fault)
        return read

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
