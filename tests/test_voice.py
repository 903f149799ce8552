"""Voice turns through a real Assist pipeline: each stage timed, explained, warmed at the wake.

Home Assistant's own Ollama agent answers on the Ollama emulator, which LLM Warmth follows;
the harness (``tests/assist.py``) speaks to a satellite that walks through its states.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from types import SimpleNamespace

from homeassistant.components.recorder.history import get_significant_states
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers import (
    area_registry as ar,
    device_registry as dr,
    entity_registry as er,
    issue_registry as ir,
)
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_capture_events,
    async_fire_time_changed,
)
from pytest_homeassistant_custom_component.components.recorder.common import (
    async_wait_recording_done,
)

from custom_components.llm_warmth import async_remove_config_entry_device, logbook
from custom_components.llm_warmth.const import CONF_PROTECTED_ENTITIES, DOMAIN, EVENT_VOICE_TURN
from custom_components.llm_warmth.core.voice import WAKE_KEEP
from custom_components.llm_warmth.core.voice_record import WakeCounts
from custom_components.llm_warmth.core.wake_run import GIB
from custom_components.llm_warmth.data import LlmWarmthData
from custom_components.llm_warmth.voice import READ_DELAY, voice_subject

from .assist import Assist, assist_fixture, hass_config_dir_fixture, pipeline_debug_broken  # noqa: F401
from .conftest import ENTRY_ID, LLAMA, ollama_request
from .ollama_emulator import OllamaEmulator
from .test_logbook import describers

pytestmark = pytest.mark.usefixtures("init_integration")
PLEX = "binary_sensor.plex_transcoding"


async def settle(hass: HomeAssistant) -> None:
    """Let the feature read the turn: it does, READ_DELAY after the satellite's idle."""
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=READ_DELAY + 0.1))
    await hass.async_block_till_done()


def voice_entity(hass: HomeAssistant, assist: Assist, key: str, domain: str = "sensor") -> str:
    """Return the entity id of a pipeline's voice entity (by its unique id)."""
    unique_id = f"{ENTRY_ID}_{voice_subject(assist.pipeline_id)}_{key}"
    entity_id = er.async_get(hass).async_get_entity_id(domain, DOMAIN, unique_id)
    assert entity_id is not None, (
        key,
        [e.unique_id for e in er.async_get(hass).entities.values() if "voice" in e.unique_id],
    )
    return entity_id


def seconds(hass: HomeAssistant, entity_id: str) -> float:
    state = hass.states.get(entity_id)
    assert state is not None
    return float(state.state)


def stamped(assist: Assist, kind: str) -> datetime:
    """Return when the pipeline stamped the latest run's first event of ``kind``."""
    run = assist.debug_runs()[-1]
    event = next(e for e in run.events if e.type == kind)
    return datetime.fromisoformat(event.timestamp)


