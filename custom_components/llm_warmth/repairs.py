"""Repair issues of one server, from the findings of ``core.repairs``.

Reloads waiting to happen, reloads that repeat, and agents whose keep_alive overrides a
pin or preload. Checked after every poll; an issue goes away by itself once its finding
does.
"""

from __future__ import annotations

from datetime import datetime

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util

from .const import DOMAIN
from .controller import ResidencyController
from .coordinator import LlmWarmthCoordinator
from .core.repairs import AgentUse, context_mismatches, keep_alive_conflicts
from .data import LlmWarmthConfigEntry


def _keep(seconds: int) -> str:
    return "-1 (for ever)" if seconds < 0 else f"{seconds} s"


def _when(until: datetime | None) -> str:
    return "no end" if until is None else dt_util.as_local(until).isoformat(timespec="minutes")


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

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Check after every poll; the returned function stops and clears the issues."""
        unsub = self._coordinator.async_add_poll_listener(self.async_check)

        @callback
        def stop() -> None:
            unsub()
            for issue_id in self._raised:
                ir.async_delete_issue(self._hass, DOMAIN, issue_id)
            self._raised.clear()

        return stop

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
        for thrash in coordinator.thrash.findings(now, uses, coordinator.last_sizes):
            wanted[self._id("reload_thrash", *thrash.models)] = (
                f"reload_thrash_{thrash.cause.value}",
                {
                    "server": server,
                    "models": " and ".join(thrash.models),
                    "count": str(thrash.count),
                    "minutes": str(thrash.minutes),
                    "detail": thrash.detail,
                },
            )
        preloads = self._controller.preloaded_until
        for conflict in keep_alive_conflicts(uses, coordinator.pins.pins, preloads, now):
            wanted[self._id("keep_alive_conflict", conflict.model)] = (
                f"keep_alive_overrides_{conflict.what}",
                {
                    "server": server,
                    "model": conflict.model,
                    "agent": conflict.agent,
                    "keep_alive": _keep(conflict.keep_alive),
                    "until": _when(conflict.until),
                },
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
