"""Which signals lead a model's uses, learnt without Home Assistant (the clock passed in)."""

from __future__ import annotations

from copy import deepcopy
from datetime import UTC, datetime, timedelta
import math
from zoneinfo import ZoneInfo

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.signal_edges import Edge
from custom_components.llm_warmth.core.signal_learning import (
    BASE_WEIGHT,
    DECAY,
    HOLD_MARGIN,
    MAX_OUTCOMES,
    MIN_FOLLOWS,
    MIN_LIFT,
    MIN_OUTCOMES,
    NO_USE,
    WINDOW,
    EdgeStats,
    SignalBook,
    Z,
    _cautious,
    lead_of,
)

DAY0 = datetime(2026, 11, 2, tzinfo=UTC)
MOTION = ("binary_sensor.kitchen_motion", "on")
KEEP = timedelta(minutes=5)
LOAD = 8.0


def day(index: int) -> tuple[datetime, datetime]:
    return DAY0 + timedelta(days=index), DAY0 + timedelta(days=index + 1)


def at(index: int, hour: int, minute: float = 0) -> datetime:
    return DAY0 + timedelta(days=index, hours=hour, minutes=minute)


def fold(book: SignalBook, index: int, edges: list[Edge], uses: list[datetime]) -> None:
    book.fold_day(edges, sorted(uses), day=day(index), keep=KEEP, zone_of=DAY0)


def stats(outcomes: list[int], *, lift: float = 5.0, now: int | None = None) -> EdgeStats:
    """Outcomes of one day (leads in seconds, NO_USE for none), with a lift."""
    moment = int(DAY0.timestamp())
    return EdgeStats(
        [(moment + i, lead) for i, lead in enumerate(outcomes)], observed=lift, expected=1.0
    )


def test_an_edge_the_model_was_cold_at_is_an_outcome_with_its_lead() -> None:
    book = SignalBook()
    uses = [at(0, 7, 10), at(0, 7, 12), at(0, 20)]
    edges = [
        Edge(at(0, 7), *MOTION),  # a use 10 min later: a lead of 600 s
        Edge(at(0, 7, 11), *MOTION),  # a use a minute before: warm there, no outcome
        Edge(at(0, 12), *MOTION),  # no use within WINDOW: an outcome with none
        Edge(at(0, 19, 40), *MOTION),  # 20 minutes ahead: within the window
    ]
    fold(book, 0, edges, uses)
    assert book.stats[MOTION].outcomes == [
        (int(at(0, 7).timestamp()), 600),
        (int(at(0, 12).timestamp()), NO_USE),
        (int(at(0, 19, 40).timestamp()), 1200),
    ]
    # Three of the four were followed within WINDOW, decayed once at the day's end.
    assert book.stats[MOTION].observed == pytest.approx(3 * DECAY)
    assert book.folded == int(day(0)[1].timestamp())


def test_the_keep_decides_which_edges_found_the_model_warm() -> None:
    book = SignalBook()
    uses = [at(0, 7)]
    edges = [Edge(at(0, 7, 5), *MOTION), Edge(at(0, 7, 6), "person.anna", "home")]
    book.fold_day(edges, uses, day=day(0), keep=timedelta(minutes=5), zone_of=DAY0)
    # 07:05 is exactly the keep's end: still warm; 07:06 is past it: cold, an outcome.
    assert book.stats[MOTION].outcomes == []
    assert book.stats[("person.anna", "home")].outcomes == [(int(at(0, 7, 6).timestamp()), NO_USE)]


def test_a_use_beyond_the_window_does_not_follow() -> None:
    book = SignalBook()
    window = WINDOW.total_seconds() / 60
    fold(
        book,
        0,
        [Edge(at(0, 7), *MOTION), Edge(at(0, 9), *MOTION)],
        [at(0, 7, window), at(0, 9, window + 1)],
    )
    assert [lead for _, lead in book.stats[MOTION].outcomes] == [WINDOW.total_seconds(), NO_USE]


