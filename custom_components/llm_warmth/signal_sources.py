"""The household's signals of one server's models: their edges, live and from the recorder.

Each warming-signals subentry names a model and the entities the household picked for it
(``signals_flow.py``). This follows those entities and nothing else: each change of one
to another state is an edge (``core.signal_edges``), handed to the usage feature with its
model; a next-alarm sensor's edge comes when the time it names comes (a timer, the
entry's). When an entity is first followed, its past is read once from the recorder
(bounded to the uses' eight weeks and ``HISTORY_ROWS`` changes, in the recorder's
executor), so that learning starts from it. An entity removed from Home Assistant is
forgotten, and a repair says it is gone while the subentry still names it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Final

from homeassistant.config_entries import SIGNAL_CONFIG_ENTRY_CHANGED, ConfigEntry, ConfigEntryChange
from homeassistant.const import ATTR_DEVICE_CLASS
from homeassistant.core import (
    CALLBACK_TYPE,
    Event,
    EventStateChangedData,
    HomeAssistant,
    State,
    callback,
)
from homeassistant.helpers import entity_registry as er, issue_registry as ir
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.event import (
    async_track_point_in_utc_time,
    async_track_state_change_event,
)
from homeassistant.helpers.start import async_at_started
from homeassistant.util import dt as dt_util

from .const import (
    CONF_SIGNAL_ENTITIES,
    CONF_SIGNAL_MODEL,
    DOMAIN,
    LOGGER,
    SUBENTRY_WARMING_SIGNALS,
)
from .core.signal_edges import (
    HISTORY,
    Edge,
    alarm_edges,
    alarm_time,
    edge_of_change,
    edge_state,
    history_edges,
    is_alarm_kind,
)
from .data import LlmWarmthConfigEntry

# The most past changes read of one entity (the newest).
HISTORY_ROWS: Final = 20_000
ISSUE_GONE: Final = "signal_entity_gone"

type EdgesHeard = Callable[[str, list[Edge], bool], None]
type SignalsKept = Callable[[str, frozenset[str]], None]


def chosen_signals(entry: ConfigEntry) -> dict[str, tuple[str, ...]]:
    """Return each model's signal entities, from the entry's warming-signals subentries."""
    chosen: dict[str, tuple[str, ...]] = {}
    for subentry in entry.subentries.values():
        if subentry.subentry_type != SUBENTRY_WARMING_SIGNALS:
            continue
        model, entities = (
            subentry.data.get(CONF_SIGNAL_MODEL),
            subentry.data.get(CONF_SIGNAL_ENTITIES),
        )
        if isinstance(model, str) and isinstance(entities, list):
            chosen[model] = tuple(e for e in entities if isinstance(e, str))
    return chosen


def device_class_of(hass: HomeAssistant, entity_id: str, state: State | None) -> str | None:
    """Return an entity's device class: its state's, else the entity registry's."""
    entity = er.async_get(hass).async_get(entity_id)
    return (state.attributes.get(ATTR_DEVICE_CLASS) if state else None) or (
        entity.device_class or entity.original_device_class if entity else None
    )


def gone_issue_id(entry_id: str, model: str, entity_id: str) -> str:
    """Return the id of the repair that says a model's signal entity is gone."""
    return f"{ISSUE_GONE}_{entry_id}_{model}_{entity_id}"


