"""The dashboard's cards and rows keep to their typed forms (core/dashboard_cards.py).

mypy does not see a key that a dict display adds by unpacking, nor one a type checker is
not run on: every card and row a full dashboard holds is checked here against its form.
"""

from collections.abc import Mapping

import pytest

from custom_components.llm_warmth.core.dashboard_cards import (
    ConditionalRow,
    Dashboard,
    EntitiesCard,
    HistoryGraph,
    LogbookCard,
    NamedRow,
    ReasonRow,
    SectionRow,
    View,
    WarmthCard,
)
from custom_components.llm_warmth.core.dashboard_layout import (
    PipelineView,
    Platform,
    ServerView,
    dashboard,
)

CARDS = {
    "entities": EntitiesCard,
    "history-graph": HistoryGraph,
    "logbook": LogbookCard,
    "custom:llm-warmth-card": WarmthCard,
}
ROWS = {"section": SectionRow, "conditional": ConditionalRow, "attribute": ReasonRow}


def keeps_to(value: Mapping[str, object], form: type) -> None:
    """Fail unless ``value`` has every required key of ``form`` and none it does not name."""
    required: frozenset[str] = form.__required_keys__  # type: ignore[attr-defined]
    optional: frozenset[str] = form.__optional_keys__  # type: ignore[attr-defined]
    assert required <= value.keys(), (form.__name__, value)
    assert value.keys() <= required | optional, (form.__name__, value)


def row_keeps_to(row: object) -> None:
    """Fail unless an entities card's item is an entity id or a row of a known form."""
    if isinstance(row, str):
        return
    assert isinstance(row, dict)
    keeps_to(row, ROWS.get(row.get("type", ""), NamedRow))
    if row.get("type") == "conditional":
        row_keeps_to(row["row"])


def full_dashboard() -> Dashboard:
    """Return a dashboard with every card: two servers with every entity there is."""

    def every(subject: str, key: str, platform: Platform) -> str:
        """Find every entity asked for."""
        return f"{platform}.{subject}_{key}"

    return dashboard(
        [
            ServerView(
                title=title,
                models=["qwen3:8b"],
                assistant="qwen3:8b",
                gpus=["gpu0"],
                pipelines=[PipelineView("voice_p", "Kitchen")],
                entity=every,
                household_lines=[f"sensor.household_{title}"],
                assistants=["conversation.warm"],
            )
            for title in ("NAS", "Box")
        ],
        0.5,
    )


def test_every_card_and_row_keeps_to_its_form() -> None:
    built = full_dashboard()
    keeps_to(built, Dashboard)
    (view,) = built["views"]
    keeps_to(view, View)
    assert {card["type"] for card in view["cards"]} == set(CARDS)
    for card in view["cards"]:
        keeps_to(card, CARDS[card["type"]])
        for item in card.get("entities", []):
            if card["type"] == "history-graph":
                keeps_to(item, NamedRow)  # type: ignore[arg-type]
            else:
                row_keeps_to(item)


@pytest.mark.parametrize(
    ("value", "form"),
    [
        ({"entity": "sensor.a"}, NamedRow),
        ({"entity": "sensor.a", "name": "A", "icon": "mdi:x"}, NamedRow),
        ({"type": "custom:llm-warmth-card"}, WarmthCard),
    ],
)
def test_the_check_catches_a_missing_or_an_unknown_key(
    value: Mapping[str, object], form: type
) -> None:
    with pytest.raises(AssertionError):
        keeps_to(value, form)
