"""Property tests of the integration as a whole: malformed replies in, sane entities out.

One Home Assistant with the integration set up against the emulator serves all the
examples of a test: each example makes the server answer with a drawn reply, polls (or
runs the probe action), checks what Home Assistant shows, then lets the server answer
normally again and checks that everything recovers.
"""

from datetime import datetime
import logging
import math
import random
from typing import Any

from homeassistant.const import STATE_UNAVAILABLE, STATE_UNKNOWN
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er
from homeassistant.util import dt as dt_util
from hypothesis import HealthCheck, example, given, settings, strategies as st
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth.const import DOMAIN
from custom_components.llm_warmth.core.backends.replies import MAX_DURATION_NS, MAX_TOKENS
from custom_components.llm_warmth.core.backends.types import TimedReply
from custom_components.llm_warmth.core.load_figures import FigureSource, LoadFigures
from custom_components.llm_warmth.core.model_timing import ModelTiming
from custom_components.llm_warmth.core.ttft import (
    Classification,
    Stage,
    Verdict,
    breakdown,
)
from custom_components.llm_warmth.storage import EntryStore, stored_records

from . import malformed
from .conftest import ENTRY_ID, GIB, LLAMA, ollama_request
from .ollama_emulator import NDJSON, OllamaEmulator

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
RESIDENT_MODELS = "sensor.ollama_test_resident_models"
CONNECTIVITY = "binary_sensor.ollama_test_connectivity"


def fresh_random() -> None:
    """Give Home Assistant real randomness again.

    Hypothesis seeds the ``random`` module the same way for every example; Home Assistant
    draws its registry ids from it, so a model's entity created in one example would get
    the id of another's deleted in an earlier one, and the registry's index breaks.
    """
    random.seed()


def assert_states_are_sane(hass: HomeAssistant) -> None:
    """Every entity of the integration is unavailable, unknown, or a valid value."""
    registry = er.async_get(hass)
    for entry in er.async_entries_for_config_entry(registry, ENTRY_ID):
        state = hass.states.get(entry.entity_id)
        if state is None or state.state in (STATE_UNAVAILABLE, STATE_UNKNOWN):
            continue
        device_class = state.attributes.get("device_class")
        if device_class == "timestamp":
            parsed = dt_util.parse_datetime(state.state)
            assert parsed is not None, (entry.entity_id, state.state)
        elif "unit_of_measurement" in state.attributes:
            assert math.isfinite(float(state.state)), (entry.entity_id, state.state)
        elif entry.domain == "binary_sensor":
            assert state.state in ("on", "off"), (entry.entity_id, state.state)


def assert_no_traceback_since(caplog: pytest.LogCaptureFixture, mark: int) -> None:
    for record in caplog.records[mark:]:
        assert not (record.exc_info and record.levelno >= logging.WARNING), record.getMessage()
        assert "Unexpected error" not in record.getMessage(), record.getMessage()


