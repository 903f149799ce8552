"""Repair issues of one server, from the findings of ``core.repairs``.

Reloads waiting to happen, reloads that repeat, and agents whose keep_alive overrides a
pin or preload. Checked after every poll; an issue goes away by itself once its finding
does.
"""

from __future__ import annotations

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir

from .const import DOMAIN
from .controller import ResidencyController
from .coordinator import LlmWarmthCoordinator
from .core.monitor import LoadObserved, MonitorChange
from .core.repairs import (
    AgentUse,
    KeepAliveConflict,
    Kept,
    Thrash,
    ThrashCause,
    ThrashWatch,
    context_mismatches,
    keep_alive_conflicts,
)
from .core.residency import ModelUnloaded
from .data import LlmWarmthConfigEntry
from .sentences import local_time

type Issue = tuple[str, dict[str, str]]


def _gib(size: int) -> str:
    return f"{size / 1024**3:.1f}"


def thrash_issue(thrash: Thrash, server: str) -> Issue:
    """Return the translation key and placeholders of a reload-thrash finding.

    Every word is the translation's: the placeholders hold names and numbers only.
    """
    model, count, minutes = thrash.models[0], str(thrash.count), str(thrash.minutes)
    other = thrash.models[1] if len(thrash.models) > 1 else ""
    issue: Issue
    match thrash.cause:
        case ThrashCause.DO_NOT_FIT if thrash.sizes:
            issue = (
                "reload_thrash_do_not_fit",
                {
                    "server": server,
                    "model": model,
                    "other_model": other,
                    "count": count,
                    "minutes": minutes,
                    "model_gib": _gib(thrash.sizes[0]),
                    "other_gib": _gib(thrash.sizes[1]),
                },
            )
        case ThrashCause.DO_NOT_FIT:
            issue = (
                "reload_thrash_do_not_fit_unsized",
                {
                    "server": server,
                    "model": model,
                    "other_model": other,
                    "count": count,
                    "minutes": minutes,
                },
            )
        case ThrashCause.AGENTS_DIFFER:
            issue = (
                "reload_thrash_agents_differ",
                {
                    "server": server,
                    "model": model,
                    "count": count,
                    "minutes": minutes,
                    "agents": ", ".join(
                        f"{agent}: {num_ctx}" for agent, num_ctx in thrash.contexts
                    ),
                },
            )
        case ThrashCause.CONTEXT_MISMATCH:
            issue = (
                "reload_thrash_context_mismatch",
                {
                    "server": server,
                    "model": model,
                    "count": count,
                    "minutes": minutes,
                    "reloads": str(thrash.reloads),
                },
            )
        case ThrashCause.PUSHED_OUT:
            issue = (
                "reload_thrash_pushed_out",
                {
                    "server": server,
                    "model": model,
                    "count": count,
                    "minutes": minutes,
                    "pushed_out": str(thrash.pushed_out),
                    "others": ", ".join(thrash.pushed_out_by),
                    "expired": str(thrash.expired),
                },
            )
        case ThrashCause.LEFT_EARLY:
            issue = (
                "reload_thrash_left_early",
                {
                    "server": server,
                    "model": model,
                    "count": count,
                    "minutes": minutes,
                    "left_early": str(thrash.left_early),
                },
            )
        case ThrashCause.KEPT_TOO_SHORT:
            issue = (
                "reload_thrash_kept_too_short",
                {
                    "server": server,
                    "model": model,
                    "count": count,
                    "minutes": minutes,
                    "expired": str(thrash.expired),
                    "pushed_out": str(thrash.pushed_out),
                },
            )
    return issue


def keep_alive_issue(conflict: KeepAliveConflict, server: str) -> Issue:
    """Return the translation key and placeholders of an agent's overriding keep_alive."""
    forever = conflict.keep_alive < 0
    if conflict.what is Kept.PRELOAD or conflict.until is not None:
        until = local_time(conflict.until) if conflict.until is not None else ""
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


