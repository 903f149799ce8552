"""The logbook tells the integration's events in words, as a household reads them."""

from collections.abc import Callable

from homeassistant.core import Event, HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events
from syrupy.assertion import SnapshotAssertion

from custom_components.llm_warmth import logbook
from custom_components.llm_warmth.const import (
    DOMAIN,
    EVENT_COLD_START,
    EVENT_MODEL_LOADED,
    EVENT_MODEL_UNLOADED,
    EVENT_SERVER_RESTARTED,
)

from .conftest import LLAMA, QWEN, ollama_request
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
    assert set(described) == {
        EVENT_MODEL_LOADED,
        EVENT_MODEL_UNLOADED,
        EVENT_COLD_START,
        EVENT_SERVER_RESTARTED,
    }
    server = {"server": "Ollama gpu-box:11434"}
    samples = [
        (EVENT_MODEL_LOADED, {"model": "big", "load_seconds": 7.46, "reloaded": False}),
        (EVENT_MODEL_LOADED, {"model": "big", "cold_request_seconds": 20.9, "reloaded": True}),
        (EVENT_MODEL_LOADED, {"model": "tiny", "load_seconds": None, "reloaded": False}),
        (EVENT_MODEL_UNLOADED, {"model": "tiny", "reason": "displaced", "replaced_by": ["big"]}),
        (EVENT_MODEL_UNLOADED, {"model": "big", "reason": "expired", "replaced_by": []}),
        (EVENT_MODEL_UNLOADED, {"model": "big", "reason": "unloaded", "replaced_by": []}),
        (EVENT_MODEL_UNLOADED, {"model": "big", "reason": "server_restarted"}),
        (EVENT_MODEL_UNLOADED, {"model": "big", "reason": "on_request", "replaced_by": []}),
        (
            EVENT_COLD_START,
            {"model": "big", "source": "probe", "ttft_ms": 35877.2, "dominant_stage": "load"},
        ),
        (EVENT_COLD_START, {"model": "big", "source": "passive", "ttft_ms": None}),
        (EVENT_COLD_START, {"model": "big", "source": "passive", "load_seconds": 2.5}),
        # What polling saw of another client's load is a lower bound.
        (
            EVENT_MODEL_LOADED,
            {"model": "big", "cold_request_seconds": 4.5, "cold_request_source": "polling"},
        ),
        (
            EVENT_COLD_START,
            {
                "model": "big",
                "source": "passive",
                "cold_request_seconds": 4.5,
                "cold_request_source": "polling",
            },
        ),
        (EVENT_SERVER_RESTARTED, {"reason": "reconnected", "version": "0.9.3"}),
        (
            EVENT_SERVER_RESTARTED,
            {"reason": "version_changed", "version": "0.10.0", "previous_version": "0.9.3"},
        ),
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
            "message": f"was unloaded: {QWEN} took its place",
            # Filed under the model's warmth: it shows on the model's device page.
            "entity_id": "sensor.ollama_test_llama3_2_3b_warmth",
        }
    ]
