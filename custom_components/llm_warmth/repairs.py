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
from .core.repair_issues import (
    Issue,
    keep_alive_issue as keep_alive_issue_at,
    wanted_issues,
)
from .core.repairs import AgentUse, KeepAliveConflict, ThrashWatch
from .core.residency import ModelUnloaded
from .data import LlmWarmthConfigEntry
from .sentences import local_time


def keep_alive_issue(conflict: KeepAliveConflict, server: str) -> Issue:
    """Return the translation key and placeholders of an agent's overriding keep_alive.

    The end of its pin or preload as the household reads it, in Home Assistant's time zone
    (``sentences.local_time``).
    """
    return keep_alive_issue_at(conflict, server, local_time)


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
        wanted = wanted_issues(
            entry_id=self._entry.entry_id,
            server=self._entry.title,
            loaded_contexts={n: m.context_length for n, m in held.items()},
            uses=uses,
            thrashes=self.thrash.findings(now, uses, coordinator.last_sizes),
            pins=self._controller.pins.pins,
            preloads=self._controller.pins.preloads,
            models=coordinator.data.models,
            failed_starts=self._controller.failed_starts,
            now=now,
            time_text=local_time,
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