async def test_a_cold_turn_explained_stage_by_stage(
    hass: HomeAssistant,
    assist: Assist,
    emulator: OllamaEmulator,
    mock_config_entry: MockConfigEntry,
) -> None:
    """The figures are the pipeline's own timestamps; the model's load is the costliest."""
    turns = async_capture_events(hass, EVENT_VOICE_TURN)
    emulator.models[LLAMA].load_delay = 1.0
    await assist.turn(stt_seconds=0.2)
    await settle(hass)
    assert len(turns) == 1
    data = turns[0].data
    # The pipeline's device names the pipeline and says what it is, connected via the server
    # (as a child device, its page described it by the server: "Ollama server, Firmware").
    devices = dr.async_get(hass)
    device = devices.async_get_device_by_identifier(
        (DOMAIN, f"{ENTRY_ID}_{voice_subject(assist.pipeline_id)}"), ENTRY_ID
    )
    assert isinstance(device, dr.DeviceEntry)
    assert (device.name, device.model, device.entry_type) == (
        "Assist Harness",
        "Assist pipeline",
        dr.DeviceEntryType.SERVICE,
    )
    assert (device.manufacturer, device.sw_version) == (None, None)
    assert device.via_device_id == mock_config_entry.runtime_data.server_device_id
    assert voice_entity(hass, assist, "voice_silence") == (
        "sensor.assist_harness_silence_before_the_reply"
    )
    assert data["pipeline"] == assist.pipeline_id
    assert (data["model"], data["agent"]) == (LLAMA, assist.agent_entity_id)
    # Each figure, against the run's own stamps.
    speech_end, stt_end = stamped(assist, "stt-vad-end"), stamped(assist, "stt-end")
    intent = stamped(assist, "intent-start")
    assert data["stt_seconds"] == pytest.approx((stt_end - speech_end).total_seconds(), abs=1e-3)
    assert data["stt_seconds"] >= 0.2
    silence = voice_entity(hass, assist, "voice_silence")
    assert seconds(hass, silence) == pytest.approx(data["silence_seconds"])
    assert seconds(hass, voice_entity(hass, assist, "voice_stt")) == pytest.approx(
        data["stt_seconds"]
    )
    assert data["agent_first_text_seconds"] >= 1.0  # it waited for the load
    assert (stt_end - speech_end).total_seconds() + data["agent_first_text_seconds"] <= data[
        "silence_seconds"
    ]
    assert intent <= stamped(assist, "run-end")
    assert "reason" not in hass.states.get(silence).attributes  # it has a value now
    # What the server did: cold at the agent's start, a load the turn waited for.
    assert (data["resident_at_intent_start"], data["dominant_stage"]) == (False, "load")
    # Ollama tells no load time of another client's request (the agent's): the model was
    # cold, so its first words waited for load and prompt together, said as such.
    assert (data["load_seconds"], data["load_source"]) == (None, "residency")
    assert data["stages"]["load"] == data["agent_first_text_seconds"]
    assert hass.states.get(voice_entity(hass, assist, "voice_dominant_stage")).state == "load"
    # A run that reads raises no repair.
    assert ir.async_get(hass).async_get_issue(DOMAIN, f"voice_internals_{ENTRY_ID}") is None
    # The details, unrecorded, on the silence sensor.
    turn = hass.states.get(silence).attributes["turn"]
    assert (turn["model"], turn["resident_at_intent_start"]) == (LLAMA, False)
    # The logbook says it in words, filed under the pipeline's costliest-stage sensor.
    line = describers(hass)[EVENT_VOICE_TURN](turns[0])
    waited = data["stages"]["load"]
    assert line["message"] == (
        f"the reply waited {waited:.1f} s for {LLAMA}, cold, to load and read the prompt"
    )
    assert line["entity_id"] == voice_entity(hass, assist, "voice_dominant_stage")
    assert logbook  # the platform under test
    # After a restart, no turn yet: unknown, and it says why (issue 32).
    assert await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    after = hass.states.get(silence)
    assert (after.state, after.attributes["reason"]) == ("unknown", "no_turn_yet")


async def test_a_warm_turn_is_mostly_the_prompt(
    hass: HomeAssistant, assist: Assist, emulator: OllamaEmulator
) -> None:
    turns = async_capture_events(hass, EVENT_VOICE_TURN)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": -1})
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    await assist.turn()
    await settle(hass)
    data = turns[-1].data
    assert data["resident_at_intent_start"] is True
    assert data["load_seconds"] is None
    assert data["dominant_stage"] != "load"


