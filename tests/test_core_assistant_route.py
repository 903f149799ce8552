"""Where the warm assistant sends a turn (core.assistant_route, no Home Assistant)."""

from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.assistant_route import (
    FIRST_WORDS_SECONDS,
    MAX_WAIT_SECONDS,
    AgentState,
    Failed,
    Readiness,
    Route,
    RouteReason,
    RouteRecord,
    Setting,
    SettingRefused,
    TurnFailure,
    agent_state,
    check_settings,
    ready_in,
    retry_order,
    route_turn,
    switched_from,
    unanswered,
    words_due_in,
)
from custom_components.llm_warmth.core.sentence import Sentence
from custom_components.llm_warmth.core.warmth import Warmth

BIG = "conversation.big_box"
NAS = "conversation.nas"
HA = "conversation.home_assistant"


def state(agent: str, readiness: Readiness, ready: float | None = None) -> AgentState:
    return AgentState(agent, readiness, ready)


@pytest.mark.parametrize(
    ("primary", "reason"),
    [
        (state(BIG, Readiness.WARM), RouteReason.PRIMARY_WARM),
        (state(BIG, Readiness.NOT_FOLLOWED), RouteReason.PRIMARY_NOT_FOLLOWED),
        (state(BIG, Readiness.COLD, 3.0), RouteReason.PRIMARY_WITHIN_WAIT),
        (state(BIG, Readiness.LOADING, 0.5), RouteReason.PRIMARY_WITHIN_WAIT),
    ],
)
def test_the_primary_answers_when_ready_in_time(primary: AgentState, reason: RouteReason) -> None:
    """A warm primary, one ready within the wait (3 s here, inclusive), or one not followed."""
    route = route_turn(primary, [state(NAS, Readiness.WARM)], wait_s=3.0)
    assert route == Route(BIG, reason, warm_primary=False)
    assert not route.fell_back


@pytest.mark.parametrize(
    "primary",
    [
        state(BIG, Readiness.COLD, 3.01),  # just past the wait
        state(BIG, Readiness.COLD),  # no load measured: no bet on it
        state(BIG, Readiness.LOADING, 10.0),
        state(BIG, Readiness.LOADING),
    ],
)
def test_a_warm_fall_back_answers_while_the_primary_warms(primary: AgentState) -> None:
    """The first warm fall-back in order answers; the primary is warmed for the next turns."""
    fallbacks = [state(HA, Readiness.COLD, 1.0), state(NAS, Readiness.WARM)]
    route = route_turn(primary, fallbacks, wait_s=3.0)
    assert route == Route(NAS, RouteReason.FALLBACK_PRIMARY_COLD, warm_primary=True)
    assert route.fell_back


def test_fall_backs_are_taken_in_order() -> None:
    """Two warm fall-backs: the first one listed."""
    fallbacks = [state(NAS, Readiness.WARM), state(HA, Readiness.NOT_FOLLOWED)]
    assert route_turn(state(BIG, Readiness.COLD), fallbacks, 0).agent_id == NAS
    assert route_turn(state(BIG, Readiness.COLD), fallbacks[::-1], 0).agent_id == HA


def test_a_fall_back_not_followed_counts_as_ready() -> None:
    """An agent with no model LLM Warmth sees (Home Assistant's own) loads nothing."""
    route = route_turn(state(BIG, Readiness.COLD), [state(HA, Readiness.NOT_FOLLOWED)], 0)
    assert route == Route(HA, RouteReason.FALLBACK_PRIMARY_COLD, warm_primary=True)


def test_a_fall_back_ready_within_the_wait_comes_after_the_warm_ones() -> None:
    """No warm fall-back: the first that will be ready within the wait."""
    fallbacks = [state(HA, Readiness.COLD, 9.0), state(NAS, Readiness.COLD, 2.0)]
    route = route_turn(state(BIG, Readiness.COLD, 20.0), fallbacks, wait_s=3.0)
    assert route == Route(NAS, RouteReason.FALLBACK_PRIMARY_COLD, warm_primary=True)


def test_no_fall_back_ready_the_primary_loads() -> None:
    """Every fall-back cold beyond the wait, or down: the primary, which loads."""
    fallbacks = [state(NAS, Readiness.COLD, 9.0), state(HA, Readiness.DOWN)]
    route = route_turn(state(BIG, Readiness.COLD, 20.0), fallbacks, wait_s=3.0)
    assert route == Route(BIG, RouteReason.PRIMARY_NO_READY_FALLBACK, warm_primary=False)


