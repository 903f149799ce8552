"""One day replayed under one way of warming, without Home Assistant."""

from __future__ import annotations

import pytest

from custom_components.llm_warmth.core.day_replay import Residency, Stretch, replay_day

DAY = (0.0, 86400.0)
LOAD, LEAD, KEEP = 20.0, 80.0, 300.0


def replay(
    uses: list[float],
    *,
    stretches: tuple[Stretch, ...] = (),
    signals: tuple[tuple[float, float], ...] = (),
    keep: float = KEEP,
    state: Residency | None = None,
    span: tuple[float, float] = DAY,
) -> tuple[int, float, Residency]:
    state = state if state is not None else Residency()
    score = replay_day(
        state,
        span=span,
        uses=uses,
        stretches=stretches,
        keep=keep,
        signals=signals,
        load=LOAD,
        lead=LEAD,
    )
    return score.colds, score.held, state


def test_uses_alone_are_cold_after_the_keep_and_warm_within_it() -> None:
    colds, held, _ = replay([1000.0, 1200.0, 2000.0])
    # 1000 cold (loads until 1020, kept to 1320); 1200 warm (kept to 1500); 2000 cold.
    assert colds == 2
    assert held == (1500 - 1000) + (2320 - 2000)
    # A use while the load runs is cold too: it waits for the rest.
    assert replay([1000.0, 1010.0])[0] == 2


def test_a_keep_below_the_servers_default_is_the_default() -> None:
    assert replay([1000.0, 1250.0], keep=60.0)[0] == 1  # kept 300 s all the same
    assert replay([1000.0, 1400.0], keep=600.0)[0] == 1  # kept 600 s from 1020
    assert replay([1000.0, 1700.0], keep=600.0)[0] == 2


def test_a_short_stretch_is_warmed_ahead_and_held_to_its_end() -> None:
    stretch = Stretch(start=3600.0, end=4800.0, long=False, unused_hold=3600.0)
    colds, held, _ = replay([3900.0], stretches=(stretch,))
    assert colds == 0
    # Loaded at 3520 (LEAD before), held to the stretch's end, or to the use's keep.
    assert held == 4800 - (3600 - LEAD)
    colds, held, _ = replay([4700.0], stretches=(stretch,))
    assert (colds, held) == (0, 4700 + KEEP - (3600 - LEAD))
    # A use during the warm-up's load is cold.
    assert replay([3530.0], stretches=(stretch,))[0] == 1


def test_a_long_stretch_is_held_through_once_used_else_its_first_hour() -> None:
    stretch = Stretch(start=3600.0, end=3600.0 * 5, long=True, unused_hold=3600.0)
    unused = replay([], stretches=(stretch,))
    assert unused[:2] == (0, 3600 + LEAD)  # its first hour, from the lead before it
    used = replay([4000.0], stretches=(stretch,))
    assert used[:2] == (0, 3600 * 5 - (3600 - LEAD))
    # A use after the first hour: the model had gone (cold), then is held to the end.
    late = replay([3600.0 * 3], stretches=(stretch,))
    assert late[0] == 1
    assert late[1] == (3600 * 2 - (3600 - LEAD)) + (3600 * 5 - 3600 * 3)


def test_a_signal_loads_a_cold_model_and_holds_it_not_one_that_is_warm() -> None:
    colds, held, _ = replay([1300.0], signals=((1000.0, 600.0),))
    assert colds == 0
    assert held == 1600 - 1000  # loaded at the edge, held to its end (the use's keep ends sooner)
    # Unused: held for the whole hold, then let go.
    assert replay([], signals=((1000.0, 600.0),))[:2] == (0, 600)
    # A use during its load is cold.
    assert replay([1010.0], signals=((1000.0, 600.0),))[0] == 1
    # An edge while the model is held already holds it no longer.
    colds, held, _ = replay([900.0], signals=((1000.0, 600.0),))
    assert (colds, held) == (1, 900 + 20 + KEEP - 900)