async def test_warm_on_wake_loads_the_agents_model_while_the_user_speaks(
    hass: HomeAssistant, assist: Assist, emulator: OllamaEmulator
) -> None:
    """Off by default; on, a cold model is loaded at the wake, as the agent asks for it."""
    emulator.models[LLAMA].load_delay = 0.3
    # The first wake finds the pipeline (the switch is off); its agent started 2.4 s or
    # more after the wake: the prompt warm-up, never measured, is sent while 1.2 s is left.
    await assist.turn(stt_seconds=2.0)
    await hass.async_block_till_done()
    switch = voice_entity(hass, assist, "voice_warm_on_wake", "switch")
    assert hass.states.get(switch).state == "off"
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    await hass.services.async_call("switch", "turn_on", {"entity_id": switch}, blocking=True)
    turns = async_capture_events(hass, EVENT_VOICE_TURN)
    before = len(emulator.requests)
    await assist.turn(speech_ms=1500)
    await settle(hass)
    sent = [r for r in emulator.requests[before:] if r.path in ("/api/generate", "/api/chat")]
    # A load with the agent's settings, no prompt, before the agent's own request.
    paths = [(r.path, r.json.get("prompt"), r.json.get("messages")) for r in sent]
    assert paths[0][0] == "/api/generate"
    assert paths[0][1] is None
    load = sent[0].json
    # Kept briefly (a wake no command follows lets it go), with the agent's context; the
    # agent's own request then sets the agent's keep (for ever, Home Assistant's default).
    assert (load["keep_alive"], load["options"]["num_ctx"]) == (WAKE_KEEP, 4096)
    # Then the agent's system prompt with one short turn, as the agent asks (its context
    # and think, no keep_alive: the model keeps the agent's), before the agent's own turn:
    # the agent's prompt begins with it, so the server's prompt cache serves that part.
    ours, agents = (r.json for r in sent if r.path == "/api/chat")
    system = ours["messages"][0]
    assert system["role"] == "system"
    assert ours["messages"][1] == {"role": "user", "content": "Hello."}
    assert agents["messages"][0]["content"].startswith(system["content"])
    assert system["content"].startswith("You are a voice assistant.")
    assert (ours["options"], ours["think"]) == ({"num_predict": 1, "num_ctx": 4096}, False)
    assert "keep_alive" not in ours
    assert agents["keep_alive"] == -1
    data = turns[-1].data
    assert data["warm_prefix"] == "ready"
    counts = hass.config_entries.async_get_entry(ENTRY_ID).runtime_data.voice.counts
    assert counts[assist.pipeline_id].prefix_sent == 1
    assert counts[assist.pipeline_id].prefix_seconds is not None
    assert data["warmed_on_wake"] is True
    assert data["resident_at_intent_start"] is True  # loaded while the user spoke
    assert data["warm_hidden_seconds"] >= 0.3
    assert hass.states.get(voice_entity(hass, assist, "voice_warm_helped")).state == "1"
    # The wake's keep follows the agent's by design: the agent's turn over it is no
    # keep_alive conflict (it raised one at every cold wake, seen in the demo: issue 32).
    await hass.config_entries.async_get_entry(ENTRY_ID).runtime_data.coordinator.async_refresh()
    await hass.async_block_till_done()
    assert [i for (domain, i) in ir.async_get(hass).issues if domain == DOMAIN] == []
    assert seconds(hass, voice_entity(hass, assist, "voice_warm_hidden")) >= 0.3
    # Stored: after a restart the option and the counts are there.
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    assert hass.states.get(switch).state == "on"
    assert hass.states.get(voice_entity(hass, assist, "voice_warm_helped")).state == "1"


async def test_an_agent_error_is_a_turn_with_its_error(hass: HomeAssistant, assist: Assist) -> None:
    turns = async_capture_events(hass, EVENT_VOICE_TURN)
    assist.fail_agent("http", status=500)
    await assist.turn()
    await settle(hass)
    assert turns[-1].data["error"]
    line = describers(hass)[EVENT_VOICE_TURN](turns[-1])
    assert "error" in line["message"]


@pytest.mark.parametrize(
    "record",
    [
        SimpleNamespace(),  # no pipeline_debug: renamed or moved
        SimpleNamespace(pipeline_debug={"p": {"r": SimpleNamespace()}}),  # runs without events
        SimpleNamespace(pipeline_debug={"p": {"r": SimpleNamespace(events=[7])}}),
    ],
)
async def test_pipeline_internals_that_do_not_read_raise_one_repair(
    hass: HomeAssistant,
    mock_config_entry: MockConfigEntry,
    caplog: pytest.LogCaptureFixture,
    record: object,
) -> None:
    """Home Assistant changed its pipeline record: one log line, one repair, nothing broken."""
    hass.data["assist_pipeline"] = record
    for state in ("listening", "processing", "idle", "listening", "processing", "idle"):
        hass.states.async_set("assist_satellite.kitchen", state)
        await hass.async_block_till_done()
    issue_id = f"voice_internals_{ENTRY_ID}"
    issue = ir.async_get(hass).async_get_issue(DOMAIN, issue_id)
    assert issue is not None
    assert issue.translation_key == "voice_internals_changed"
    assert caplog.text.count("Assist pipeline record does not read") == 1
    assert mock_config_entry.state is ConfigEntryState.LOADED
    # Unloading the entry takes the repair with it.
    assert await hass.config_entries.async_unload(ENTRY_ID)
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None


async def test_a_turn_no_longer_in_the_record_is_no_turn(
    hass: HomeAssistant, assist: Assist
) -> None:
    """Pushed out of the pipeline's last runs before it was read: nothing is made up."""
    turns = async_capture_events(hass, EVENT_VOICE_TURN)
    with pipeline_debug_broken(hass, "no_runs"):
        await assist.turn()
        await settle(hass)
    assert turns == []
    assert ir.async_get(hass).async_get_issue(DOMAIN, f"voice_internals_{ENTRY_ID}") is None


