"""The warming signals' subentry flow: a model, and the entities whose changes precede its use.

One subentry per model of the server: the household picks the entities (a person coming
home, a motion sensor, the TV, a satellite, a next alarm, a calendar) whose changes may
come before someone talks to the model. The form suggests the entities of those kinds in
the areas of the satellites whose pipelines use the model, and every person.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.config_entries import (
    ConfigEntryState,
    ConfigSubentryFlow,
    SubentryFlowResult,
)
from homeassistant.const import ATTR_DEVICE_CLASS, Platform
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr, entity_registry as er
from homeassistant.helpers.selector import (
    EntitySelector,
    EntitySelectorConfig,
    EntityWithDeviceFilterSelectorConfig,
    SelectSelector,
    SelectSelectorConfig,
)
import probatio as vol

from .const import CONF_SIGNAL_ENTITIES, CONF_SIGNAL_MODEL, SUBENTRY_WARMING_SIGNALS
from .core.signal_edges import (
    MAX_ENTITIES,
    SIGNAL_DOMAINS,
    TIMESTAMP,
    Candidate,
    is_signal_kind,
    suggested_signals,
)
from .data import LlmWarmthConfigEntry
from .signal_sources import device_class_of

# The entity picker: every kind of signal, a sensor only as a time (a next alarm).
_SIGNALS = EntitySelector(
    EntitySelectorConfig(
        multiple=True,
        filter=[
            EntityWithDeviceFilterSelectorConfig(
                domain=[d for d in SIGNAL_DOMAINS if d != "sensor"]
            ),
            EntityWithDeviceFilterSelectorConfig(domain="sensor", device_class=TIMESTAMP),
        ],
    )
)


class WarmingSignalsFlow(ConfigSubentryFlow):
    """Add or change a model's warming signals."""

    _model: str

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Ask which model the signals are for (one without signals yet)."""
        entry: LlmWarmthConfigEntry = self._get_entry()
        if entry.state is not ConfigEntryState.LOADED:
            return self.async_abort(reason="server_not_loaded")
        taken = {
            s.data.get(CONF_SIGNAL_MODEL)
            for s in entry.subentries.values()
            if s.subentry_type == SUBENTRY_WARMING_SIGNALS
        }
        models = sorted(m for m in entry.runtime_data.coordinator.data.models if m not in taken)
        if not models:
            return self.async_abort(reason="every_model_has_signals")
        if user_input is not None:
            self._model = user_input[CONF_SIGNAL_MODEL]
            return await self.async_step_entities()
        return self.async_show_form(
            step_id="user",
            data_schema=vol.Schema(
                {
                    vol.Required(CONF_SIGNAL_MODEL): SelectSelector(
                        SelectSelectorConfig(options=models)
                    )
                }
            ),
        )

    async def async_step_entities(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Ask for the model's signals, the suggested ones ticked."""
        errors: dict[str, str] = {}
        if user_input is not None:
            entities, errors = _chosen(self.hass, user_input)
            if not errors:
                return self.async_create_entry(
                    title=self._model,
                    data={CONF_SIGNAL_MODEL: self._model, CONF_SIGNAL_ENTITIES: entities},
                )
        suggested = user_input or {
            CONF_SIGNAL_ENTITIES: suggestions(self.hass, self._get_entry(), self._model)
        }
        return self.async_show_form(
            step_id="entities",
            data_schema=self.add_suggested_values_to_schema(
                vol.Schema({vol.Required(CONF_SIGNAL_ENTITIES): _SIGNALS}), suggested
            ),
            description_placeholders={"model": self._model},
            errors=errors,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change a model's signals."""
        subentry = self._get_reconfigure_subentry()
        errors: dict[str, str] = {}
        if user_input is not None:
            entities, errors = _chosen(self.hass, user_input)
            if not errors:
                return self.async_update_and_abort(
                    self._get_entry(),
                    subentry,
                    data={**subentry.data, CONF_SIGNAL_ENTITIES: entities},
                )
        current: Mapping[str, Any] = user_input or subentry.data
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(
                vol.Schema({vol.Required(CONF_SIGNAL_ENTITIES): _SIGNALS}), current
            ),
            description_placeholders={"model": str(subentry.data.get(CONF_SIGNAL_MODEL))},
            errors=errors,
        )


def _chosen(hass: HomeAssistant, user_input: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """Return the entities the form was given, and the form's errors (none: they do)."""
    entities = list(user_input.get(CONF_SIGNAL_ENTITIES) or [])
    error = refused(hass, entities)
    return entities, {} if error is None else {CONF_SIGNAL_ENTITIES: error}


def refused(hass: HomeAssistant, entities: list[str]) -> str | None:
    """Return why these signals cannot be kept (an error key), or None."""
    if not entities:
        return "signals_none"
    if len(entities) > MAX_ENTITIES:
        return "signals_too_many"
    registry = er.async_get(hass)
    for entity_id in entities:
        state = hass.states.get(entity_id)
        if state is None and registry.async_get(entity_id) is None:
            return "signal_not_found"
        if not is_signal_kind(entity_id.split(".", 1)[0], device_class_of(hass, entity_id, state)):
            return "signal_kind"
    return None


def suggestions(hass: HomeAssistant, entry: LlmWarmthConfigEntry, model: str) -> list[str]:
    """Return the entities to suggest as ``model``'s signals.

    Those of a signal kind in the areas of the satellites whose pipelines' agents use the
    model, and every person (``core.signal_edges.suggested_signals``).
    """
    coordinator = entry.runtime_data.coordinator
    pipelines = {
        pipeline_id
        for pipeline_id, pipeline in entry.runtime_data.voice.pipelines.items()
        if coordinator.resolve_model(pipeline.model) == model
    }
    entities, devices = er.async_get(hass), dr.async_get(hass)
    areas = {
        area
        for state in hass.states.async_all("assist_satellite")
        if satellite_pipeline(hass, state.entity_id) in pipelines
        and (area := _area(entities, devices, state.entity_id)) is not None
    }
    candidates = [
        Candidate(
            state.entity_id,
            state.domain,
            state.attributes.get(ATTR_DEVICE_CLASS),
            _area(entities, devices, state.entity_id),
        )
        for state in hass.states.async_all(SIGNAL_DOMAINS)
    ]
    return suggested_signals(candidates, areas)


def satellite_pipeline(hass: HomeAssistant, entity_id: str) -> str | None:
    """Return the id of the pipeline a satellite runs (its device's pipeline select)."""
    from homeassistant.components.assist_pipeline import (  # noqa: PLC0415
        async_get_pipelines,
    )
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        async_get_pipeline,
    )

    registry = er.async_get(hass)
    satellite = registry.async_get(entity_id)
    if satellite is None or satellite.device_id is None:
        return None
    chosen = next(
        (
            hass.states.get(e.entity_id)
            for e in er.async_entries_for_device(registry, satellite.device_id)
            if e.domain == Platform.SELECT and e.unique_id.endswith("-pipeline")
        ),
        None,
    )
    if chosen is None:
        return None
    if chosen.state == "preferred":
        return async_get_pipeline(hass).id
    return next((p.id for p in async_get_pipelines(hass) if p.name == chosen.state), None)


def _area(entities: er.EntityRegistry, devices: dr.DeviceRegistry, entity_id: str) -> str | None:
    """Return the area of an entity: its own, else its device's."""
    entity = entities.async_get(entity_id)
    if entity is None:
        return None
    if entity.area_id is not None:
        return entity.area_id
    device = devices.async_get(entity.device_id) if entity.device_id else None
    return device.area_id if device else None
