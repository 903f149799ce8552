"""What the integration does to a server's residency: evict and preload models.

Actions call it; it calls the client and then reads the residency again through the
coordinator, so that the entities show the result when the action returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
import time

from homeassistant.config_entries import ConfigEntryState
from homeassistant.exceptions import HomeAssistantError

from .const import DOMAIN, EVICT_CHECK_INTERVAL
from .coordinator import LlmWarmthCoordinator
from .core.backends.errors import LlmServerError, LlmServerTimeoutError


@dataclass(frozen=True, slots=True)
class Preloaded:
    """What a preload did: the model was resident already, or was loaded in ``seconds``.

    ``seconds`` is the wall time of the load request as the integration saw it (the server
    answers once the model is ready).
    """

    model: str
    already_resident: bool
    seconds: float | None


class ResidencyController:
    """Evict and preload the models of one server."""

    def __init__(self, coordinator: LlmWarmthCoordinator) -> None:
        """Act through the coordinator's client; read the residency through it."""
        self._coordinator = coordinator
        # Preloads under way, by model and keep: a second one shares the first's request.
        self._preloads: dict[tuple[str, float | None, int | None], asyncio.Task[Preloaded]] = {}

    async def evict(self, models: list[str] | None, *, timeout: float) -> list[str]:
        """Unload ``models`` (None: all it holds) now; return once the server lets them go.

        The entities show it when this returns (the residency is read again until it does,
        every ``EVICT_CHECK_INTERVAL``): a server may finish an unload after its answer.
        Return the models that were held and are gone; raise the client's errors.
        """
        coordinator = self._coordinator
        await self._read()  # another client may have loaded one since the last poll
        held = sorted(model for model in coordinator.data.held if models is None or model in models)
        try:
            for model in held:
                coordinator.monitor.evicting(model)
                await coordinator.client.unload(model, timeout=timeout)
            await self._until(lambda: not set(held) & set(coordinator.data.held), timeout)
        except BaseException:
            for model in held:  # what leaves later is not ours to explain
                coordinator.monitor.evicting(model, now=False)
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
        started = time.monotonic()
        await coordinator.client.load(
            model, keep_seconds=keep_seconds, num_ctx=num_ctx, timeout=timeout
        )
        seconds = None if already else round(time.monotonic() - started, 3)
        await self._until(lambda: model in coordinator.data.held, timeout)
        return Preloaded(model, already_resident=already, seconds=seconds)

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
