"""What the actions answer, without Home Assistant: their figures and their summary's sentences."""

from datetime import UTC, datetime, timedelta

from hypothesis import given, strategies as st

from custom_components.llm_warmth.core.action_reply import (
    NEXT_TURN_FIELDS,
    Reply,
    dashboard_hours,
    evict_reply,
    model_selector,
    next_turn,
    offered_models,
    pin_reply,
    preload_reply,
    probe_reply,
    pushed_out,
    unpin_reply,
    warm_up_reply,
    warm_up_wanted,
)
from custom_components.llm_warmth.core.backends.base import KeepAlive
from custom_components.llm_warmth.core.monitor import ProbeResult
from custom_components.llm_warmth.core.pins import REASSERT_COST, Pin
from custom_components.llm_warmth.core.residency_control import Preloaded, Unpinned
from custom_components.llm_warmth.core.sentence import Number, Sentence
from custom_components.llm_warmth.core.ttft import Classification, Stage, StageBreakdown, Verdict

from .english import english

NOW = datetime(2026, 12, 5, 9, 30, tzinfo=UTC)
SAMPLE = StageBreakdown(
    ttft_ms=349.0,
    queue_and_load_ms=2.0,
    prefill_ms=40.0,
    first_decode_ms=30.0,
    overhead_ms=277.0,
    decode_rate=50.0,
    prompt_tokens=20,
    eval_tokens=1,
    prompt_cache_reuse=75.0,
)
WARM = ProbeResult(SAMPLE, Verdict(Classification.WARM, Stage.NONE))


def keys(reply: Reply) -> list[str]:
    return [sentence.key for sentence in reply.said]


def test_a_reply_puts_its_summary_between_its_fields() -> None:
    reply = Reply((Sentence("evict_nothing"),), before={"a": 1, "b": 2}, after={"c": [3]})
    answer = reply.answer("words")
    assert list(answer) == ["a", "b", "summary", "c"]
    assert answer == {"a": 1, "b": 2, "summary": "words", "c": [3]}
    assert Reply(()).answer("only") == {"summary": "only"}


def test_a_load_says_what_it_pushed_out() -> None:
    assert pushed_out(Preloaded("m", False, 1.0)) == []
    assert pushed_out(Preloaded("m", False, 1.0, ("a", "b"))) == [
        Sentence("pushed_out", {"models": "a, b"})
    ]


def test_an_eviction_says_what_it_unloaded_unpinned_and_did_not_find() -> None:
    reply = evict_reply(["a", "b", "c"], ["a", "c"], {"c", "x"})
    assert reply.answer("s") == {
        "unloaded": ["a", "c"],
        "unpinned": ["c"],
        "not_resident": ["b"],
        "summary": "s",
    }
    assert reply.said == (
        Sentence("evict_unloaded", {"models": "a, c"}),
        Sentence("evict_unpinned", {"models": "c"}),
        Sentence("evict_not_resident", {"models": "b"}),
    )


def test_an_eviction_of_all_finds_none_missing() -> None:
    reply = evict_reply(None, ["a"], set())
    assert reply.before["not_resident"] == []
    assert keys(reply) == ["evict_unloaded"]


def test_an_eviction_of_nothing_says_so() -> None:
    assert keys(evict_reply(None, [], set())) == ["evict_nothing"]
    assert keys(evict_reply(["a"], [], {"a"})) == ["evict_not_resident"]


def test_a_preload_says_how_long_its_load_took() -> None:
    done = Preloaded("m", False, 7.25, ("old",))
    reply = preload_reply(done, num_ctx=8192, agent="Kitchen", warm_up={"summary": "w"})
    assert reply.answer("s") == {
        "model": "m",
        "already_resident": False,
        "load_seconds": 7.25,
        "pushed_out": ["old"],
        "num_ctx": 8192,
        "agent": "Kitchen",
        "warm_up": {"summary": "w"},
        "summary": "s",
    }
    assert reply.said == (
        Sentence("preload_loaded", {"model": "m", "seconds": Number(7.25, 1)}),
        Sentence("pushed_out", {"models": "old"}),
    )
    assert english(*reply.said).startswith("m loaded in 7.2")


def test_a_preload_of_a_resident_model_says_it_was_there() -> None:
    resident = preload_reply(Preloaded("m", True, None), num_ctx=None, agent=None, warm_up=None)
    assert keys(resident) == ["preload_already_resident"]
    assert resident.before["warm_up"] is None
    # Resident by the time it was asked: no time to say either.
    unseen = preload_reply(Preloaded("m", False, None), num_ctx=None, agent=None, warm_up=None)
    assert keys(unseen) == ["preload_already_resident"]
    resident_timed = preload_reply(
        Preloaded("m", True, 3.0), num_ctx=None, agent=None, warm_up=None
    )
    assert keys(resident_timed) == ["preload_already_resident"]