@pytest.fixture
async def integration(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> MockConfigEntry:
    """The integration with one model resident, so that there is something to lose."""
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": "1h"})
    coordinator = init_integration.runtime_data.coordinator
    await coordinator.async_refresh()
    await coordinator.async_refresh()
    await hass.async_block_till_done()
    return init_integration


def _ps(**entry: object) -> tuple[int, bytes]:
    model = {"name": LLAMA, "size": GIB, "size_vram": GIB, "expires_at": "2026-11-29T09:00:00Z"}
    return 200, malformed.dumps({"models": [model | entry]})


OK = (200, b'{"models": []}')
VERSION = (200, b'{"version": "0.12.6"}')


@FUZZ
@example(ps=_ps(expires_at="9999-12-31T23:00:00-01:00"), tags=OK, version=VERSION)
@example(ps=_ps(size=10**400, size_vram=10**400), tags=OK, version=VERSION)
@example(ps=_ps(size=2**64 + 1, size_vram=2**64 + 1), tags=OK, version=VERSION)
@example(ps=_ps(context_length=True), tags=OK, version=VERSION)
@example(ps=OK, tags=(200, b'{"models": [{"name": "x", "size": 1e999}]}'), version=VERSION)
@example(ps=(500, b"[" * 100_000), tags=OK, version=(200, b"[" * 100_000))
@given(
    ps=malformed.replies(malformed.ps_reply),
    tags=malformed.replies(malformed.tags_reply),
    version=malformed.replies(malformed.version_reply),
)
async def test_coordinator_survives_any_reply(
    hass: HomeAssistant,
    integration: MockConfigEntry,
    emulator: OllamaEmulator,
    caplog: pytest.LogCaptureFixture,
    ps: tuple[int, bytes],
    tags: tuple[int, bytes],
    version: tuple[int, bytes],
) -> None:
    fresh_random()
    coordinator = integration.runtime_data.coordinator
    mark = len(caplog.records)
    for path, (status, body) in (("/api/ps", ps), ("/api/tags", tags), ("/api/version", version)):
        emulator.inject(path, status=status, body=body, times=None)
    # The tags and version replies count too: make this poll read them.
    coordinator.monitor._installed_at = None
    coordinator.monitor._version_at = None
    await coordinator.async_refresh()
    await coordinator.async_refresh()
    await hass.async_block_till_done()
    assert_states_are_sane(hass)

    emulator.clear_faults()
    for _ in range(3):  # a reload or an unexplained unload settles within two polls
        await coordinator.async_refresh()
    await hass.async_block_till_done()
    assert_states_are_sane(hass)
    assert hass.states.get(CONNECTIVITY).state == "on"
    assert hass.states.get(RESIDENT_MODELS).state == "1"
    assert hass.states.get("binary_sensor.ollama_test_llama3_2_3b_resident").state == "on"
    assert_no_traceback_since(caplog, mark)


def _final(**metrics: object) -> tuple[int, bytes]:
    chunk = {"message": {"content": "Hi"}, "done": True, "eval_count": 1} | metrics
    return 200, malformed.dumps(chunk) + b"\n"


@FUZZ
@example(stream=_final(prompt_eval_count=2**64 + 1))
@example(stream=_final(load_duration=int("9" * 401)))
@example(stream=_final(eval_duration=10**400, eval_count=10**400))
@example(stream=(200, b"[" * 100_000 + b"\n"))
@example(stream=(500, b"[" * 100_000))
@given(stream=malformed.generation_streams())
async def test_probe_action_raises_only_home_assistant_errors(
    hass: HomeAssistant,
    integration: MockConfigEntry,
    emulator: OllamaEmulator,
    caplog: pytest.LogCaptureFixture,
    stream: tuple[int, bytes],
) -> None:
    fresh_random()
    mark = len(caplog.records)
    emulator.inject("/api/chat", status=stream[0], body=stream[1], content_type=NDJSON)
    error: HomeAssistantError | None = None
    response = None
    try:
        response = await hass.services.async_call(
            DOMAIN,
            "probe",
            {"config_entry_id": ENTRY_ID, "model": LLAMA, "timeout": 5},
            blocking=True,
            return_response=True,
        )
    except HomeAssistantError as err:  # anything else fails the test as it is
        error = err
    if error is not None:
        assert error.translation_domain == DOMAIN
        assert error.translation_key
    else:
        assert response is not None
        assert all(math.isfinite(value) for value in response.values() if isinstance(value, float))
    await hass.async_block_till_done()
    assert_states_are_sane(hass)
    assert_no_traceback_since(caplog, mark)


durations = st.integers(min_value=0, max_value=MAX_DURATION_NS)
counts = st.integers(min_value=0, max_value=MAX_TOKENS)


@st.composite
def timed_replies(draw: st.DrawFn) -> TimedReply:
    """Any reply the client lets through: every figure within the parser's bounds."""
    sent = draw(st.integers(min_value=0, max_value=2**62))
    first = sent + draw(durations)
    return TimedReply(
        sent_ns=sent,
        headers_ns=sent,
        first_token_ns=first,
        final_ns=first + draw(durations),
        load_duration_ns=draw(durations),
        prompt_eval_count=draw(counts),
        prompt_eval_duration_ns=draw(durations),
        eval_count=draw(counts),
        eval_duration_ns=draw(durations),
        total_duration_ns=draw(durations),
    )


@st.composite
def model_timings(draw: st.DrawFn) -> ModelTiming:
    """A model's measurements after any sequence of probes and loads."""
    timing = ModelTiming()
    seconds = st.floats(min_value=0, max_value=86_400, allow_nan=False)
    for reply in draw(st.lists(timed_replies(), max_size=7)):
        verdict = Verdict(draw(st.sampled_from(Classification)), draw(st.sampled_from(Stage)))
        at: datetime = draw(st.datetimes(timezones=st.just(dt_util.UTC)))
        timing = timing.with_probe(breakdown(reply), verdict, at)
        timing = timing.with_load(
            LoadFigures(
                load_seconds=draw(st.none() | seconds),
                load_source=draw(st.sampled_from(FigureSource)),
                cold_request_seconds=draw(st.none() | seconds),
                cold_request_source=draw(
                    st.sampled_from(
                        [FigureSource.CLIENT, FigureSource.POLLING, FigureSource.EVENTS]
                    )
                ),
            )
        )
    return timing


@FUZZ
@given(timings=st.dictionaries(st.text(min_size=1, max_size=40), model_timings(), max_size=3))
async def test_every_stored_value_survives_a_save_and_load(
    hass: HomeAssistant, hass_storage: dict[str, Any], timings: dict[str, ModelTiming]
) -> None:
    store = EntryStore(hass, ENTRY_ID)
    store.section("models", lambda: {name: t.as_dict() for name, t in timings.items()})
    await store.async_save()
    loaded = await EntryStore(hass, ENTRY_ID).async_load()
    assert stored_records(loaded["models"], ModelTiming.from_dict, "measurements") == timings
