"""Pins without Home Assistant: when a pin is asserted again, per server kind, clock passed in."""

from datetime import UTC, datetime, timedelta

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.backends.llama_server import LLAMA_SERVER_CAPABILITIES
from custom_components.llm_warmth.core.backends.llama_swap import LLAMA_SWAP_CAPABILITIES
from custom_components.llm_warmth.core.backends.ollama import OLLAMA_CAPABILITIES
from custom_components.llm_warmth.core.backends.types import ResidencyState, ResidentModel
from custom_components.llm_warmth.core.pins import (
    REASSERT_BACKOFF,
    REASSERT_BACKOFF_MAX,
    Pin,
    PinBook,
    Reassertion,
    ReassertReason,
)

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
FOREVER = T0 + timedelta(days=365 * 292)
ALL = frozenset({"a", "b", "c"})


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def held(
    name: str, expires: datetime | None = FOREVER, state: ResidencyState = ResidencyState.LOADED
) -> dict[str, ResidentModel]:
    return {name: ResidentModel(name=name, state=state, expires_at=expires)}


def reasons(book: PinBook, resident: dict[str, ResidentModel], now: datetime) -> list[str]:
    return [f"{due.pin.model}:{due.reason.value}" for due in book.due(resident, ALL, now)]


def test_ollama_pin_until_unpinned_wants_an_expiry_for_ever() -> None:
    book = PinBook(OLLAMA_CAPABILITIES, {"a": Pin(model="a", since=T0)})
    assert reasons(book, held("a"), at(1)) == []
    # Another client's keep_alive of 5 minutes: the last writer won.
    assert reasons(book, held("a", at(300)), at(1)) == ["a:expiry_shortened"]
    assert reasons(book, {}, at(1)) == ["a:gone"]
    # Loading (Ollama's zero expiry): wait for it.
    assert reasons(book, held("a", None, ResidencyState.LOADING), at(1)) == []


def test_ollama_pin_until_a_time_wants_the_expiry_no_earlier() -> None:
    pin = Pin(model="a", until=at(3600), since=T0)
    assert pin.keep_seconds(at(600)) == 3000
    assert pin.keep_seconds(at(3599.5)) == 1.0  # never 0: that is an unload
    book = PinBook(OLLAMA_CAPABILITIES, {"a": pin})
    assert reasons(book, held("a", at(3600)), at(1)) == []
    assert reasons(book, held("a", at(3590)), at(1)) == []  # within the tolerance
    assert reasons(book, held("a", at(1800)), at(1)) == ["a:expiry_shortened"]
    # Ended: not asserted, and dropped.
    assert reasons(book, {}, at(3600)) == []
    assert [p.model for p in book.drop_expired(at(3600))] == ["a"]
    assert book.pins == {}


@pytest.mark.parametrize("capabilities", [LLAMA_SERVER_CAPABILITIES, LLAMA_SWAP_CAPABILITIES])
def test_servers_that_keep_by_their_own_rule_are_asked_again_only_when_gone(
    capabilities: object,
) -> None:
    book = PinBook(capabilities, {"a": Pin(model="a", until=at(3600), since=T0)})  # type: ignore[arg-type]
    assert reasons(book, held("a", None), at(1)) == []
    assert reasons(book, held("a", None, ResidencyState.SLEEPING), at(1)) == ["a:gone"]
    assert reasons(book, held("b", None), at(1)) == ["a:gone"]
    # Another model loading (another client's request): wait until it is there.
    assert reasons(book, held("b", None, ResidencyState.LOADING), at(1)) == []


def test_highest_priority_first_and_released_or_missing_models_wait() -> None:
    book = PinBook(
        LLAMA_SERVER_CAPABILITIES,
        {
            "a": Pin(model="a", priority=-5, since=T0),
            "b": Pin(model="b", priority=10, since=T0),
            "c": Pin(model="c", since=T0),
            "gone": Pin(model="gone", priority=50, since=T0),  # the server no longer has it
        },
    )
    assert reasons(book, {}, at(1)) == ["b:gone", "c:gone", "a:gone"]
    book.release("b", "protected_entity", at(1))
    assert book.get("b").released == "protected_entity"  # type: ignore[union-attr]
    assert reasons(book, {}, at(1)) == ["c:gone", "a:gone"]
    book.reapply("b")
    assert book.get("b").released is None  # type: ignore[union-attr]
    assert reasons(book, {}, at(2))[0] == "b:gone"


def test_a_pin_that_keeps_going_waits_longer_each_time() -> None:
    """Two pins that do not fit together must not keep the server loading all day."""
    pin = Pin(model="a", since=T0)
    gone = Reassertion(pin, ReassertReason.GONE)
    book = PinBook(LLAMA_SERVER_CAPABILITIES, {"a": pin})
    now = T0
    waits: list[float] = []
    for _ in range(8):
        assert reasons(book, {}, now) == ["a:gone"]
        book.asserted(gone, now)
        wait = 0.0
        while reasons(book, {}, now + timedelta(seconds=wait)) == []:
            wait += 15
        waits.append(wait)
        now += timedelta(seconds=wait)
    assert waits[0] == REASSERT_BACKOFF.total_seconds()
    assert waits[1] == 2 * waits[0]
    assert max(waits) == REASSERT_BACKOFF_MAX.total_seconds()
    # Once it held for a while, the back-off starts afresh.
    book.asserted(gone, now + 3 * REASSERT_BACKOFF_MAX)
    assert reasons(book, {}, now + 3 * REASSERT_BACKOFF_MAX + REASSERT_BACKOFF) == ["a:gone"]
    # Another reason is no repetition: asked at once.
    book.asserted(Reassertion(pin, ReassertReason.EXPIRY_SHORTENED), now)
    assert reasons(book, {}, now) == ["a:gone"]
    # A new pin of the same model starts without back-off.
    book.asserted(gone, now)
    book.pin(Pin(model="a", since=now))
    assert reasons(book, {}, now) == ["a:gone"]
    assert book.unpin("a") is not None
    assert book.unpin("a") is None


