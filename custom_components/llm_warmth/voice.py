"""Voice: each Assist turn whose agent uses one of this server's models, stage by stage.

What it reads (Home Assistant 2026.10), from the least fragile up:

- The satellites' states on the bus (public): ``listening`` is the wake (speech-to-text
  starts), ``processing`` the agent's start, ``idle`` the end of the turn. They tell when
  to look, and are the warm-on-wake trigger.
- The pipeline's debug record of its last runs (``hass.data["assist_pipeline"]
  .pipeline_debug``, internal): every event of a run with Home Assistant's own timestamp.
  Read by duck typing, after the turn (a state is written before its event is recorded),
  each shape checked. When it does not read, the feature says so once (a log line and a
  repair) and goes on with the satellites' states alone: no stage figures then.
- The pipelines (``assist_pipeline.async_get_pipelines``, public) and the conversation
  agents' config entries (``agents``): which pipeline's agent uses which model here.

Home Assistant's ``conversation`` chat-log subscription tells no streamed text and, on a
conversation's first turn, not even the reply: it is not read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
import time
from typing import Final, override

from homeassistant.const import EVENT_STATE_CHANGED
from homeassistant.core import CALLBACK_TYPE, Event, EventStateChangedData, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er, issue_registry as ir
from homeassistant.helpers.event import async_call_later

from .agents import AgentDirectory
from .const import DOMAIN, EVENT_ASSISTANT_ROUTE, EVENT_VOICE_TURN, LOGGER
from .controller import ResidencyController
from .coordinator import LlmWarmthCoordinator
from .core.backends.base import ReportsRequests
from .core.backends.errors import LlmServerError
from .core.monitor import MonitorChange
from .core.voice import VoiceTurn
from .core.voice_record import VoiceRecord, WakeCounts
from .core.voice_stages import ServerSide, join_request
from .core.voice_turn import (
    SatelliteStep,
    counts_of_stored,
    is_satellite,
    route_of,
    satellite_step,
    stored_counts,
    turn_event_data,
)
from .core.wake_run import WakeRun
from .data import LlmWarmthConfigEntry
from .devices import entity_unique_id
from .feature import Feature
from .household import HouseholdWatch
from .own_requests import OwnRequests
from .pipeline_record import PipelineRecord
from .storage import EntryStore
from .voice_wake import VoicePipeline, WakeWarmer, pipelines_of

SECTION: Final = "voice"
_PIPELINE_DOMAIN: Final = "assist_pipeline"
# Seconds from a satellite's return to idle to reading its run (its run-end recorded).
READ_DELAY: Final = 0.5
# How long the server's record of requests may take to answer after a turn.
REQUEST_RECORD_TIMEOUT: Final = 10.0


def voice_subject(pipeline_id: str) -> str:
    """Return the subject of a pipeline's device and entities (in their unique ids)."""
    return f"voice_{pipeline_id}"


