"""Diagnostics download: the entry, the options and the latest snapshot, secrets redacted."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.const import CONF_API_KEY, CONF_URL
from homeassistant.core import HomeAssistant

from .const import CONF_EXPORTER_URL, DOMAIN
from .core.server_url import redact_url
from .data import LlmWarmthConfigEntry
from .household_entry import is_household

TO_REDACT = {CONF_API_KEY}


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: LlmWarmthConfigEntry
) -> dict[str, Any]:
    """Return what helps to debug an entry, without its API key or URL credentials."""
    if is_household(entry):
        # The household runs nothing of its own: which servers it shows, and their state.
        return {
            "household": True,
            "servers": [
                {"title": server.title, "state": server.state.value}
                for server in hass.config_entries.async_entries(DOMAIN)
                if not is_household(server)
            ],
        }
    runtime = entry.runtime_data
    coordinator = runtime.coordinator
    return {
        "entry": _entry(entry),
        "last_update_success": coordinator.last_update_success,
        "update_interval_seconds": coordinator.update_interval.total_seconds()
        if coordinator.update_interval
        else None,
        "fast_polling": coordinator.fast_polling,
        "events_connected": coordinator.events_connected,
        "capabilities": asdict(runtime.client.capabilities),
        # Home Assistant's Ollama agents at this address: their models and how they ask.
        "agents": [asdict(agent) for agent in runtime.agents.ollama],
        "openai_compatible_agents": [
            {"name": agent.name, "model": agent.model, "integration": agent.integration}
            for agent in runtime.agents.openai_compatible
        ],
        # What each feature keeps, as it is stored.
        "pins": runtime.pins.as_stored(),
        "diagnoses": runtime.diagnoses.as_stored(),
        "ttft_targets": runtime.ttft_targets.as_stored(),
        "idle_profiles": runtime.profiler.as_stored(),
        # Counts only: the times of each use would tell when the household is at home.
        "usage": runtime.usage.summary(),
        "guard": {
            "host": runtime.household.host,
            "protected": runtime.household.protected,
            "clear_for_seconds": runtime.guard.guard.clear_for.total_seconds(),
            "household": asdict(runtime.household.household()),
            **runtime.guard.as_stored(),
        },
        "snapshot": _snapshot(entry),
        "gpu": _gpu(entry),
    }


def _entry(entry: LlmWarmthConfigEntry) -> dict[str, Any]:
    """Return the entry's title, data and options, the key and URL credentials redacted."""
    data = async_redact_data(dict(entry.data), TO_REDACT)
    data[CONF_URL] = redact_url(entry.data[CONF_URL])
    options = dict(entry.options)
    if options.get(CONF_EXPORTER_URL):
        options[CONF_EXPORTER_URL] = redact_url(options[CONF_EXPORTER_URL])
    return {"title": entry.title, "data": data, "options": options}


def _snapshot(entry: LlmWarmthConfigEntry) -> dict[str, Any]:
    """Return the last poll: the server's version, the models resident and installed."""
    snapshot = entry.runtime_data.coordinator.data
    return {
        "version": snapshot.version,
        "polled_at": snapshot.polled_at.isoformat(),
        "resident": [asdict(m) for m in snapshot.resident.values()],
        "installed": [asdict(m) for m in snapshot.installed.values()],
        "loading": sorted(snapshot.loading),
        "timings": {name: t.as_dict() for name, t in snapshot.timings.items()},
    }


def _gpu(entry: LlmWarmthConfigEntry) -> dict[str, Any] | None:
    """Return the GPU source's last reading (None: no source configured)."""
    gpu = entry.runtime_data.gpu
    if gpu is None:
        return None
    return {
        "source": gpu.source.description,
        "last_update_success": gpu.last_update_success,
        "unavailable_reason": gpu.unavailable_reason,
        "reserve_bytes": gpu.reserve_bytes,
        "gpus": [asdict(reading) for reading in gpu.data.gpus.values()] if gpu.data else [],
    }