def test_a_stored_pin_round_trips_and_damage_is_refused() -> None:
    pin = Pin(
        model="a",
        priority=7,
        until=at(60),
        num_ctx=1024,
        since=T0,
        released="headroom_low",
        released_at=at(30),
    )
    assert Pin.from_dict(pin.as_dict()) == pin
    for damage in (
        [],
        {"model": ""},
        {"model": "a", "priority": 1000, "since": T0.isoformat()},
        {"model": "a", "priority": True, "since": T0.isoformat()},
        {"model": "a", "num_ctx": -1, "since": T0.isoformat()},
        {"model": "a", "released": 3, "since": T0.isoformat()},
        {"model": "a"},
        {"model": "a", "since": "2026-11-30T06:00:00"},  # no zone
        {"model": "a", "since": 12},
        {"model": "a", "since": "yesterday"},
    ):
        with pytest.raises(ValueError, match=r"."):
            Pin.from_dict(damage)


@given(
    values=st.dictionaries(
        st.sampled_from(["model", "priority", "until", "num_ctx", "since", "released"]),
        st.none() | st.booleans() | st.integers() | st.text(max_size=30) | st.floats(),
    )
)
def test_any_stored_value_is_read_or_refused_with_value_error(values: dict[str, object]) -> None:
    try:
        pin = Pin.from_dict(values)
    except ValueError:
        return
    assert isinstance(pin.model, str)
    assert pin.model
    assert isinstance(pin.priority, int)
    assert -100 <= pin.priority <= 100


def test_reasons_are_stable_names() -> None:
    assert [r.value for r in ReassertReason] == ["gone", "expiry_shortened"]


# ---------------------------------------------------------------- each rule at its edge

SINCE = T0.isoformat()


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        ({"model": ""}, "no model"),
        ({"model": 3}, "no model"),
        ({"model": "a", "priority": -101}, "bad priority"),
        ({"model": "a", "priority": 101}, "bad priority"),
        ({"model": "a", "num_ctx": 0}, "bad num_ctx"),
    ],
)
def test_each_damage_of_a_stored_pin_is_refused_for_what_it_is(
    damage: dict[str, object], why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        Pin.from_dict({"since": SINCE, **damage})


def test_a_stored_pin_reads_priorities_from_minus_100_to_100_and_a_context_of_one() -> None:
    assert Pin.from_dict({"model": "a", "since": SINCE, "priority": -100}).priority == -100
    assert Pin.from_dict({"model": "a", "since": SINCE, "priority": 100}).priority == 100
    assert Pin.from_dict({"model": "a", "since": SINCE, "num_ctx": 1}).num_ctx == 1
    unsaid = Pin.from_dict({"model": "a", "since": SINCE})
    assert (unsaid.priority, unsaid.num_ctx) == (0, None)
    assert Pin(model="a", since=T0).as_dict()["priority"] == 0


def test_an_expiry_up_to_30_seconds_short_of_the_pins_end_is_not_shortened() -> None:
    """Ollama sets the expiry from the request's arrival: polls and clocks add a little."""
    book = PinBook(OLLAMA_CAPABILITIES, {"a": Pin(model="a", until=at(3600), since=T0)})
    assert reasons(book, held("a", at(3570)), at(1)) == []
    assert reasons(book, held("a", at(3569.999)), at(1)) == ["a:expiry_shortened"]
    # Loaded but with no expiry told: nothing to compare, nothing asked.
    assert reasons(book, held("a", None), at(1)) == []


def test_the_back_off_is_a_minute_doubling_to_an_hour_and_ends_after_twice_its_wait() -> None:
    pin = Pin(model="a", since=T0)
    gone = Reassertion(pin, ReassertReason.GONE)
    book = PinBook(LLAMA_SERVER_CAPABILITIES, {"a": pin})
    book.asserted(gone, T0)
    assert reasons(book, {}, at(59)) == []
    assert reasons(book, {}, at(60)) == ["a:gone"]
    # Gone again within twice the minute: the second wait is two minutes.
    book.asserted(gone, at(119))
    assert reasons(book, {}, at(119 + 119)) == []
    assert reasons(book, {}, at(119 + 120)) == ["a:gone"]
    # Gone again exactly twice that wait later: it held, and the wait starts afresh.
    book.asserted(gone, at(119 + 240))
    assert reasons(book, {}, at(119 + 240 + 60)) == ["a:gone"]
    for count in range(12):
        book.asserted(gone, at(1000 + count))
    assert reasons(book, {}, at(1011 + 3599)) == []
    assert reasons(book, {}, at(1011 + 3600)) == ["a:gone"]
