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
  end and length: each new entry is a use at its start, read at each poll.
- llama-server: not seen (it tells its timings only to the client that asked).

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
from .const import LOGGER
from .controller import ResidencyController
from .coordinator import LlmWarmthCoordinator
from .core.auto_warm import (
    AgentKeep,
    ExpiryWatch,
    KeepLedger,
    activity_uses,
    held_bytes,
    household_cold_starts,
    keep_order,
    uses_seen_within,
    warm_up,
)
from .core.backends.base import GENERATION_TIMEOUT, ReportsRequests
from .core.backends.errors import LlmServerError
from .core.monitor import MonitorChange
from .core.usage import UsageRecord, local_day, new_activity
from .core.warm_hold import warm_lead
from .core.warm_plan import Plan
from .data import LlmWarmthConfigEntry
from .feature import ModelRecords
from .household import HouseholdWatch
from .own_requests import OwnRequests
from .storage import EntryStore

SECTION: Final = "usage"
# How many of llama-swap's latest activity entries are read at each poll.
ACTIVITY_PAGE: Final = 50
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
        # What the last poll saw: each model's expiry, and when.
        self._expiries = ExpiryWatch()
        # The latest llama-swap activity entry read (None: none yet, read the page once).
        self._activity_seen: int | None = None
        # When Home Assistant's agents used each model: uses, and not another client's.
        self._turns = AgentTurns(coordinator, agents, on_use=self.record)
        # A read of llama-swap's activity is running (one at a time).
        self._reading = False
        # Our last keep of each model: until when it asked, when the server answered.
        self._asked = KeepLedger()

    @override
    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Follow the chat logs and the polls; return what stops it."""
        coordinator = self._coordinator
        if coordinator.last_update_success and coordinator.data is not None:
            # The setup's poll is the baseline the next one is compared with.
            self._expiries.baseline(coordinator.utcnow(), coordinator.data.held)
        stops = [
            super().async_start(),
            self._coordinator.async_add_poll_listener(self._polled),
            self._coordinator.async_add_change_listener(self._changed),
            # What is expected moves with the clock: the entities look again every minute.
            async_track_time_interval(self.hass, self._tick, TICK),
        ]
        stops.append(self._turns.async_start())

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
        keep = due.keep_seconds(
            now, requests_set_keep=coordinator.client.capabilities.requests_set_keep_and_context
        )
        num_ctx, _agent = agent_context(self.entry, model)
        self.entry.async_create_background_task(
            self.hass, self._load(model, keep, num_ctx), f"llm_warmth auto-warm {model}"
        )

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
            polled_at=self._expiries.polled_at,
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

    # ---------------------------------------------------------------- sources

    @callback
    def _polled(self) -> None:
        """Compare the expiries with the last poll's (Ollama); read llama-swap's activity."""
        coordinator = self._coordinator
        if not coordinator.last_update_success:
            return
        now = coordinator.utcnow()  # the server's expiries are read on this clock
        uses = self._expiries.polled(
            now,
            coordinator.data.held,
            reports_expiry=coordinator.client.capabilities.reports_expiry,
            ours=self._own,
            agents=self._turns.log,
        )
        for model, record in self._records.items():
            if model not in coordinator.data.held:
                record.let_go(now, _zone())
        if isinstance(coordinator.client, ReportsRequests) and not self._reading:
            self._reading = True
            self.entry.async_create_background_task(
                self.hass, self._read_activity(coordinator.client), "llm_warmth usage activity"
            )
        for model in uses:
            self.record(model, now)

    async def _read_activity(self, client: ReportsRequests) -> None:
        """Record the requests llama-swap served since the last poll (not ours)."""
        try:
            served = await client.served_requests(limit=ACTIVITY_PAGE)
        except LlmServerError as err:
            LOGGER.debug("%s: llama-swap's activity: %s", self.entry.title, err)
            return
        finally:
            self._reading = False
        read = new_activity(served, self._activity_seen)
        self._activity_seen = read.newest
        for request in activity_uses(read.new, ours=self._own, agents=self._turns.log):
            self.record(self._coordinator.resolve_model(request.model), request.started_at)

    # ---------------------------------------------------------------- state

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

    def plan(self, model: str, now: datetime | None = None) -> Plan | None:
        """Return the planner's answer for ``model`` now (None: never used yet)."""
        record = self._records.get(model)
        if record is None:
            return None
        return record.plan(now or self.utcnow(), _zone(), self.lead(model))

    def uses_today(self, model: str, now: datetime | None = None) -> int:
        """Return how many uses of ``model`` were recorded since local midnight."""
        record = self._records.get(model)
        if record is None:
            return 0
        return record.uses_today(now or self.utcnow(), _zone())


def _zone() -> tzinfo:
    """Return the household's time zone (Home Assistant's)."""
    return dt_util.get_default_time_zone()