def test_the_base_rate_is_the_share_of_the_hour_a_use_follows() -> None:
    book = SignalBook()
    # A use at 07:30: every moment of 07:00-07:30 is followed within 30 min.
    fold(book, 0, [], [at(0, 7, 30)])
    assert book.base[7] == pytest.approx(BASE_WEIGHT * 0.5)
    assert book.base[6] == 0.0
    assert book.base[8] == 0.0
    # A use at 08:10: 07:40-08:00 of the 7 o'clock hour (a third) and 08:00-08:10.
    other = SignalBook()
    fold(other, 0, [], [at(0, 8, 10)])
    assert other.base[7] == pytest.approx(BASE_WEIGHT / 3)
    assert other.base[8] == pytest.approx(BASE_WEIGHT / 6)
    # Uses whose windows overlap are not counted twice: 07:00-07:40 covered.
    both = SignalBook()
    fold(both, 0, [], [at(0, 7, 20), at(0, 7, 40)])
    assert both.base[7] == pytest.approx(BASE_WEIGHT * 40 / 60)


def test_the_lift_is_how_much_more_often_a_use_follows_than_the_hour_says() -> None:
    book = SignalBook()
    book.base = [0.1] * 24
    fold(book, 0, [Edge(at(0, 7), *MOTION), Edge(at(0, 9), *MOTION)], [at(0, 7, 10)])
    stats_of = book.stats[MOTION]
    # One of two followed, against 0.1 + 0.1 expected: a lift of 5.
    assert stats_of.lift == pytest.approx(5.0)
    assert EdgeStats().lift == 0.0


def test_a_signal_that_leads_acts_with_the_hold_that_pays_most() -> None:
    # 14 of 20 cold edges were followed 5 minutes on; 6 by nothing.
    lead = lead_of(MOTION, stats([300] * 14 + [NO_USE] * 6), load=LOAD, now=int(DAY0.timestamp()))
    assert lead.acts
    assert lead.hold == timedelta(seconds=300) + HOLD_MARGIN
    assert lead.share == pytest.approx(0.7)
    assert (lead.led, lead.wrong) == (14, 6)
    assert lead.lift == 5.0
    # The cost of each use it finds warm: 5 min each, and the hold for each wrong one.
    assert lead.cost_per_use == pytest.approx((14 * 300 + 6 * 330) / 14)


def test_a_hold_past_a_late_tail_is_chosen_only_when_it_pays() -> None:
    early, late = [120] * 12, [1500] * 2
    lead = lead_of(MOTION, stats(early + late + [NO_USE] * 6), load=LOAD, now=int(DAY0.timestamp()))
    # Two more uses found warm, worth two hours each, for 23 more minutes of 6 edges: paid.
    assert lead.hold == timedelta(seconds=1530)
    capped = lead_of(
        MOTION, stats(early + late + [NO_USE] * 6), load=LOAD, now=int(DAY0.timestamp()), cap=600
    )
    assert capped.hold == timedelta(seconds=150)
    assert capped.share == pytest.approx(12 / 20)


def test_a_use_that_comes_during_the_load_is_no_use_found_warm() -> None:
    # Every use came 5 s after the edge, inside an 8 s load: nothing to gain.
    lead = lead_of(MOTION, stats([5] * 20), load=LOAD, now=int(DAY0.timestamp()))
    assert not lead.acts
    assert lead.share == 0.0
    assert lead.led == 20  # it led them all the same: the load made them cold
    assert math.isinf(lead.cost_per_use)


def test_a_handful_of_coincidences_does_not_act() -> None:
    now = int(DAY0.timestamp())
    enough = [300] * MIN_FOLLOWS + [NO_USE] * (MIN_OUTCOMES - MIN_FOLLOWS)
    assert lead_of(MOTION, stats(enough), load=LOAD, now=now).acts
    assert not lead_of(MOTION, stats(enough[1:]), load=LOAD, now=now).acts  # one outcome short
    few_follows = [300] * (MIN_FOLLOWS - 1) + [NO_USE] * (MIN_OUTCOMES - MIN_FOLLOWS + 1)
    assert not lead_of(MOTION, stats(few_follows), load=LOAD, now=now).acts
    # Judged by its lift, not how often it fires.
    assert lead_of(MOTION, stats(enough, lift=MIN_LIFT), load=LOAD, now=now).acts
    assert not lead_of(MOTION, stats(enough, lift=MIN_LIFT - 0.01), load=LOAD, now=now).acts


def test_a_rare_follow_does_not_pay_its_hold() -> None:
    # 12 follows in 200: under the cautious share its holds cost more than it saves.
    lead = lead_of(
        MOTION, stats([1200] * 12 + [NO_USE] * 188), load=LOAD, now=int(DAY0.timestamp())
    )
    assert not lead.acts
    # No outcome at all: nothing acts, the window is the hold shown.
    empty = lead_of(MOTION, EdgeStats(), load=LOAD, now=int(DAY0.timestamp()))
    assert (empty.acts, empty.hold, empty.share, empty.led, empty.wrong) == (
        False,
        WINDOW,
        0.0,
        0,
        0,
    )