async def test_unloading_in_the_middle_of_a_turn_leaves_nothing(
    hass: HomeAssistant, assist: Assist, mock_config_entry: MockConfigEntry
) -> None:
    turns = async_capture_events(hass, EVENT_VOICE_TURN)
    voice = mock_config_entry.runtime_data.voice
    task = assist.start_turn()
    await assist.wait_for("intent-start")
    assert await hass.config_entries.async_unload(ENTRY_ID)
    await task
    await hass.async_block_till_done()
    assert turns == []
    await settle(hass)
    assert turns == []
    assert (voice._timers, voice._runs) == (set(), {})


async def test_the_household_guard_refuses_a_warm_up_and_it_is_counted(
    hass: HomeAssistant,
    assist: Assist,
    emulator: OllamaEmulator,
    mock_config_entry: MockConfigEntry,
) -> None:
    """A household service needs the GPU: no load at the wake; the refusal is counted."""
    await assist.turn()  # the first wake finds the pipeline
    await settle(hass)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    hass.states.async_set(PLEX, "on")
    hass.config_entries.async_update_entry(
        mock_config_entry,
        options={
            **mock_config_entry.options,
            CONF_PROTECTED_ENTITIES: ["binary_sensor.plex_transcoding"],
        },
    )
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    switch = voice_entity(hass, assist, "voice_warm_on_wake", "switch")
    await hass.services.async_call("switch", "turn_on", {"entity_id": switch}, blocking=True)
    before = len(emulator.requests)
    await assist.turn()
    await settle(hass)
    loads = [
        r
        for r in emulator.requests[before:]
        if r.path == "/api/generate" and not r.json.get("prompt")
    ]
    assert loads == []  # only the agent's own request loaded it
    assert hass.states.get(voice_entity(hass, assist, "voice_warm_refused")).state == "1"
    assert hass.states.get(voice_entity(hass, assist, "voice_warm_helped")).state == "0"


async def test_a_pipelines_device_is_removable_once_its_agent_no_longer_uses_a_model_here(
    hass: HomeAssistant, assist: Assist, mock_config_entry: MockConfigEntry
) -> None:
    await assist.turn()
    await settle(hass)
    devices = dr.async_get(hass)
    device = devices.async_get_device_by_identifier(
        (DOMAIN, f"{ENTRY_ID}_{voice_subject(assist.pipeline_id)}"), ENTRY_ID
    )
    assert device is not None
    # Polls keep it: a pipeline is not one of the server's models.
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    assert devices.async_get(device.id) is not None
    assert not await async_remove_config_entry_device(hass, mock_config_entry, device)
    await hass.config_entries.async_remove(assist.agent_entry.entry_id)
    await hass.async_block_till_done()
    assert mock_config_entry.runtime_data.voice.pipelines == {}
    assert await async_remove_config_entry_device(hass, mock_config_entry, device)


