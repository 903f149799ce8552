"""One server's part of the household view (core/household_view.py, no Home Assistant)."""

from datetime import UTC, datetime

from custom_components.llm_warmth.core.backends.types import (
    InstalledModel,
    ResidencyState,
    ResidentModel,
)
from custom_components.llm_warmth.core.headroom import GpuMemoryView
from custom_components.llm_warmth.core.household_view import GpuPart, Reach, server_part
from custom_components.llm_warmth.core.monitor import ServerSnapshot
from custom_components.llm_warmth.core.warmth import Warmth

NOW = datetime(2030, 1, 1, tzinfo=UTC)
GIB = 1024**3


def test_a_llama_swap_with_a_peer_and_a_gpu() -> None:
    """Every model with its warmth, the peer's models named with their peer, the GPUs."""
    snapshot = ServerSnapshot(
        version="v250",
        resident={"tiny": ResidentModel("tiny", ResidencyState.LOADED)},
        installed={
            "tiny": InstalledModel("tiny"),
            "big": InstalledModel("big"),
            "lab/tiny": InstalledModel("lab/tiny", peer="lab"),
        },
        loading=frozenset({"big"}),
        timings={},
        polled_at=NOW,
    )
    view = GpuMemoryView(headroom=6 * GIB, llm_used=2 * GIB, other_used=GIB, other_processes=())
    part = server_part(snapshot, reachable=True, gpus=[("RTX 4090", 24 * GIB, 3 * GIB, view)])
    assert part.reach is Reach.UP
    assert part.models == {"big": Warmth.LOADING, "lab/tiny": Warmth.COLD, "tiny": Warmth.WARM}
    assert list(part.models) == ["big", "lab/tiny", "tiny"]  # in name order
    assert part.peers == {"lab/tiny": "lab"}
    assert part.warm == ("tiny",)
    assert part.gpus == (GpuPart("RTX 4090", 24 * GIB, 3 * GIB, 6 * GIB),)


def test_a_server_down_keeps_what_it_last_showed() -> None:
    """Down: its models as last seen, no GPU."""
    snapshot = ServerSnapshot(
        version="0.34.4",
        resident={
            "a": ResidentModel("a", ResidencyState.LOADED),
            "b": ResidentModel("b", ResidencyState.LOADED),
        },
        installed={},
        loading=frozenset(),
        timings={},
        polled_at=NOW,
    )
    part = server_part(snapshot, reachable=False)
    assert part.reach is Reach.DOWN
    assert part.warm == ("a", "b")
    assert part.peers == {}
    assert part.gpus == ()