def test_a_signal_that_stops_leading_loses_its_weight() -> None:
    book = SignalBook()
    for index in range(14):
        uses = [at(index, 7, 10)]
        fold(book, index, [Edge(at(index, 7), *MOTION)], uses)
        book.base = [0.05] * 24
    assert book.acting(timedelta(seconds=LOAD))
    # Then the house changes: the motion comes and nobody asks, for three weeks.
    for index in range(14, 35):
        fold(book, index, [Edge(at(index, 7), *MOTION)], [])
    assert not book.acting(timedelta(seconds=LOAD))
    leads = book.leads(timedelta(seconds=LOAD))[MOTION]
    assert leads.wrong == 21


def test_older_outcomes_weigh_less() -> None:
    moment = int(DAY0.timestamp())
    old_hits = [(moment - 30 * 86400 + i, 300) for i in range(10)]
    new_misses = [(moment + i, NO_USE) for i in range(10)]
    lead = lead_of(MOTION, EdgeStats(old_hits + new_misses, 5.0, 1.0), load=LOAD, now=moment)
    # Ten hits a month old weigh DECAY ** 30 each against ten misses today.
    expected = 10 * DECAY**30 / (10 * DECAY**30 + 10)
    assert lead.share == pytest.approx(expected, rel=1e-3)
    assert (lead.led, lead.wrong) == (10, 10)


def test_the_outcomes_kept_are_bounded_and_the_cache_follows_the_load() -> None:
    book = SignalBook()
    for index in range(MAX_OUTCOMES + 10):
        book.fold_day(
            [Edge(at(0, 0, index * 6), *MOTION)],
            [],
            day=day(0),
            keep=KEEP,
            zone_of=DAY0,
        )
    assert len(book.stats[MOTION].outcomes) == MAX_OUTCOMES
    quick = book.leads(timedelta(seconds=1))
    assert book.leads(timedelta(seconds=1)) is quick  # worked out once
    assert book.leads(timedelta(seconds=2)) is not quick  # another load: again
    assert book.leads(timedelta(seconds=2), timedelta(minutes=5)) is not book.leads(
        timedelta(seconds=2)
    )


def test_forgetting_signals() -> None:
    book = SignalBook()
    fold(book, 0, [Edge(at(0, 7), *MOTION), Edge(at(0, 8), "person.anna", "home")], [])
    assert not book.forget(frozenset({MOTION[0], "person.anna"}))
    assert book.forget(frozenset({"person.anna"}))
    assert set(book.stats) == {("person.anna", "home")}


def test_the_book_round_trips_and_what_does_not_read_is_refused() -> None:
    book = SignalBook()
    fold(book, 0, [Edge(at(0, 7), *MOTION)], [at(0, 7, 10)])
    stored = book.as_dict()
    assert stored["folded"] == int(day(0)[1].timestamp())
    read = SignalBook.from_dict(stored)
    assert read.as_dict() == stored
    assert read.stats[MOTION].outcomes == book.stats[MOTION].outcomes
    assert SignalBook.from_dict(None) == SignalBook()
    good = stored["edges"]
    for damaged in (
        [],
        {**stored, "edges": []},
        {**stored, "base": [0.0] * 23},
        {**stored, "base": [2.0] * 24},
        {**stored, "base": [-1.0] * 24},
        {**stored, "base": [math.nan] * 24},
        {**stored, "folded": -1},
        {**stored, "folded": True},
        {**stored, "edges": {3: {}}},
        {**stored, "edges": {MOTION[0]: {"21.5": {}}}},
        {**stored, "edges": {MOTION[0]: {"on": []}}},
        {**stored, "edges": {MOTION[0]: {"on": {"outcomes": {}}}}},
        {**stored, "edges": {MOTION[0]: {"on": {"outcomes": [[1, 99999]]}}}},
        {**stored, "edges": {MOTION[0]: {"on": {"outcomes": [[0, 5]]}}}},
        {**stored, "edges": {MOTION[0]: {"on": {"outcomes": [[1, 5.5]]}}}},
        {**stored, "edges": {MOTION[0]: {"on": {"outcomes": [], "observed": -1}}}},
        {**stored, "edges": {MOTION[0]: {"on": {"outcomes": [], "expected": "x"}}}},
    ):
        with pytest.raises(ValueError, match=r"signal|edge|base|number|amount"):
            SignalBook.from_dict(damaged)
    assert good


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["edges", "base", "folded", "outcomes", "observed", "on"])
                | st.text(max_size=4),
                inner,
                max_size=4,
            )
        ),
        max_leaves=14,
    )
)
def test_any_stored_book_reads_or_is_refused_in_words(values: object) -> None:
    try:
        book = SignalBook.from_dict(values)
    except ValueError:
        return
    assert SignalBook.from_dict(book.as_dict()) == book


