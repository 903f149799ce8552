"""Where a peer's model runs, and how warm it is there (pure).

A llama-swap can front other servers, its ``peers``: it lists each peer's model as
``<peer>/<model>`` and forwards its requests, but it does not know whether the peer holds
it (recorded: state "" in its events, "unloaded" in /v1/models). The peer's own API knows:
when the peer is another entry of this integration, its warmth is read from there.

The entry is found by what it serves: the one other server that has the peer's model.
None (the peer is not added), several (which one cannot be told) or one that cannot be
reached is said as such, never guessed.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from .backends.types import InstalledModel
from .monitor import ServerSnapshot
from .warmth import Warmth, model_warmth


class PeerReading(StrEnum):
    """How a peer's model's warmth was read."""

    READ = "read"  # from the one entry that serves it
    NOT_ADDED = "not_added"  # no entry serves it: add the peer as an entry of its own
    AMBIGUOUS = "ambiguous"  # several entries serve a model of that name
    UNREACHABLE = "unreachable"  # its entry's last poll failed


@dataclass(frozen=True, slots=True)
class PeerView:
    """A peer's model as the front server's entry shows it.

    ``model``: its name on the peer; ``server``: the entry that serves it (where one was
    found); ``warmth``: there (None unless ``reading`` is ``READ``).
    """

    peer: str
    model: str
    reading: PeerReading
    server: str | None = None
    warmth: Warmth | None = None


@dataclass(frozen=True, slots=True)
class OtherServer:
    """Another entry's server: its name, its last snapshot and whether that poll worked."""

    name: str
    snapshot: ServerSnapshot | None
    reachable: bool


def peer_views(
    installed: Mapping[str, InstalledModel], others: Sequence[OtherServer]
) -> dict[str, PeerView]:
    """Return the view of each peer model in ``installed``, read from ``others``."""
    views: dict[str, PeerView] = {}
    for name, listed in installed.items():
        if listed.peer is None:
            continue
        there = name.removeprefix(f"{listed.peer}/")
        serving = [o for o in others if o.snapshot is not None and there in o.snapshot.installed]
        if not serving:
            views[name] = PeerView(listed.peer, there, PeerReading.NOT_ADDED)
        elif len(serving) > 1:
            views[name] = PeerView(listed.peer, there, PeerReading.AMBIGUOUS)
        elif not (other := serving[0]).reachable or other.snapshot is None:
            views[name] = PeerView(listed.peer, there, PeerReading.UNREACHABLE, other.name)
        else:
            warmth = model_warmth(other.snapshot, there)
            views[name] = PeerView(listed.peer, there, PeerReading.READ, other.name, warmth)
    return views
