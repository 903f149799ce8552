"""The logbook tells the integration's events in words, as a household reads them."""

from collections.abc import Callable

from homeassistant.core import Event, HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events
from syrupy.assertion import SnapshotAssertion

from custom_components.llm_warmth import logbook
from custom_components.llm_warmth.const import (
    DOMAIN,
    EVENT_AUTO_WARM,
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
    EVENT_VOICE_TURN,
)

from .conftest import LLAMA, QWEN, ollama_request, start_load
from .ollama_emulator import OllamaEmulator

type Describer = Callable[[Event], dict[str, str]]


def describers(hass: HomeAssistant) -> dict[str, Describer]:
    """Return what the platform registers, as Home Assistant's logbook would call it."""
    found: dict[str, Describer] = {}

    def describe_event(domain: str, event_type: str, describe: Describer) -> None:
        assert domain == DOMAIN
        found[event_type] = describe

    logbook.async_describe_events(hass, describe_event)
    return found


async def test_every_event_is_described(hass: HomeAssistant, snapshot: SnapshotAssertion) -> None:
    described = describers(hass)
    # A cold start is told on its load's line: its own event has none.
    assert set(described) == {
        EVENT_AUTO_WARM,
        EVENT_MODEL_LOADED,
        EVENT_MODEL_UNLOADED,
        EVENT_SERVER_RESTARTED,
        EVENT_VOICE_TURN,
    }
    server = {"server": "Ollama gpu-box:11434"}
    samples = [
        (EVENT_MODEL_LOADED, {"model": "big", "load_seconds": 7.46, "reloaded": False}),
        (EVENT_MODEL_LOADED, {"model": "big", "cold_request_seconds": 20.9, "reloaded": True}),
        (EVENT_MODEL_LOADED, {"model": "tiny", "load_seconds": None, "reloaded": False}),
        # A preload, a pin: LLM Warmth's own load, timed exactly, nobody waited.
        (
            EVENT_MODEL_LOADED,
            {"model": "big", "load_seconds": 7.0, "load_source": "client", "cold_start": False},
        ),
        # Another client's load that a request waited for: one line tells both.
        (
            EVENT_MODEL_LOADED,
            {
                "model": "big",
                "load_seconds": 7.0,
                "load_source": "server",
                "cold_request_seconds": 7.8,
                "cold_request_source": "client",
                "cold_start": True,
            },
        ),
        (EVENT_MODEL_LOADED, {"model": "big", "cold_start": True}),
        (EVENT_MODEL_UNLOADED, {"model": "tiny", "reason": "displaced", "replaced_by": ["big"]}),
        (EVENT_MODEL_UNLOADED, {"model": "big", "reason": "expired", "replaced_by": []}),
        (EVENT_MODEL_UNLOADED, {"model": "big", "reason": "unloaded", "replaced_by": []}),
        (EVENT_MODEL_UNLOADED, {"model": "big", "reason": "server_restarted"}),
        (EVENT_MODEL_UNLOADED, {"model": "big", "reason": "on_request", "replaced_by": []}),
        # A probe of ours waited for the load: its first token, and where the time went.
        (
            EVENT_MODEL_LOADED,
            {
                "model": "big",
                "load_seconds": 9.3,
                "load_source": "server",
                "cold_start": True,
                "source": "probe",
                "ttft_ms": 35877.2,
                "dominant_stage": "load",
            },
        ),
        # What polling saw of another client's load is a lower bound.
        (
            EVENT_MODEL_LOADED,
            {
                "model": "big",
                "cold_request_seconds": 4.5,
                "cold_request_source": "polling",
                "cold_start": True,
            },
        ),
        (EVENT_SERVER_RESTARTED, {"reason": "reconnected", "version": "0.9.3"}),
        # A voice turn: the silence, and what it waited for most.
        (
            EVENT_VOICE_TURN,
            {
                "pipeline_name": "Kitchen",
                "model": "qwen3:8b",
                "dominant_stage": "load",
                "load_seconds": 7.8,
                "load_source": "server",
                "silence_seconds": 9.1,
            },
        ),
        (
            EVENT_VOICE_TURN,
            {
                "pipeline_name": "Kitchen",
                "model": "qwen3:8b",
                "dominant_stage": "load",
                "load_seconds": 4.5,
                "load_source": "polling",
            },
        ),
        (
            EVENT_VOICE_TURN,
            {"pipeline_name": "Kitchen", "dominant_stage": "prefill", "silence_seconds": 1.06},
        ),
        (EVENT_VOICE_TURN, {"pipeline_name": "Kitchen", "error": "intent-failed"}),
        (EVENT_VOICE_TURN, {"pipeline_name": "Kitchen", "dominant_stage": None}),
        (
            EVENT_SERVER_RESTARTED,
            {"reason": "version_changed", "version": "0.10.0", "previous_version": "0.9.3"},
        ),
        # Every load auto-warm sends says why: a signal that leads a use, or the clock.
        (
            EVENT_AUTO_WARM,
            {
                "model": "qwen3:8b",
                "reason": "signal",
                "until": "2026-12-01T07:22:00+00:00",
                "signal_entity_id": "binary_sensor.kitchen_motion",
                "signal_name": "Kitchen motion",
                "signal_state": "on",
                "within_minutes": 12,
                "share_percent": 64,
            },
        ),
        (
            EVENT_AUTO_WARM,
            {
                "model": "qwen3:8b",
                "reason": "signal",
                "until": "2026-12-01T06:50:00+00:00",
                "signal_entity_id": "sensor.phone_next_alarm",
                "signal_state": "alarm",
                "within_minutes": 20,
                "share_percent": 80,
            },
        ),
        (
            EVENT_AUTO_WARM,
            {
                "model": "qwen3:8b",
                "reason": "expected_use",
                "until": "2026-12-01T07:20:00+00:00",
                "expected_at": "2026-12-01T07:00:00+00:00",
            },
        ),
        (EVENT_AUTO_WARM, {"model": "qwen3:8b", "reason": "expected_use"}),
    ]
    assert [described[kind](Event(kind, {**server, **data})) for kind, data in samples] == snapshot


