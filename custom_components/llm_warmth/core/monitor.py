"""What one server is doing, from poll to poll (pure logic, clocks passed in).

The monitor takes what the client read (a version now and then, the resident models, the
installed ones now and then) and returns the snapshot the entities show with the changes
since the last poll: models loaded and unloaded, a server restart, and what the
integration's own probes caused. It does no I/O and knows no Home Assistant: the
coordinator reads the server, hands the readings over and turns the changes into events.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .backends.base import Capabilities
from .backends.types import InstalledModel, ResidencyState, ResidentModel, TimedReply
from .load_figures import FigureSource, LoadFigures
from .model_timing import ModelTiming
from .residency import (
    REPLACEMENT_WINDOW_SECONDS,
    ModelLoaded,
    ModelUnloaded,
    OwnRequestEnd,
    ResidencyChange,
    ResidencyTracker,
)
from .ttft import Classification, StageBreakdown, Verdict, breakdown, judge

if TYPE_CHECKING:
    from .peers import PeerView

# The states in which a server holds a model's weights.
HOLDING = (ResidencyState.LOADING, ResidencyState.LOADED)
# The installed models change rarely: list them at most this often (seconds), and when a
# model nobody knew is resident.
INSTALLED_REFRESH_SECONDS = 60.0
# The version too (and after a failed poll, and when a model left early unexplained).
VERSION_REFRESH_SECONDS = 300.0


@dataclass(frozen=True, kw_only=True)
class ServerSnapshot:
    """What one poll of a server saw (compared by value: unchanged polls notify nobody)."""

    version: str
    resident: dict[str, ResidentModel]
    installed: dict[str, InstalledModel]
    loading: frozenset[str]
    timings: dict[str, ModelTiming]
    # Models first seen whose load the next poll tells (Ollama 0.9; ``ResidencyTracker``):
    # their warmth reads loading, while decisions taken at a use see them listed.
    unsure: frozenset[str] = frozenset()
    polled_at: datetime = field(compare=False)
    # Models a probe of ours is measuring right now.
    probing: frozenset[str] = frozenset()
    # When each loading model began to load, as far as seen (not compared: it is the
    # same load, and its time is worked out anew on each poll).
    loading_since: Mapping[str, datetime] = field(default_factory=dict, compare=False)
    # A llama-swap's peers' models, as the entries that run them show them (peer_watch.py).
    peers: Mapping[str, PeerView] = field(default_factory=dict)

    @property
    def models(self) -> frozenset[str]:
        """Return every model the server has installed or resident."""
        return frozenset(self.installed) | frozenset(self.resident)

    @property
    def resident_vram(self) -> int | None:
        """Return the GPU memory the resident models hold (None: one's is not known)."""
        sizes = [m.size_vram for m in self.resident.values()]
        return None if None in sizes else sum(s for s in sizes if s is not None)

    @property
    def held(self) -> dict[str, ResidentModel]:
        """Return the resident models whose weights the server holds (loading or loaded).

        ``resident`` also lists a model asleep (llama-server) or stopping (llama-swap).
        """
        return {name: m for name, m in self.resident.items() if m.state in HOLDING}


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One measured request: where its time to first token went, and how it reads.

    ``resident_before``: the model as the server held it right before the request (None:
    not held, or unknown).
    """

    sample: StageBreakdown
    verdict: Verdict
    resident_before: ResidentModel | None = None


@dataclass(frozen=True, slots=True)
class LoadObserved:
    """A model came into memory; ``probe`` is set when the integration's probe loaded it.

    ``waited``: a request waited for the load (a cold start). A load the integration asked
    for itself (a preload, a pin, a pin asserted again) is one nobody waited for.
    """

    model: str
    figures: LoadFigures
    probe: ProbeResult | None = None
    waited: bool = True


@dataclass(frozen=True, slots=True)
class ColdStartObserved:
    """A probe was cold without a load of its own (it waited for another one, say)."""

    model: str
    probe: ProbeResult


@dataclass(frozen=True, slots=True)
class ServerRestarted:
    """The server came back after being unreachable, or answers with another version."""

    version: str
    previous_version: str | None
    version_changed: bool


type MonitorChange = LoadObserved | ColdStartObserved | ModelUnloaded | ServerRestarted


class ServerMonitor:
    """Follows one server across polls and probes."""

    def __init__(
        self,
        capabilities: Capabilities,
        *,
        timings: Mapping[str, ModelTiming] | None = None,
    ) -> None:
        """Start from what earlier runs measured (``timings``), knowing nothing else."""
        self.capabilities = capabilities
        self._tracker = ResidencyTracker(capabilities)
        self._timings: dict[str, ModelTiming] = dict(timings or {})
        # The memory each model held when last seen resident (bytes): the guard's
        # estimates, the repairs' and the diagnoses' numbers.
        self.last_sizes: dict[str, int] = {}
        # A llama-swap's peers' models, as the entries that run them read them.
        self._peers: Mapping[str, PeerView] = {}
        self._installed: dict[str, InstalledModel] = {}
        self._installed_at: float | None = None
        self._version: str | None = None
        self._version_at: float | None = None
        self._poll_failed = False
        self._unreachable = False
        self._last: ServerSnapshot | None = None

    def use_capabilities(self, capabilities: Capabilities) -> None:
        """Follow what the server reports, once its version told more than its kind."""
        self.capabilities = capabilities
        self._tracker.use_capabilities(capabilities)

    @property
    def timings(self) -> dict[str, ModelTiming]:
        """Return what was measured per model (a copy)."""
        return dict(self._timings)

    @property
    def settling(self) -> bool:
        """Return True while a load or unload waits for the next poll to be understood."""
        return self._tracker.settling

    @property
    def undecided_until(self) -> float | None:
        """Return when (monotonic) a model that left unexplained can be called unloaded.

        Once no other model came in its place for ``REPLACEMENT_WINDOW_SECONDS``: an
        observation from then on decides it (None: no model waits).
        """
        since = self._tracker.unexplained_since
        return None if since is None else since + REPLACEMENT_WINDOW_SECONDS

    def version_due(self, monotonic: float) -> bool:
        """Return True when this poll should read the server's version too.

        Rarely on a healthy server; but first after a failed poll (so that a restart is
        reported with the version the server has now), and when a model left early with
        nothing in sight (an upgrade restarts the server and empties it).
        """
        if self._version_at is None or self._poll_failed:
            return True
        unexplained = self._tracker.unexplained_since
        if unexplained is not None and unexplained > self._version_at:
            return True
        return monotonic - self._version_at >= VERSION_REFRESH_SECONDS

    def installed_due(self, resident: tuple[ResidentModel, ...], monotonic: float) -> bool:
        """Return True when this poll should list the installed models too."""
        if self._installed_at is None or any(m.name not in self._installed for m in resident):
            return True
        return monotonic - self._installed_at >= INSTALLED_REFRESH_SECONDS

    def poll_failed(self, *, unreachable: bool) -> None:
        """Note a failed poll; a server that could not be connected to has gone away.

        One slow or garbled reply is no restart: only ``unreachable`` makes the next
        successful poll a restart.
        """
        self._poll_failed = True
        self._unreachable = self._unreachable or unreachable

    def observe(
        self,
        *,
        version: str | None,
        resident: tuple[ResidentModel, ...],
        installed: tuple[InstalledModel, ...] | None,
        now: datetime,
        monotonic: float,
        pushed: bool = False,
    ) -> tuple[ServerSnapshot, list[MonitorChange]]:
        """Take one successful poll; return the snapshot and what changed.

        ``version`` and ``installed`` are None when this poll did not read them. When it
        read the installed models, what was measured of a model that is neither installed
        nor resident any more (deleted) is forgotten.
        ``pushed``: the resident models come from the server's event stream, not a poll.
        ``now`` is the wall clock (compared with the server's expiries), ``monotonic``
        the same instant for measured durations.
        """
        self._poll_failed = False
        changes: list[MonitorChange] = []
        if installed is not None:
            self._installed = {m.name: m for m in installed}
            self._installed_at = monotonic
            present = self._installed.keys() | {m.name for m in resident}
            self._timings = {m: t for m, t in self._timings.items() if m in present}
            self.last_sizes = {m: s for m, s in self.last_sizes.items() if m in present}
        restart = self._note_version(version, monotonic)
        if restart is not None:
            changes.append(restart)
        source = FigureSource.EVENTS if pushed else FigureSource.POLLING
        for change in self._tracker.observe(
            resident, now=now, monotonic=monotonic, server_restarted=restart is not None
        ):
            changes.append(self._residency_change(change, source))
        if self._version is None:
            raise ValueError("the first poll must read the version")
        self._last = ServerSnapshot(
            version=self._version,
            resident={m.name: m for m in resident},
            installed=dict(self._installed),
            loading=self._tracker.loading(),
            timings=dict(self._timings),
            unsure=self._tracker.unsure(),
            polled_at=now,
            probing=self._tracker.requesting(),
            loading_since={
                model: now - timedelta(seconds=seconds)
                for model, seconds in self._tracker.loading_for(monotonic).items()
            },
            peers=self._peers,
        )
        for name, model in self._last.held.items():
            if size := model.size_vram or model.size:
                self.last_sizes[name] = size
        return self._last, changes

    def _note_version(self, version: str | None, monotonic: float) -> ServerRestarted | None:
        came_back, self._unreachable = self._unreachable, False
        if version is None:
            return None
        previous, self._version, self._version_at = self._version, version, monotonic
        changed = previous is not None and previous != version
        if not (came_back or changed):
            return None
        return ServerRestarted(version, previous, version_changed=changed)

    def _residency_change(
        self, change: ResidencyChange, source: FigureSource = FigureSource.POLLING
    ) -> MonitorChange:
        if isinstance(change, ModelLoaded):
            figures = LoadFigures.from_polling(change, source)
            return self._load(LoadObserved(change.model, figures))
        return change

    def _load(self, load: LoadObserved) -> LoadObserved:
        timing = self._timings.get(load.model, ModelTiming())
        self._timings[load.model] = timing.with_load(load.figures)
        return load

    def with_timings(self, snapshot: ServerSnapshot) -> ServerSnapshot:
        """Return ``snapshot`` with the timings measured, and the probes running, since."""
        return ServerSnapshot(
            version=snapshot.version,
            resident=snapshot.resident,
            installed=snapshot.installed,
            loading=snapshot.loading,
            timings=dict(self._timings),
            unsure=snapshot.unsure,
            polled_at=snapshot.polled_at,
            probing=self._tracker.requesting(),
            loading_since=snapshot.loading_since,
            peers=self._peers,
        )

    def set_peers(self, views: Mapping[str, PeerView]) -> bool:
        """Show the peers' models in every snapshot from now; return False when the same."""
        if self._peers == views:
            return False
        self._peers = views
        return True

    def load_heard(
        self, model: str, *, now: datetime, monotonic: float, until: float
    ) -> ServerSnapshot | None:
        """Note a request we did not send that loads ``model`` (``ResidencyTracker``).

        Return the snapshot with the model loading since now, or None when that changes
        nothing (the server shows loads itself, or the model is resident).
        """
        snapshot = self._last
        if snapshot is None or not self._tracker.load_heard(
            model, monotonic=monotonic, until=until
        ):
            return None
        self._last = replace(
            self.with_timings(snapshot),
            loading=self._tracker.loading(),
            loading_since={**snapshot.loading_since, model: now},
        )
        return self._last

    def resolve_model(self, model: str) -> str:
        """Return the server's name for ``model`` ("llama3.2" -> "llama3.2:latest")."""
        known = self._last.models if self._last else frozenset()
        if model not in known and ":" not in model and f"{model}:latest" in known:
            return f"{model}:latest"
        return model

    def evicting(self, model: str, *, now: bool = True) -> None:
        """Note that the integration unloads ``model`` now, or (``now=False``) gave up."""
        self._tracker.evicting(model, now=now)

    def probe_started(self, model: str, *, monotonic: float) -> None:
        """Note that a request of ours (a probe, a load) to ``model`` is sent now."""
        self._tracker.request_started(model, monotonic=monotonic)

    def probe_failed(self, model: str) -> list[MonitorChange]:
        """Note that a request of ours failed or was cancelled: what polls saw is not its."""
        return self._held(self._tracker.request_finished(model))

    def own_load_finished(
        self,
        model: str,
        *,
        seconds: float,
        was_resident: bool,
        monotonic: float,
        announce_window: float,
    ) -> list[MonitorChange]:
        """Record a load the integration asked for (preload, pin) that took ``seconds``.

        Call after a poll taken right after the request. It loaded the model when the
        model was not resident before, or when a new runner showed up while it ran (a
        reload for its num_ctx): then its figure is exact (the integration timed the
        request, which the server answers once the model is ready), and it is no cold
        start: nobody waited for it. Polls within ``announce_window`` seconds that still
        see the load give no event of their own.
        """
        end = self._tracker.request_finished(model)
        if end.covered or not (not was_resident or end.new_runner):
            return self._held(end)
        self._tracker.announce_load(model, expect_until=monotonic + announce_window)
        figures = LoadFigures(
            load_seconds=round(seconds, 3),
            load_source=FigureSource.CLIENT,
            reloaded=was_resident,
        )
        return [self._load(LoadObserved(model, figures, waited=False))]

    def _held(self, end: OwnRequestEnd) -> list[MonitorChange]:
        return [self._residency_change(end.held)] if end.held is not None else []

    def probe_finished(
        self,
        model: str,
        reply: TimedReply,
        *,
        was_resident: bool,
        now: datetime,
        monotonic: float,
        announce_window: float,
    ) -> tuple[ProbeResult, list[MonitorChange]]:
        """Record a probe's reply; return its result and the load or cold start it shows.

        Call after a poll taken right after the request (a runner it loaded shows up
        then). The probe caused a load when the model was not resident before it, or when
        a new runner of the model showed up while it ran (a reload for its num_ctx): then
        the server's load figure is the load's own. A probe that is cold for another
        reason (it waited behind another request, or for another client's load) gives a
        cold start of its own, without a load figure, unless polling reports that load.
        Polls within ``announce_window`` seconds that still see the probe's load give no
        second event.
        """
        sample = breakdown(reply)
        timing = self._timings.get(model, ModelTiming())
        verdict = judge(sample, was_resident=was_resident, baseline=timing.baseline)
        probe = ProbeResult(sample, verdict)
        self._timings[model] = timing.with_probe(sample, verdict, now)
        end = self._tracker.request_finished(model)
        if not end.covered and (not was_resident or end.new_runner):
            self._tracker.announce_load(model, expect_until=monotonic + announce_window)
            load = sample.queue_and_load_ms
            source = (
                FigureSource.SERVER
                if self.capabilities.reports_load_duration
                else FigureSource.CLIENT
            )
            figures = LoadFigures(
                load_seconds=round(load / 1000, 3) if load is not None else None,
                load_source=source if load is not None else None,
                cold_request_seconds=round((reply.final_ns - reply.sent_ns) / 1e9, 3),
                cold_request_source=FigureSource.CLIENT,
                reloaded=was_resident,
            )
            return probe, [self._load(LoadObserved(model, figures, probe))]
        if end.held is not None:
            return probe, self._held(end)
        if verdict.classification is Classification.COLD and not end.covered:
            return probe, [ColdStartObserved(model, probe)]
        return probe, []
