"""The Lovelace cards and rows the ready dashboard is made of, typed as their YAML reads.

``dashboard_layout.py`` composes them; the shell hands the dashboard out as the
``llm_warmth.dashboard`` action's response (config and YAML).
"""

from collections.abc import Sequence
from typing import Literal, NotRequired, TypedDict


class NamedRow(TypedDict):
    """A row (or a graph's line) of one entity, under a name of its own."""

    entity: str
    name: str


class ReasonRow(TypedDict):
    """A row of an entity's ``reason`` attribute: why it is unknown."""

    type: Literal["attribute"]
    attribute: Literal["reason"]
    entity: str
    name: str


class SectionRow(TypedDict):
    """A section's heading in an entities card."""

    type: Literal["section"]
    label: str


class Condition(TypedDict):
    """A conditional row's condition: the entity's state is, or is not, ``unknown``."""

    entity: str
    state: NotRequired[str]
    state_not: NotRequired[str]


class ConditionalRow(TypedDict):
    """A row shown only while its conditions hold."""

    type: Literal["conditional"]
    conditions: list[Condition]
    row: NamedRow | ReasonRow


type Row = NamedRow | SectionRow | ConditionalRow


class EntitiesCard(TypedDict):
    """An entities card: entity ids, or rows."""

    type: Literal["entities"]
    title: str
    show_header_toggle: NotRequired[bool]
    entities: Sequence[str | Row]


class HistoryGraph(TypedDict):
    """A history graph of entities over hours."""

    type: Literal["history-graph"]
    title: str
    hours_to_show: float
    min_y_axis: int
    fit_y_data: bool
    entities: list[NamedRow]


class LogbookCard(TypedDict):
    """A logbook card of entities."""

    type: Literal["logbook"]
    title: str
    hours_to_show: int
    target: dict[str, list[str]]


# A model on the warmth card: its name, and its sensors by the card's options (its
# probe's under ``probe``).
type CardModel = dict[str, str | dict[str, str]]


class WarmthCard(TypedDict):
    """The integration's own card (custom:llm-warmth-card): a server's, or the household's."""

    type: Literal["custom:llm-warmth-card"]
    title: str
    hours_to_show: NotRequired[float]
    models: NotRequired[list[CardModel]]
    gpus: NotRequired[list[dict[str, str]]]
    household: NotRequired[dict[str, list[str]]]


type Card = EntitiesCard | HistoryGraph | LogbookCard | WarmthCard


class View(TypedDict):
    """The dashboard's one view."""

    title: str
    path: str
    cards: list[Card]


class Dashboard(TypedDict):
    """A Lovelace dashboard, as its YAML reads."""

    title: str
    views: list[View]
