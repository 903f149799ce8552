"""The actions' field checks without Home Assistant: clock and time zone passed in."""

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.action_fields import (
    FOREVER,
    MAX_KEEP,
    MIN_KEEP,
    Refused,
    check_context_change,
    check_diagnosis_models,
    check_evict_target,
    checked_duration,
    context_asked,
    end_time,
    keep_seconds,
    pin_end,
)
from custom_components.llm_warmth.core.backends.llama_server import LLAMA_SERVER_CAPABILITIES
from custom_components.llm_warmth.core.backends.llama_swap import LLAMA_SWAP_CAPABILITIES
from custom_components.llm_warmth.core.backends.ollama import OLLAMA_CAPABILITIES
from custom_components.llm_warmth.core.diagnose import Scenario

NOW = datetime(2026, 12, 5, 9, 30, tzinfo=UTC)
BEHIND = timezone(timedelta(hours=-5))  # a household behind UTC
AHEAD = timezone(timedelta(hours=14))


def refusal(call: object) -> tuple[str, dict[str, object]]:
    """Return the key and placeholders a refused check raised."""
    assert isinstance(call, Refused)
    return call.key, dict(call.placeholders)


def test_refused_carries_its_key_and_a_copy_of_its_placeholders() -> None:
    shown = {"model": "a"}
    err = Refused("diagnose_pinned", shown)
    shown["model"] = "b"
    assert (err.key, dict(err.placeholders), str(err)) == (
        "diagnose_pinned",
        {"model": "a"},
        "diagnose_pinned",
    )
    assert dict(Refused("evict_target").placeholders) == {}


def test_a_duration_is_a_second_to_ten_years() -> None:
    assert checked_duration("keep_for", timedelta(seconds=1)) == MIN_KEEP
    assert checked_duration("keep_for", timedelta(days=3650)) == MAX_KEEP
    with pytest.raises(Refused) as short:
        checked_duration("keep_for", timedelta(milliseconds=999))
    assert refusal(short.value) == (
        "duration_too_short",
        {"field": "keep_for", "seconds": "0.999"},
    )
    with pytest.raises(Refused) as negative:
        checked_duration("for", timedelta(seconds=-30))
    assert refusal(negative.value) == ("duration_too_short", {"field": "for", "seconds": "-30"})
    with pytest.raises(Refused) as long:
        checked_duration("for", MAX_KEEP + timedelta(microseconds=1))
    assert refusal(long.value) == ("duration_too_long", {"field": "for", "days": "3650"})
    # Home Assistant's reader gives timedelta.max for one beyond what Python counts.
    with pytest.raises(Refused, match="duration_too_long"):
        checked_duration("for", timedelta.max)


@given(st.timedeltas())
def test_a_duration_is_returned_as_given_or_refused(given_duration: timedelta) -> None:
    if MIN_KEEP <= given_duration <= MAX_KEEP:
        assert checked_duration("for", given_duration) == given_duration
    else:
        with pytest.raises(Refused, match=r"duration_too_(short|long)"):
            checked_duration("for", given_duration)


def test_an_end_time_is_returned_in_utc() -> None:
    until = end_time(datetime(2026, 12, 5, 11, 0, tzinfo=BEHIND), NOW, AHEAD)
    assert until == datetime(2026, 12, 5, 16, 0, tzinfo=UTC)
    assert until.tzinfo is UTC


def test_a_time_without_zone_is_the_households() -> None:
    # 09:00 in a household five hours behind UTC is 14:00 UTC.
    assert end_time(datetime(2026, 12, 5, 9, 0), NOW, BEHIND) == datetime(
        2026, 12, 5, 14, 0, tzinfo=UTC
    )
    assert end_time(datetime(2026, 12, 5, 9, 0), NOW - timedelta(hours=1), UTC) == datetime(
        2026, 12, 5, 9, 0, tzinfo=UTC
    )


def test_an_end_time_is_a_second_ahead_at_least() -> None:
    assert end_time(NOW + timedelta(seconds=1), NOW, UTC) == NOW + timedelta(seconds=1)
    for past in (NOW + timedelta(milliseconds=999), NOW, NOW - timedelta(days=1)):
        with pytest.raises(Refused) as err:
            end_time(past, NOW, UTC)
        assert refusal(err.value) == ("keep_until_past", {"until": past})