async def test_a_pipelines_child_device_of_an_earlier_release_becomes_its_own(
    hass: HomeAssistant, assist: Assist, mock_config_entry: MockConfigEntry
) -> None:
    """Upgrading from 0.3.0: same device id, area, name, entities, ids and history."""
    await assist.turn()
    await settle(hass)
    devices, entities = dr.async_get(hass), er.async_get(hass)
    identifier = (DOMAIN, f"{ENTRY_ID}_{voice_subject(assist.pipeline_id)}")
    silence = voice_entity(hass, assist, "voice_silence")
    switch = voice_entity(hass, assist, "voice_warm_on_wake", "switch")
    await hass.services.async_call("switch", "turn_on", {"entity_id": switch}, blocking=True)
    assert await hass.config_entries.async_unload(ENTRY_ID)
    await hass.async_block_till_done()
    # The registry as 0.3.0 left it: the pipeline a child device of the server, placed
    # and renamed by the user, its entities under the ids 0.3.0 gave them.
    server = devices.async_get_device_by_identifier((DOMAIN, ENTRY_ID), ENTRY_ID)
    assert server is not None
    child = devices.async_get_or_create_child(
        config_entry_id=ENTRY_ID,
        identifiers={identifier},
        name="Assist Harness",
        parent_device_id=server.id,
    )
    old_ids = {}
    for entity in er.async_entries_for_device(entities, child.id, include_disabled_entities=True):
        old_id = entity.entity_id.replace(".assist_", ".ollama_test_assist_")
        entities.async_update_entity(entity.entity_id, new_entity_id=old_id)
        old_ids[entity.unique_id] = old_id
    assert f"{ENTRY_ID}_{voice_subject(assist.pipeline_id)}_voice_silence" in old_ids
    # One the user disabled: kept too (a removed device takes its disabled entities with it).
    entities.async_update_entity(
        old_ids[silence_unique_id(assist)], disabled_by=er.RegistryEntryDisabler.USER
    )
    kitchen = ar.async_get(hass).async_create("Kitchen")
    devices.async_update_child_device(child.id, area_id=kitchen.id, name_by_user="Kitchen voice")

    assert await hass.config_entries.async_setup(ENTRY_ID)
    await hass.async_block_till_done()
    device = devices.async_get_device_by_identifier(identifier, ENTRY_ID)
    assert isinstance(device, dr.DeviceEntry)
    assert devices.async_get_child_device_by_identifier(identifier, ENTRY_ID) is None
    assert (device.id, device.area_id, device.name_by_user) == (
        child.id,
        kitchen.id,
        "Kitchen voice",
    )
    assert (device.model, device.via_device_id) == ("Assist pipeline", server.id)
    mine = er.async_entries_for_device(entities, device.id, include_disabled_entities=True)
    assert {e.unique_id: e.entity_id for e in mine} == old_ids
    # What was kept is on the ids the household's history and dashboards know.
    old_switch = old_ids[f"{ENTRY_ID}_{voice_subject(assist.pipeline_id)}_voice_warm_on_wake"]
    assert hass.states.get(old_switch).state == "on"
    assert entities.async_get(old_ids[silence_unique_id(assist)]).disabled_by is not None
    assert hass.states.get(silence) is None
    assert hass.states.get(switch) is None
    # A second start finds nothing to adopt.
    await hass.config_entries.async_reload(ENTRY_ID)
    await hass.async_block_till_done()
    again = devices.async_get_device_by_identifier(identifier, ENTRY_ID)
    assert again is not None
    assert (again.id, again.modified_at) == (device.id, device.modified_at)


def silence_unique_id(assist: Assist) -> str:
    """Return the unique id of the pipeline's silence sensor."""
    return f"{ENTRY_ID}_{voice_subject(assist.pipeline_id)}_voice_silence"


async def test_the_server_down_mid_turn_and_an_aborted_run(
    hass: HomeAssistant, assist: Assist, emulator: OllamaEmulator
) -> None:
    """A reply cut off is a turn with its error; a run cancelled by the next is no turn."""
    turns = async_capture_events(hass, EVENT_VOICE_TURN)
    assist.fail_agent("drop", after_chunks=1)
    await assist.turn()
    await settle(hass)
    assert [t.data["error"] is not None for t in turns] == [True]
    # The next turn waits for a slow load, and is cancelled meanwhile.
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    emulator.models[LLAMA].load_delay = 3.0
    task = assist.start_turn()
    await assist.wait_for("intent-start")
    await assist.abort()
    assert (await task).aborted
    await settle(hass)
    # Aborted: Home Assistant ends the run without an error; what it did is still told.
    assert len(turns) == 2
    assert turns[-1].data["silence_seconds"] is None
    # Unknown in that turn, and said why.
    silence = hass.states.get(voice_entity(hass, assist, "voice_silence"))
    assert (silence.state, silence.attributes["reason"]) == ("unknown", "not_timed")


async def test_the_dashboard_graphs_the_silence_of_each_pipeline(
    hass: HomeAssistant, assist: Assist
) -> None:
    await assist.turn()
    await settle(hass)
    response = await hass.services.async_call(
        DOMAIN, "dashboard", {}, blocking=True, return_response=True
    )
    assert response is not None
    cards = {card.get("title"): card for card in response["config"]["views"][0]["cards"]}  # type: ignore[index]
    graph = cards["Voice: the silence before the reply"]
    assert [line["entity"] for line in graph["entities"]] == [
        voice_entity(hass, assist, "voice_silence"),
        voice_entity(hass, assist, "voice_stt"),
        voice_entity(hass, assist, "voice_agent_first_text"),
    ]
    for line in graph["entities"]:
        assert hass.states.get(line["entity"]).state not in ("unknown", "unavailable")
    # The pipeline's own section (its entities were on its device page only, issue 32).
    rows = cards["Voice"]["entities"]
    assert rows[0] == {"type": "section", "label": "Harness"}
    shown = [row.get("row", row)["entity"] for row in rows[1:]]
    assert shown[0] == voice_entity(hass, assist, "voice_warm_on_wake", "switch")
    assert voice_entity(hass, assist, "voice_silence") in shown
    assert voice_entity(hass, assist, "voice_warm_helped") in shown
    for entity_id in shown:
        assert hass.states.get(entity_id).state not in ("unknown", "unavailable"), entity_id


