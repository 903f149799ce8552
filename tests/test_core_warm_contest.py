"""The contest of the ways of warming, replayed day by day without Home Assistant."""

from __future__ import annotations

from copy import deepcopy
from datetime import timedelta
import math

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.day_replay import Stretch
from custom_components.llm_warmth.core.warm_contest import (
    CLOCK_MARGIN,
    DAY_WEIGHT,
    MIN_CONTEST_DAYS,
    MIN_CONTEST_USES,
    SIGNAL_COLDS,
    SIGNAL_GAIN,
    SIGNAL_LIMITS,
    SIGNAL_SLACK,
    WAYS,
    Contest,
    Tally,
    WarmMode,
    Way,
    way_of,
)

DAY = (0.0, 86400.0)
LOAD, LEAD, KEEP = 20.0, 80.0, 300.0


def test_the_ways() -> None:
    assert Way(WarmMode.CLOCK).key == "clock"
    assert Way(WarmMode.SIGNALS, timedelta(minutes=10)).key == "signals@10"
    assert Way(WarmMode.IDLE_AND_SIGNALS).key == "idle_and_signals@any"
    assert {way_of(way.key) for way in WAYS} == set(WAYS)
    assert way_of("nope") is None
    assert len(WAYS) == 2 + 3 * len(SIGNAL_LIMITS)
    assert [m for m in WarmMode if m.clock] == [WarmMode.CLOCK, WarmMode.CLOCK_AND_SIGNALS]
    assert [m for m in WarmMode if m.idle_times] == [WarmMode.IDLE, WarmMode.IDLE_AND_SIGNALS]
    assert [m for m in WarmMode if m.signals] == [
        WarmMode.CLOCK_AND_SIGNALS,
        WarmMode.IDLE_AND_SIGNALS,
        WarmMode.SIGNALS,
    ]


def play(contest: Contest, uses: list[float], **kwargs: object) -> None:
    contest.play(
        span=DAY,
        uses=uses,
        stretches=kwargs.get("stretches", ()),  # type: ignore[arg-type]
        keeps=kwargs.get("keeps", dict.fromkeys(WarmMode, KEEP)),  # type: ignore[arg-type]
        signals=kwargs.get("signals", {}),  # type: ignore[arg-type]
        load=LOAD,
        lead=LEAD,
    )


def test_the_scores_decay_a_day_at_a_time_and_a_day_without_a_use_is_not_scored() -> None:
    contest = Contest()
    play(contest, [1000.0])
    assert contest.scores[Way(WarmMode.IDLE)] == (1.0, pytest.approx(320 / 3600))
    play(contest, [1000.0])
    colds, _hours = contest.scores[Way(WarmMode.IDLE)]
    assert colds == pytest.approx(1 + DAY_WEIGHT)
    play(contest, [])  # a holiday: nothing scored, nothing faded
    assert contest.scores[Way(WarmMode.IDLE)][0] == pytest.approx(1 + DAY_WEIGHT)
    assert (contest.days, contest.uses) == (2, 2)
    # Its cost: a cold start is worth two hours held.
    assert contest.cost(Way(WarmMode.IDLE)) == pytest.approx(
        (1 + DAY_WEIGHT) * 2 + contest.scores[Way(WarmMode.IDLE)][1]
    )


def test_the_contest_decides_once_enough_days_and_uses_were_replayed() -> None:
    contest = Contest()
    for _ in range(MIN_CONTEST_DAYS - 1):
        play(contest, [1000.0, 2000.0])
    assert not contest.decided
    assert contest.clock_wins() is None
    play(contest, [1000.0, 2000.0])
    assert contest.decided
    assert not Tally(days=MIN_CONTEST_DAYS, uses=MIN_CONTEST_USES - 1).decided
    assert not Tally(days=MIN_CONTEST_DAYS - 1, uses=MIN_CONTEST_USES).decided
    assert Tally(days=MIN_CONTEST_DAYS, uses=MIN_CONTEST_USES).decided


def tally(**by_key: tuple[float, float]) -> Tally:
    values = dict.fromkeys(WAYS, (100.0, 100.0))
    values |= {way_of(k.replace("__", "@")): v for k, v in by_key.items()}  # type: ignore[misc]
    return Tally(values, days=MIN_CONTEST_DAYS, uses=MIN_CONTEST_USES)


def scores(**by_key: tuple[float, float]) -> Contest:
    """A contest whose every day and whose days since its base say the same."""
    return Contest(tally(**by_key), tally(**by_key), "clock")


def test_the_clock_wins_the_time_only_class_only_where_it_cost_a_margin_less() -> None:
    # Idle 10 cold starts and 50 h: a cost of 70; the clock wins at 95 % of it, 66.5.
    most = 70 * (1 - CLOCK_MARGIN)
    assert scores(clock=(10.0, most - 20), idle=(10.0, 50.0)).clock_wins() is True
    assert scores(clock=(10.0, most - 20 + 0.01), idle=(10.0, 50.0)).clock_wins() is False
    assert scores(clock=(10.0, 50.0), idle=(10.0, 50.0)).clock_wins() is False  # a tie: idle
    assert scores(clock=(5.0, most - 10), idle=(10.0, 50.0)).clock_wins() is True


