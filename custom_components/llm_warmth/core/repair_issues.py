"""Which repair issues a server's findings raise: ids, translation keys, placeholders (pure).

``core.repairs`` finds what the household should change; this module says which repair
issue each finding is (its id, so that it goes away by itself once the finding does), with
which translation and which placeholders. Every word is the translation's: the
placeholders hold names and numbers only, and a time comes through ``time_text`` (the
shell's, in the household's time zone).
"""

from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime

from .pins import Pin
from .repairs import (
    AgentUse,
    ContextMismatch,
    KeepAliveConflict,
    Kept,
    Thrash,
    ThrashCause,
    context_mismatches,
    keep_alive_conflicts,
)

# A repair issue's translation key and its placeholders.
type Issue = tuple[str, dict[str, str]]


def _gib(size: int) -> str:
    """Return a size in bytes as GiB with one decimal, as the issues show it."""
    return f"{size / 1024**3:.1f}"


def issue_id(kind: str, entry_id: str, *models: str) -> str:
    """Return the id of an entry's issue of ``kind`` about ``models``."""
    return "_".join((kind, entry_id, *models))


def context_mismatch_issue(found: ContextMismatch, server: str) -> Issue:
    """Return the translation key and placeholders of a model loaded with another context."""
    return (
        "context_mismatch",
        {
            "server": server,
            "model": found.model,
            "loaded": str(found.loaded),
            "agent": found.agent,
            "wanted": str(found.wanted),
        },
    )


def thrash_issue(thrash: Thrash, server: str) -> Issue:
    """Return the translation key and placeholders of a reload-thrash finding.

    Every word is the translation's: the placeholders hold names and numbers only: those of
    every finding (``_thrash_placeholders``), then what its cause tells.
    """
    other = thrash.models[1] if len(thrash.models) > 1 else ""
    issue: Issue
    match thrash.cause:
        case ThrashCause.DO_NOT_FIT if thrash.sizes:
            gib = {"model_gib": _gib(thrash.sizes[0]), "other_gib": _gib(thrash.sizes[1])}
            issue = (
                "reload_thrash_do_not_fit",
                _thrash_placeholders(thrash, server, other_model=other, **gib),
            )
        case ThrashCause.DO_NOT_FIT:
            issue = (
                "reload_thrash_do_not_fit_unsized",
                _thrash_placeholders(thrash, server, other_model=other),
            )
        case ThrashCause.AGENTS_DIFFER:
            agents = ", ".join(f"{agent}: {num_ctx}" for agent, num_ctx in thrash.contexts)
            issue = (
                "reload_thrash_agents_differ",
                _thrash_placeholders(thrash, server, agents=agents),
            )
        case ThrashCause.CONTEXT_MISMATCH:
            issue = (
                "reload_thrash_context_mismatch",
                _thrash_placeholders(thrash, server, reloads=str(thrash.reloads)),
            )
        case ThrashCause.PUSHED_OUT:
            issue = (
                "reload_thrash_pushed_out",
                _thrash_placeholders(
                    thrash,
                    server,
                    pushed_out=str(thrash.pushed_out),
                    others=", ".join(thrash.pushed_out_by),
                    expired=str(thrash.expired),
                ),
            )
        case ThrashCause.LEFT_EARLY:
            issue = (
                "reload_thrash_left_early",
                _thrash_placeholders(thrash, server, left_early=str(thrash.left_early)),
            )
        case ThrashCause.KEPT_TOO_SHORT:
            issue = (
                "reload_thrash_kept_too_short",
                _thrash_placeholders(
                    thrash, server, expired=str(thrash.expired), pushed_out=str(thrash.pushed_out)
                ),
            )
    return issue


def _thrash_placeholders(thrash: Thrash, server: str, **told: str) -> dict[str, str]:
    """Return a thrash finding's placeholders: every finding's, and what its cause tells.

    Every finding names the server, the model, its loads and the minutes they came in.
    """
    common = {
        "server": server,
        "model": thrash.models[0],
        "count": str(thrash.count),
        "minutes": str(thrash.minutes),
    }
    return common | told


def keep_alive_issue(
    conflict: KeepAliveConflict, server: str, time_text: Callable[[datetime], str]
) -> Issue:
    """Return the translation key and placeholders of an agent's overriding keep_alive.

    ``time_text``: the end of the pin or preload as the household reads it.
    """
    forever = conflict.keep_alive < 0
    if conflict.what is Kept.PRELOAD or conflict.until is not None:
        until = time_text(conflict.until) if conflict.until is not None else ""
        if forever:
            return f"keep_alive_overrides_{conflict.what.value}_forever", {
                "server": server,
                "model": conflict.model,
                "agent": conflict.agent,
                "until": until,
            }
        return f"keep_alive_overrides_{conflict.what.value}", {
            "server": server,
            "model": conflict.model,
            "agent": conflict.agent,
            "keep_alive": str(conflict.keep_alive),
            "until": until,
        }
    return "keep_alive_overrides_pin_no_end", {
        "server": server,
        "model": conflict.model,
        "agent": conflict.agent,
        "keep_alive": str(conflict.keep_alive),
    }


def wanted_issues(
    *,
    entry_id: str,
    server: str,
    loaded_contexts: Mapping[str, int | None],
    uses: Collection[AgentUse],
    thrashes: Iterable[Thrash],
    pins: Mapping[str, Pin],
    preloads: Mapping[str, datetime],
    models: Collection[str],
    failed_starts: Mapping[str, str],
    now: datetime,
    time_text: Callable[[datetime], str],
) -> dict[str, Issue]:
    """Return every issue the entry's server should show now, by issue id.

    ``loaded_contexts``: the resident models and their context (None: not said);
    ``preloads``: what the preload action asked to keep, until when (the features' own
    keeps follow the agent's keep_alive: an agent's turn over one of them is no conflict),
    counted for the server's ``models`` only; ``failed_starts``: what the server said of a
    model our load could not start, raised while the model is not resident.
    """
    wanted: dict[str, Issue] = {}
    for found in context_mismatches(loaded_contexts, uses):
        wanted[issue_id("context_mismatch", entry_id, found.model)] = context_mismatch_issue(
            found, server
        )
    for thrash in thrashes:
        wanted[issue_id("reload_thrash", entry_id, *thrash.models)] = thrash_issue(thrash, server)
    asked = {model: until for model, until in preloads.items() if model in models}
    for conflict in keep_alive_conflicts(uses, pins, asked, now):
        wanted[issue_id("keep_alive_conflict", entry_id, conflict.model)] = keep_alive_issue(
            conflict, server, time_text
        )
    for model, said in failed_starts.items():
        if model in loaded_contexts:
            continue  # it loaded since (the controller forgets it)
        wanted[issue_id("model_fails_to_start", entry_id, model)] = (
            "model_fails_to_start",
            {"server": server, "model": model, "error": said},
        )
    return wanted
