"""Which repair issue each finding raises, with which words' placeholders (pure)."""

from datetime import UTC, datetime, timedelta

import pytest

from custom_components.llm_warmth.core.pins import Pin
from custom_components.llm_warmth.core.repair_issues import (
    context_mismatch_issue,
    issue_id,
    keep_alive_issue,
    thrash_issue,
    wanted_issues,
)
from custom_components.llm_warmth.core.repairs import (
    AgentUse,
    ContextMismatch,
    KeepAliveConflict,
    Kept,
    Thrash,
    ThrashCause,
)

NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
END = datetime(2026, 11, 29, 9, 30, tzinfo=UTC)
GIB = 1024**3


def stamp(when: datetime) -> str:
    return f"at {when:%H:%M}"


def test_issue_ids() -> None:
    """Kind, entry and models joined: one issue per finding and entry."""
    assert issue_id("reload_thrash", "E1", "a", "b") == "reload_thrash_E1_a_b"
    assert issue_id("context_mismatch", "E1") == "context_mismatch_E1"


def test_context_mismatch() -> None:
    """The numbers as text; the words are the translation's."""
    assert context_mismatch_issue(ContextMismatch("m", 4096, "Kitchen", 8192), "S") == (
        "context_mismatch",
        {"server": "S", "model": "m", "loaded": "4096", "agent": "Kitchen", "wanted": "8192"},
    )