def test_the_replayed_model_goes_on_to_the_next_day() -> None:
    colds, held, state = replay([86300.0])
    assert (colds, held) == (1, 100)  # the day's part of it
    assert state.since == 86400.0  # still held at midnight (kept to 86620)
    following = (86400.0, 2 * 86400.0)
    colds, held, state = replay([86500.0], state=state, span=following)
    assert colds == 0  # warm, held across midnight
    assert held == 86500 + KEEP - 86400
    assert state.since is None
    # A stretch that ended is forgotten at the next day's start.
    old = Stretch(0.0, 100.0, long=True, unused_hold=50.0)
    state = Residency(holds={old: 100.0})
    replay([], state=state, span=following)
    assert state.holds == {}


def test_the_replay_at_its_edges() -> None:
    # A use at the very second the keep ends: let go then, so it is cold.
    assert replay([1000.0, 1320.0])[0] == 2
    assert replay([1000.0, 1319.0])[0] == 1
    # A use at the very second the signal's load is ready: warm; a second before: cold.
    assert replay([1020.0], signals=((1000.0, 600.0),))[0] == 0
    assert replay([1019.0], signals=((1000.0, 600.0),))[0] == 1
    # An edge and a use at the same second: the edge first, the use waits for the load.
    assert replay([1000.0], signals=((1000.0, 600.0),))[0] == 1
    # Two uses at one second both wait for the load; uses come in any order.
    assert replay([1000.0, 1000.0])[0] == 2
    assert replay([1400.0, 1000.0, 1200.0]) == replay([1000.0, 1200.0, 1400.0])
    assert replay([1400.0, 1000.0, 1200.0])[:2] == (1, 1400 + KEEP - 1000)
    # A stretch's warm-up and an edge at the same second: both, in that order.
    stretch = Stretch(start=1080.0, end=2000.0, long=False, unused_hold=3600.0)
    assert replay([], stretches=(stretch,), signals=((1000.0, 60.0),))[:2] == (0, 1000)
    # A hold shorter than the load: held while it loads.
    score = replay_day(
        Residency(),
        span=DAY,
        uses=[],
        stretches=(),
        keep=KEEP,
        signals=((1000.0, 0.2),),
        load=0.5,
        lead=LEAD,
    )
    assert score.held == pytest.approx(0.5)


def test_a_long_stretch_is_held_through_only_by_a_use_inside_it() -> None:
    stretch = Stretch(start=3600.0, end=3600.0 * 5, long=True, unused_hold=3600.0)
    # A use during the warm-up's lead, before the stretch: not in it, its first hour only.
    before = replay([3600.0 - 10], stretches=(stretch,))
    assert before[:2] == (0, 3600 + LEAD)
    at_start = replay([3600.0], stretches=(stretch,))
    assert at_start[1] == 3600 * 5 - (3600 - LEAD)
    # A use at its very end is after it: its first hour went, the use is cold and kept.
    at_end = replay([3600.0 * 5], stretches=(stretch,))
    assert at_end[0] == 1
    assert at_end[1] == 3600 + LEAD + 320


def test_two_stretches_hold_the_model_to_the_later_end() -> None:
    first = Stretch(start=3600.0, end=4800.0, long=False, unused_hold=3600.0)
    second = Stretch(start=3700.0, end=6000.0, long=False, unused_hold=3600.0)
    assert replay([], stretches=(first, second))[:2] == (0, 6000 - (3600 - LEAD))
    assert replay([], stretches=(second, first))[:2] == (0, 6000 - (3600 - LEAD))


def test_a_day_before_the_one_carried_starts_with_the_model_gone() -> None:
    """A clock that went back folds days again: no negative time held, no stale hold."""
    later = (86400.0, 2 * 86400.0)
    stretch = Stretch(start=86400.0 + 3600, end=86400.0 + 3 * 3600, long=True, unused_hold=3600)
    _, _, state = replay([86400.0 + 3700, later[1] - 100], stretches=(stretch,), span=later)
    assert (state.since, set(state.holds)) == (later[1], {stretch})  # held past its end
    colds, held, state = replay([], state=state)  # the day before it, again
    assert (colds, held) == (0, 0)
    assert (state.since, state.holds) == (None, {})
    # The next day carries on as the day before ended (not reset).
    _, _, state = replay([DAY[1] - 100])
    assert state.since == DAY[1]
    assert replay([], state=state, span=later)[1] == LOAD + KEEP - 100  # a cold use: loaded first