def test_primary_down_any_reachable_fall_back_answers() -> None:
    """The primary's server is down: a warm fall-back, else any whose server is up; no warming."""
    warm = route_turn(state(BIG, Readiness.DOWN), [state(NAS, Readiness.WARM)], 3.0)
    assert warm == Route(NAS, RouteReason.FALLBACK_PRIMARY_DOWN, warm_primary=False)
    fallbacks = [state(HA, Readiness.DOWN), state(NAS, Readiness.COLD, 30.0)]
    cold = route_turn(state(BIG, Readiness.DOWN), fallbacks, 3.0)
    assert cold == Route(NAS, RouteReason.FALLBACK_PRIMARY_DOWN, warm_primary=False)
    nothing = route_turn(state(BIG, Readiness.DOWN), [state(NAS, Readiness.DOWN)], 3.0)
    assert nothing == Route(BIG, RouteReason.NOTHING_REACHABLE, warm_primary=False)


def test_the_primary_listed_as_a_fall_back_is_not_its_own_fall_back() -> None:
    """A primary repeated among the fall-backs is skipped there."""
    route = route_turn(state(BIG, Readiness.COLD), [state(BIG, Readiness.WARM)], 0)
    assert route.reason is RouteReason.PRIMARY_NO_READY_FALLBACK


@pytest.mark.parametrize(
    ("load_s", "loading_for_s", "expected"),
    [(None, None, None), (None, 2.0, None), (4.0, None, 4.0), (4.0, 1.5, 2.5), (4.0, 9.0, 0.0)],
)
def test_ready_in_by_the_last_load(
    load_s: float | None, loading_for_s: float | None, expected: float | None
) -> None:
    """What is left of the last exact load; a load past it is about to end."""
    assert ready_in(load_s, loading_for_s) == expected


@pytest.mark.parametrize(
    ("warmth", "reachable", "expected"),
    [
        (None, False, AgentState(BIG, Readiness.NOT_FOLLOWED)),
        (Warmth.WARM, False, AgentState(BIG, Readiness.DOWN)),
        (Warmth.WARM, True, AgentState(BIG, Readiness.WARM)),
        (Warmth.KEPT_WARM, True, AgentState(BIG, Readiness.WARM)),
        (Warmth.LOADING, True, AgentState(BIG, Readiness.LOADING, 3.0)),
        (Warmth.COLD, True, AgentState(BIG, Readiness.COLD, 5.0)),
        (Warmth.UNLOADING, True, AgentState(BIG, Readiness.COLD, 5.0)),
    ],
)
def test_agent_state_from_warmth(
    warmth: Warmth | None, reachable: bool, expected: AgentState
) -> None:
    """A loading model has what is left of its load ahead (2 s of 5 s gone), a cold one all."""
    assert agent_state(BIG, warmth, reachable=reachable, load_s=5.0, loading_for_s=2.0) == expected


def test_a_loading_model_of_unknown_start_has_its_whole_load_ahead() -> None:
    """No sighting of the load's start: its whole last load."""
    got = agent_state(BIG, Warmth.LOADING, reachable=True, load_s=5.0, loading_for_s=None)
    assert got.ready_in_s == 5.0


readiness_st = st.sampled_from(Readiness)
agent_st = st.builds(
    AgentState,
    st.sampled_from([BIG, NAS, HA, "conversation.lab"]),
    readiness_st,
    st.none() | st.floats(min_value=0, max_value=600, allow_nan=False),
)


@given(
    agent_st,
    st.lists(agent_st, max_size=4, unique_by=lambda a: a.agent_id),
    st.floats(min_value=0, max_value=60),
)
def test_route_properties(primary: AgentState, fallbacks: list[AgentState], wait: float) -> None:
    """Whatever the states: an agent of the assistant answers; a warm primary always does;
    a fall-back only when the primary cannot in time; a down server only when all are down;
    the primary is warmed only while a fall-back answers and its server is up."""
    route = route_turn(primary, fallbacks, wait)
    states = {f.agent_id: f for f in fallbacks if f.agent_id != primary.agent_id}
    assert route.agent_id == primary.agent_id or route.agent_id in states
    if primary.readiness is Readiness.WARM:
        assert route.reason is RouteReason.PRIMARY_WARM
    if route.fell_back:
        assert not primary.ready_within(wait)
        assert states[route.agent_id].readiness is not Readiness.DOWN
    else:
        assert route.agent_id == primary.agent_id
    if route.reason is RouteReason.NOTHING_REACHABLE:
        assert all(s.readiness is Readiness.DOWN for s in (primary, *states.values()))
    assert route.warm_primary == (route.fell_back and primary.readiness is not Readiness.DOWN)


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        (state(BIG, Readiness.WARM), True),
        (state(BIG, Readiness.NOT_FOLLOWED), True),
        (state(BIG, Readiness.DOWN, 0.0), False),
        (state(BIG, Readiness.COLD), False),
        (state(BIG, Readiness.COLD, 2.0), True),
        (state(BIG, Readiness.COLD, 2.5), False),
    ],
)
def test_ready_within(agent: AgentState, expected: bool) -> None:
    """Warm or not followed: ready; down or no load measured: not; else by the load."""
    assert agent.ready_within(2.0) is expected


