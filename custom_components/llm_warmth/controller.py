"""What the integration does to a server's residency: evict, preload and pin models.

Actions and the keep-warm switches call it; it calls the client and then reads the
residency again through the coordinator, so that the entities show the result when the
action returns. After each poll it asserts again the pins the server let go.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
import time

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import CALLBACK_TYPE, callback
from homeassistant.exceptions import HomeAssistantError

from .const import DOMAIN, EVENT_PIN_REASSERTED, EVICT_CHECK_INTERVAL, LOGGER, PIN_SETTLE_SECONDS
from .coordinator import LlmWarmthCoordinator
from .core.backends.base import GENERATION_TIMEOUT
from .core.backends.errors import LlmModelStartError, LlmServerError, LlmServerTimeoutError
from .core.pins import Pin, Reassertion, ReassertReason
from .core.residency_control import (
    Preloaded,
    Unpinned,
    asked_for,
    load_seconds,
    on_peers,
    pushed_out,
    to_unload,
    unpin_outcome,
)
from .devices import fire_event
from .household import HouseholdWatch
from .own_requests import OwnRequests
from .pins import Pins


class ResidencyController:
    """Evict, preload and pin the models of one server."""

    def __init__(
        self,
        coordinator: LlmWarmthCoordinator,
        own_requests: OwnRequests,
        pins: Pins,
        household: HouseholdWatch,
    ) -> None:
        """Load and unload as ``own_requests``; read the residency through the coordinator.

        ``pins`` are asserted again while ``household`` does not need the GPU.
        """
        self._coordinator = coordinator
        self._own = own_requests
        self.pins = pins
        self._household = household
        # Preloads under way, by model and keep: a second one shares the first's request.
        self._preloads: dict[tuple[str, float | None, int | None], asyncio.Task[Preloaded]] = {}
        # Pins being asserted again, and the models whose last attempt failed (logged once).
        self._reasserting: set[str] = set()
        self._failing: set[str] = set()
        # Models whose last load of ours the server could not start, with what it said
        # (for the repair; gone once the model loads).
        self.failed_starts: dict[str, str] = {}
        # The snapshot the pins were last checked against (one check per poll or push).
        self._checked: object = None

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Assert the pins after each poll and push, and when they change; return unsub."""
        self.async_check_pins()
        unsubs = (
            self._coordinator.async_add_poll_listener(self._async_polled),
            self._coordinator.async_add_listener(self._async_updated),
            # A pin made, or re-applied by the guard, is asserted at once.
            self.pins.async_add_listener(self.async_check_pins),
        )

        @callback
        def stop() -> None:
            for unsub in unsubs:
                unsub()

        return stop

    @property
    def _idle_timer(self) -> bool:
        return self._coordinator.client.capabilities.requests_set_keep_and_context

    def _asked_for(self, pin: Pin) -> tuple[float | None, int | None]:
        """Return the keep (seconds) and context a load for ``pin`` asks for (Ollama only)."""
        return asked_for(pin, self._coordinator.utcnow(), self._coordinator.client.capabilities)

    async def pin(self, pin: Pin, *, timeout: float) -> Preloaded:
        """Load ``pin.model`` to be kept to the pin's end, then keep the pin (stored).

        Ollama is asked for the pin's keep_alive and context; the other servers keep the
        model by their own rule, and the pin asks again whenever they let it go.
        """
        keep, num_ctx = self._asked_for(pin)
        done = await self.preload(pin.model, keep_seconds=keep, num_ctx=num_ctx, timeout=timeout)
        self.pins.pin(pin)
        return done

    async def unpin(
        self, model: str, *, evict: bool, timeout: float
    ) -> tuple[Pin | None, Unpinned]:
        """Remove the pin of ``model``; say what became of the model.

        ``unloaded`` (``evict``), ``handed_back`` (Ollama: asked once more without a
        keep_alive, so the server's default idle time counts from now), ``kept`` (the
        other servers keep it by their own rule), ``not_resident``, or ``unchanged`` (it
        was not pinned).
        """
        coordinator = self._coordinator
        pin = next(iter(self.pins.unpin([model])), None)
        if evict:
            unloaded = await self.evict([model], timeout=timeout)
            return pin, Unpinned.UNLOADED if unloaded else Unpinned.NOT_RESIDENT
        await self._read()
        outcome = unpin_outcome(
            resident=model in coordinator.data.held,
            pinned=pin is not None,
            idle_timer=self._idle_timer,
        )
        if pin is not None and outcome is Unpinned.HANDED_BACK:
            await coordinator.client.load(model, num_ctx=pin.num_ctx, timeout=timeout)
        return pin, outcome

    @callback
    def _async_polled(self) -> None:
        """After every poll, even one that changed nothing."""
        self._checked = self._coordinator.data
        # A deleted model's preload has no end to wait for.
        for model in self.pins.preloads.keys() - self._checked.models:
            self.pins.preloaded(model, None)
        self._forget_started()
        self.async_check_pins()

    @callback
    def _async_updated(self) -> None:
        """After pushed data (an event stream); a changed poll's was checked already."""
        if self._coordinator.data is not self._checked:
            self._checked = self._coordinator.data
            self._forget_started()
            self.async_check_pins()

    @callback
    def _forget_started(self) -> None:
        """Forget the failed start of a model that is loaded now (a mended command)."""
        for model in self.failed_starts.keys() & self._coordinator.data.held.keys():
            del self.failed_starts[model]

    @callback
    def async_check_pins(self) -> None:
        """Drop the pins that ended; assert again those the server let go (after a poll)."""
        coordinator = self._coordinator
        if not coordinator.last_update_success or coordinator.data is None:
            return
        self.pins.drop_expired(coordinator.utcnow())
        for due in self._due():
            self._reasserting.add(due.pin.model)
            coordinator.config_entry.async_create_background_task(
                coordinator.hass, self._reassert(due), f"llm_warmth pin {due.pin.model}"
            )

    def _due(self, *, running: bool = False) -> list[Reassertion]:
        """Return the pins to assert again (``running``: those being asserted too)."""
        if self._household.need() is not None:
            return []  # the household needs the GPU: pins wait
        snapshot = self._coordinator.data
        due = self.pins.due(snapshot.resident, snapshot.models, self._coordinator.utcnow())
        return [d for d in due if running or d.pin.model not in self._reasserting]

    async def _reassert(self, due: Reassertion) -> None:
        coordinator = self._coordinator
        model = due.pin.model
        try:
            if due.reason is ReassertReason.GONE:
                # A server that switches models may list none for a moment: look again.
                await asyncio.sleep(PIN_SETTLE_SECONDS)
                await self._read()
                if not any(d.pin.model == model for d in self._due(running=True)):
                    return
            self.pins.asserted(due, coordinator.utcnow())
            keep, num_ctx = self._asked_for(due.pin)
            before = set(coordinator.data.held)
            seconds = await self._own.async_load(
                model,
                lambda: coordinator.client.load(
                    model, keep_seconds=keep, num_ctx=num_ctx, timeout=GENERATION_TIMEOUT
                ),
                was_resident=model in coordinator.data.held,
            )
        except (LlmServerError, HomeAssistantError) as err:
            if model not in self._failing:  # once per failing streak
                self._failing.add(model)
                LOGGER.warning("%s: could not keep %s pinned: %s", coordinator.name, model, err)
            return
        finally:
            self._reasserting.discard(model)
        if model in self._failing:
            self._failing.discard(model)
            LOGGER.info("%s: %s is pinned again", coordinator.name, model)
        fire_event(
            coordinator.hass,
            coordinator.config_entry,
            EVENT_PIN_REASSERTED,
            model=model,
            reason=due.reason.value,
            seconds=round(seconds, 3),
            # What it made room for it, as the poll right after the load saw it.
            pushed_out=list(pushed_out(before, coordinator.data.held, model)),
        )

    async def evict(
        self, models: list[str] | None, *, timeout: float, keep_pins: bool = False
    ) -> list[str]:
        """Unload ``models`` (None: all it holds) now; return once the server lets them go.

        The entities show it when this returns (the residency is read again until it does,
        every ``EVICT_CHECK_INTERVAL``): a server may finish an unload after its answer.
        Return the models that were held and are gone; raise the client's errors. Their
        pins go too (a pin would load them again at the next poll), unless ``keep_pins``:
        the household guard's release keeps a released pin to apply it again.
        """
        coordinator = self._coordinator
        await self._read()  # another client may have loaded one since the last poll
        for model in on_peers(models or [], coordinator.data.installed):
            # Not held here, yet maybe running there: the client says where it runs.
            await coordinator.client.unload(model, timeout=timeout)
        held = to_unload(coordinator.data.held, models)
        if not keep_pins:
            self.pins.unpin(held)
        try:
            for model in held:
                await self._own.async_unload(model, timeout=timeout)
            await self._until(lambda: not set(held) & set(coordinator.data.held), timeout)
        except BaseException:
            for model in held:  # what leaves later is not ours to explain
                self._own.unload_given_up(model)
            raise
        return held

    async def preload(
        self, model: str, *, keep_seconds: float | None, num_ctx: int | None, timeout: float
    ) -> Preloaded:
        """Make ``model`` resident (``keep_seconds``, ``num_ctx``: Ollama's; None: as it is).

        Two preloads of the same model (and settings) at once share one request.
        """
        key = (model, keep_seconds, num_ctx)
        if (running := self._preloads.get(key)) is None:
            # The entry's task: it goes on if the action is cancelled (a client that gives up
            # makes Ollama abort the load), and is cancelled when the entry unloads.
            coordinator = self._coordinator
            running = coordinator.config_entry.async_create_background_task(
                coordinator.hass,
                self._preload(model, keep_seconds, num_ctx, timeout),
                f"llm_warmth preload {model}",
            )
            self._preloads[key] = running
            running.add_done_callback(lambda _task: self._preloads.pop(key, None))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if running.cancelled() and not (current and current.cancelling()):
                raise _entry_unloaded() from None  # the entry unloaded, not the caller
            raise

    async def _preload(
        self, model: str, keep_seconds: float | None, num_ctx: int | None, timeout: float
    ) -> Preloaded:
        coordinator = self._coordinator
        await self._read()
        already = model in coordinator.data.held
        before = set(coordinator.data.held)
        try:
            took = await self._own.async_load(
                model,
                lambda: coordinator.client.load(
                    model, keep_seconds=keep_seconds, num_ctx=num_ctx, timeout=timeout
                ),
                was_resident=already,
            )
        except LlmModelStartError as err:
            self.failed_starts[model] = str(err)
            raise
        self.failed_starts.pop(model, None)
        if not on_peers([model], coordinator.data.installed):
            # A peer's model runs on the peer, which this server does not report: its
            # answered load is all there is to wait for.
            await self._until(lambda: model in coordinator.data.held, timeout)
        return Preloaded(
            model,
            already,
            load_seconds(took, already_resident=already),
            pushed_out(before, coordinator.data.held, model),
        )

    async def _read(self) -> None:
        """Read the residency now; raise when the entry unloaded or the poll failed."""
        coordinator = self._coordinator
        if coordinator.config_entry.state is not ConfigEntryState.LOADED:
            raise _entry_unloaded()
        await coordinator.async_refresh()
        if not coordinator.last_update_success:
            failure = coordinator.last_exception
            if isinstance(failure, HomeAssistantError):  # the poll's own translated error
                raise failure
            raise LlmServerError(str(failure)) from failure

    async def _until(self, done: Callable[[], bool], timeout: float) -> None:
        """Read the residency again until ``done`` holds; raise if the poll fails or time ends."""
        deadline = time.monotonic() + timeout
        while True:
            await self._read()
            if done():
                return
            if time.monotonic() > deadline:
                raise LlmServerTimeoutError(f"the server did not show it within {timeout:g} s")
            await asyncio.sleep(EVICT_CHECK_INTERVAL)


def _entry_unloaded() -> HomeAssistantError:
    return HomeAssistantError(translation_domain=DOMAIN, translation_key="entry_unloaded")