def test_the_learning_thresholds_as_figures() -> None:
    """The constants, as figures: a change of one of them is a change of what acts."""
    assert (MAX_OUTCOMES, MIN_OUTCOMES, MIN_FOLLOWS, MIN_LIFT, DECAY) == (200, 10, 6, 2.0, 0.9)
    assert (
        1.645,
        0.1,
        timedelta(minutes=30),
        timedelta(seconds=30),
    ) == (Z, BASE_WEIGHT, WINDOW, HOLD_MARGIN)
    now = int(DAY0.timestamp())
    # Ten outcomes, six after the load: acts; one fewer of either: not.
    assert lead_of(MOTION, stats([300] * 6 + [NO_USE] * 4), load=LOAD, now=now).acts
    assert not lead_of(MOTION, stats([300] * 6 + [NO_USE] * 3), load=LOAD, now=now).acts
    assert not lead_of(MOTION, stats([300] * 5 + [NO_USE] * 5), load=LOAD, now=now).acts
    # A use exactly at the end of the load is no use found warm (it waited).
    edge_of_load = stats([300] * 5 + [8] + [NO_USE] * 4)
    assert not lead_of(MOTION, edge_of_load, load=LOAD, now=now).acts


def test_the_cautious_share_is_wilsons_lower_end() -> None:
    # At 1.645: half of 100 is at least 0.4188; all of 10 at least 0.7870; nothing at 0.
    assert _cautious(0.5, 100) == pytest.approx(0.41884, abs=1e-4)
    assert _cautious(1.0, 10) == pytest.approx(0.78703, abs=1e-4)
    assert _cautious(0.2, 40) == pytest.approx(0.11654, abs=1e-4)
    assert _cautious(0.0, 10) == 0.0
    assert _cautious(0.5, 0) == 0.0
    assert _cautious(0.5, -1) == 0.0


def test_a_lead_of_no_seconds_led_and_the_weights_by_age() -> None:
    now = int(DAY0.timestamp())
    # A use in the edge's very second led it (the load made it cold), at no cost held.
    same = EdgeStats([(now, 0)] * 4 + [(now, 300)] * 10, 5.0, 1.0)
    lead = lead_of(MOTION, same, load=LOAD, now=now)
    assert (lead.led, lead.wrong) == (14, 0)
    assert lead.share == pytest.approx(10 / 14)
    assert lead.cost_per_use == pytest.approx(10 * 300 / 10)
    # An outcome a day old weighs DECAY, two days DECAY ** 2.
    aged = EdgeStats([(now - 86400, 300), (now - 2 * 86400, NO_USE)] * 10, 5.0, 1.0)
    share = lead_of(MOTION, aged, load=LOAD, now=now).share
    assert share == pytest.approx(DECAY / (DECAY + DECAY**2))
    # Old outcomes whose weight is under one all told still have a hold worked out.
    old = EdgeStats([(now - 40 * 86400, 600)] * 10, 5.0, 1.0)
    assert lead_of(MOTION, old, load=LOAD, now=now).hold == timedelta(seconds=630)


def test_the_share_leaves_out_the_uses_during_the_load_and_a_cap_may_equal_a_hold() -> None:
    now = int(DAY0.timestamp())
    mixed = stats([5] * 10 + [300] * 10)
    lead = lead_of(MOTION, mixed, load=LOAD, now=now)
    assert lead.share == pytest.approx(0.5)
    assert lead_of(MOTION, mixed, load=LOAD, now=now, cap=330).hold == timedelta(seconds=330)
    assert lead_of(MOTION, mixed, load=LOAD, now=now, cap=329).hold == WINDOW
    # A lead that ends exactly at the hold led it.
    at_hold = stats([300] * 10 + [330] * 2)
    capped = lead_of(MOTION, at_hold, load=LOAD, now=now, cap=330)
    assert (capped.hold, capped.led, capped.wrong) == (timedelta(seconds=330), 12, 0)


