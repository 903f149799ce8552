"""An answer an emulator holds back until the test lets it go (the emulators' faults)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass
class HeldAnswer:
    """An answer a test holds back: ``arrived`` is set when its request comes in.

    The answer goes (as the fault says, or as the server would answer then) once the test
    calls :meth:`release`; never, if it does not (a server that does not answer in time).
    """

    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        """Let the held answer go."""
        self.released.set()
