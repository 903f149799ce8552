"""Findings for repair issues without Home Assistant: mismatches, thrash, keep_alive conflicts."""

from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.core.pins import Pin
from custom_components.llm_warmth.core.repairs import (
    THRASH_WINDOW,
    AgentUse,
    ContextMismatch,
    KeepAliveConflict,
    Kept,
    Thrash,
    ThrashCause,
    ThrashWatch,
    context_mismatches,
    keep_alive_conflicts,
)
from custom_components.llm_warmth.core.residency import UnloadReason

T0 = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)
GIB = 1024**3
KITCHEN = AgentUse("Kitchen", "llama3.2:3b", 8192, -1)
OFFICE = AgentUse("Office", "llama3.2:3b", 4096, 300)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_a_model_loaded_with_another_context_than_its_agent() -> None:
    assert context_mismatches({"llama3.2:3b": 8192}, [KITCHEN]) == []
    assert context_mismatches({"llama3.2:3b": 4096}, [KITCHEN, OFFICE]) == [
        ContextMismatch("llama3.2:3b", 4096, "Kitchen", 8192)
    ]
    # Not resident, or the server does not say: nothing to tell.
    assert context_mismatches({}, [KITCHEN]) == []
    assert context_mismatches({"llama3.2:3b": None}, [KITCHEN]) == []


def test_one_model_loaded_again_and_again_and_why() -> None:
    watch = ThrashWatch()
    for minute in range(3):
        watch.loaded("a", at(minute * 5), reloaded=False)
    assert watch.findings(at(10)) == []
    watch.loaded("a", at(15), reloaded=False)
    assert watch.findings(at(15)) == [Thrash(("a",), 4, 30, ThrashCause.KEPT_TOO_SHORT)]
    # Reloads in place: a request with another context.
    watch.loaded("a", at(16), reloaded=True)
    assert watch.findings(at(16))[0].cause is ThrashCause.CONTEXT_MISMATCH
    assert watch.findings(at(16))[0].reloads == 1
    # Two agents asking with different contexts: that is the cause to name.
    two = [KITCHEN, OFFICE]
    watch.loaded("llama3.2:3b", at(16), reloaded=True)
    for minute in (17, 18, 19):
        watch.loaded("llama3.2:3b", at(minute), reloaded=True)
    found = {t.models: t for t in watch.findings(at(20), two)}
    assert found[("llama3.2:3b",)].cause is ThrashCause.AGENTS_DIFFER
    assert found[("llama3.2:3b",)].contexts == (("Kitchen", 8192), ("Office", 4096))
    # Half an hour later it is forgotten.
    assert watch.findings(at(16) + THRASH_WINDOW + timedelta(minutes=4)) == []


def test_the_cause_of_a_thrash_is_what_ended_each_stay() -> None:
    """ "Kept for less time than the gaps" only when its keep ran out; not after a push."""
    watch = ThrashWatch()
    for minute in range(4):
        watch.loaded("a", at(minute * 5), reloaded=False)
    watch.left("a", UnloadReason.EXPIRED, [], at(4))
    watch.left("a", UnloadReason.DISPLACED, ["b"], at(9))
    watch.left("a", UnloadReason.DISPLACED, ["c", "b"], at(14))
    assert watch.findings(at(15)) == [
        Thrash(
            ("a",),
            4,
            30,
            ThrashCause.PUSHED_OUT,
            expired=1,
            pushed_out=2,
            pushed_out_by=("b", "c"),
        )
    ]
    # Its keep ran out more often than others pushed it out: kept too short, both counted.
    watch.left("a", UnloadReason.EXPIRED, [], at(14.5))
    watch.left("a", UnloadReason.EXPIRED, [], at(14.6))
    assert (watch.findings(at(15))[0].cause, watch.findings(at(15))[0].pushed_out) == (
        ThrashCause.KEPT_TOO_SHORT,
        2,
    )
    # Each stay ended by its keep: kept too short, with the count.
    watch = ThrashWatch()
    for minute in range(4):
        watch.loaded("a", at(minute * 5), reloaded=False)
    for minute in (4, 9, 14):
        watch.left("a", UnloadReason.EXPIRED, [], at(minute))
    assert watch.findings(at(15))[0].cause is ThrashCause.KEPT_TOO_SHORT
    assert watch.findings(at(15))[0].expired == 3
    # Unloaded before its keep ran out, more often than not: something unloads it.
    for minute in (15, 16, 16.5):
        watch.left("a", UnloadReason.UNLOADED, [], at(minute))
    watch.left("a", UnloadReason.ON_REQUEST, [], at(17))
    watch.left("a", UnloadReason.SERVER_RESTARTED, [], at(18))  # neither
    assert (watch.findings(at(18))[0].cause, watch.findings(at(18))[0].left_early) == (
        ThrashCause.LEFT_EARLY,
        4,
    )
    # Unloaded early more often than pushed out or expired, with pushes among them: the
    # unloads are what to find (not memory).
    for minute in (18.4, 18.5, 18.6):
        watch.left("a", UnloadReason.DISPLACED, ["b"], at(minute))
    found = watch.findings(at(18.7))[0]
    assert (found.left_early, found.pushed_out, found.expired) == (4, 3, 3)
    assert found.cause is ThrashCause.LEFT_EARLY
    # Half an hour on, the departures are forgotten with the loads.
    assert watch.findings(at(19) + THRASH_WINDOW) == []
    assert watch._left == {}