async def test_the_prompt_warm_up_is_sent_only_when_it_ends_before_the_agent_starts(
    hass: HomeAssistant, assist: Assist, emulator: OllamaEmulator
) -> None:
    """On a server with one slot, a turn that comes while a warm-up runs waits for it.

    So a resident model gets only the prompt's warm-up; one whose last warm-up took
    longer than the quickest start of the agent after a wake is left out, and a turn
    that came while one ran is counted.
    """
    await assist.turn()  # the first wake finds the pipeline; its agent's start is noted
    runtime = hass.config_entries.async_get_entry(ENTRY_ID).runtime_data
    # The agent's turn loaded the model: a first sighting is unsure (Ollama 0.9's floating
    # expiry), shown loading until the next poll (a fast one, as it settles) confirms it,
    # both before the turn is read (READ_DELAY after it).
    for _ in range(2):
        await runtime.coordinator.async_refresh()
    await settle(hass)
    voice = runtime.voice
    voice.set_enabled(assist.pipeline_id, True)
    counts = voice.counts[assist.pipeline_id]
    assert len(counts.wake_to_intent) == 1
    turns = async_capture_events(hass, EVENT_VOICE_TURN)

    async def turn(**kwargs: object) -> list[str]:
        before = len(emulator.requests)
        await assist.turn(**kwargs)  # type: ignore[arg-type]
        await settle(hass)
        return [
            "load"
            if r.path == "/api/generate"
            else "ours"
            if r.json.get("options", {}).get("num_predict") == 1
            else "agent's"
            for r in emulator.requests[before:]
            if r.path in ("/api/generate", "/api/chat")
        ]

    loaded = async_capture_events(hass, f"{DOMAIN}_model_loaded")

    async def lose_the_prompt_cache() -> None:
        """Another client unloads the model and loads it again: its prompt cache is new."""
        await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
        await runtime.coordinator.async_refresh()
        await ollama_request(emulator, "/api/generate", {"model": LLAMA, "prompt": "hi"})
        # Told once polling saw the new runner settle (its expiry still).
        loads = len(loaded)
        for _ in range(5):
            await runtime.coordinator.async_refresh()
            if len(loaded) > loads:
                break
        assert len(loaded) > loads

    # The last turn of this satellite ran on this load: the server holds the prompt.
    assert await turn() == ["agent's"]
    assert turns[-1].data["warm_prefix"] == "held"
    assert turns[-1].data["warmed_on_wake"] is False
    assert counts.prefix_held == 1
    # Loaded again since: no load, only the prompt's warm-up, ended before the agent's.
    await lose_the_prompt_cache()
    assert await turn() == ["ours", "agent's"]
    assert turns[-1].data["warm_prefix"] == "ready"
    # Its last warm-up took longer than the agent has ever waited after a wake: left out.
    await lose_the_prompt_cache()
    counts.prefix_seconds = 60.0
    assert await turn() == ["agent's"]
    assert turns[-1].data["warm_prefix"] == "skipped"
    assert counts.prefix_skipped == 1
    # Unmeasured, it is sent; the agent's turn came while it ran: counted, and the warm-up
    # let go at the agent's start (its request closed: the agent's never queues behind
    # it), its time so far kept as what the next one would take at least.
    await lose_the_prompt_cache()
    counts.prefix_seconds = None
    emulator.models[LLAMA].prefill_delay = 3.0
    assert await turn(speech_ms=200) == ["ours", "agent's"]
    assert turns[-1].data["warm_prefix"] == "overlapped"
    assert (counts.prefix_sent, counts.prefix_overlapped) == (2, 1)
    assert emulator.abandoned_chats == [LLAMA]  # ours: the agent's ran to its end
    assert counts.prefix_seconds is not None
    assert 0 < counts.prefix_seconds < 3.0
    assert len(counts.wake_to_intent) == 5
    # Kept to the millisecond (what the store writes), as measured.
    assert round(counts.prefix_seconds, 3) == counts.prefix_seconds
    assert all(round(v, 3) == v for v in counts.wake_to_intent)
    assert any(round(v, 2) != v for v in [counts.prefix_seconds, *counts.wake_to_intent])
    switch = hass.states.get(voice_entity(hass, assist, "voice_warm_on_wake", "switch"))
    assert switch.attributes["prompt_warm_ups_sent"] == 2
    assert switch.attributes["prompt_warm_ups_left_out"] == 1
    assert switch.attributes["prompt_warm_ups_overlapped"] == 1
    assert switch.attributes["prompt_warm_ups_held"] == 1
    assert switch.attributes["last_prompt_warm_up_seconds"] == counts.prefix_seconds


