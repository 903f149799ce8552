"""Runtime data of a config entry, and the typed entry that carries it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from homeassistant.config_entries import ConfigEntry

if TYPE_CHECKING:
    from .agents import AgentDirectory
    from .controller import ResidencyController
    from .coordinator import LlmWarmthCoordinator
    from .core.backends.base import LlmBackend
    from .gpu_coordinator import GpuCoordinator
    from .household_guard import HouseholdGuard
    from .idle_profiler import IdleProfiler


@dataclass
class LlmWarmthData:
    """What one entry runs: its server's client, coordinators, residency controller, agents."""

    client: LlmBackend
    coordinator: LlmWarmthCoordinator
    controller: ResidencyController
    server_device_id: str
    # The conversation agents that use this server's models.
    agents: AgentDirectory
    # None: no GPU source is configured.
    gpu: GpuCoordinator | None
    guard: HouseholdGuard
    profiler: IdleProfiler


type LlmWarmthConfigEntry = ConfigEntry[LlmWarmthData]