def test_two_models_displacing_each_other() -> None:
    watch = ThrashWatch()
    watch.left("a", UnloadReason.DISPLACED, ["b"], at(0))
    watch.left("b", UnloadReason.DISPLACED, ["a"], at(1))
    watch.left("a", UnloadReason.DISPLACED, ["b"], at(2))
    assert watch.findings(at(2)) == []  # b displaced a twice, a displaced b once
    watch.left("b", UnloadReason.DISPLACED, ["a"], at(3))
    for minute in range(4):
        watch.loaded("a" if minute % 2 else "b", at(minute), reloaded=False)
        watch.loaded("b" if minute % 2 else "a", at(minute + 0.5), reloaded=False)
    assert watch.findings(at(4), sizes={"a": 5 * GIB, "b": 7 * GIB}) == [
        Thrash(("a", "b"), 4, 30, ThrashCause.DO_NOT_FIT, sizes=(5 * GIB, 7 * GIB))
    ]
    # Without both sizes there are none rather than a guess.
    assert watch.findings(at(4), sizes={"a": 5 * GIB})[0].sizes == ()


def test_an_agents_keep_alive_overrides_a_pin_or_preload() -> None:
    forever = Pin(model="llama3.2:3b", since=T0)
    until = Pin(model="llama3.2:3b", until=at(60), since=T0)
    # A pin without end, an agent that keeps for ever: they agree.
    assert keep_alive_conflicts([KITCHEN], {"llama3.2:3b": forever}, {}, at(1)) == []
    # The agent's 300 s shortens it at every turn.
    assert keep_alive_conflicts([OFFICE], {"llama3.2:3b": forever}, {}, at(1)) == [
        KeepAliveConflict("llama3.2:3b", "Office", 300, Kept.PIN, None)
    ]
    # A pin with an end: kept for ever past it by the kitchen agent.
    assert keep_alive_conflicts([KITCHEN], {"llama3.2:3b": until}, {}, at(1)) == [
        KeepAliveConflict("llama3.2:3b", "Kitchen", -1, Kept.PIN, at(60))
    ]
    assert keep_alive_conflicts([KITCHEN], {"llama3.2:3b": until}, {}, at(61)) == []
    # A time-limited preload: any agent rewrites its keep, until its time has passed.
    preloads = {"llama3.2:3b": at(30)}
    assert keep_alive_conflicts([OFFICE], {}, preloads, at(1)) == [
        KeepAliveConflict("llama3.2:3b", "Office", 300, Kept.PRELOAD, at(30))
    ]
    assert keep_alive_conflicts([OFFICE], {}, preloads, at(31)) == []


# ---------------------------------------------------------------- each rule at its edge


def test_a_model_kept_too_short_has_no_reloads_and_one_agent_is_no_disagreement() -> None:
    watch = ThrashWatch()
    for minute in range(4):
        watch.loaded("llama3.2:3b", at(minute), reloaded=False)
    (found,) = watch.findings(at(4), [KITCHEN])
    assert (found.cause, found.reloads, found.contexts) == (ThrashCause.KEPT_TOO_SHORT, 0, ())


def test_a_load_or_a_departure_exactly_half_an_hour_old_still_counts() -> None:
    watch = ThrashWatch()
    for minute in range(4):
        watch.loaded("a", at(minute), reloaded=False)
    watch.left("a", UnloadReason.DISPLACED, ["b"], at(0))
    watch.left("b", UnloadReason.DISPLACED, ["a"], at(0))
    watch.left("a", UnloadReason.DISPLACED, ["b"], at(0))
    watch.left("b", UnloadReason.DISPLACED, ["a"], at(0))
    (pair,) = watch.findings(at(30))
    assert pair.models == ("a", "b")
    assert watch._left.keys() == {"a", "b"}
    assert len(watch.findings(at(30.1))) == 0
    alone = ThrashWatch()
    for minute in range(4):
        alone.loaded("a", at(minute), reloaded=False)
    assert [t.count for t in alone.findings(at(30))] == [4]
    assert alone.findings(at(30.1)) == []


def test_a_tie_between_pushes_and_expiries_is_pushed_out_and_left_early_must_beat_both() -> None:
    watch = ThrashWatch()
    for minute in range(4):
        watch.loaded("a", at(minute * 5), reloaded=False)
    watch.left("a", UnloadReason.EXPIRED, [], at(4))
    watch.left("a", UnloadReason.DISPLACED, ["b"], at(9))
    assert watch.findings(at(15))[0].cause is ThrashCause.PUSHED_OUT
    # Two unloads early against one expiry and one push: more than each, so left early;
    # a second push ties the unloads: no longer more than both.
    watch.left("a", UnloadReason.UNLOADED, [], at(10))
    watch.left("a", UnloadReason.UNLOADED, [], at(11))
    assert watch.findings(at(15))[0].cause is ThrashCause.LEFT_EARLY
    watch.left("a", UnloadReason.DISPLACED, ["b"], at(12))
    assert watch.findings(at(15))[0].cause is ThrashCause.PUSHED_OUT


def test_an_agent_that_unloads_at_once_shortens_a_pin_without_end() -> None:
    unloads = AgentUse("Hall", "llama3.2:3b", 8192, 0)
    forever = Pin(model="llama3.2:3b", since=T0)
    assert keep_alive_conflicts([unloads], {"llama3.2:3b": forever}, {}, at(1)) == [
        KeepAliveConflict("llama3.2:3b", "Hall", 0, Kept.PIN, None)
    ]


def test_a_pinned_model_with_a_preload_too_is_told_once_for_its_pin() -> None:
    forever = Pin(model="llama3.2:3b", since=T0)
    found = keep_alive_conflicts([OFFICE], {"llama3.2:3b": forever}, {"llama3.2:3b": at(30)}, at(1))
    assert [conflict.what for conflict in found] == [Kept.PIN]


def test_a_preload_that_ends_now_is_over() -> None:
    assert keep_alive_conflicts([OFFICE], {}, {"llama3.2:3b": at(30)}, at(30)) == []
