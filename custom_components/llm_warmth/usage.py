"""Usage: every use of each model, whoever sent it, and what the planner learns from them.

How each use is seen, per source (README "Learned warming"):

- Home Assistant's own conversation agents: an agent entity's state is the time it last
  took a message (``ConversationEntity``, written as each message starts): each new time
  is one use of its model, exact and seen at once. The agent is found from its entity
  (its config entry and subentry), as the voice feature finds a pipeline's. (The chat
  logs' subscription is not used: it tells no agent reply of a conversation's first turn.)
- Ollama, for any other client: every request moves the model's expiry to its end plus
  its keep; an expiry that moved between two polls, or a model loaded since the
  last poll, is a use, seen at the poll (late by up to one poll interval; requests
  between two polls count as one; one while Home Assistant's agent was heard in that time
  is that one). A request that leaves the expiry where it was (a keep of for ever asked
  again) is not seen; on Ollama 0.9, whose expiry moves with the clock while a request
  runs, a request that runs across several polls counts once for each.
- llama-swap: its activity log (``/api/metrics/activity``) tells every request with its
  end and length: each new entry is a use at its start, read at each poll. (These two
  are read by ``server_uses.py``.)
- llama-server: not seen (it tells its timings only to the client that asked).

The household's signals (the entities each model's warming signals name, read by
``signal_sources.py``) are recorded beside the uses; an edge learnt to lead a use warms
the model when the planner's contest chose a way with signals (``core.signal_warm``).

The integration's own requests (probes, preloads, pins, warm-ups) are never uses: the
coordinator notes when they run (``OwnRequestLog``) and what the server shows then is
left out. The uses are kept about eight weeks per model, in the store (section
``usage``), and go with the model when it is deleted from the server.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo
from typing import Final, override

from homeassistant.core import CALLBACK_TYPE, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.util import dt as dt_util

from .agent_turns import AgentTurns
from .agents import AgentDirectory, agent_context, model_agent
from .const import EVENT_AUTO_WARM, LOGGER
from .controller import ResidencyController
from .coordinator import LlmWarmthCoordinator
from .core.auto_warm import (
    AgentKeep,
    KeepLedger,
    held_bytes,
    household_cold_starts,
    keep_order,
    uses_seen_within,
    warm_up,
)
from .core.backends.base import GENERATION_TIMEOUT, ReportsRequests
from .core.backends.errors import LlmServerError
from .core.monitor import MonitorChange
from .core.signal_edges import Edge
from .core.signal_learning import SignalLead
from .core.signal_warm import auto_warm_event, signal_warm_up
from .core.usage import UsageRecord, local_day
from .core.usage_rhythm import local_time
from .core.warm_hold import Hold, warm_lead
from .core.warm_plan import Plan
from .data import LlmWarmthConfigEntry
from .devices import fire_event
from .feature import ModelRecords
from .household import HouseholdWatch
from .own_requests import OwnRequests
from .server_uses import ServerUses
from .signal_sources import SignalSources
from .storage import EntryStore

SECTION: Final = "usage"
# How often the plans are looked at.
TICK: Final = timedelta(minutes=1)


class UsageWatch(ModelRecords[UsageRecord]):
    """Each model's uses and its planner; the sources above feed it; auto-warm acts on it."""

    def __init__(
        self,
        entry: LlmWarmthConfigEntry,
        store: EntryStore,
        coordinator: LlmWarmthCoordinator,
        *,
        agents: AgentDirectory,
        controller: ResidencyController,
        household: HouseholdWatch,
        own_requests: OwnRequests,
    ) -> None:
        """Start from the stored uses; ``own_requests``' are not the household's."""
        super().__init__(
            entry,
            store,
            coordinator,
            SECTION,
            records=(UsageRecord.from_dict, UsageRecord.as_dict),
            what="usage history",
        )
        self._agents = agents
        self._controller = controller
        self._own = own_requests
        # The clock the plans are made on (the coordinator's; a test may give its own).
        self.utcnow: Callable[[], datetime] = coordinator.utcnow
        self._household = household
        # When Home Assistant's agents used each model: uses, and not another client's.
        self._turns = AgentTurns(coordinator, agents, on_use=self.record)
        # What other clients' requests show on the server at each poll.
        self._server = ServerUses(
            entry,
            coordinator,
            own_requests=own_requests,
            turns=self._turns.log,
            on_use=self.record,
            on_gone=self._held,
        )
        # Our last keep of each model: until when it asked, when the server answered.
        self._asked = KeepLedger()
        # The household's signals of each model: their edges, live and from the recorder.
        self.signals = SignalSources(
            self.hass, entry, on_edges=self.signal_edges, on_kept=self.keep_signals
        )

    @override
    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Follow the chat logs and the polls; return what stops it."""
        self._server.baseline()  # the setup's poll: the one the next is compared with
        stops = [
            super().async_start(),
            self._coordinator.async_add_poll_listener(self._server.polled),
            self._coordinator.async_add_change_listener(self._changed),
            # What is expected moves with the clock: the entities look again every minute.
            async_track_time_interval(self.hass, self._tick, TICK),
        ]
        stops.append(self._turns.async_start())
        stops.append(self.signals.async_start())

        @callback
        def stop() -> None:
            for each in stops:
                each()

        return stop

    @callback
    def _tick(self, _now: datetime) -> None:
        """Warm what is due; tell the listeners (the entities) that time went on."""
        for model, record in self._records.items():
            record.hold_over(self.utcnow(), _zone())
            if record.auto_warm:
                self._auto_warm(model, record)
                self._keep(model, record)
        for listener in list(self._listeners):
            listener()

    @callback
    def _auto_warm(self, model: str, record: UsageRecord) -> None:
        """Load ``model`` ahead of its expected stretch, once per stretch, through the guard.

        Due from the model's cold-load time plus a margin before the stretch until what
        the stretch holds it to (its end; a long one's first hour while no use came),
        while no use came in it yet. Loaded the way its agent asks (Ollama: its
        ``num_ctx``), kept for the first piece of that time (Ollama's keep, renewed by
        ``_keep``; the other servers keep by their own configuration).
        """
        coordinator = self._coordinator
        if not coordinator.last_update_success:
            return
        now = self.utcnow()
        snapshot = coordinator.data
        due = warm_up(
            self.plan(model, now),
            now,
            lead=self.lead(model),
            warmed_for=record.warmed_for,
            held=model in snapshot.held,  # warm already: kept by ``_keep``
            loading=model in snapshot.loading,  # another client's load runs
        )
        if due is None:
            return
        try:
            self._household.check(model, force=False)
        except HomeAssistantError:
            if record.warm_up_refused(due.start):
                self.async_changed()
            return
        record.warm_up_sent(due.start, now, due.hold)
        self.async_changed()
        self._send_warm_up(model, due.hold, auto_warm_event(model, due.hold, expected_at=due.start))

    @callback
    def _send_warm_up(self, model: str, hold: Hold, event: dict[str, object]) -> None:
        """Load ``model`` as ``hold`` says (the way its agent asks); say why (the event)."""
        keep = hold.keep_seconds(self.utcnow()) if self._sets_keep() else None
        num_ctx, _agent = agent_context(self.entry, model)
        fire_event(self.hass, self.entry, EVENT_AUTO_WARM, **event)
        self.entry.async_create_background_task(
            self.hass, self._load(model, keep, num_ctx), f"llm_warmth auto-warm {model}"
        )

    def _sets_keep(self) -> bool:
        """Return True where a request sets the keep (Ollama)."""
        return self._coordinator.client.capabilities.requests_set_keep_and_context

    @callback
    def _keep(self, model: str, record: UsageRecord) -> None:
        """Keep a resident model until the planner's time, where its server would let it go.

        After a use, through its sessions' gaps (the session keep); through an expected
        stretch. Only where requests set the keep (Ollama), with the context the model was
        loaded with (another ``num_ctx`` would load it again), through the guard; never
        shorter than the server keeps it already (``core.warm_hold.hold``).
        """
        coordinator = self._coordinator
        if (
            not coordinator.last_update_success
            or not coordinator.client.capabilities.requests_set_keep_and_context
        ):
            return
        now = self.utcnow()
        agent = model_agent(self.entry, model)
        order = keep_order(
            self.plan(model, now),
            now,
            lead=self.lead(model),
            warmed_for=record.warmed_for,
            resident=coordinator.data.held.get(model),
            loading=model in coordinator.data.loading,
            agent=AgentKeep(
                keep_seconds=agent.keep_alive if agent else None,
                heard=self._turns.log.last(model),
                num_ctx=agent_context(self.entry, model)[0],
            ),
            asked=self._asked.asked(model),
            polled_at=self._server.expiries.polled_at,
        )
        if order is None:
            return
        if order.num_ctx is None:
            # Ollama 0.9 tells no context: a keep without it could load the model again.
            LOGGER.debug("%s: %s's context is not known: not kept", self.entry.title, model)
            return
        try:
            self._household.check_hold(model)
        except HomeAssistantError:
            return  # the household needs the memory: the server's own keep goes on
        self._asked.sent(model, order.hold.expiry)
        record.kept(order.hold)
        self.async_changed()
        self.entry.async_create_background_task(
            self.hass,
            self._send_keep(model, order.hold.keep_seconds(now), order.num_ctx),
            f"llm_warmth keep {model}",
        )

    async def _send_keep(self, model: str, keep: int, num_ctx: int) -> None:
        """Ask the server to keep ``model`` ``keep`` seconds more (a load of a resident one)."""
        try:
            await self._controller.preload(
                model, keep_seconds=keep, num_ctx=num_ctx, timeout=GENERATION_TIMEOUT
            )
        except (LlmServerError, HomeAssistantError) as err:
            LOGGER.warning("%s: keeping %s failed: %s", self.entry.title, model, err)
            self._asked.failed(model)
            return
        self._asked.answered(model, self._coordinator.utcnow())  # the polls' clock

    async def _load(self, model: str, keep: float | None, num_ctx: int | None) -> None:
        """Send the warm-up; count it once the model is in (a failed one holds nothing)."""
        record = self._records.get(model)
        try:
            await self._controller.preload(
                model, keep_seconds=keep, num_ctx=num_ctx, timeout=GENERATION_TIMEOUT
            )
        except (LlmServerError, HomeAssistantError) as err:
            LOGGER.warning("%s: auto-warm of %s failed: %s", self.entry.title, model, err)
            if record is not None:
                record.warm_up_failed()
            return
        if record is not None:
            record.warm_up_loaded(held_bytes(self._coordinator.data.resident.get(model)))
            self.async_changed()

    @callback
    def set_auto_warm(self, model: str, on: bool) -> None:
        """Turn auto-warm of ``model`` on or off."""
        self._records.setdefault(model, UsageRecord()).auto_warm = on
        self.async_changed(save_now=True)
        if on:
            self._auto_warm(model, self._records[model])

    # ---------------------------------------------------------------- signals

    @callback
    def signal_edges(self, model: str, edges: list[Edge], live: bool) -> None:
        """Record a model's signals' ``edges``; warm it on a ``live`` one that leads a use."""
        record = self._records.setdefault(model, UsageRecord())
        if not record.planner.observe_edges(edges):
            return
        self.async_changed()
        if live and record.auto_warm:
            for edge in edges:
                self._signal_warm(model, record, edge)

    @callback
    def keep_signals(self, model: str, entities: frozenset[str]) -> None:
        """Forget every signal of ``model`` but ``entities`` (and what they taught)."""
        record = self._records.get(model)
        if record is not None and record.planner.keep_signals(entities):
            self.async_changed()

    @callback
    def _signal_warm(self, model: str, record: UsageRecord, edge: Edge) -> None:
        """Load ``model`` on an edge learnt to lead a use, through the guard; say why.

        Held for the signal's hold (Ollama's keep; the other servers keep by their own
        configuration), unless the model is warm already or loading.
        """
        coordinator = self._coordinator
        if not coordinator.last_update_success:
            return
        now, snapshot = self.utcnow(), coordinator.data
        sent = signal_warm_up(
            record.planner,
            edge,
            local_time(now, _zone()),
            held=model in snapshot.held,
            loading=model in snapshot.loading,
        )
        if sent is None:
            return
        try:
            self._household.check(model, force=False)
        except HomeAssistantError:
            record.refused += 1
            self.async_changed()
            return
        record.signal_warm_up_sent(now, sent.hold, sent.lead)
        self.async_changed()
        event = auto_warm_event(model, sent.hold, lead=sent.lead)
        if (state := self.hass.states.get(edge.entity)) is not None:
            event["signal_name"] = state.name
        self._send_warm_up(model, sent.hold, event)

    def chosen_signals(self, model: str) -> tuple[str, ...]:
        """Return the entities the household picked as ``model``'s signals."""
        return self.signals.chosen.get(model, ())

    def leads(self, model: str) -> list[SignalLead]:
        """Return what each of ``model``'s signals was learnt to lead."""
        record = self._records.get(model)
        return record.planner.leads() if record else []

    # ---------------------------------------------------------------- state

    @callback
    def _held(self, held: frozenset[str], now: datetime) -> None:
        """Note each model the server no longer holds at the poll at ``now``."""
        for model, record in self._records.items():
            if model not in held:
                record.let_go(now, _zone())

    @callback
    def record(self, model: str, at: datetime) -> None:
        """Record a use of ``model`` at ``at`` (a household's, never one of ours).

        The first use while an auto-warm warm-up holds the model found it warm because
        of it (when the model is held now): scored, and the warm-up's time ends there.
        """
        record = self._records.setdefault(model, UsageRecord())
        record.use(at, _zone(), held=model in self._coordinator.data.held)
        self.async_changed()
        if record.auto_warm:
            self._keep(model, record)  # its session starts now

    @callback
    def _changed(self, changes: list[MonitorChange]) -> None:
        """Score each cold start a household request had (not one of our probes)."""
        for model in household_cold_starts(changes):
            self._records.setdefault(model, UsageRecord()).cold_start(self.utcnow(), _zone())
            self.async_changed()

    def summary(self) -> dict[str, dict[str, object]]:
        """Return what the diagnostics show: counts, not when the household was at home."""
        today = local_day(self.utcnow(), _zone())
        return {model: record.summary(today) for model, record in self._records.items()}

    def scoreboard(self, model: str, column: int) -> tuple[float, float]:
        """Return a scoreboard column of ``model``: today's and the last 7 days' (today too)."""
        record = self._records.get(model)
        if record is None:
            return 0.0, 0.0
        return record.score(column, local_day(self.utcnow(), _zone()))

    def uses_seen_within(self) -> int | None:
        """Return how late, at most, the server shows another client's use (seconds)."""
        coordinator = self._coordinator
        client = coordinator.client
        return uses_seen_within(
            reports_requests=isinstance(client, ReportsRequests),
            reports_expiry=client.capabilities.reports_expiry,
            interval=coordinator.normal_interval,
        )

    def lead(self, model: str) -> timedelta:
        """Return how long before an expected use warming starts: its cold load, a margin."""
        timing = self._coordinator.data.timings.get(model)
        return warm_lead(timing.load_seconds if timing else None)

    def load(self, model: str) -> timedelta | None:
        """Return the model's last measured cold load (None: none measured yet)."""
        timing = self._coordinator.data.timings.get(model)
        seconds = timing.load_seconds if timing else None
        return timedelta(seconds=seconds) if seconds else None

    def plan(self, model: str, now: datetime | None = None) -> Plan | None:
        """Return the planner's answer for ``model`` now (None: never used yet)."""
        record = self._records.get(model)
        if record is None:
            return None
        return record.plan(now or self.utcnow(), _zone(), self.lead(model), self.load(model))

    def uses_today(self, model: str, now: datetime | None = None) -> int:
        """Return how many uses of ``model`` were recorded since local midnight."""
        record = self._records.get(model)
        if record is None:
            return 0
        return record.uses_today(now or self.utcnow(), _zone())


def _zone() -> tzinfo:
    """Return the household's time zone (Home Assistant's)."""
    return dt_util.get_default_time_zone()