class VoiceWatch(Feature):
    """The Assist turns of the pipelines whose agent uses a model here; warm on wake."""

    def __init__(
        self,
        entry: LlmWarmthConfigEntry,
        store: EntryStore,
        coordinator: LlmWarmthCoordinator,
        *,
        controller: ResidencyController,
        household: HouseholdWatch,
        agents: AgentDirectory,
        own_requests: OwnRequests,
    ) -> None:
        """Start from the stored counts; the pipelines are read when it starts."""
        super().__init__(coordinator.hass, entry, store, SECTION)
        self._coordinator = coordinator
        self._own = own_requests
        self._controller = controller
        self._household = household
        self._agents = agents
        self.counts: dict[str, WakeCounts] = counts_of_stored(self.stored)
        self.pipelines: dict[str, VoicePipeline] = {}
        self.last: dict[str, VoiceRecord] = {}
        # Each satellite's turn while it runs, with its pipeline.
        self._runs: dict[str, tuple[VoicePipeline, WakeRun]] = {}
        # Each warm assistant's last route (by its entity id), until a turn reads it.
        self._routes: dict[str, dict[str, object]] = {}
        self._timers: set[CALLBACK_TYPE] = set()
        self._record = PipelineRecord(coordinator.hass, entry.title, self.issue_id)
        self._warmer = WakeWarmer(
            coordinator.hass,
            entry.title,
            coordinator.client,
            controller=controller,
            own_requests=own_requests,
            counts=lambda pipeline_id: self.counts.setdefault(pipeline_id, WakeCounts()),
            changed=self.async_changed,
            snapshot=lambda: coordinator.data,
        )
        # Per model: a false wake's load held now (monotonic since, bytes, pipeline).
        # Stopped (the entry unloads): a turn still being read is not told.
        self._stopped = False

    @override
    def as_stored(self) -> dict[str, object]:
        """Return each pipeline's warm-on-wake option and counts."""
        return stored_counts(self.counts)

    @property
    def issue_id(self) -> str:
        """Return the id of the repair raised when the pipeline's record does not read."""
        return f"voice_internals_{self.entry.entry_id}"

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Read the pipelines, follow the satellites; return what stops it all."""
        self._read_pipelines()
        unsubs = (
            self.hass.bus.async_listen(
                EVENT_STATE_CHANGED, self._state_changed, event_filter=_is_satellite
            ),
            self._agents.async_add_listener(self._read_pipelines),
            self._coordinator.async_add_change_listener(self._residency_changed),
            self._coordinator.async_add_poll_listener(self._polled),
            self.hass.bus.async_listen(EVENT_ASSISTANT_ROUTE, self._routed),
        )

        @callback
        def stop() -> None:
            for unsub in unsubs:
                unsub()
            for cancel in list(self._timers):
                cancel()
            self._timers.clear()
            self._runs.clear()
            self._warmer.holds.clear()
            self._routes.clear()
            self._stopped = True
            ir.async_delete_issue(self.hass, DOMAIN, self.issue_id)

        return stop

    @callback
    def _routed(self, event: Event[Mapping[str, object]]) -> None:
        """Keep a warm assistant's last route, for the turn it answers."""
        if (found := route_of(event.data)) is not None:
            assistant, route = found
            self._routes[assistant] = route

    @callback
    def _read_pipelines(self) -> None:
        """Find the pipelines whose agent uses a model of this server."""
        if _PIPELINE_DOMAIN not in self.hass.config.components:
            return
        if (found := pipelines_of(self.hass, self._agents)) != self.pipelines:
            self.pipelines = found
            for pipeline in found.values():
                # A warm assistant's pipeline: the wake warms its primary, as warm on wake
                # does a plain agent's model (never waiting on a cold load is its job); its
                # switch turns it off, and that choice is kept.
                if pipeline.assistant is not None and pipeline.id not in self.counts:
                    self.counts[pipeline.id] = WakeCounts(enabled=True)
            self.async_changed()

    def enabled(self, pipeline_id: str) -> bool:
        """Return whether the pipeline's agent model is warmed when a satellite wakes."""
        counts = self.counts.get(pipeline_id)
        return counts is not None and counts.enabled

    @callback
    def set_enabled(self, pipeline_id: str, enabled: bool) -> None:
        """Turn warming at the wake on or off for the pipeline."""
        self.counts.setdefault(pipeline_id, WakeCounts()).enabled = enabled
        self.async_changed(save_now=True)

    @callback
    def _state_changed(self, event: Event[EventStateChangedData]) -> None:
        """Follow a satellite's turn by its state: the wake, the agent's start, the end."""
        satellite = event.data["entity_id"]
        new, old = event.data["new_state"], event.data["old_state"]
        step = satellite_step(new.state if new else None, old.state if old else None)
        if step is SatelliteStep.GONE:
            self._runs.pop(satellite, None)
        elif step is SatelliteStep.WAKE:
            self._wake(satellite)
        elif step is SatelliteStep.INTENT:
            self._intent_started(satellite)
        elif step is SatelliteStep.FINISH:
            # Read once the pipeline recorded the run's end (after this state is written).
            self._later(READ_DELAY, lambda: self._finish(satellite))

    def _later(self, seconds: float, action: Callable[[], None]) -> None:
        """Run ``action`` in ``seconds``, unless the feature stops first."""
        cancel: CALLBACK_TYPE | None = None

        @callback
        def run(_now: datetime) -> None:
            if cancel is not None:
                self._timers.discard(cancel)
            action()

        cancel = async_call_later(self.hass, seconds, run)
        self._timers.add(cancel)

    @callback
    def _wake(self, satellite: str) -> None:
        """Note a satellite's run at its wake and, where asked, warm its agent's model.

        The pipelines are read again first: one made since (or its agent changed) has no
        signal of its own, and a wake is when it matters.
        """
        self._read_pipelines()
        pipeline = self._pipeline_of(satellite)
        if pipeline is None:
            self._runs.pop(satellite, None)
            return
        coordinator = self._coordinator
        model = coordinator.resolve_model(pipeline.model)
        run = WakeRun(pipeline.id, model, satellite, time.monotonic())
        self._runs[satellite] = (pipeline, run)
        self._warmer.close_wasted(model)  # a false wake's load serves this turn from now on
        if not self.enabled(pipeline.id):
            return
        snapshot = coordinator.data
        if model in snapshot.loading:
            return  # another client's load: nothing to hide, and no request to queue behind
        cold = model not in snapshot.held
        if cold:
            try:
                self._household.check(model, force=False)
            except HomeAssistantError:
                self.counts.setdefault(pipeline.id, WakeCounts()).refused += 1
                self.async_changed()
                return
            run.load_started = time.monotonic()
        self.entry.async_create_background_task(
            self.hass,
            self._warmer.warm(run, pipeline.agent, cold=cold),
            f"llm_warmth warm {model} on wake",
        )

    @callback
    def _intent_started(self, satellite: str) -> None:
        """Note, at the agent's start, whether its model was resident, loading or cold."""
        if (found := self._runs.get(satellite)) is None:
            return
        _pipeline, run = found
        counts = self.counts.setdefault(run.pipeline_id, WakeCounts())
        run.start_intent(time.monotonic(), self._coordinator.data, counts)
        self._warmer.agent_started(satellite)

    @callback
    def _finish(self, satellite: str) -> None:
        """Read the turn once over, explain it, count what warming did, and tell it."""
        if (found := self._runs.pop(satellite, None)) is None:
            return
        pipeline, run = found
        if run.false_wake:
            self._warmer.wasted_wake(run, self._coordinator.data)
        elif run.awaits_load:
            run.ended = True  # counted by the warmer when the load ends
        turn = self._record.read_turn(satellite)
        if turn is None or turn.pipeline not in (None, pipeline.id):
            return
        run.turn_served(self._warmer.holds, turn)
        server = run.server_side(self._coordinator.data.timings.get(run.model))
        if run.load_started is not None and run.intent_started is not None:
            run.count_outcome(self.counts.setdefault(pipeline.id, WakeCounts()))
        client = self._coordinator.client
        if server is not None and isinstance(client, ReportsRequests):
            # The server keeps its own record of the agent's request: read it first.
            # A background task: unloading the entry cancels it rather than wait for it.
            self.entry.async_create_background_task(
                self.hass,
                self._tell_with_request(pipeline, run, turn, server, client),
                f"llm_warmth voice turn of {run.model}",
            )
            return
        self._tell(pipeline, run, turn, server)

    async def _tell_with_request(
        self,
        pipeline: VoicePipeline,
        run: WakeRun,
        turn: VoiceTurn,
        server: ServerSide,
        client: ReportsRequests,
    ) -> None:
        """Join the server's record of the agent's request to the turn, then tell it."""
        try:
            served = await client.served_requests(run.model, timeout=REQUEST_RECORD_TIMEOUT)
        except LlmServerError as err:
            LOGGER.debug("%s: the server's record of requests: %s", self.entry.title, err)
            served = ()
        server = run.with_request(server, join_request(turn, served))
        self._tell(pipeline, run, turn, server)

    @callback
    def _tell(
        self, pipeline: VoicePipeline, run: WakeRun, turn: VoiceTurn, server: ServerSide | None
    ) -> None:
        """Keep the turn as the pipeline's last, fire its event, update the entities."""
        if self._stopped:
            return
        record = run.record(turn, server)
        self.last[pipeline.id] = record
        self._fire(pipeline, record)
        self.async_changed()

    @callback
    def _polled(self) -> None:
        """End a false wake's hold once a poll no longer sees the model held."""
        coordinator = self._coordinator
        if not coordinator.last_update_success:
            return
        for model in self._warmer.holds.gone(coordinator.data.held):
            self._warmer.close_wasted(model)

    @callback
    def _residency_changed(self, changes: list[MonitorChange]) -> None:
        """Forget what a load held once it is gone; end a false wake's hold there."""
        for model in self._warmer.holds.after_changes(changes):
            self._warmer.close_wasted(model)

    def _pipeline_of(self, satellite: str) -> VoicePipeline | None:
        """Return the pipeline a satellite's run uses (its run-start names it)."""
        pipeline_id = self._record.latest_run(satellite).pipeline
        if pipeline_id is not None:
            return self.pipelines.get(pipeline_id)
        # Without the pipeline's record: the only pipeline of ours, if there is one.
        return next(iter(self.pipelines.values())) if len(self.pipelines) == 1 else None

    def _fire(self, pipeline: VoicePipeline, record: VoiceRecord) -> None:
        """Fire the turn's event, filed under the pipeline's costliest-stage sensor."""
        # Filed under the pipeline's costliest-stage sensor (no unit: the logbook shows it).
        unique_id = entity_unique_id(
            self.entry.entry_id, voice_subject(pipeline.id), "voice_dominant_stage"
        )
        entity_id = er.async_get(self.hass).async_get_entity_id("sensor", DOMAIN, unique_id)
        # A warm assistant's turn: the agent that answered, and why.
        assistant = pipeline.assistant
        route = self._routes.pop(assistant, None) if assistant else None
        self.hass.bus.async_fire(
            EVENT_VOICE_TURN,
            turn_event_data(
                record,
                server=self.entry.title,
                entry_id=self.entry.entry_id,
                entity_id=entity_id,
                pipeline_id=pipeline.id,
                pipeline_name=pipeline.name,
                assistant=assistant,
                route=route,
            ),
        )


@callback
def _is_satellite(event_data: EventStateChangedData) -> bool:
    """Return True for a satellite's state change (the bus' filter)."""
    return is_satellite(event_data["entity_id"])