async def test_stored_wake_counts_that_do_not_read_start_from_nothing() -> None:
    """Stored data is read with every value checked: junk is dropped, not trusted."""
    assert WakeCounts.from_dict("junk") == WakeCounts()
    read = WakeCounts.from_dict(
        {
            "warm_on_wake": "yes",
            "helped": -3,
            "too_late": True,
            "hidden_seconds": float("nan"),
            "prefix_sent": 2.5,
            "prefix_seconds": -1,
            "wake_to_intent": [1.5, "2", None, float("inf"), 1e9, 2.25],
        }
    )
    assert read == WakeCounts(wake_to_intent=[1.5, 2.25])
    kept = WakeCounts(
        enabled=True,
        helped=2,
        hidden_seconds=3.5,
        too_late=1,
        refused=1,
        prefix_sent=4,
        prefix_skipped=1,
        prefix_overlapped=1,
        prefix_held=2,
        wasted=3,
        wasted_gib_seconds=12.5,  # stored to the thousandth, below
        prefix_seconds=0.8,
        wake_to_intent=[1.0, 2.0],
    )
    assert WakeCounts.from_dict(kept.as_dict()) == kept
    assert WakeCounts(wasted_gib_seconds=1.23456).as_dict()["wasted_gib_seconds"] == 1.235
    # A stored figure is seconds under a day (the totals under their own bound).
    bounds = WakeCounts.from_dict(
        {
            "wake_to_intent": [86399.5, 86400],
            "prefix_seconds": 86400,
            "hidden_seconds": 1e9,
            "wasted_gib_seconds": -1,
        }
    )
    assert bounds.wake_to_intent == [86399.5]
    assert (bounds.prefix_seconds, bounds.hidden_seconds, bounds.wasted_gib_seconds) == (
        None,
        0.0,
        0.0,
    )
    assert WakeCounts.from_dict({"hidden_seconds": 999_999_999.5}).hidden_seconds == 999_999_999.5


@pytest.mark.recorder
async def test_the_turns_details_and_the_warm_up_counts_are_shown_not_recorded(
    hass: HomeAssistant, assist: Assist
) -> None:
    start = dt_util.utcnow()
    await assist.turn()
    await settle(hass)
    shown = {
        voice_entity(hass, assist, "voice_silence"): ("turn",),
        voice_entity(hass, assist, "voice_warm_on_wake", "switch"): (
            "prompt_warm_ups_sent",
            "prompt_warm_ups_left_out",
            "prompt_warm_ups_overlapped",
            "prompt_warm_ups_held",
            "last_prompt_warm_up_seconds",
            "wasted_warm_ups",
            "wasted_gib_seconds",
            "wake_keep_seconds",
        ),
    }
    for entity_id, attributes in shown.items():
        assert set(attributes) <= set(hass.states.get(entity_id).attributes), entity_id
    await async_wait_recording_done(hass)
    history = await hass.async_add_executor_job(
        get_significant_states, hass, start, None, list(shown)
    )
    for entity_id, attributes in shown.items():
        assert history[entity_id], entity_id
        for state in history[entity_id]:
            assert not set(attributes) & set(state.attributes), entity_id
        assert "friendly_name" in history[entity_id][-1].attributes


async def warm_on_wake_of_a_cold_model(
    hass: HomeAssistant, assist: Assist, emulator: OllamaEmulator
) -> LlmWarmthData:
    """Find the pipeline (a first turn), turn warm on wake on, unload its model; the runtime."""
    await assist.turn()  # the first wake finds the pipeline
    await settle(hass)
    runtime = hass.config_entries.async_get_entry(ENTRY_ID).runtime_data
    runtime.voice.set_enabled(assist.pipeline_id, True)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await runtime.coordinator.async_refresh()
    return runtime


