"""Our own requests to one server: probes, loads (a preload, a pin, a warm-up) and unloads.

The server's monitor is told when each runs, so the load it causes gets its exact figure
and is no cold start, and an unload of ours is explained as ours; the log keeps when they
ran, since what the server shows of them is no household's use (usage asks ``during``).
The coordinator announces what the monitor made of them and shows the timings.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import datetime
import time
from typing import Literal

from .coordinator import LlmWarmthCoordinator
from .core.backends.base import GENERATION_TIMEOUT
from .core.monitor import ProbeResult, ServerMonitor
from .core.own_requests import OwnRequestLog
from .storage import EntryStore


class OwnRequests:
    """Runs and notes the integration's own requests to one server."""

    def __init__(
        self, coordinator: LlmWarmthCoordinator, monitor: ServerMonitor, store: EntryStore
    ) -> None:
        """Note our requests in ``monitor`` (the coordinator's); save its figures to ``store``."""
        self._coordinator = coordinator
        self._monitor = monitor
        self._store = store
        self._log = OwnRequestLog()

    def during(self, model: str, begin: datetime, end: datetime) -> bool:
        """Return True when a request of ours to ``model`` ran at some time in [begin, end]."""
        return self._log.during(model, begin, end)

    def _started(self, model: str) -> None:
        self._monitor.probe_started(model, monotonic=time.monotonic())
        self._log.started(model, self._coordinator.utcnow())
        self._coordinator.publish_timings()

    def _failed(self, model: str) -> None:
        """Note that a request of ours failed or was cancelled: no load of ours to announce."""
        self._coordinator.announce(self._monitor.probe_failed(model))
        self._coordinator.publish_timings()

    def _measured(self) -> None:
        self._store.async_delay_save()
        self._coordinator.publish_timings()

    async def async_probe(
        self,
        model: str,
        prompt: str,
        *,
        api: Literal["chat", "generate"] = "chat",
        options: Mapping[str, object] | None = None,
        timeout: float = GENERATION_TIMEOUT,
        system: str | None = None,
        think: bool | None = None,
    ) -> ProbeResult:
        """Run one measured request, record it, and return its breakdown and verdict.

        Raise the client's errors; nothing is recorded when the request fails.
        """
        coordinator = self._coordinator
        # Residency right before the request decides whether it has to load the model.
        await coordinator.async_refresh()
        model = coordinator.resolve_model(model)
        before = coordinator.data.held.get(model) if coordinator.last_update_success else None
        self._started(model)
        if before is None and coordinator.last_update_success:
            # Progress of a long cold probe: poll soon, so the model shows "loading" while
            # it loads (fast polls follow while it does), not only when the reply is there.
            coordinator.poll_soon()
        try:
            try:
                reply = await coordinator.client.timed_generation(
                    api, model, prompt, options=options, timeout=timeout, system=system, think=think
                )
            finally:
                self._log.ended(model, coordinator.utcnow())
            # What the request did to residency, read while it still counts as ours: a
            # runner it loaded (or replaced) shows up now, not at the next poll.
            await coordinator.async_refresh()
        except BaseException:
            self._failed(model)
            raise
        probe, changes = self._monitor.probe_finished(
            model,
            reply,
            was_resident=before is not None,
            now=coordinator.utcnow(),
            monotonic=time.monotonic(),
            # The polls right after the request may still see its load; later ones not.
            announce_window=coordinator.announce_window,
        )
        coordinator.announce(changes)
        self._measured()
        return replace(probe, resident_before=before)

    async def async_load(
        self, model: str, load: Callable[[], Awaitable[None]], *, was_resident: bool
    ) -> float:
        """Run ``load`` (a preload's, a pin's or a warm-up's request); return its seconds.

        The load it causes gets its exact figure and is no cold start (nobody waited for
        it); polls while it runs do not report it as another client's. Raise what ``load``
        raises; nothing is recorded then.
        """
        coordinator = self._coordinator
        self._started(model)
        started = time.monotonic()
        try:
            try:
                await load()
            finally:
                self._log.ended(model, coordinator.utcnow())
            seconds = time.monotonic() - started
            # What the request did to residency, read while it still counts as ours.
            await coordinator.async_refresh()
        except BaseException:
            self._failed(model)
            raise
        coordinator.announce(
            self._monitor.own_load_finished(
                model,
                seconds=seconds,
                was_resident=was_resident,
                monotonic=time.monotonic(),
                announce_window=coordinator.announce_window,
            )
        )
        self._measured()
        return seconds

    async def async_unload(self, model: str, *, timeout: float) -> None:
        """Unload ``model``: what leaves now is ours (raise the client's errors)."""
        self._monitor.evicting(model)
        await self._coordinator.client.unload(model, timeout=timeout)

    def unload_given_up(self, model: str) -> None:
        """Note that an unload of ours gave up: what leaves later is not ours to explain."""
        self._monitor.evicting(model, now=False)