def test_a_way_with_signals_wins_only_with_fewer_cold_starts_less_memory_and_less_cost() -> None:
    base = (20.0, 100.0)  # cost 140
    held = 100.0 * (1 + SIGNAL_SLACK)
    colds = 20.0 * SIGNAL_COLDS
    cheaper = scores(clock=base, clock_and_signals__5=(10.0, held))
    assert cheaper.with_signals(WarmMode.CLOCK) == Way(
        WarmMode.CLOCK_AND_SIGNALS, timedelta(minutes=5)
    )
    # More memory than the slack allows: no.
    assert scores(clock=base, clock_and_signals__5=(10.0, held + 0.01)).with_signals(
        WarmMode.CLOCK
    ) == Way(WarmMode.CLOCK)
    # Not a tenth fewer cold starts (even at much less memory): no.
    assert scores(clock=base, signals__10=(colds, 10.0)).with_signals(WarmMode.CLOCK) == Way(
        WarmMode.SIGNALS, timedelta(minutes=10)
    )
    assert scores(clock=base, signals__10=(colds + 0.01, 10.0)).with_signals(WarmMode.CLOCK) == Way(
        WarmMode.CLOCK
    )
    # Not SIGNAL_GAIN cheaper: no.
    most = 140 * (1 - SIGNAL_GAIN)
    just = scores(clock=base, signals__10=(colds, most - 2 * colds))
    assert just.with_signals(WarmMode.CLOCK) == Way(WarmMode.SIGNALS, timedelta(minutes=10))
    short = scores(clock=base, signals__10=(colds, most - 2 * colds + 0.01))
    assert short.with_signals(WarmMode.CLOCK) == Way(WarmMode.CLOCK)
    # The cheapest of those admitted wins; against the idle times when they are the base.
    both = scores(idle=base, signals__10=(15.0, 60.0), idle_and_signals__any=(5.0, 85.0))
    assert both.with_signals(WarmMode.IDLE) == Way(WarmMode.SIGNALS, timedelta(minutes=10))
    # Undecided: the time-only way.
    assert Contest().with_signals(WarmMode.IDLE) == Way(WarmMode.IDLE)


def test_every_way_is_replayed_with_its_own_keep_stretches_and_tier() -> None:
    contest = Contest()
    stretch = Stretch(start=3600.0, end=4800.0, long=False, unused_hold=3600.0)
    five = timedelta(minutes=5)
    play(
        contest,
        [3700.0],
        stretches=(stretch,),
        signals={five: [(3500.0, 300.0)], None: [(3000.0, 900.0)]},
    )
    score = {way.key: contest.scores[way][0] for way in WAYS}
    assert score["clock"] == 0  # warmed ahead
    assert score["idle"] == 1  # no stretch
    assert score["signals@5"] == 0  # the 5-minute tier's edge at 3500 covers it
    assert score["signals@10"] == 1  # that tier had no edge
    assert score["signals@any"] == 0  # loaded at 3000, held 15 minutes
    assert score["idle_and_signals@5"] == 0


def test_the_contest_round_trips_and_what_does_not_read_is_refused() -> None:
    contest = Contest()
    play(contest, [1000.0, 5000.0])
    stored = contest.as_dict()
    read = Contest.from_dict(stored)
    assert read.as_dict() == stored
    assert (read.days, read.uses, read.base) == (1, 2, "undecided")
    tallied = stored["tally"]
    assert isinstance(tallied, dict)
    good = tallied["scores"]
    assert isinstance(good, dict)
    for damaged_tally in (
        [],
        None,
        {**tallied, "scores": []},
        {**tallied, "days": -1},
        {**tallied, "uses": True},
        {**tallied, "days": 1.5},
        {**tallied, "scores": {**good, "clock": [1.0]}},
        {**tallied, "scores": {**good, "clock": [1.0, -1.0]}},
        {**tallied, "scores": {**good, "clock": [1.0, 1e9]}},
        {**tallied, "scores": {**good, "clock": [True, 1.0]}},
        {**tallied, "scores": {k: v for k, v in good.items() if k != "signals@5"}},
    ):
        for part in ("tally", "since"):
            with pytest.raises(ValueError, match=r"contest|score|count"):
                Contest.from_dict({**stored, part: damaged_tally})
    for damaged in ([], None, {**stored, "base": 3}, {**stored, "base": "x" * 33}):
        with pytest.raises(ValueError, match=r"contest"):
            Contest.from_dict(damaged)


