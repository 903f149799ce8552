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
from dataclasses import dataclass, field, replace
from datetime import datetime
import time
from typing import Any, Final, override

from homeassistant.const import EVENT_STATE_CHANGED
from homeassistant.core import CALLBACK_TYPE, Event, EventStateChangedData, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er, issue_registry as ir
from homeassistant.helpers.event import async_call_later

from .agents import Agent, AgentDirectory, agent_system_prompt
from .const import DOMAIN, EVENT_ASSISTANT_ROUTE, EVENT_VOICE_TURN, LOGGER
from .controller import ResidencyController
from .coordinator import LlmWarmthCoordinator
from .core.backends.base import GENERATION_TIMEOUT, ReportsRequests
from .core.backends.errors import LlmServerError
from .core.monitor import LoadObserved, MonitorChange, ServerRestarted
from .core.residency import ModelUnloaded
from .core.voice import (
    ServerSide,
    VoiceTurn,
    explain,
    join_request,
    prefix_warm_fits,
    waited_load,
    wake_keep,
    wake_outcome,
)
from .core.voice_record import VoiceRecord, WakeCounts, prefix_outcome
from .data import LlmWarmthConfigEntry
from .devices import entity_unique_id
from .feature import Feature
from .household import HouseholdWatch
from .own_requests import OwnRequests
from .pipeline_record import PipelineRecord
from .probe_prompts import AGENT_WARM_UP_PROMPT, probe_options
from .storage import EntryStore
from .warm_assistant import assistant_primary

SECTION: Final = "voice"
_PIPELINE_DOMAIN: Final = "assist_pipeline"
_SATELLITE_PREFIX: Final = "assist_satellite."
# Seconds from a satellite's return to idle to reading its run (its run-end recorded).
READ_DELAY: Final = 0.5
# How long the server's record of requests may take to answer after a turn.
REQUEST_RECORD_TIMEOUT: Final = 10.0
# How much of the slowest recent prompt warm-up is kept at each new one.
PREFIX_FADE: Final = 0.8
GIB: Final = 1024**3
# The satellite states (``AssistSatelliteState``) this feature reads.
_LISTENING, _PROCESSING, _IDLE = "listening", "processing", "idle"


def voice_subject(pipeline_id: str) -> str:
    """Return the subject of a pipeline's device and entities (in their unique ids)."""
    return f"voice_{pipeline_id}"


@dataclass(frozen=True, slots=True)
class VoicePipeline:
    """An Assist pipeline whose conversation agent uses a model of this server.

    ``agent``: Home Assistant's Ollama agent, whose requests LLM Warmth knows how to ask
    like (its context, keep, think, system prompt); None for an OpenAI-compatible agent
    of another integration, whose model is known but not how it asks.
    """

    id: str
    name: str
    model: str
    agent: Agent | None
    # The pipeline's agent when it is a warm assistant (whose primary agent is ``agent``):
    # its turns say which agent answered.
    assistant: str | None = None


