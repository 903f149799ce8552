"""Following a server's residency event stream: reconnect with backoff, a failure logged once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
import contextlib
import time

from .const import EVENTS_RETRY_MAX, EVENTS_RETRY_MIN, LOGGER
from .core.backends.base import PushesResidency
from .core.backends.errors import LlmServerError
from .core.backends.types import ResidentModel
from .core.reconnect import reconnect_delay


class ResidencyEventStream:
    """Reads what one server pushes of its residency, for its coordinator, until stopped."""

    def __init__(
        self,
        name: str,
        client: PushesResidency,
        *,
        observe: Callable[[tuple[ResidentModel, ...]], None],
        down: Callable[[], None],
        stopped: Callable[[], bool],
    ) -> None:
        """Hand each pushed residency to ``observe``; call ``down`` whenever the stream is."""
        self._name = name
        self._client = client
        self._observe = observe
        self._down = down
        self._stopped = stopped
        self.connected = False

    async def async_follow(self) -> None:
        """Take each residency change the server announces; reconnect with backoff."""
        delay: float | None = None
        # An unexpected failure is logged with its traceback once; until the stream works
        # again the same failure on every retry goes to the debug log only.
        failed_unexpectedly = False
        while not self._stopped():
            connected_at: float | None = None
            try:
                async with contextlib.aclosing(self._client.residency_events()) as events:
                    async for resident in events:
                        if connected_at is None:
                            connected_at = time.monotonic()
                            self.connected = True
                            LOGGER.debug("%s: following the server's events", self._name)
                        self._observe(resident)
                        if failed_unexpectedly:
                            LOGGER.info("%s: the event stream works again", self._name)
                            failed_unexpectedly = False
            except LlmServerError as err:
                LOGGER.debug("%s: event stream: %s", self._name, err)
            except Exception:
                if failed_unexpectedly:
                    LOGGER.debug("%s: the event stream failed again", self._name, exc_info=True)
                else:
                    LOGGER.exception("%s: the event stream failed", self._name)
                    failed_unexpectedly = True
            finally:
                self.connected = False
            delay = reconnect_delay(
                delay,
                None if connected_at is None else time.monotonic() - connected_at,
                shortest=EVENTS_RETRY_MIN,
                longest=EVENTS_RETRY_MAX,
            )
            LOGGER.debug("%s: following the events again in %s s", self._name, delay)
            self._down()  # polling takes over while the stream is down
            await asyncio.sleep(delay)