async def test_a_false_wake_holds_the_model_briefly_and_is_counted_as_wasted(
    hass: HomeAssistant, assist: Assist, emulator: OllamaEmulator
) -> None:
    """A wake no command follows: the load keeps the model WAKE_KEEP, not for ever.

    Counted as a wasted warm-up with the GiB-seconds it held, until the server let it go.
    """
    runtime = await warm_on_wake_of_a_cold_model(hass, assist, emulator)
    before = len(emulator.requests)
    woke = emulator.clock.now()
    result = await assist.turn(text="")  # nothing was heard: no command reaches the agent
    await settle(hass)
    assert "intent-start" not in result.types()
    sent = [r.json for r in emulator.requests[before:] if r.path in ("/api/generate", "/api/chat")]
    assert [r.get("keep_alive") for r in sent] == [WAKE_KEEP, None]  # the load, the prompt
    await runtime.coordinator.async_refresh()
    expires = runtime.coordinator.data.resident[LLAMA].expires_at
    assert expires is not None
    assert timedelta(seconds=WAKE_KEEP - 5) < expires - woke < timedelta(seconds=WAKE_KEEP + 30)
    counts = runtime.voice.counts[assist.pipeline_id]
    assert (counts.wasted, counts.wasted_gib_seconds) == (1, 0.0)  # still held
    size = runtime.coordinator.data.resident[LLAMA].size_vram
    # The server lets it go: the hold is scored, by the model's size.
    held_from = asyncio.get_running_loop().time()
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await runtime.coordinator.async_refresh()
    held_for = asyncio.get_running_loop().time() - held_from
    assert counts.wasted_gib_seconds > 0
    assert counts.wasted_gib_seconds / (size / GIB) < held_for + 10
    switch = hass.states.get(voice_entity(hass, assist, "voice_warm_on_wake", "switch"))
    assert switch.attributes["wasted_warm_ups"] == 1
    assert switch.attributes["wake_keep_seconds"] == WAKE_KEEP
    # A turn that follows its wake is no waste.
    await assist.turn(text="tell me about the weather")
    await settle(hass)
    assert counts.wasted == 1


async def test_a_false_wake_that_ends_before_its_load_is_counted_when_the_load_ends(
    hass: HomeAssistant, assist: Assist, emulator: OllamaEmulator
) -> None:
    """A cold model: the run ends (nothing heard) while the load at the wake still runs.

    Decided at the run's end, the wake had held nothing yet and was never counted, while
    the model was then held WAKE_KEEP: it is counted when the load ends, and its hold is.
    """
    runtime = await warm_on_wake_of_a_cold_model(hass, assist, emulator)
    emulator.hold_loads()
    result = await assist.turn(text="")
    await settle(hass)
    assert "intent-start" not in result.types()
    counts = runtime.voice.counts[assist.pipeline_id]
    assert counts.wasted == 0  # the load still runs
    emulator.finish_loads()
    await hass.async_block_till_done(wait_background_tasks=True)
    assert counts.wasted == 1
    assert LLAMA in runtime.voice._warmer.holds.wasted  # its hold is followed, to be scored
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await runtime.coordinator.async_refresh()
    assert counts.wasted_gib_seconds > 0


async def test_two_satellites_waking_together_send_one_load_and_one_prompt_warm_up(
    hass: HomeAssistant, assist: Assist, emulator: OllamaEmulator
) -> None:
    await assist.turn()  # the first wake finds the pipeline (the only one of this server)
    await settle(hass)
    runtime = hass.config_entries.async_get_entry(ENTRY_ID).runtime_data
    runtime.voice.set_enabled(assist.pipeline_id, True)
    await ollama_request(emulator, "/api/generate", {"model": LLAMA, "keep_alive": 0})
    await runtime.coordinator.async_refresh()
    # The agent starts a minute after a wake: a warm-up of 10 s fits.
    counts = runtime.voice.counts[assist.pipeline_id]
    counts.wake_to_intent, counts.prefix_seconds = [60.0], 10.0
    before = len(emulator.requests)
    for satellite in ("assist_satellite.kitchen", "assist_satellite.hall"):
        hass.states.async_set(satellite, "idle")
        hass.states.async_set(satellite, "listening")
    await hass.async_block_till_done(wait_background_tasks=True)
    sent = [r.json for r in emulator.requests[before:] if r.path in ("/api/generate", "/api/chat")]
    loads = [r for r in sent if "messages" not in r]
    prompts = [r for r in sent if "messages" in r]
    assert (len(loads), len(prompts)) == (1, 1)
    assert counts.prefix_held == 1
    # This warm-up was quick: the slowest recent one fades (by 0.8), it is not forgotten.
    assert counts.prefix_seconds == 8.0