def test_an_end_time_is_ten_years_ahead_at_most() -> None:
    assert end_time(NOW + MAX_KEEP, NOW, UTC) == NOW + MAX_KEEP
    too_far = NOW + MAX_KEEP + timedelta(microseconds=1)
    with pytest.raises(Refused) as err:
        end_time(too_far, NOW, UTC)
    assert refusal(err.value) == ("keep_too_far", {"until": too_far, "days": "3650"})


def test_an_end_time_past_any_zones_reach_is_shown_as_given() -> None:
    # A naive 9999-12-31 in a zone behind UTC is past the last date Python counts.
    last = datetime(9999, 12, 31, 23, 0)
    with pytest.raises(Refused) as err:
        end_time(last, NOW, BEHIND)
    assert refusal(err.value) == ("keep_too_far", {"until": "9999-12-31T23:00:00", "days": "3650"})


def test_a_time_that_did_not_read_is_said_back_as_given() -> None:
    with pytest.raises(Refused) as err:
        end_time("10000-01-01", NOW, UTC)
    assert refusal(err.value) == ("time_not_read", {"given": "10000-01-01", "days": "3650"})


ZONES = st.sampled_from([UTC, BEHIND, AHEAD])


@given(st.datetimes(timezones=ZONES), ZONES)
def test_an_end_time_is_ahead_within_its_range_or_refused(
    given_time: datetime, zone: timezone
) -> None:
    if timedelta(seconds=1) <= given_time - NOW <= MAX_KEEP:
        until = end_time(given_time, NOW, zone)
        assert until == given_time
        assert until.tzinfo is UTC
    else:
        with pytest.raises(Refused, match=r"keep_too_far|keep_until_past"):
            end_time(given_time, NOW, zone)


def keep(**kw: object) -> float | None:
    fields: dict[str, object] = {
        "forever": False,
        "keep_for": None,
        "keep_until": None,
        "now": NOW,
        "zone": UTC,
        "capabilities": OLLAMA_CAPABILITIES,
        "server": "Den",
        **kw,
    }
    return keep_seconds(**fields)  # type: ignore[arg-type]


def test_a_preload_keeps_for_ever_for_a_while_until_a_time_or_as_the_server_does() -> None:
    assert keep() is None
    assert keep(forever=True) == FOREVER == -1
    assert keep(keep_for=timedelta(minutes=5)) == 300
    assert keep(keep_until=NOW + timedelta(hours=2)) == 7200
    # A naive time is the household's: 10:30 five hours behind is 15:30 UTC, 6 h ahead.
    assert keep(keep_until=datetime(2026, 12, 5, 10, 30), zone=BEHIND) == 6 * 3600


def test_a_preloads_keep_is_checked_in_its_range() -> None:
    with pytest.raises(Refused) as short:
        keep(keep_for=timedelta(0))
    assert refusal(short.value)[0] == "duration_too_short"
    assert dict(short.value.placeholders)["field"] == "keep_for"
    with pytest.raises(Refused, match="keep_until_past"):
        keep(keep_until=NOW)


def test_only_ollama_takes_a_keep_the_others_say_how_they_keep() -> None:
    assert keep(capabilities=LLAMA_SERVER_CAPABILITIES) is None
    with pytest.raises(Refused) as lru:
        keep(forever=True, capabilities=LLAMA_SERVER_CAPABILITIES)
    assert refusal(lru.value) == ("keep_not_supported_lru", {"server": "Den"})
    with pytest.raises(Refused) as ttl:
        keep(keep_for=timedelta(minutes=1), capabilities=LLAMA_SWAP_CAPABILITIES)
    assert refusal(ttl.value) == ("keep_not_supported_ttl", {"server": "Den"})
    # Out of range is said first.
    with pytest.raises(Refused, match="duration_too_long"):
        keep(keep_for=timedelta.max, capabilities=LLAMA_SWAP_CAPABILITIES)