class RepairIssues:
    """Keeps one entry's repair issues in step with what its server does."""

    def __init__(
        self,
        hass: HomeAssistant,
        entry: LlmWarmthConfigEntry,
        coordinator: LlmWarmthCoordinator,
        controller: ResidencyController,
    ) -> None:
        """Check what ``coordinator`` polls against the agents, pins and preloads."""
        self._hass = hass
        self._entry = entry
        self._coordinator = coordinator
        self._controller = controller
        self._raised: set[str] = set()
        # Recent loads and displacements, for the reload thrash repair.
        self.thrash = ThrashWatch()

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Check after every poll; the returned function stops and clears the issues."""
        unsubs = (
            self._coordinator.async_add_change_listener(self._async_changed),
            self._coordinator.async_add_poll_listener(self.async_check),
        )

        @callback
        def stop() -> None:
            for unsub in unsubs:
                unsub()
            for issue_id in self._raised:
                ir.async_delete_issue(self._hass, DOMAIN, issue_id)
            self._raised.clear()

        return stop

    @callback
    def _async_changed(self, changes: list[MonitorChange]) -> None:
        """Note the loads and displacements (the thrash repair counts them)."""
        now = self._coordinator.utcnow()
        for change in changes:
            if isinstance(change, LoadObserved):
                self.thrash.loaded(change.model, now, reloaded=change.figures.reloaded)
            elif isinstance(change, ModelUnloaded):
                self.thrash.left(change.model, change.reason, change.replaced_by, now)

    def agent_uses(self) -> list[AgentUse]:
        """Return how Home Assistant's Ollama agents at this server ask for their models.

        None unless it is an Ollama server: the directory reads them for that alone.
        """
        resolve = self._coordinator.resolve_model
        return [
            AgentUse(agent.name, resolve(agent.model), agent.num_ctx, agent.keep_alive)
            for agent in self._entry.runtime_data.agents.ollama
        ]

    @callback
    def async_check(self) -> None:
        """Raise the issues found now; delete those no longer found."""
        coordinator = self._coordinator
        if not coordinator.last_update_success or coordinator.data is None:
            return
        now = coordinator.utcnow()
        uses = self.agent_uses()
        held = coordinator.data.held
        server = self._entry.title
        wanted: dict[str, tuple[str, dict[str, str]]] = {}
        for found in context_mismatches({n: m.context_length for n, m in held.items()}, uses):
            wanted[self._id("context_mismatch", found.model)] = (
                "context_mismatch",
                {
                    "server": server,
                    "model": found.model,
                    "loaded": str(found.loaded),
                    "agent": found.agent,
                    "wanted": str(found.wanted),
                },
            )
        for thrash in self.thrash.findings(now, uses, coordinator.last_sizes):
            wanted[self._id("reload_thrash", *thrash.models)] = thrash_issue(thrash, server)
        # What the preload action asked to keep (the features' own keeps follow the
        # agent's keep_alive: an agent's turn over one of them is no conflict).
        models = coordinator.data.models
        preloads = {m: u for m, u in self._controller.pins.preloads.items() if m in models}
        pins = self._controller.pins.pins
        for conflict in keep_alive_conflicts(uses, pins, preloads, now):
            wanted[self._id("keep_alive_conflict", conflict.model)] = keep_alive_issue(
                conflict, server
            )
        for model, said in self._controller.failed_starts.items():
            if model in held:
                continue  # it loaded since (the controller forgets it)
            wanted[self._id("model_fails_to_start", model)] = (
                "model_fails_to_start",
                {"server": server, "model": model, "error": said},
            )
        for issue_id in self._raised - set(wanted):
            ir.async_delete_issue(self._hass, DOMAIN, issue_id)
        for issue_id, (key, placeholders) in wanted.items():
            ir.async_create_issue(
                self._hass,
                DOMAIN,
                issue_id,
                is_fixable=False,
                severity=ir.IssueSeverity.WARNING,
                translation_key=key,
                translation_placeholders=placeholders,
            )
        self._raised = set(wanted)

    def _id(self, kind: str, *models: str) -> str:
        return "_".join((kind, self._entry.entry_id, *models))