@pytest.mark.parametrize(
    ("primary", "fallbacks", "wait", "setting", "key"),
    [
        (None, [], 1, Setting.PRIMARY, "assistant_not_agent"),
        ("sensor.big", [], 1, Setting.PRIMARY, "assistant_not_agent"),
        (BIG, "conversation.nas", 1, Setting.FALLBACKS, "assistant_not_agent"),
        (BIG, [NAS, 3], 1, Setting.FALLBACKS, "assistant_not_agent"),
        (BIG, [NAS, "light.nas"], 1, Setting.FALLBACKS, "assistant_not_agent"),
        (BIG, [NAS, BIG], 1, Setting.FALLBACKS, "assistant_agents_repeat"),
        (BIG, [NAS, NAS], 1, Setting.FALLBACKS, "assistant_agents_repeat"),
        (BIG, [NAS], None, Setting.WAIT, "assistant_wait_range"),
        (BIG, [NAS], True, Setting.WAIT, "assistant_wait_range"),
        (BIG, [NAS], "3", Setting.WAIT, "assistant_wait_range"),
        (BIG, [NAS], -0.01, Setting.WAIT, "assistant_wait_range"),
        (BIG, [NAS], 60.01, Setting.WAIT, "assistant_wait_range"),
    ],
)
def test_settings_refused(
    primary: object, fallbacks: object, wait: object, setting: Setting, key: str
) -> None:
    """The first setting that cannot work is named, with its error key."""
    with pytest.raises(SettingRefused) as err:
        check_settings(primary, fallbacks, wait)
    assert (err.value.setting, err.value.key) == (setting, key)
    assert err.value.args == (setting, key)


def test_settings_read() -> None:
    """Bounds included; a tuple or list of fall-backs, or none; the wait as a float."""
    assert MAX_WAIT_SECONDS == 60.0
    assert check_settings(BIG, [NAS, HA], 0) == (BIG, (NAS, HA), 0.0)
    assert check_settings(BIG, (NAS,), 60) == (BIG, (NAS,), 60.0)
    assert check_settings(BIG, [], 2.5) == (BIG, (), 2.5)
    assert isinstance(check_settings(BIG, [], 1)[2], float)


@given(
    st.one_of(st.none(), st.text(max_size=20), st.integers()),
    st.one_of(st.none(), st.text(max_size=5), st.lists(st.text(max_size=20), max_size=3)),
    st.one_of(st.none(), st.booleans(), st.floats(), st.integers(-100, 100), st.text(max_size=3)),
)
def test_any_stored_settings_are_read_or_refused(
    primary: object, fallbacks: object, wait: object
) -> None:
    """Whatever a subentry holds: settings that can work, or a SettingRefused."""
    try:
        agent, others, seconds = check_settings(primary, fallbacks, wait)
    except SettingRefused:
        return
    assert agent.startswith("conversation.")
    assert all(o.startswith("conversation.") for o in others)
    assert agent not in others
    assert len(set(others)) == len(others)
    assert 0 <= seconds <= MAX_WAIT_SECONDS


def test_switched_from() -> None:
    """Only another delegate than the one answering now counts as a switch."""
    assert switched_from(None, BIG) is None
    assert switched_from(BIG, BIG) is None
    assert switched_from(NAS, BIG) == NAS


def test_route_record_as_the_event_carries_it() -> None:
    """Every field under the event's and the attributes' names."""
    record = RouteRecord(
        at=datetime(2026, 12, 1, 7, 0, tzinfo=UTC),
        route=Route(NAS, RouteReason.FALLBACK_PRIMARY_COLD, warm_primary=True),
        primary=state(BIG, Readiness.COLD, 12.5),
        agent_server="NAS",
        agent_model="qwen3:4b",
        switched_from=BIG,
    )
    assert record.as_dict() == {
        "agent": NAS,
        "reason": "fallback_primary_cold",
        "primary": BIG,
        "primary_readiness": "cold",
        "primary_ready_in": 12.5,
        "warming_primary": False,
        "agent_server": "NAS",
        "agent_model": "qwen3:4b",
        "switched_from": BIG,
        "failed": False,
        "failures": [],
    }
    flags = RouteRecord(
        record.at, record.route, record.primary, None, None, None, warming=True, failed=True
    ).as_dict()
    assert (flags["warming_primary"], flags["failed"], flags["agent_server"]) == (True, True, None)


