"""Where a llama-swap peer's model runs, and how warm it is there (core/peers.py)."""

from datetime import UTC, datetime

from custom_components.llm_warmth.core.backends.types import (
    InstalledModel,
    ResidencyState,
    ResidentModel,
)
from custom_components.llm_warmth.core.monitor import ServerSnapshot
from custom_components.llm_warmth.core.peers import (
    OtherServer,
    PeerReading,
    PeerView,
    peer_views,
)
from custom_components.llm_warmth.core.warmth import Warmth

NOW = datetime(2030, 1, 1, tzinfo=UTC)
FRONT = {
    "tiny": InstalledModel("tiny"),
    "lab/tiny": InstalledModel("lab/tiny", peer="lab"),
    "lab/big": InstalledModel("lab/big", peer="lab"),
}


def server(*installed: str, resident: tuple[str, ...] = ()) -> ServerSnapshot:
    return ServerSnapshot(
        version="v1",
        resident={n: ResidentModel(n, ResidencyState.LOADED) for n in resident},
        installed={n: InstalledModel(n) for n in installed},
        loading=frozenset(),
        timings={},
        polled_at=NOW,
    )


def test_a_peer_model_is_read_from_the_one_entry_that_serves_it() -> None:
    lab = OtherServer("llama-swap lab", server("tiny", "big", resident=("tiny",)), True)
    other = OtherServer("ollama nas", server("qwen3:8b"), True)
    assert peer_views(FRONT, [lab, other]) == {
        "lab/tiny": PeerView("lab", "tiny", PeerReading.READ, "llama-swap lab", Warmth.WARM),
        "lab/big": PeerView("lab", "big", PeerReading.READ, "llama-swap lab", Warmth.COLD),
    }


def test_unknown_is_said_with_its_reason_never_guessed() -> None:
    assert peer_views(FRONT, [])["lab/tiny"] == PeerView("lab", "tiny", PeerReading.NOT_ADDED)
    two = [OtherServer("a", server("tiny"), True), OtherServer("b", server("tiny"), True)]
    assert peer_views(FRONT, two)["lab/tiny"] == PeerView("lab", "tiny", PeerReading.AMBIGUOUS)
    down = [OtherServer("lab", server("tiny", resident=("tiny",)), False)]
    assert peer_views(FRONT, down)["lab/tiny"] == PeerView(
        "lab", "tiny", PeerReading.UNREACHABLE, "lab"
    )
    # An entry with no snapshot yet serves nothing that can be told.
    assert peer_views(FRONT, [OtherServer("new", None, True)])["lab/big"].reading is (
        PeerReading.NOT_ADDED
    )


def test_only_peer_models_get_a_view_and_the_name_there_is_the_peers() -> None:
    assert peer_views({"tiny": InstalledModel("tiny")}, []) == {}
    # A peer id that is not the name's prefix (a bare route) keeps the name as it is.
    odd = {"tiny2": InstalledModel("tiny2", peer="lab")}
    assert peer_views(odd, [OtherServer("lab", server("tiny2"), True)])["tiny2"].model == "tiny2"
