"""What the ready dashboard is built from: each server as a ``ServerView``.

The shell reads them from the entries and the entity registry (``dashboard.py``);
``dashboard_layout.py`` composes the dashboard from them.
"""

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class Platform(StrEnum):
    """The platforms of the entities the dashboard shows (as Home Assistant names them)."""

    SENSOR = "sensor"
    BINARY_SENSOR = "binary_sensor"
    SWITCH = "switch"


# The entity id of a subject's entity (a model, ``gpu_<uuid>``, a pipeline's subject, ""
# for the server's own) of a key on a platform; None when there is none to show.
type EntityLookup = Callable[[str, str, Platform], str | None]


@dataclass(frozen=True, slots=True)
class PipelineView:
    """An Assist pipeline whose agent uses a model of the server: its entities' subject."""

    subject: str
    name: str


@dataclass(frozen=True, kw_only=True)
class ServerView:
    """One server as the dashboard shows it, read from its entry and the entity registry.

    ``assistant``: its assistant model (None: no agent found, none chosen). ``entity``:
    its enabled entities (a sensor the user disabled would only show "not available").
    ``household_lines``: the household device's sensors of this server; ``assistants``:
    its warm assistants' conversation entities.
    """

    title: str
    models: Collection[str]
    assistant: str | None
    gpus: Collection[str]
    pipelines: Collection[PipelineView]
    entity: EntityLookup
    household_lines: Sequence[str] = ()
    assistants: Sequence[str] = ()
    # Each GPU's short name by its UUID ("GPU 0"): its device's name with the make is too
    # long for a row beside a figure in a 1280 px column.
    gpu_names: Mapping[str, str] = field(default_factory=dict)

    def find(self, subject: str, key: str, platform: Platform = Platform.SENSOR) -> str | None:
        """Return the entity id of ``subject``'s ``key`` on ``platform``, if it is shown."""
        return self.entity(subject, key, platform)