def test_a_pin_ends_when_unpinned_after_a_while_or_at_a_time() -> None:
    assert pin_end(pin_for=None, until=None, now=NOW, zone=UTC) is None
    assert pin_end(pin_for=timedelta(hours=1), until=None, now=NOW, zone=UTC) == NOW + timedelta(
        hours=1
    )
    assert pin_end(
        pin_for=None, until=datetime(2026, 12, 5, 6, 0), now=NOW, zone=BEHIND
    ) == datetime(2026, 12, 5, 11, 0, tzinfo=UTC)
    with pytest.raises(Refused) as err:
        pin_end(pin_for=timedelta(0), until=None, now=NOW, zone=UTC)
    assert refusal(err.value) == ("duration_too_short", {"field": "for", "seconds": "0"})
    with pytest.raises(Refused, match="keep_until_past"):
        pin_end(pin_for=None, until=NOW - timedelta(hours=1), now=NOW, zone=UTC)


def test_an_eviction_names_a_model_or_all() -> None:
    check_evict_target(every=True, model=None)
    check_evict_target(every=False, model="a")
    for every, model in ((True, "a"), (False, None)):
        with pytest.raises(Refused) as err:
            check_evict_target(every=every, model=model)
        assert refusal(err.value) == ("evict_target", {})


def test_only_ollama_takes_a_context_per_request() -> None:
    assert context_asked(4096, OLLAMA_CAPABILITIES, "Den") == 4096
    assert context_asked(None, OLLAMA_CAPABILITIES, "Den") is None
    assert context_asked(None, LLAMA_SWAP_CAPABILITIES, "Den") is None
    with pytest.raises(Refused) as err:
        context_asked(4096, LLAMA_SERVER_CAPABILITIES, "Den")
    assert refusal(err.value) == ("num_ctx_not_supported", {"server": "Den"})


def test_a_diagnosis_refuses_a_pinned_model_either_one() -> None:
    check_diagnosis_models(Scenario.COLD_VS_REPEAT, "a", None, {"b"})
    check_diagnosis_models(Scenario.MODEL_SWITCH, "a", "b", {"c"})
    with pytest.raises(Refused) as target:
        check_diagnosis_models(Scenario.COLD_VS_REPEAT, "a", None, {"a"})
    assert refusal(target.value) == ("diagnose_pinned", {"model": "a"})
    with pytest.raises(Refused) as other:
        check_diagnosis_models(Scenario.MODEL_SWITCH, "a", "b", {"b"})
    assert refusal(other.value) == ("diagnose_pinned", {"model": "b"})


def test_a_switch_needs_another_model() -> None:
    for scenario in (Scenario.MODEL_SWITCH, Scenario.COMPETING_LOAD):
        for other in (None, "a"):
            with pytest.raises(Refused) as err:
                check_diagnosis_models(scenario, "a", other, set())
            assert refusal(err.value) == ("diagnose_other_model", {"scenario": scenario})
    # A pinned target is said before the missing other model.
    with pytest.raises(Refused, match="diagnose_pinned"):
        check_diagnosis_models(Scenario.MODEL_SWITCH, "a", None, {"a"})
    check_diagnosis_models(Scenario.SHORT_VS_LONG, "a", None, set())


def test_a_context_change_needs_a_context_and_ollama() -> None:
    for scenario in Scenario:
        if scenario is not Scenario.CONTEXT_CHANGE:
            check_context_change(
                scenario, None, model="a", capabilities=LLAMA_SWAP_CAPABILITIES, server="Den"
            )
    check_context_change(
        Scenario.CONTEXT_CHANGE, 2048, model="a", capabilities=OLLAMA_CAPABILITIES, server="Den"
    )
    with pytest.raises(Refused) as ollama:
        check_context_change(
            Scenario.CONTEXT_CHANGE, None, model="a", capabilities=OLLAMA_CAPABILITIES, server="Den"
        )
    assert refusal(ollama.value) == ("diagnose_no_context", {"model": "a"})
    with pytest.raises(Refused) as other:
        check_context_change(
            Scenario.CONTEXT_CHANGE,
            None,
            model="a",
            capabilities=LLAMA_SERVER_CAPABILITIES,
            server="Den",
        )
    assert refusal(other.value) == ("context_change_not_supported", {"server": "Den"})
