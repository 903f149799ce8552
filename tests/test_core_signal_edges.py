"""The household's signals without Home Assistant: what is an edge, and the edges kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.signal_edges import (
    ALARM,
    HISTORY,
    MAX_EDGES,
    MAX_ENTITIES,
    MAX_STATES,
    QUIET,
    Candidate,
    Edge,
    EdgeLog,
    alarm_edges,
    alarm_time,
    edge_of_change,
    edge_state,
    history_edges,
    is_alarm_kind,
    is_signal_kind,
    suggested_signals,
)

T0 = datetime(2026, 11, 2, 7, 0, tzinfo=UTC)
MOTION = "binary_sensor.kitchen_motion"


def edge(minutes: float, entity: str = MOTION, state: str = "on") -> Edge:
    return Edge(T0 + timedelta(minutes=minutes), entity, state)


def test_which_new_states_are_edges() -> None:
    assert edge_state("on") == "on"
    assert edge_state(" Home ") == "home"  # as Home Assistant may write a zone's name
    assert edge_state("not_home") == "not_home"
    # Nothing told: unknown, unavailable, empty, None as text.
    for nothing in ("unknown", "unavailable", "", "  ", "None"):
        assert edge_state(nothing) is None
    # A number changes all the time and leads nothing; nor is a long text an edge.
    for number in ("21.5", "0", "-3", "1e3", "nan", "inf"):
        assert edge_state(number) is None
    assert edge_state("x" * 32) == "x" * 32
    assert edge_state("x" * 33) is None
    assert edge_state(None) is None
    assert edge_state(1) is None


def test_a_next_alarm_is_a_time_with_its_zone() -> None:
    assert alarm_time("2026-11-03T06:30:00+01:00") == datetime(2026, 11, 3, 5, 30, tzinfo=UTC)
    assert alarm_time(" 2026-11-03T06:30:00+00:00 ") == datetime(2026, 11, 3, 6, 30, tzinfo=UTC)
    for not_a_time in ("2026-11-03T06:30:00", "soon", "", "unknown", None, 7):
        assert alarm_time(not_a_time) is None
    # Out of this era (a clock before its first sync, a year no zone shows): none.
    assert alarm_time("1999-12-31T23:00:00+00:00") is None
    assert alarm_time("9001-01-01T00:00:00+00:00") is None
    assert alarm_time("2000-01-01T00:00:00+00:00") is not None


def test_a_change_is_an_edge_only_to_another_state() -> None:
    assert edge_of_change(None, "on") == "on"
    assert edge_of_change("off", "on") == "on"
    assert edge_of_change("on", "on") is None
    assert edge_of_change("on", "unavailable") is None
    # Back from unavailable as it was: no edge (the history keeps the last known).
    states = [(T0, "off"), (T0 + timedelta(minutes=1), "unavailable"), (T0 + timedelta(2), "off")]
    assert history_edges(MOTION, states) == [Edge(T0, MOTION, "off")]
    states = [
        (T0, "off"),
        (T0 + timedelta(minutes=1), "on"),
        (T0 + timedelta(minutes=2), "unknown"),
        (T0 + timedelta(minutes=3), "off"),
        (T0 + timedelta(minutes=4), "off"),
    ]
    assert history_edges(MOTION, states) == [
        Edge(T0, MOTION, "off"),
        Edge(T0 + timedelta(minutes=1), MOTION, "on"),
        Edge(T0 + timedelta(minutes=3), MOTION, "off"),
    ]


def test_an_alarm_rang_when_its_time_came_while_it_was_still_the_next() -> None:
    alarm = "sensor.phone_next_alarm"
    now = T0 + timedelta(days=2)
    states = [
        # Set at 22:00 for 06:30: it rang at 06:30.
        (T0 - timedelta(hours=9), (T0 - timedelta(minutes=30)).isoformat()),
        # Set for 07:30 at 07:00, moved to 08:00 at 07:10: the 07:30 never came.
        (T0, (T0 + timedelta(minutes=30)).isoformat()),
        (T0 + timedelta(minutes=10), (T0 + timedelta(hours=1)).isoformat()),
        # Dismissed: no time.
        (T0 + timedelta(minutes=50), "unavailable"),
        # The last one, still ahead: not yet.
        (T0 + timedelta(hours=2), (now + timedelta(hours=1)).isoformat()),
    ]
    assert alarm_edges(alarm, states, now) == [
        Edge(T0 - timedelta(minutes=30), alarm, ALARM),
    ]
    # The last state's time, come by now: it rang.
    rang = [(T0, (T0 + timedelta(minutes=5)).isoformat())]
    assert alarm_edges(alarm, rang, T0 + timedelta(minutes=5)) == [
        Edge(T0 + timedelta(minutes=5), alarm, ALARM)
    ]
    assert alarm_edges(alarm, rang, T0 + timedelta(minutes=4)) == []


def test_which_kinds_of_entity_are_signals() -> None:
    for domain in (
        "person",
        "device_tracker",
        "binary_sensor",
        "media_player",
        "assist_satellite",
        "input_boolean",
        "calendar",
    ):
        assert is_signal_kind(domain, None)
        assert not is_alarm_kind(domain, "timestamp")
    assert is_signal_kind("sensor", "timestamp")
    assert is_alarm_kind("sensor", "timestamp")
    assert not is_signal_kind("sensor", "temperature")
    assert not is_signal_kind("sensor", None)
    assert not is_alarm_kind("sensor", None)
    assert not is_signal_kind("light", None)
    assert not is_signal_kind("switch", None)


def test_the_suggestions_are_the_satellites_areas_and_every_person() -> None:
    candidates = [
        Candidate("binary_sensor.kitchen_motion", "binary_sensor", "motion", "kitchen"),
        Candidate("binary_sensor.garage_door", "binary_sensor", "door", "garage"),
        Candidate("media_player.kitchen", "media_player", None, "kitchen"),
        Candidate("person.anna", "person", None, None),
        Candidate("sensor.kitchen_temperature", "sensor", "temperature", "kitchen"),
        Candidate("sensor.kitchen_alarm", "sensor", "timestamp", "kitchen"),
        Candidate("light.kitchen", "light", None, "kitchen"),
        Candidate("input_boolean.guests", "input_boolean", None, None),
    ]
    assert suggested_signals(candidates, {"kitchen"}) == [
        "binary_sensor.kitchen_motion",
        "media_player.kitchen",
        "person.anna",
        "sensor.kitchen_alarm",
    ]
    # No satellite uses the model: only the people.
    assert suggested_signals(candidates, set()) == ["person.anna"]


def test_a_repeat_within_quiet_is_not_kept() -> None:
    log = EdgeLog()
    assert log.add(edge(0))
    # A motion sensor that fires all evening is one edge when the room wakes.
    for minute in range(1, 30):
        assert not log.add(edge(minute))
    assert log.add(edge(29 + QUIET.total_seconds() / 60))  # five quiet minutes: kept
    assert log.add(edge(1, state="off"))  # another state is another edge
    assert log.count() == 3
    # An edge read from the past, out of order, within QUIET of one kept: not kept twice.
    assert not log.add(edge(0.5))
    assert not log.add(edge(-4))
    assert log.add(edge(-6))
    assert [e.at for e in log.between(T0 - timedelta(hours=1), T0 + timedelta(hours=1))] == [
        T0 - timedelta(minutes=6),
        T0,
        T0 + timedelta(minutes=1),
        T0 + timedelta(minutes=34),
    ]


def test_a_quiet_repeat_is_measured_from_the_last_one_seen_not_kept() -> None:
    log = EdgeLog()
    assert log.add(edge(0))
    assert not log.add(edge(4))
    # 5 minutes after the first but 1 after the last seen: still the same activity.
    assert not log.add(edge(5))
    assert log.add(edge(10))  # 5 quiet minutes after the last seen


def test_the_edges_kept_are_bounded() -> None:
    log = EdgeLog()
    for state in range(MAX_STATES):
        assert log.add(edge(0, state=f"s{state}"))
    assert not log.add(edge(0, state="one_more"))
    for entity in range(1, MAX_ENTITIES):
        assert log.add(edge(0, entity=f"binary_sensor.e{entity}"))
    assert log.add(edge(0, entity="binary_sensor.too_many")) is False
    assert len(log.entities()) == MAX_ENTITIES
    busy = EdgeLog()
    for index in range(MAX_EDGES + 5):
        busy.add(edge(index * 6))
    assert busy.count() == MAX_EDGES
    assert busy.first() == T0 + timedelta(minutes=5 * 6)  # the oldest went first


def test_the_edges_of_a_window_the_last_before_and_pruning() -> None:
    log = EdgeLog()
    for minutes in (0, 10, 20):
        log.add(edge(minutes))
    log.add(edge(15, state="off"))
    assert log.between(T0 + timedelta(minutes=10), T0 + timedelta(minutes=20)) == [
        edge(10),
        edge(15, state="off"),
    ]
    assert log.last_before(MOTION, T0 + timedelta(minutes=16)) == T0 + timedelta(minutes=15)
    assert log.last_before(MOTION, T0 + timedelta(minutes=10)) == T0 + timedelta(minutes=10)
    assert log.last_before(MOTION, T0 - timedelta(minutes=1)) is None
    assert log.last_before("binary_sensor.none", T0) is None
    assert log.first() == T0
    assert EdgeLog().first() is None
    log.prune(T0 + HISTORY + timedelta(minutes=12))
    assert log.first() == T0 + timedelta(minutes=15)
    assert log.count() == 2


def test_forgetting_an_entity() -> None:
    log = EdgeLog()
    log.add(edge(0))
    log.add(edge(0, entity="person.anna", state="home"))
    assert not log.keep_only({MOTION, "person.anna"})
    assert log.keep_only({"person.anna"})
    assert log.entities() == {"person.anna"}
    # Its quiet mark went too: the entity chosen again starts afresh.
    assert log.keep_only({MOTION, "person.anna"}) is False
    assert log.add(edge(1))


def test_the_edges_round_trip_and_what_does_not_read_is_refused() -> None:
    log = EdgeLog()
    log.add(edge(0))
    log.add(edge(90, state="off"))
    log.add(Edge(T0, "sensor.phone_next_alarm", ALARM))
    stored = log.as_dict()
    assert stored == {
        MOTION: {"on": [int(T0.timestamp())], "off": [int(T0.timestamp()) + 5400]},
        "sensor.phone_next_alarm": {"alarm": [int(T0.timestamp())]},
    }
    assert EdgeLog.from_dict(stored) == log
    assert EdgeLog.from_dict(None) == EdgeLog()
    for damaged in (
        [],
        {MOTION: []},
        {3: {"on": []}},
        {MOTION: {"on": "1"}},
        {MOTION: {"on": [1.5]}},
        {MOTION: {"on": [True]}},
        {MOTION: {"21.5": [int(T0.timestamp())]}},
        {MOTION: {"unknown": [int(T0.timestamp())]}},
    ):
        with pytest.raises(ValueError, match="edge"):
            EdgeLog.from_dict(damaged)
    # Times out of this era are dropped, the others kept in order.
    odd = EdgeLog.from_dict({MOTION: {"on": [int(T0.timestamp()), 5, 10**13, 946_684_800]}})
    assert odd.edges == {MOTION: {"on": [946_684_800, int(T0.timestamp())]}}


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
        ),
        max_leaves=10,
    )
)
def test_any_stored_edges_read_or_are_refused_in_words(values: object) -> None:
    try:
        log = EdgeLog.from_dict(values)
    except ValueError:
        return
    assert EdgeLog.from_dict(log.as_dict()) == log


def test_edges_on_the_households_clock_are_instants() -> None:
    amsterdam = ZoneInfo("Europe/Amsterdam")
    log = EdgeLog()
    local = datetime(2026, 11, 2, 8, 0, tzinfo=amsterdam)
    log.add(Edge(local, MOTION, "on"))
    (kept,) = log.between(T0 - timedelta(hours=1), T0 + timedelta(hours=1))
    assert kept.at == local  # the same instant, told in UTC
    assert kept.key == (MOTION, "on")


def test_the_edges_limits_as_figures_and_at_their_ends() -> None:
    assert (
        3000,
        8,
        64,
        timedelta(minutes=5),
        timedelta(weeks=8),
    ) == (MAX_EDGES, MAX_STATES, MAX_ENTITIES, QUIET, HISTORY)
    log = EdgeLog()
    for index in range(MAX_EDGES):
        assert log.add(edge(index * 6)) is True
    assert log.count() == MAX_EDGES  # exactly the most: all kept
    assert log.first() == T0
    # Not kept is False, not just nothing.
    assert log.add(edge(0)) is False
    assert log.add(edge(0, state="s1")) is True
    full = EdgeLog()
    for state in range(MAX_STATES):
        full.add(edge(0, state=f"s{state}"))
    assert full.add(edge(0, state="more")) is False
    # The same second again: not kept; five minutes to the second later: kept.
    again = EdgeLog()
    assert again.add(edge(0)) is True
    assert again.add(edge(0)) is False
    assert again.add(edge(5)) is True
    # Out of order, five minutes to the second away from one kept: kept.
    late = EdgeLog()
    late.add(edge(10))
    late._seen.clear()
    assert late.add(edge(5)) is True


def test_stored_times_at_the_ends_of_the_era_and_a_prune_of_an_emptied_state() -> None:
    latest = 223_945_920_000
    read = EdgeLog.from_dict({MOTION: {"on": [latest, 946_684_800, latest + 1]}})
    assert read.edges == {MOTION: {"on": [946_684_800, latest]}}
    assert alarm_time("9000-12-31T23:00:00+00:00") is not None
    log = EdgeLog()
    log.add(edge(0))
    log.prune(T0 + HISTORY + timedelta(days=1))
    log.prune(T0 + HISTORY + timedelta(days=2))  # its state's times already gone
    assert log.count() == 0


def test_an_alarm_at_the_moment_its_state_was_set_and_one_its_next_state_passed() -> None:
    alarm = "sensor.phone_next_alarm"
    # Set at 06:30 for 06:30: it came then.
    assert alarm_edges(alarm, [(T0, T0.isoformat())], T0 + timedelta(hours=1)) == [
        Edge(T0, alarm, ALARM)
    ]
    # Three states: the first names a time after the second's change, before the third's.
    states = [
        (T0, (T0 + timedelta(hours=2)).isoformat()),
        (T0 + timedelta(hours=1), "unknown"),
        (T0 + timedelta(hours=3), "unknown"),
    ]
    assert alarm_edges(alarm, states, T0 + timedelta(hours=4)) == []


def test_forgetting_keeps_the_quiet_of_the_entities_kept() -> None:
    log = EdgeLog()
    log.add(edge(0))
    log.add(edge(0, entity="person.anna", state="home"))
    assert log.keep_only({MOTION, "person.anna"}) is False
    assert log.add(edge(1)) is False  # still within the motion's quiet
    assert log.keep_only({MOTION}) is True
    assert log.add(edge(1, entity="person.anna", state="home")) is True  # forgotten: anew


def test_a_repeat_in_the_very_second_of_the_last_one_seen_is_not_kept() -> None:
    """Kept at 0, seen at 4 and 8 minutes (each within 5 of the one before): the same
    second again is the same activity, and so is a repeat after the log was trimmed."""
    log = EdgeLog()
    assert log.add(edge(0))
    assert log.add(edge(4)) is False
    assert log.add(edge(8)) is False
    assert log.add(edge(8)) is False
    assert log.keep_only({MOTION}) is False
    log.add(edge(0, entity="person.anna", state="home"))
    assert log.keep_only({MOTION}) is True
    assert log.add(edge(12)) is False  # the motion's quiet was kept with it


def test_an_alarm_dismissed_before_its_time_rang_not_even_as_the_last_but_one_state() -> None:
    alarm = "sensor.phone_next_alarm"
    states = [(T0, (T0 + timedelta(hours=2)).isoformat()), (T0 + timedelta(hours=1), "unknown")]
    assert alarm_edges(alarm, states, T0 + timedelta(hours=4)) == []