@dataclass(slots=True)
class _Run:
    """A satellite's turn while it runs: what LLM Warmth saw and did at its wake and start."""

    pipeline: VoicePipeline
    model: str
    satellite: str
    # Monotonic seconds: what the turn waited for is not moved by a clock change.
    woke: float = field(default_factory=time.monotonic)
    load_started: float | None = None
    load_ended: float | None = None
    prefix_started: float | None = None
    prefix_ended: float | None = None
    prefix_skipped: bool = False
    # Left out: the server holds the prompt, or another satellite's warm-up of it runs.
    prefix_held: bool = False
    intent_started: float | None = None
    # The load time warming at the wake hid from the turn (None: no load at the wake).
    hidden: float | None = None
    server: ServerSide | None = None
    figures_before: tuple[float | None, float | None] = (None, None)
    timers: list[CALLBACK_TYPE] = field(default_factory=list)

    @property
    def agent_started(self) -> bool:
        """Return True once the pipeline's agent started (it may start during an await)."""
        return self.intent_started is not None


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
        stored = self.stored if isinstance(self.stored, Mapping) else {}
        self.counts: dict[str, WakeCounts] = {
            pid: WakeCounts.from_dict(values)
            for pid, values in stored.items()
            if isinstance(pid, str)
        }
        self.pipelines: dict[str, VoicePipeline] = {}
        self.last: dict[str, VoiceRecord] = {}
        self._runs: dict[str, _Run] = {}
        # Each warm assistant's last route (by its entity id), until a turn reads it.
        self._routes: dict[str, dict[str, Any]] = {}
        self._timers: set[CALLBACK_TYPE] = set()
        self._record = PipelineRecord(coordinator.hass, entry.title, self.issue_id)
        # Per model: the (pipeline, satellite) whose prompt the server served last on this
        # load of the model, and the models a prompt warm-up is running for.
        self._prefix_held: dict[str, tuple[str, str]] = {}
        self._prefix_running: set[str] = set()
        # Per model: a false wake's load held now (monotonic since, bytes, pipeline).
        self._wasted: dict[str, tuple[float, int, str]] = {}
        # Stopped (the entry unloads): a turn still being read is not told.
        self._stopped = False

    @override
    def as_stored(self) -> dict[str, object]:
        """Return each pipeline's warm-on-wake option and counts."""
        return {pid: counts.as_dict() for pid, counts in self.counts.items()}

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
            self._wasted.clear()
            self._prefix_held.clear()
            self._routes.clear()
            self._stopped = True
            ir.async_delete_issue(self.hass, DOMAIN, self.issue_id)

        return stop

    @callback
    def _routed(self, event: Event[Mapping[str, Any]]) -> None:
        """Keep a warm assistant's last route, for the turn it answers."""
        self._routes[str(event.data.get("assistant"))] = {
            key: event.data.get(key) for key in ("agent", "reason", "agent_server", "agent_model")
        }

    @callback
    def _read_pipelines(self) -> None:
        """Find the pipelines whose agent uses a model of this server."""
        if _PIPELINE_DOMAIN not in self.hass.config.components:
            return
        from homeassistant.components.assist_pipeline import (  # noqa: PLC0415
            async_get_pipelines,
        )

        registry = er.async_get(self.hass)
        found: dict[str, VoicePipeline] = {}
        for pipeline in async_get_pipelines(self.hass):
            entity = registry.async_get(pipeline.conversation_engine or "")
            assistant = None
            if entity is not None and (primary := assistant_primary(self.hass, entity)):
                # A warm assistant: its primary agent's model is the one to warm.
                assistant, entity = entity.entity_id, registry.async_get(primary)
            if entity is None:
                continue  # Home Assistant's own agent, or one without an entity
            if used := self._agents.agent_of_entity(
                entity.config_entry_id, entity.config_subentry_id
            ):
                found[pipeline.id] = VoicePipeline(pipeline.id, pipeline.name, *used, assistant)
        if found != self.pipelines:
            self.pipelines = found
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
        satellite = event.data["entity_id"]
        new, old = event.data["new_state"], event.data["old_state"]
        if new is None:
            self._runs.pop(satellite, None)
            return
        if new.state == _LISTENING:
            self._wake(satellite)
        elif new.state == _PROCESSING:
            self._intent_started(satellite)
        elif new.state == _IDLE and old is not None and old.state != _IDLE:
            # Read once the pipeline recorded the run's end (after this state is written).
            self._later(READ_DELAY, lambda: self._finish(satellite))

    def _later(self, seconds: float, action: Callable[[], None]) -> None:
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
        run = self._runs[satellite] = _Run(pipeline, model, satellite)
        self._close_wasted(model)  # a false wake's load serves this turn from now on
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
            self.hass, self._warm(run, cold=cold), f"llm_warmth warm {model} on wake"
        )

    async def _warm(self, run: _Run, *, cold: bool) -> None:
        """Make the model ready for the agent: load it, then warm its prompt prefix.

        The load is a load-only request with the agent's settings (its ``num_ctx`` and
        ``keep_alive``): it holds no slot, so the turn's own request waits for nothing but
        the load it would have waited for anyway; it is never aborted when the turn comes.
        """
        agent = run.pipeline.agent
        if cold:
            try:
                done = await self._controller.preload(
                    run.model,
                    keep_seconds=self._wake_keep(agent),
                    num_ctx=agent.num_ctx if agent else None,
                    timeout=GENERATION_TIMEOUT,
                )
            except (LlmServerError, HomeAssistantError) as err:
                LOGGER.debug("%s: warming %s on wake failed: %s", self.entry.title, run.model, err)
                run.load_started = None
                return
            run.load_ended = time.monotonic()
            if done.seconds is not None:
                # The load's own time (its request's), not the reading of residency around it.
                run.load_started = max(run.load_started or 0.0, run.load_ended - done.seconds)
        if agent is not None:
            await self._warm_prefix(run, agent)

    def _wake_keep(self, agent: Agent | None) -> float | None:
        """Return the keep a load at the wake asks for: short, until the agent's own asks.

        Home Assistant's Ollama agent sends its keep with every request (last writer
        wins), so the turn's own keep applies once a command reaches it; until then, and
        after a false wake, the model is held ``WAKE_KEEP`` (or the agent's keep, when
        shorter: ``core.voice.wake_keep``). An agent that sends no keep
        (OpenAI-compatible) keeps the server's own, and so does a server whose requests
        set no keep.
        """
        if agent is None or not self._coordinator.client.capabilities.requests_set_keep_and_context:
            return None
        return wake_keep(agent.keep_alive)

    async def _warm_prefix(self, run: _Run, agent: Agent) -> None:
        """Send the agent's system prompt with one short turn, where it ends in time.

        The server's prompt cache then holds the prefix of the agent's next request (the
        instructions, the exposed entities, the satellite's area), so the agent's turn
        reads only the rest of its prompt. It asks for one token, with the agent's
        ``num_ctx`` and ``think`` and no ``keep_alive`` (the model keeps the agent's). On a
        server with one slot, a turn that comes while it runs waits for the rest of it:
        it is sent only when it is expected to end first (``prefix_warm_fits``). Only for
        Home Assistant's Ollama agent: another agent's prompt is not known.
        """
        counts = self.counts.setdefault(run.pipeline.id, WakeCounts())
        if run.intent_started is not None:
            return  # the agent asked already: its own request warms the prefix
        held = self._prefix_held.get(run.model) == (run.pipeline.id, run.satellite)
        if held or run.model in self._prefix_running:
            # The server's prompt cache holds it (this satellite's last turn ran on this
            # load), or another satellite's warm-up runs: another would only queue.
            counts.prefix_held += 1
            run.prefix_held = True
            self.async_changed()
            return
        if not prefix_warm_fits(
            prefix_seconds=counts.prefix_seconds,
            wake_to_intent=counts.wake_to_intent,
            elapsed=time.monotonic() - run.woke,
        ):
            counts.prefix_skipped += 1
            run.prefix_skipped = True
            self.async_changed()
            return
        # One warm-up per model at a time, from here (the prompt is read with an await).
        self._prefix_running.add(run.model)
        try:
            await self._send_prefix(run, agent, counts)
        finally:
            self._prefix_running.discard(run.model)

    async def _send_prefix(self, run: _Run, agent: Agent, counts: WakeCounts) -> None:
        """Render the agent's system prompt and send it with one short turn; time it."""
        satellite = er.async_get(self.hass).async_get(run.satellite)
        try:
            system = await agent_system_prompt(
                self.hass, agent, satellite.device_id if satellite else None
            )
        except HomeAssistantError as err:  # the agent's prompt template does not render
            LOGGER.debug("%s: the agent's prompt for a warm-up: %s", self.entry.title, err)
            return
        if run.agent_started:
            return  # the agent asked meanwhile
        coordinator = self._coordinator
        options = probe_options(agent.num_ctx, {"num_predict": 1})

        async def warm_up() -> None:
            await coordinator.client.timed_generation(
                "chat",
                run.model,
                AGENT_WARM_UP_PROMPT,
                options=options,
                timeout=GENERATION_TIMEOUT,
                system=system,
                think=agent.think,
            )

        counts.prefix_sent += 1
        run.prefix_started = time.monotonic()
        try:
            await self._own.async_load(run.model, warm_up, was_resident=True)
        except (LlmServerError, HomeAssistantError) as err:
            LOGGER.debug("%s: warming %s's prompt failed: %s", self.entry.title, run.model, err)
            return
        finally:
            run.prefix_ended = time.monotonic()
        if not run.agent_started:
            self._prefix_held[run.model] = (run.pipeline.id, run.satellite)
        # The slowest recent warm-up, fading: one served from the prompt cache says little
        # of the next after the cache was lost.
        took = run.prefix_ended - run.prefix_started
        kept = counts.prefix_seconds * PREFIX_FADE if counts.prefix_seconds else 0.0
        counts.prefix_seconds = round(max(took, kept), 3)
        self.async_changed()

    @callback
    def _intent_started(self, satellite: str) -> None:
        """Note, at the agent's start, whether its model was resident, loading or cold."""
        run = self._runs.get(satellite)
        if run is None:
            return
        snapshot = self._coordinator.data
        loading = run.model in snapshot.loading or (
            run.load_started is not None and run.load_ended is None
        )
        run.intent_started = time.monotonic()
        counts = self.counts.setdefault(run.pipeline.id, WakeCounts())
        counts.intent_after(run.intent_started - run.woke)
        if run.prefix_started is not None and run.prefix_ended is None:
            counts.prefix_overlapped += 1
        run.server = ServerSide(
            run.model,
            resident=run.model in snapshot.held and not loading,
            loading=loading,
        )
        timing = snapshot.timings.get(run.model)
        run.figures_before = (
            (timing.load_seconds, timing.load_at_least_seconds) if timing else (None, None)
        )

    @callback
    def _finish(self, satellite: str) -> None:
        """Read the turn once over, explain it, count what warming did, and tell it."""
        run = self._runs.pop(satellite, None)
        if run is None:
            return
        if run.intent_started is None and run.load_ended is not None:
            self._wasted_wake(run)
        turn = self._record.read_turn(satellite)
        if turn is None or turn.pipeline not in (None, run.pipeline.id):
            return
        if run.intent_started is not None and turn.error is None:
            # The agent's request ran on this load: the server's prompt cache holds it.
            self._prefix_held[run.model] = (run.pipeline.id, run.satellite)
        server = self._server_side(run)
        if run.load_started is not None and run.intent_started is not None:
            outcome = wake_outcome(
                load_started=run.load_started,
                load_ended=run.load_ended,
                intent_started=run.intent_started,
            )
            counts = self.counts.setdefault(run.pipeline.id, WakeCounts())
            counts.helped += outcome.helped
            counts.too_late += outcome.too_late
            counts.hidden_seconds += outcome.hidden_seconds
            run.hidden = outcome.hidden_seconds
        client = self._coordinator.client
        if server is not None and isinstance(client, ReportsRequests):
            # The server keeps its own record of the agent's request: read it first.
            # A background task: unloading the entry cancels it rather than wait for it.
            self.entry.async_create_background_task(
                self.hass,
                self._tell_with_request(run, turn, server, client),
                f"llm_warmth voice turn of {run.model}",
            )
            return
        self._tell(run, turn, server)

    async def _tell_with_request(
        self, run: _Run, turn: VoiceTurn, server: ServerSide, client: ReportsRequests
    ) -> None:
        """Join the server's record of the agent's request to the turn, then tell it."""
        try:
            served = await client.served_requests(run.model, timeout=REQUEST_RECORD_TIMEOUT)
        except LlmServerError as err:
            LOGGER.debug("%s: the server's record of requests: %s", self.entry.title, err)
            served = ()
        if (request := join_request(turn, served)) is not None:
            server = replace(server, request=request)
            waited = request.waited_seconds
            if server.resident is False and run.load_started is None and waited is not None:
                # Cold at the agent's start: its request waited for the load, as the
                # server timed it (its wait before the prefill).
                server = replace(server, load_seconds=waited, load_source="server")
        self._tell(run, turn, server)

    @callback
    def _tell(self, run: _Run, turn: VoiceTurn, server: ServerSide | None) -> None:
        """Keep the turn as the pipeline's last, fire its event, update the entities."""
        if self._stopped:
            return
        warmed = run.load_started is not None
        explained = explain(turn, server)
        record = VoiceRecord(
            turn,
            run.model,
            server,
            explained,
            warmed,
            run.hidden,
            prefix_outcome(
                started=run.prefix_started,
                ended=run.prefix_ended,
                intent_started=run.intent_started,
                held=run.prefix_held,
                skipped=run.prefix_skipped,
            ),
        )
        self.last[run.pipeline.id] = record
        self._fire(run.pipeline, record)
        self.async_changed()

    def _wasted_wake(self, run: _Run) -> None:
        """Count a wake no command followed whose load holds the model, and follow the hold."""
        counts = self.counts.setdefault(run.pipeline.id, WakeCounts())
        counts.wasted += 1
        resident = self._coordinator.data.resident.get(run.model)
        size = (resident.size_vram or resident.size or 0) if resident else 0
        if run.model in self._coordinator.data.held and run.load_ended is not None:
            self._wasted[run.model] = (run.load_ended, size, run.pipeline.id)
        self.async_changed()

    def _close_wasted(self, model: str) -> None:
        """Add the GiB-seconds a false wake's load held ``model`` until now."""
        if (held := self._wasted.pop(model, None)) is None:
            return
        since, size, pipeline_id = held
        counts = self.counts.setdefault(pipeline_id, WakeCounts())
        counts.wasted_gib_seconds += size / GIB * max(time.monotonic() - since, 0.0)
        self.async_changed()

    @callback
    def _polled(self) -> None:
        """End a false wake's hold once a poll no longer sees the model held."""
        coordinator = self._coordinator
        if not coordinator.last_update_success:
            return
        for model in [m for m in self._wasted if m not in coordinator.data.held]:
            self._close_wasted(model)

    @callback
    def _residency_changed(self, changes: list[MonitorChange]) -> None:
        """Forget what a load held once it is gone; end a false wake's hold there."""
        for change in changes:
            if isinstance(change, ServerRestarted):
                self._prefix_held.clear()
                for model in list(self._wasted):
                    self._close_wasted(model)
            elif isinstance(change, ModelUnloaded | LoadObserved):
                # Gone, or loaded again (a new runner's prompt cache is empty).
                if isinstance(change, ModelUnloaded) or change.model not in self._prefix_running:
                    self._prefix_held.pop(change.model, None)
                if isinstance(change, ModelUnloaded):
                    self._close_wasted(change.model)

    def _server_side(self, run: _Run) -> ServerSide | None:
        """Return what the server did: the load the turn waited for, and who measured it."""
        timing = self._coordinator.data.timings.get(run.model)
        figures = (
            (
                timing.load_seconds,
                timing.load_at_least_seconds,
                timing.load_source.value if timing.load_source else None,
            )
            if timing
            else (None, None, None)
        )
        return waited_load(
            run.server,
            loaded_at_wake=run.load_started is not None,
            wake_load_ended=run.load_ended,
            intent_started=run.intent_started,
            figures=figures,
            figures_before=run.figures_before,
        )

    def _pipeline_of(self, satellite: str) -> VoicePipeline | None:
        """Return the pipeline a satellite's run uses (its run-start names it)."""
        events = self._record.latest_run(satellite)
        pipeline_id = None
        if events:
            data = events[0][2]
            pipeline_id = data.get("pipeline") if isinstance(data, Mapping) else None
        if isinstance(pipeline_id, str):
            return self.pipelines.get(pipeline_id)
        # Without the pipeline's record: the only pipeline of ours, if there is one.
        return next(iter(self.pipelines.values())) if len(self.pipelines) == 1 else None

    def _fire(self, pipeline: VoicePipeline, record: VoiceRecord) -> None:
        # Filed under the pipeline's costliest-stage sensor (no unit: the logbook shows it).
        unique_id = entity_unique_id(
            self.entry.entry_id, voice_subject(pipeline.id), "voice_dominant_stage"
        )
        entity_id = er.async_get(self.hass).async_get_entity_id("sensor", DOMAIN, unique_id)
        self.hass.bus.async_fire(
            EVENT_VOICE_TURN,
            {
                "server": self.entry.title,
                "config_entry_id": self.entry.entry_id,
                **({"entity_id": entity_id} if entity_id else {}),
                "pipeline": pipeline.id,
                "pipeline_name": pipeline.name,
                **record.details(),
                # A warm assistant's turn: the agent that answered, and why.
                **(
                    {"assistant_route": self._routes.pop(pipeline.assistant, None)}
                    if pipeline.assistant
                    else {}
                ),
            },
        )


@callback
def _is_satellite(event_data: Mapping[str, Any]) -> bool:
    entity_id = event_data.get("entity_id")
    return isinstance(entity_id, str) and entity_id.startswith(_SATELLITE_PREFIX)
