"""What one server adds to the household's view: reachable, its models' warmth, its GPUs (pure)."""

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from .headroom import GpuMemoryView
from .monitor import ServerSnapshot
from .warmth import Warmth, model_warmth


class Reach(StrEnum):
    """Whether the household reaches the server now."""

    UP = "up"
    DOWN = "down"


@dataclass(frozen=True, slots=True)
class GpuPart:
    """One GPU of the server's host, in bytes (None: the source does not tell)."""

    name: str
    total: int | None
    used: int | None
    headroom: int | None


@dataclass(frozen=True, slots=True)
class ServerPart:
    """One server as the household sees it.

    ``models``: every model the server lists, with its warmth (the last one seen while it
    is down); ``peers``: the models served on a peer, with the peer's name.
    """

    reach: Reach
    models: dict[str, Warmth]
    peers: dict[str, str]
    gpus: tuple[GpuPart, ...]

    @property
    def warm(self) -> tuple[str, ...]:
        """Return the models warm now (kept warm included), in name order."""
        return tuple(
            sorted(m for m, w in self.models.items() if w in (Warmth.WARM, Warmth.KEPT_WARM))
        )


def server_part(
    snapshot: ServerSnapshot,
    *,
    reachable: bool,
    gpus: Iterable[tuple[str, int | None, int | None, GpuMemoryView]] = (),
) -> ServerPart:
    """Return the server's part: ``gpus`` as (name, total, used, memory view) of its host."""
    models = {model: model_warmth(snapshot, model) for model in sorted(snapshot.models)}
    peers = {
        model: listed.peer
        for model, listed in snapshot.installed.items()
        if listed.peer is not None
    }
    return ServerPart(
        reach=Reach.UP if reachable else Reach.DOWN,
        models=models,
        peers=peers,
        gpus=tuple(GpuPart(name, total, used, view.headroom) for name, total, used, view in gpus),
    )
