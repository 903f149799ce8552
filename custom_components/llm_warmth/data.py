"""Runtime data of a config entry, and the typed entry that carries it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import Platform

if TYPE_CHECKING:
    from .agents import AgentDirectory
    from .controller import ResidencyController
    from .coordinator import LlmWarmthCoordinator
    from .core.backends.base import LlmBackend
    from .diagnoses import Diagnoses
    from .gpu_coordinator import GpuCoordinator
    from .household import HouseholdWatch
    from .household_guard import HouseholdGuard
    from .idle_profiler import IdleProfiler
    from .own_requests import OwnRequests
    from .peer_watch import PeerWatch
    from .pins import Pins
    from .storage import EntryStore
    from .ttft_targets import TtftTargets
    from .usage import UsageWatch
    from .voice import VoiceWatch


@dataclass(frozen=True, slots=True)
class LlmWarmthData:
    """What one entry runs, built whole before its platforms.

    The coordinators fetch and monitor; each feature owns its state, its section of
    ``store`` and its listeners.
    """

    client: LlmBackend
    store: EntryStore
    coordinator: LlmWarmthCoordinator
    # Our own probes, loads and unloads, and when they ran.
    own_requests: OwnRequests
    # None: no GPU source is configured.
    gpu: GpuCoordinator | None
    server_device_id: str
    # The conversation agents that use this server's models.
    agents: AgentDirectory
    household: HouseholdWatch
    pins: Pins
    controller: ResidencyController
    guard: HouseholdGuard
    diagnoses: Diagnoses
    ttft_targets: TtftTargets
    profiler: IdleProfiler
    voice: VoiceWatch
    usage: UsageWatch
    # A llama-swap's peers' models, read from the entries that run them.
    peers: PeerWatch
    # The platforms set up for it (a conversation agent once it has a warm assistant: set
    # up with the first one added, without a reload).
    platforms: list[Platform]


type LlmWarmthConfigEntry = ConfigEntry[LlmWarmthData]