async def test_what_the_integration_fired_reads_well(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
    make_resident,
) -> None:
    """Events the integration really fired, described (a displacement by another model)."""
    fired = async_capture_events(hass, EVENT_MODEL_UNLOADED)
    await make_resident(LLAMA, keep_alive=-1)
    await ollama_request(emulator, "/api/generate", {"model": QWEN})
    await poll()
    described = describers(hass)
    assert [described[e.event_type](e) for e in fired] == [
        {
            "name": LLAMA,
            "message": f"was pushed out of memory by {QWEN}",
            # Filed under the model's warmth: it shows on the model's device page.
            "entity_id": "sensor.ollama_test_llama3_2_3b",
        }
    ]


async def test_a_cold_start_with_its_load_is_one_line_in_the_models_logbook(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    emulator: OllamaEmulator,
    poll,
) -> None:
    """Another client's load that its request waited for: the load's line tells both."""
    loaded = async_capture_events(hass, EVENT_MODEL_LOADED)
    cold_starts = async_capture_events(hass, EVENT_COLD_START)
    load = await start_load(emulator, LLAMA, 0.3)
    await poll()
    await load
    await poll()
    assert len(loaded) == len(cold_starts) == 1
    described = describers(hass)
    line = described[EVENT_MODEL_LOADED](loaded[0])
    assert line["entity_id"] == "sensor.ollama_test_llama3_2_3b"
    assert line["message"].endswith("(a cold start)")
    # The cold start's own event still fires, for automations, filed under the model as
    # every event of the model is; the logbook (the Activity panel too) has no line for it.
    assert cold_starts[0].data["entity_id"] == "sensor.ollama_test_llama3_2_3b"
    assert EVENT_COLD_START not in described