def test_thrash_do_not_fit_with_and_without_sizes() -> None:
    """Two models that do not fit: their sizes in GiB to one decimal, when known."""
    sized = Thrash(("a", "b"), 4, 30, ThrashCause.DO_NOT_FIT, sizes=(int(5.25 * GIB), 3 * GIB))
    assert thrash_issue(sized, "S") == (
        "reload_thrash_do_not_fit",
        {
            "server": "S",
            "model": "a",
            "other_model": "b",
            "count": "4",
            "minutes": "30",
            "model_gib": "5.2",
            "other_gib": "3.0",
        },
    )
    big = Thrash(("a", "b"), 4, 30, ThrashCause.DO_NOT_FIT, sizes=(100 * GIB, GIB // 2))
    assert thrash_issue(big, "S")[1]["model_gib"] == "100.0"
    assert thrash_issue(big, "S")[1]["other_gib"] == "0.5"
    unsized = Thrash(("a",), 5, 20, ThrashCause.DO_NOT_FIT)
    assert thrash_issue(unsized, "S") == (
        "reload_thrash_do_not_fit_unsized",
        {"server": "S", "model": "a", "other_model": "", "count": "5", "minutes": "20"},
    )


def test_thrash_of_each_other_cause() -> None:
    """Each cause its own key and the numbers it explains itself with."""
    assert (
        thrash_issue(
            Thrash(("a",), 4, 30, ThrashCause.AGENTS_DIFFER, contexts=(("K", 8192), ("O", 4096))),
            "S",
        )[1]["agents"]
        == "K: 8192, O: 4096"
    )
    key, said = thrash_issue(Thrash(("a",), 4, 30, ThrashCause.CONTEXT_MISMATCH, reloads=2), "S")
    assert (key, said["reloads"]) == ("reload_thrash_context_mismatch", "2")
    key, said = thrash_issue(Thrash(("a",), 4, 30, ThrashCause.LEFT_EARLY, left_early=3), "S")
    assert (key, said) == (
        "reload_thrash_left_early",
        {"server": "S", "model": "a", "count": "4", "minutes": "30", "left_early": "3"},
    )
    key, said = thrash_issue(
        Thrash(("a",), 6, 30, ThrashCause.KEPT_TOO_SHORT, expired=5, pushed_out=1), "S"
    )
    assert (key, said) == (
        "reload_thrash_kept_too_short",
        {
            "server": "S",
            "model": "a",
            "count": "6",
            "minutes": "30",
            "expired": "5",
            "pushed_out": "1",
        },
    )
    key, said = thrash_issue(
        Thrash(
            ("a",), 4, 30, ThrashCause.PUSHED_OUT, expired=1, pushed_out=2, pushed_out_by=("b", "c")
        ),
        "S",
    )
    assert key == "reload_thrash_pushed_out"
    assert (said["others"], said["pushed_out"], said["expired"]) == ("b, c", "2", "1")


@pytest.mark.parametrize(
    ("conflict", "key", "placeholders"),
    [
        (
            KeepAliveConflict("m", "K", -1, Kept.PIN, END),
            "keep_alive_overrides_pin_forever",
            {"server": "S", "model": "m", "agent": "K", "until": "at 09:30"},
        ),
        (
            KeepAliveConflict("m", "K", 0, Kept.PIN, END),
            "keep_alive_overrides_pin",
            {"server": "S", "model": "m", "agent": "K", "keep_alive": "0", "until": "at 09:30"},
        ),
        (
            KeepAliveConflict("m", "K", 300, Kept.PIN, None),
            "keep_alive_overrides_pin_no_end",
            {"server": "S", "model": "m", "agent": "K", "keep_alive": "300"},
        ),
        (
            KeepAliveConflict("m", "K", 300, Kept.PRELOAD, END),
            "keep_alive_overrides_preload",
            {"server": "S", "model": "m", "agent": "K", "keep_alive": "300", "until": "at 09:30"},
        ),
        (
            KeepAliveConflict("m", "K", -1, Kept.PRELOAD, None),
            "keep_alive_overrides_preload_forever",
            {"server": "S", "model": "m", "agent": "K", "until": ""},
        ),
    ],
)
def test_keep_alive_issue(
    conflict: KeepAliveConflict, key: str, placeholders: dict[str, str]
) -> None:
    """For ever or for so long, over a pin with or without end or a preload."""
    assert keep_alive_issue(conflict, "S", stamp) == (key, placeholders)


def wanted(**changes: object) -> dict[str, tuple[str, dict[str, str]]]:
    values: dict[str, object] = {
        "entry_id": "E",
        "server": "S",
        "loaded_contexts": {},
        "uses": [],
        "thrashes": [],
        "pins": {},
        "preloads": {},
        "models": {"m", "n"},
        "failed_starts": {},
        "now": NOW,
        "time_text": stamp,
    }
    return wanted_issues(**(values | changes))  # type: ignore[arg-type]


def test_nothing_found_nothing_wanted() -> None:
    """A calm server shows no issue."""
    assert wanted() == {}


def test_every_finding_is_wanted_by_its_id() -> None:
    """Context, thrash, keep_alive and failed start: each its id and key."""
    uses = [AgentUse("K", "m", 8192, 300)]
    found = wanted(
        loaded_contexts={"m": 4096},
        uses=uses,
        thrashes=[Thrash(("n", "m"), 4, 30, ThrashCause.DO_NOT_FIT)],
        pins={"m": Pin(model="m", since=NOW, until=END)},
        failed_starts={"x": "no memory"},
    )
    assert {k: v[0] for k, v in found.items()} == {
        "context_mismatch_E_m": "context_mismatch",
        "reload_thrash_E_n_m": "reload_thrash_do_not_fit_unsized",
        "keep_alive_conflict_E_m": "keep_alive_overrides_pin",
        "model_fails_to_start_E_x": "model_fails_to_start",
    }
    assert found["model_fails_to_start_E_x"][1] == {
        "server": "S",
        "model": "x",
        "error": "no memory",
    }
    assert found["keep_alive_conflict_E_m"][1]["until"] == "at 09:30"


def test_a_failed_start_goes_once_the_model_is_loaded() -> None:
    """A model resident since its failed start raises nothing (context unknown or not)."""
    assert wanted(failed_starts={"m": "x"}, loaded_contexts={"m": None}) == {}
    assert list(wanted(failed_starts={"m": "x"}, loaded_contexts={"n": 1})) == [
        "model_fails_to_start_E_m"
    ]


def test_preloads_of_the_servers_models_only() -> None:
    """A preload of a model the server no longer has is no conflict; a current one is."""
    uses = [AgentUse("K", "m", 8192, 300), AgentUse("K", "gone", 8192, 300)]
    preloads = {"m": NOW + timedelta(hours=1), "gone": NOW + timedelta(hours=1)}
    assert list(wanted(uses=uses, preloads=preloads)) == ["keep_alive_conflict_E_m"]
    assert wanted(uses=uses, preloads=preloads, models=set()) == {}