def test_the_days_since_the_time_only_way_changed_are_tallied_apart() -> None:
    """The signals are judged against the time-only way as it warms now."""
    contest = Contest()
    # Half an hour after a use keeps the next one warm: the idle times win.
    half_hour = dict.fromkeys(WarmMode, KEEP) | {WarmMode.IDLE: 1800.0}
    for _ in range(MIN_CONTEST_DAYS):
        play(contest, [1000.0, 2000.0], keeps=half_hour)
    assert contest.base == "undecided"  # judged before the day: not decided yet then
    play(contest, [1000.0, 2000.0], keeps=half_hour)
    assert contest.base == "idle@1800"  # the idle times won: their keep is the base
    assert (contest.since.days, contest.days) == (1, MIN_CONTEST_DAYS + 1)
    play(contest, [1000.0, 2000.0], keeps=half_hour)
    assert contest.since.days == 2
    # The idle times' keep settled at an hour: the days since begin again.
    play(contest, [1000.0, 2000.0], keeps=half_hour | {WarmMode.IDLE: 3600.0})
    assert (contest.base, contest.since.days) == ("idle@3600", 1)
    assert contest.days == MIN_CONTEST_DAYS + 3


def test_a_way_with_signals_must_win_on_every_day_and_on_the_days_since() -> None:
    base = (20.0, 100.0)
    good = (10.0, 50.0)
    signals = Way(WarmMode.SIGNALS, timedelta(minutes=10))
    assert (
        Contest(
            tally(clock=base, signals__10=good), tally(clock=base, signals__10=good)
        ).with_signals(WarmMode.CLOCK)
        == signals
    )
    # Lucky only lately, or only long ago: no.
    for long, recent in ((base, good), (good, base)):
        contest = Contest(
            tally(clock=base, signals__10=long), tally(clock=base, signals__10=recent)
        )
        assert contest.with_signals(WarmMode.CLOCK) == Way(WarmMode.CLOCK)
    # Too few days since the time-only way changed: no.
    short = Contest(
        tally(clock=base, signals__10=good), Tally(tally(clock=base, signals__10=good).scores, 1, 3)
    )
    assert short.with_signals(WarmMode.CLOCK) == Way(WarmMode.CLOCK)


@given(
    st.dictionaries(
        st.sampled_from([w.key for w in WAYS]) | st.text(max_size=4),
        st.lists(st.floats(allow_nan=True) | st.integers() | st.booleans(), max_size=3),
        max_size=len(WAYS) + 2,
    ),
    st.integers(-2, 20) | st.floats() | st.none(),
)
def test_any_stored_contest_reads_or_is_refused_in_words(scores: object, days: object) -> None:
    stored = {"scores": scores, "days": days, "uses": 3}
    try:
        contest = Contest.from_dict({"tally": stored, "since": stored, "base": "clock"})
    except ValueError:
        return
    assert all(math.isfinite(c) and math.isfinite(h) for c, h in contest.scores.values())


def test_the_contest_thresholds_as_numbers() -> None:
    """The constants, as figures: a change of one of them is a change of the planner."""
    assert (MIN_CONTEST_DAYS, MIN_CONTEST_USES) == (7, 10)
    assert (SIGNAL_COLDS, SIGNAL_SLACK, SIGNAL_GAIN, CLOCK_MARGIN) == (0.9, -0.02, 0.05, 0.05)
    assert Tally(days=7, uses=10).decided
    assert not Tally(days=6, uses=10).decided
    assert not Tally(days=7, uses=9).decided
    # A base of 20 cold starts and 100 h (a cost of 140): a way with 18 cold starts, 98 h
    # held and a cost of 133 at most wins; a hair more of any, not.
    base = (20.0, 100.0)
    assert scores(clock=base, signals__10=(18.0, 97.0)).with_signals(WarmMode.CLOCK).mode.signals
    for worse in ((18.0 + 1.5e-9, 97.0), (17.0, 98.0 + 1.5e-9), (18.0, 97.0 + 1.5e-9)):
        contest = scores(clock=base, signals__10=worse)
        assert contest.with_signals(WarmMode.CLOCK) == Way(WarmMode.CLOCK), worse
    assert scores(clock=base, signals__10=(17.0, 98.0)).with_signals(WarmMode.CLOCK).mode.signals


def test_the_ways_keys_name_their_tier_in_minutes() -> None:
    assert Way(WarmMode.SIGNALS, timedelta(hours=1)).key == "signals@60"
    assert Way(WarmMode.CLOCK_AND_SIGNALS, timedelta(minutes=20)).key == "clock_and_signals@20"


def test_a_fresh_contest_round_trips_and_scores_keep_four_decimals() -> None:
    fresh = Contest()
    assert Contest.from_dict(fresh.as_dict()).as_dict() == fresh.as_dict()
    tally = Tally()
    tally.scores[Way(WarmMode.CLOCK)] = (1.234567, 2.345678)
    assert tally.as_dict()["scores"]["clock"] == [1.2346, 2.3457]  # type: ignore[index]
    assert Contest.from_dict({**fresh.as_dict(), "base": "x" * 32}).base == "x" * 32


def test_the_days_carried_between_replays_are_no_part_of_the_contest() -> None:
    """The models replayed between days start gone after a restart (they are not stored):
    a contest without them is the same contest as the live one that carries them."""
    contest = Contest()
    play(contest, [1000.0])
    assert contest._carry
    restarted = deepcopy(contest)
    restarted._carry.clear()
    assert restarted == contest