def test_what_is_stored_reads_at_the_edges() -> None:
    moment = int(DAY0.timestamp())
    stats_of = EdgeStats([(1, 0), (moment, int(WINDOW.total_seconds()))], 1.234567, 2.345678)
    stored = stats_of.as_dict()
    assert stored == {
        "outcomes": [[1, 0], [moment, 1800]],
        "observed": 1.2346,
        "expected": 2.3457,
    }
    assert EdgeStats.from_dict(stored).outcomes == [(1, 0), (moment, 1800)]
    bare = EdgeStats.from_dict({"outcomes": []})
    assert (bare.observed, bare.expected) == (0.0, 0.0)
    book = SignalBook(base=[1.0] + [0.123456] * 23)
    assert book.as_dict()["base"] == [1.0] + [0.1235] * 23
    assert SignalBook().folded == 0
    read = SignalBook.from_dict(
        {"edges": {MOTION[0]: {"alarm": {"outcomes": []}}}, "base": [1.0] * 24}
    )
    assert (read.folded, read.base) == (0, [1.0] * 24)
    assert list(read.stats) == [(MOTION[0], "alarm")]
    for state in ("On", " on", ""):
        with pytest.raises(ValueError, match="edge"):
            SignalBook.from_dict(
                {"edges": {MOTION[0]: {state: {"outcomes": []}}}, "base": [0.0] * 24}
            )


# ---------------------------------------------------------------- each rule at its figure


def test_200_outcomes_are_kept_and_a_fully_covered_hour_moves_the_base_a_tenth() -> None:
    book = SignalBook()
    edges = [Edge(at(0, 0, index * 6), *MOTION) for index in range(201)]
    book.fold_day(edges, [], day=day(0), keep=KEEP, zone_of=DAY0)
    assert len(book.stats[MOTION].outcomes) == 200
    covered = SignalBook()
    uses = [at(1, 9, minute) for minute in range(0, 61, 10)]
    covered.fold_day([], uses, day=day(1), keep=KEEP, zone_of=DAY0)
    assert covered.base[9] == pytest.approx(0.1)  # a tenth of the way from 0 to all of it
    assert covered.base[10] == pytest.approx(0.0)


def test_the_leads_worked_out_are_no_part_of_the_book() -> None:
    book = SignalBook()
    fold(book, 0, [Edge(at(0, 7), *MOTION)], [at(0, 7, 5)])
    copy = deepcopy(book)
    book.leads(timedelta(seconds=8))
    assert book == copy


def test_an_outcome_a_day_old_weighs_the_decay_exactly() -> None:
    now = int(DAY0.timestamp())
    aged = EdgeStats([(now - 86400, 300), (now, NO_USE)] * 10, 5.0, 1.0)
    share = lead_of(MOTION, aged, load=LOAD, now=now).share
    assert share == pytest.approx(0.9 / 1.9, rel=1e-12)


def test_a_longer_hold_is_chosen_only_when_it_nets_more() -> None:
    """Ten uses a minute after the edge, one 28 minutes after, ten edges no use followed:
    holding 28 minutes for the one late use costs more than it saves."""
    now = int(DAY0.timestamp())
    lead = lead_of(MOTION, stats([60] * 10 + [1700] + [NO_USE] * 10), load=LOAD, now=now)
    assert lead.hold == timedelta(seconds=90)


def test_a_use_exactly_at_the_hold_counts_towards_acting() -> None:
    """Five uses at 300 s and one at 330 s, held 330 s: six after the load, so it acts."""
    now = int(DAY0.timestamp())
    lead = lead_of(MOTION, stats([300] * 5 + [330] + [NO_USE] * 4), load=LOAD, now=now, cap=330)
    assert lead.hold == timedelta(seconds=330)
    assert lead.acts


def test_the_cautious_share_of_a_single_outcome() -> None:
    """A weight under one is still evidence, if little (Wilson at 1.645: 0.2698)."""
    assert _cautious(1.0, 1.0) == pytest.approx(0.26984, abs=1e-4)
    assert _cautious(1.0, 0.5) > 0.0


def test_the_hour_a_change_to_summer_time_skips_learns_no_share() -> None:
    """Berlin, 29 March 2026: 02:00 to 03:00 does not exist; with no use all day, no hour
    of the base rate moves, that one included."""
    berlin = ZoneInfo("Europe/Berlin")
    begin = datetime(2026, 3, 29, tzinfo=berlin)
    book = SignalBook()
    book.fold_day([], [], day=(begin, begin + timedelta(days=1)), keep=KEEP, zone_of=begin)
    assert book.base == [0.0] * 24