class SignalSources:
    """Follows the entities each model's warming signals name; hands on their edges."""

    def __init__(
        self,
        hass: HomeAssistant,
        entry: LlmWarmthConfigEntry,
        *,
        on_edges: EdgesHeard,
        on_kept: SignalsKept,
    ) -> None:
        """Tell ``on_edges`` each model's edges (live or read from the past).

        ``on_kept``: each model's entities, whenever they change (the others forgotten).
        """
        self.hass = hass
        self.entry = entry
        self._on_edges = on_edges
        self._on_kept = on_kept
        self.chosen: dict[str, tuple[str, ...]] = {}
        # Each entity's last known edge state (a change to another one is an edge).
        self._known: dict[str, str | None] = {}
        # The entities whose past was read (or is being read) already.
        self._read: set[str] = set()
        # A next-alarm sensor's timer for the time its state names.
        self._alarms: dict[str, CALLBACK_TYPE] = {}
        self._unfollow: CALLBACK_TYPE | None = None
        self._followed: frozenset[str] = frozenset()
        self._raised: set[str] = set()

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Follow the chosen entities (and the subentries that name them); return the stop."""
        self._follow()
        stops = [
            async_dispatcher_connect(self.hass, SIGNAL_CONFIG_ENTRY_CHANGED, self._entry_changed),
            self.hass.bus.async_listen(er.EVENT_ENTITY_REGISTRY_UPDATED, self._registry_updated),
            # Entities have their states once Home Assistant has started: what is missing
            # then is gone.
            async_at_started(self.hass, self._check_gone),
        ]

        @callback
        def stop() -> None:
            for each in stops:
                each()
            self._stop_following()
            for issue_id in self._raised:
                ir.async_delete_issue(self.hass, DOMAIN, issue_id)
            self._raised.clear()

        return stop

    # ---------------------------------------------------------------- following

    @callback
    def _entry_changed(self, _change: ConfigEntryChange, changed: ConfigEntry) -> None:
        """Follow anew when this entry's warming signals changed."""
        if changed.entry_id == self.entry.entry_id and chosen_signals(changed) != self.chosen:
            self._follow()
            if self.hass.is_running:
                self._check_gone(self.hass)

    @callback
    def _follow(self) -> None:
        """Follow the entities the subentries name now; read the past of new ones."""
        self._stop_following()
        self.chosen = chosen_signals(self.entry)
        for model, entities in self.chosen.items():
            self._on_kept(model, frozenset(entities))
        everything = sorted({e for entities in self.chosen.values() for e in entities})
        for entity_id in everything:
            state = self.hass.states.get(entity_id)
            self._known.setdefault(entity_id, edge_state(state.state) if state else None)
            if state is not None and self._is_alarm(entity_id, state):
                self._set_alarm(entity_id, state.state)
        if everything:
            self._unfollow = async_track_state_change_event(self.hass, everything, self._changed)
        self._followed = frozenset(everything)
        if new := [e for e in everything if e not in self._read]:
            self._read.update(new)
            self.entry.async_create_background_task(
                self.hass, self._read_past(new), f"{self.entry.title} signals' past"
            )

    @callback
    def _stop_following(self) -> None:
        if self._unfollow is not None:
            self._unfollow()
            self._unfollow = None
        for cancel in self._alarms.values():
            cancel()
        self._alarms.clear()

    def _models_of(self, entity_id: str) -> list[str]:
        return [model for model, entities in self.chosen.items() if entity_id in entities]

    @callback
    def _changed(self, event: Event[EventStateChangedData]) -> None:
        """Hand on an entity's change to another state as an edge of each model naming it."""
        entity_id, new = event.data["entity_id"], event.data["new_state"]
        if new is None:  # removed from the state machine
            if self.hass.is_running:
                self._check_gone(self.hass)
            return
        if self._is_alarm(entity_id, new):
            self._set_alarm(entity_id, new.state)
            return
        edge = edge_of_change(self._known.get(entity_id), new.state)
        self._known[entity_id] = edge_state(new.state) or self._known.get(entity_id)
        if edge is not None:
            self._hand_on(entity_id, [Edge(dt_util.as_local(new.last_changed), entity_id, edge)])

    def _hand_on(self, entity_id: str, edges: list[Edge], *, live: bool = True) -> None:
        for model in self._models_of(entity_id):
            self._on_edges(model, edges, live)

    def _is_alarm(self, entity_id: str, state: State) -> bool:
        return is_alarm_kind(
            entity_id.split(".", 1)[0], device_class_of(self.hass, entity_id, state)
        )

    @callback
    def _set_alarm(self, entity_id: str, value: str) -> None:
        """Have the edge of a next-alarm sensor come when the time its state names comes."""
        if (cancel := self._alarms.pop(entity_id, None)) is not None:
            cancel()
        when = alarm_time(value)
        if when is None or when <= dt_util.utcnow():
            return

        @callback
        def ring(_now: datetime) -> None:
            self._alarms.pop(entity_id, None)
            self._hand_on(entity_id, [Edge(dt_util.as_local(when), entity_id, "alarm")])

        self._alarms[entity_id] = async_track_point_in_utc_time(self.hass, ring, when)

    # ---------------------------------------------------------------- the past

    async def _read_past(self, entities: list[str]) -> None:
        """Read the chosen entities' past from the recorder: the edges learning starts from."""
        if "recorder" not in self.hass.config.components:
            return
        from homeassistant.components.recorder import history  # noqa: PLC0415
        from homeassistant.helpers.recorder import get_instance  # noqa: PLC0415

        now = dt_util.utcnow()
        for entity_id in entities:
            found = await get_instance(self.hass).async_add_executor_job(
                _past_states,
                history.state_changes_during_period,
                self.hass,
                entity_id,
                now - HISTORY,
            )
            state = self.hass.states.get(entity_id)
            changes = [(dt_util.as_local(s.last_changed), s.state) for s in found]
            if state is not None and self._is_alarm(entity_id, state):
                edges = alarm_edges(entity_id, changes, dt_util.as_local(now))
            else:
                edges = history_edges(entity_id, changes)
            LOGGER.debug("%s: %d past edges of a signal read", self.entry.title, len(edges))
            # To the models naming it now (it may have been unchosen while it was read).
            self._hand_on(entity_id, edges, live=False)

    # ---------------------------------------------------------------- gone

    @callback
    def _registry_updated(self, event: Event[er.EventEntityRegistryUpdatedData]) -> None:
        """Forget an entity removed from Home Assistant; say so while a subentry names it."""
        if event.data["action"] == "remove" and event.data["entity_id"] in self._followed:
            self._check_gone(self.hass, removed=frozenset({event.data["entity_id"]}))

    @callback
    def _check_gone(self, hass: HomeAssistant, removed: frozenset[str] = frozenset()) -> None:
        """Raise a repair for each chosen entity that is gone, forget what it taught.

        Gone: neither in the entity registry nor in the state machine (``removed``: just
        removed from the registry, whatever state is left of it).
        """
        registry = er.async_get(hass)
        wanted: dict[str, Mapping[str, str]] = {}
        for model, entities in self.chosen.items():
            present = frozenset(
                e
                for e in entities
                if e not in removed
                and (registry.async_get(e) is not None or hass.states.get(e) is not None)
            )
            self._on_kept(model, present)
            for entity_id in sorted(set(entities) - present):
                wanted[gone_issue_id(self.entry.entry_id, model, entity_id)] = {
                    "model": model,
                    "entity_id": entity_id,
                    "server": self.entry.title,
                }
        for issue_id in self._raised - wanted.keys():
            ir.async_delete_issue(hass, DOMAIN, issue_id)
        for issue_id, placeholders in wanted.items():
            ir.async_create_issue(
                hass,
                DOMAIN,
                issue_id,
                is_fixable=False,
                severity=ir.IssueSeverity.WARNING,
                translation_key=ISSUE_GONE,
                translation_placeholders=dict(placeholders),
            )
        self._raised = set(wanted)


def _past_states(
    changes_during: Callable[..., Mapping[str, list[State]]],
    hass: HomeAssistant,
    entity_id: str,
    start: datetime,
) -> list[State]:
    """Return an entity's past states since ``start`` (in the recorder's executor).

    ``changes_during``: the recorder's ``history.state_changes_during_period``.
    """
    changes = changes_during(
        hass,
        start,
        entity_id=entity_id,
        no_attributes=True,
        descending=True,
        limit=HISTORY_ROWS,
        include_start_time_state=False,
    )
    found: list[State] = changes.get(entity_id, [])
    return list(reversed(found))
