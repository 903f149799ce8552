"""The coordinator's timers: fast polls while a model loads, and one-shot decisions.

Fast polls: again SETTLING_SCAN_INTERVAL after a poll, while a model loads.

A one-shot timer armed after each poll; the coordinator's own interval stays the normal
one (Home Assistant rounds it to whole seconds, so a sub-second interval would fire back
to back). Not for ever: a model busy with a very long first request (or a server that
never stops reporting a load) falls back to the regular interval after FAST_POLL_LIMIT.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
import time

from homeassistant.core import CALLBACK_TYPE, HassJob, HomeAssistant, callback
from homeassistant.helpers.event import async_call_later

from .const import FAST_POLL_LIMIT, SETTLING_SCAN_INTERVAL


class OneShot:
    """One timer of the entry's: armed again, it forgets its last arming."""

    def __init__(
        self, hass: HomeAssistant, name: str, action: Callable[[], Awaitable[None] | None]
    ) -> None:
        """Call ``action`` (a callback or a coroutine function) when due."""
        self._hass = hass
        self._action = action
        self._job = HassJob(self._fire, name, cancel_on_shutdown=True)
        self._unsub: CALLBACK_TYPE | None = None

    @property
    def armed(self) -> bool:
        """Return True while armed."""
        return self._unsub is not None

    @callback
    def arm(self, delay: float | timedelta) -> None:
        """Call the action ``delay`` seconds from now (and not at an earlier arming)."""
        self.cancel()
        self._unsub = async_call_later(self._hass, delay, self._job)

    @callback
    def cancel(self) -> None:
        """Forget the arming, if any."""
        if self._unsub is not None:
            self._unsub()
            self._unsub = None

    async def _fire(self, _now: datetime) -> None:
        self._unsub = None
        if (pending := self._action()) is not None:
            await pending


class FastPoll:
    """Arms and cancels one coordinator's fast poll."""

    def __init__(
        self,
        hass: HomeAssistant,
        name: str,
        refresh: Callable[[], Awaitable[None]],
        *,
        unwanted: Callable[[], bool],
    ) -> None:
        """Call ``refresh`` when due; never while ``unwanted()`` (shut down, events, no polls)."""
        self._timer = OneShot(hass, f"{name} fast poll", refresh)
        self._unwanted = unwanted
        self._settling_since: float | None = None

    @property
    def armed(self) -> bool:
        """Return True while a fast poll is armed."""
        return self._timer.armed

    @callback
    def cancel(self) -> None:
        """Forget the armed poll, if any."""
        self._timer.cancel()

    @callback
    def after_poll(self, *, settling: bool) -> None:
        """Poll again soon while something settles, for at most FAST_POLL_LIMIT in a row."""
        self.cancel()
        if not settling:
            self._settling_since = None
            return
        now = time.monotonic()
        if self._settling_since is None:
            self._settling_since = now
        if now - self._settling_since <= FAST_POLL_LIMIT.total_seconds():
            self.soon()

    @callback
    def soon(self) -> None:
        """Poll again SETTLING_SCAN_INTERVAL from now, unless no fast poll is wanted."""
        self.cancel()
        if not self._unwanted():
            self._timer.arm(SETTLING_SCAN_INTERVAL)