def test_a_warm_up_is_wanted_when_asked_or_given_a_prompt() -> None:
    assert not warm_up_wanted(warm_up=False, prompt=None, system_prompt=None)
    assert warm_up_wanted(warm_up=True, prompt=None, system_prompt=None)
    assert warm_up_wanted(warm_up=False, prompt="Hi", system_prompt=None)
    assert warm_up_wanted(warm_up=False, prompt=None, system_prompt="Be brief")


def test_a_warm_up_says_its_stages_and_its_next_turn() -> None:
    following = next_turn(SAMPLE)
    assert following == {"prompt_cache_reuse": 75.0, "prefill_ms": 40.0, "ttft_ms": 349.0}
    assert tuple(following) == NEXT_TURN_FIELDS
    answer = warm_up_reply(WARM, system_prompt_from="Kitchen", next_turn=following).answer("s")
    assert list(answer)[:2] == ["system_prompt_from", "summary"]
    assert answer["system_prompt_from"] == "Kitchen"
    assert answer["ttft_ms"] == 349.0
    assert answer["next_turn"] == following
    assert list(answer)[-1] == "next_turn"


def test_a_pin_says_until_when_and_what_asserting_it_costs() -> None:
    until = NOW + timedelta(hours=2)
    pin = Pin(model="m", priority=5, until=until, num_ctx=4096, since=NOW)
    reply = pin_reply(
        pin,
        Preloaded("m", True, None, ("old",)),
        agent="Kitchen",
        keep_alive=KeepAlive.LRU,
        until_words="2026-12-05 11:30",
        until_stamp="2026-12-05T11:30:00+00:00",
    )
    assert reply.answer("s") == {
        "model": "m",
        "already_resident": True,
        "load_seconds": None,
        "pushed_out": ["old"],
        "until": "2026-12-05T11:30:00+00:00",
        "priority": 5,
        "num_ctx": 4096,
        "agent": "Kitchen",
        "reassert_cost": REASSERT_COST[KeepAlive.LRU],
        "summary": "s",
    }
    assert reply.said == (
        Sentence("pin_until", {"model": "m", "until": "2026-12-05 11:30"}),
        Sentence("pushed_out", {"models": "old"}),
    )


def test_a_pin_without_end_says_until_unpinned() -> None:
    reply = pin_reply(
        Pin(model="m", since=NOW),
        Preloaded("m", False, 2.0),
        agent=None,
        keep_alive=KeepAlive.IDLE_TIMER,
        until_words=None,
        until_stamp=None,
    )
    assert reply.said == (Sentence("pin_until_unpinned", {"model": "m"}),)
    assert reply.before["until"] is None
    assert reply.before["reassert_cost"] == REASSERT_COST[KeepAlive.IDLE_TIMER]


def test_an_unpin_says_whether_it_was_pinned_and_what_became_of_it() -> None:
    pin = Pin(model="m", since=NOW)
    reply = unpin_reply("m", pin, Unpinned.HANDED_BACK)
    assert reply.answer("s") == {
        "model": "m",
        "was_pinned": True,
        "residency": "handed_back",
        "summary": "s",
    }
    assert type(reply.before["residency"]) is str
    assert reply.said == (Sentence("unpinned", {"model": "m"}), Sentence("unpin_handed_back"))
    assert keys(unpin_reply("m", None, Unpinned.UNCHANGED)) == ["not_pinned", "unpin_unchanged"]
    assert unpin_reply("m", None, Unpinned.UNCHANGED).before["was_pinned"] is False


def test_a_probe_says_its_verdict_first_then_its_figures() -> None:
    cold = ProbeResult(SAMPLE, Verdict(Classification.COLD, Stage.LOAD))
    answer = probe_reply("m", cold, num_ctx=2048, agent="Kitchen").answer("s")
    assert list(answer)[:6] == [
        "summary",
        "model",
        "classification",
        "dominant_stage",
        "num_ctx",
        "agent",
    ]
    assert answer["classification"] == "cold"
    assert answer["dominant_stage"] == "load"
    assert answer["num_ctx"] == 2048
    assert answer["prefill_ms"] == 40.0
    assert [s.key for s in probe_reply("m", WARM, num_ctx=None, agent=None).said] == ["probe_warm"]


def test_a_dashboards_whole_hours_are_written_as_such() -> None:
    assert dashboard_hours(6.0) == 6
    assert type(dashboard_hours(6.0)) is int
    assert dashboard_hours(0.05) == 0.05
    assert type(dashboard_hours(1.5)) is float


@given(st.floats(min_value=0.05, max_value=366 * 24))
def test_a_dashboards_span_keeps_its_value(hours: float) -> None:
    shown = dashboard_hours(hours)
    assert shown == hours
    assert isinstance(shown, int) == hours.is_integer()


def test_the_models_offered_are_every_servers_once_sorted() -> None:
    assert offered_models([["b", "a"], ["a", "c"], []]) == ["a", "b", "c"]
    assert offered_models([]) == []
    assert model_selector(["a", "b"]) == {
        "select": {"options": ["a", "b"], "custom_value": True, "mode": "dropdown"}
    }