def test_a_failed_turn_carries_who_failed_and_how() -> None:
    record = RouteRecord(
        datetime(2026, 12, 1, 7, 0, tzinfo=UTC),
        Route(NAS, RouteReason.AFTER_A_FAILURE, warm_primary=False),
        state(BIG, Readiness.WARM),
        "NAS",
        "llama",
        None,
        failures=(Failed(BIG, "Big box", TurnFailure.RAISED), Failed(HA, None, TurnFailure.ERROR)),
    )
    assert record.as_dict()["failures"] == [
        {"agent": BIG, "server": "Big box", "failure": "raised"},
        {"agent": HA, "server": None, "failure": "error"},
    ]
    assert record.as_dict()["reason"] == "after_a_failure"


WAIT = 3.0


@pytest.mark.parametrize(
    ("primary", "fallbacks", "order"),
    [
        # The warm primary failed: the warm fall-backs in their order, each once.
        (
            state(BIG, Readiness.WARM),
            [state(NAS, Readiness.WARM), state(HA, Readiness.NOT_FOLLOWED)],
            (BIG, NAS, HA),
        ),
        # A fall-back cold (no load known), down, or loading past the wait: not asked.
        (
            state(BIG, Readiness.WARM),
            [
                state(NAS, Readiness.COLD),
                state("conversation.down", Readiness.DOWN),
                state("conversation.slow", Readiness.LOADING, WAIT + 0.01),
                state("conversation.soon", Readiness.LOADING, WAIT),
            ],
            (BIG, "conversation.soon"),
        ),
        # The primary cold: the fall-back answered first; the primary not waited for.
        (state(BIG, Readiness.COLD, 30.0), [state(NAS, Readiness.WARM)], (NAS,)),
        # ... unless it will be ready within the wait.
        (state(BIG, Readiness.LOADING, 1.0), [state(NAS, Readiness.WARM)], (BIG, NAS)),
        # The primary listed as a fall-back too is asked once.
        (state(BIG, Readiness.WARM), [state(BIG, Readiness.WARM)], (BIG,)),
    ],
)
def test_after_a_failure_the_agents_ready_in_time_are_asked_in_order(
    primary: AgentState, fallbacks: list[AgentState], order: tuple[str, ...]
) -> None:
    route = route_turn(primary, fallbacks, WAIT)
    assert retry_order(route, primary, fallbacks, WAIT) == order


def test_when_no_agent_answers_the_servers_are_named_once_each() -> None:
    failed = [
        Failed(BIG, "Big box", TurnFailure.RAISED),
        Failed("conversation.big_other", "Big box", TurnFailure.ERROR),
        Failed(HA, None, TurnFailure.ERROR),
    ]
    assert unanswered(failed) == (Sentence("assistant_unanswered", {"servers": f"Big box, {HA}"}),)


def test_an_agent_that_is_gone_is_said_apart_with_what_to_do() -> None:
    assert unanswered([Failed(NAS, "NAS", TurnFailure.GONE)]) == (
        Sentence("assistant_agent_gone", {"agent": NAS}),
    )
    assert unanswered(
        [Failed(BIG, "Big box", TurnFailure.RAISED), Failed(NAS, "NAS", TurnFailure.GONE)]
    ) == (
        Sentence("assistant_unanswered", {"servers": "Big box"}),
        Sentence("assistant_agent_gone", {"agent": NAS}),
    )
    # Nothing asked at all (no agent): still words.
    assert unanswered([]) == (Sentence("assistant_unanswered", {"servers": ""}),)


@pytest.mark.parametrize(
    ("state", "due"),
    [
        (None, FIRST_WORDS_SECONDS),  # an agent the assistant knows nothing of
        (AgentState(BIG, Readiness.WARM), FIRST_WORDS_SECONDS),
        (AgentState(HA, Readiness.NOT_FOLLOWED), FIRST_WORDS_SECONDS),
        (AgentState(BIG, Readiness.LOADING, 4.5), 4.5 + FIRST_WORDS_SECONDS),
        (AgentState(BIG, Readiness.COLD, 12.0), 12.0 + FIRST_WORDS_SECONDS),
        (AgentState(BIG, Readiness.COLD), None),  # a load never measured: no bound
        (AgentState(BIG, Readiness.DOWN), None),
    ],
)
def test_an_agents_first_words_are_due_once_its_model_is_ready(
    state: AgentState | None, due: float | None
) -> None:
    assert words_due_in(state) == due


def test_the_first_words_bound_is_the_one_the_docs_give() -> None:
    """docs/household.md tells users how long an agent may stay silent: the same bound."""
    docs = Path(__file__).resolve().parent.parent / "docs" / "household.md"
    text = " ".join(docs.read_text().split())
    assert f"within {FIRST_WORDS_SECONDS:g} s of the time its model needs" in text
