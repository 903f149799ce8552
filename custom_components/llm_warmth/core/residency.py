"""Follow resident models across polls and name what changed (pure logic, clock passed in).

What a poll of ``/api/ps`` can tell about a model's runner (measured on Ollama 0.9.3; the
facts of current releases are in ``shared/docs/llm-servers.md``):

* A new runner is listed at once, while it loads. Until the request that loaded it has
  finished, current Ollama reports the zero expiry; Ollama 0.9 reports "now + keep_alive",
  an expiry that moves with the clock while any request runs. Either way polling sees the
  runner busy with the request that loaded it: the load, then that request's prefill and
  reply (only a preload, with no prompt, is the load alone). Polling cannot tell where the
  load ends, so the figure it gives is the **cold request**: from the first poll that saw
  the new runner to the end of its first request. The part before the first sighting (up to
  one poll interval) is not seen: the figure is a lower bound.
* A runner replaced in place (another client asked for another ``num_ctx``) shows as a
  changed size or context length, or as the zero expiry again.
* On Ollama 0.9 the expiry of a loaded model also moves while a later request runs: that is
  a model in use, not a load.

A model that leaves is given the reason the evidence supports: ``expired`` when it left at
or after its expiry; ``displaced`` when another model came in at the same time (named in
``replaced_by``); ``unloaded`` when it left early and nothing came in by the next poll (an
explicit unload such as ``keep_alive: 0``, out of memory, a crash); ``server_restarted``
when the server was unreachable or changed version in between.

Loads caused by the integration's own requests (a probe) are announced by the caller with the
server's own figures: what polling sees of them meanwhile is held back for the caller.
"""

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
import math

from .backends.base import Capabilities
from .backends.types import ResidencyState, ResidentModel
from .runner_key import known_facts, replaced, runner_key
from .runner_sighting import Gone, Phase, Sighting, expired, expiry_floats, load_end

# How long after a model left early a replacement may still show up: Ollama unloads the
# victim first and loads the newcomer once the memory is back (0.5-1.5 s on a GPU).
REPLACEMENT_WINDOW_SECONDS = 3.0


class UnloadReason(StrEnum):
    """Why a model left memory."""

    EXPIRED = "expired"
    DISPLACED = "displaced"
    UNLOADED = "unloaded"
    ON_REQUEST = "on_request"  # by the integration's evict action
    SERVER_RESTARTED = "server_restarted"


@dataclass(frozen=True, slots=True)
class ModelLoaded:
    """A model came into memory.

    ``seconds``: from the first poll that saw the new runner until the poll that saw it ready
    (None when the load was not seen in progress); it ends with the load where the server
    names a loading state (``load_end_seen``: llama-server, llama-swap), else with the request
    that loaded the model (Ollama: the cold request). ``reloaded``: replaced in place.
    """

    model: str
    seconds: float | None
    reloaded: bool = False
    load_end_seen: bool = False


@dataclass(frozen=True, slots=True)
class ModelUnloaded:
    """A model left memory; ``replaced_by`` names the models that came in instead."""

    model: str
    reason: UnloadReason
    replaced_by: tuple[str, ...] = ()


type ResidencyChange = ModelLoaded | ModelUnloaded


@dataclass(slots=True)
class _OwnRequests:
    """The integration's own requests to one model, and what polling saw meanwhile."""

    started_at: float  # monotonic: when the first of them started
    running: int = 0
    held: ModelLoaded | None = None
    # One of them announced a load of the model: the others' ends add nothing.
    announced: bool = False


@dataclass(frozen=True, slots=True)
class OwnRequestEnd:
    """What polling saw of a model while the integration's own request to it ran.

    ``new_runner``: the model's runner was first seen after the request started (it was
    loaded, or reloaded in place, since) and no request of ours announced it yet. ``held``: a load
    that polling saw finish meanwhile (handed out once the last own request ended).
    ``covered``: another own request to the model already announced a load.
    """

    new_runner: bool
    held: ModelLoaded | None
    covered: bool


class ResidencyTracker:
    """Turns successive lists of resident models into load and unload changes."""

    def __init__(self, capabilities: Capabilities) -> None:
        """Start with no knowledge: the first observation is the baseline.

        A server whose expiry moves while a request runs (Ollama 0.9) may be loading a
        model it lists as loaded: such a first sighting is unsure until the next poll. A
        server that names its loading state is believed at once, and so is one that lists
        a model only once it is loaded (Ollama 0.30 and newer).
        """
        self._floating: bool
        self._load_end_seen: bool
        self._listed_while_loading: bool
        self.use_capabilities(capabilities)
        self._models: dict[str, Sighting] = {}
        self._baseline_taken = False
        # Models that left early with nothing in sight: decided once a replacement shows
        # up, or REPLACEMENT_WINDOW_SECONDS later.
        self._pending: dict[str, Gone] = {}
        # Models the caller unloads on purpose: gone, they were evicted.
        self._evicting: set[str] = set()
        self._own: dict[str, _OwnRequests] = {}
        # Loads our requests announced before any poll saw the runner, and until when a
        # first sighting is that load (monotonic); later it is somebody else's.
        self._expected: dict[str, float] = {}
        # Loads that a request we know of but did not send (an agent's turn began) makes,
        # on a server that lists a model only once loaded: model -> (since, until),
        # monotonic. Loading until polling lists the model, or until ``until``.
        self._heard: dict[str, tuple[float, float]] = {}

    def use_capabilities(self, capabilities: Capabilities) -> None:
        """Follow what the server reports (its version told more than its kind)."""
        self._floating = capabilities.expiry_moves_while_busy
        self._load_end_seen = capabilities.reports_loading and not self._floating
        self._listed_while_loading = capabilities.lists_while_loading

    @property
    def settling(self) -> bool:
        """Return True while a load or an unload waits for the next poll to be understood."""
        return bool(self._pending or self._heard) or any(
            t.phase is not Phase.LOADED for t in self._models.values()
        )

    @property
    def unexplained_since(self) -> float | None:
        """Return when (monotonic) the oldest unexplained early unload happened, if any."""
        return min((gone.left_at for gone in self._pending.values()), default=None)

    def phase(self, model: str) -> Phase | None:
        """Return the phase of a resident model, or None when it is not resident."""
        tracked = self._models.get(model)
        return tracked.phase if tracked else None

    def loading(self) -> frozenset[str]:
        """Return the models busy with the request that loads them.

        Where the server lists a model only once it is loaded, a model that one of our
        requests runs against and that the server does not list yet is loading for it.
        A model first seen, where the server lists it while it loads with an expiry that
        floats (Ollama 0.9), while one of our requests to it runs is loading until a poll
        tells otherwise: our own preload read warm for its first half second otherwise.
        """
        busy = {
            n
            for n, t in self._models.items()
            if t.phase is Phase.LOADING
            or (t.phase is Phase.UNSURE and (own := self._own.get(n)) is not None and own.running)
        }
        if not self._listed_while_loading:
            busy |= {m for m, own in self._own.items() if own.running and m not in self._models}
            busy |= self._heard.keys() - self._models.keys()
        return frozenset(busy)

    def unsure(self) -> frozenset[str]:
        """Return the models first seen, loading or loaded, until the next poll tells."""
        unsure = {n for n, t in self._models.items() if t.phase is Phase.UNSURE}
        return frozenset(unsure) - self.loading()

    def loading_for(self, monotonic: float) -> dict[str, float]:
        """Return how long (seconds) each loading model has been loading, as far as seen.

        From its first sighting loading, or from our own request where the server lists
        a model only once loaded: a lower bound where polls saw the load start late.
        """
        seen = {
            n: monotonic - t.first_seen for n, t in self._models.items() if t.phase is Phase.LOADING
        }
        for model in self.loading() - seen.keys():
            if (own := self._own.get(model)) is not None:
                seen[model] = monotonic - own.started_at
            elif (heard := self._heard.get(model)) is not None:
                seen[model] = monotonic - heard[0]
        return {model: max(seconds, 0.0) for model, seconds in seen.items()}

    def observe(
        self,
        resident: Iterable[ResidentModel],
        *,
        now: datetime,
        monotonic: float,
        server_restarted: bool = False,
    ) -> list[ResidencyChange]:
        """Record one poll's resident models and return what changed since the last one.

        ``now`` is the wall-clock time of the poll (compared with the server's expiries),
        ``monotonic`` the same instant on a monotonic clock (for measured durations).
        """
        changes: list[ResidencyChange] = []
        baseline = not self._baseline_taken
        self._baseline_taken = True
        self._expected = {m: t for m, t in self._expected.items() if t >= monotonic}
        seen: dict[str, Sighting] = {}
        # Models coming in: new this poll, a new runner in place, or still loading.
        arriving: set[str] = set()
        for model in resident:
            if model.state not in (ResidencyState.LOADING, ResidencyState.LOADED):
                continue  # asleep or on its way out: not holding its weights
            previous = self._models.get(model.name)
            if previous is None:
                tracked = self._first_sight(model, now, monotonic, baseline, changes)
                arriving.add(model.name)
            else:
                tracked = self._follow(previous, model, now, monotonic, changes)
                if tracked.first_seen == monotonic or tracked.phase is not Phase.LOADED:
                    arriving.add(model.name)
            seen[model.name] = tracked
        self._decide_pending(arriving, monotonic, server_restarted, changes)
        for name, gone in self._models.items():
            if name in seen:
                continue
            if gone.phase is not Phase.LOADED and not gone.announced(monotonic):
                # It was resident, if only briefly: say so before it leaves (not held
                # back for an own request, so that the two events keep their order).
                changes.append(self._loaded(name, None, gone.reloaded))
            replacements = tuple(sorted(arriving - {name}))
            if left := self._left(name, gone, now, server_restarted, replacements):
                changes.append(left)
            else:
                self._pending[name] = Gone(gone, monotonic)
        self._evicting &= set(seen)
        self._models = seen
        self._heard = {
            m: span for m, span in self._heard.items() if m not in seen and span[1] >= monotonic
        }
        return changes

    def load_heard(self, model: str, *, monotonic: float, until: float) -> bool:
        """Note that a request we did not send began on ``model`` now (an agent's turn).

        Where the server lists a model only once it is loaded, a model not resident is
        loading for it from now: until polling lists it, or until ``until`` (the request
        failed, or went elsewhere). Return True when that changed what is loading.
        """
        if self._listed_while_loading or model in self._models or model in self._heard:
            return False
        self._heard[model] = (monotonic, until)
        return True

    def _left(
        self,
        name: str,
        gone: Sighting,
        now: datetime,
        server_restarted: bool,
        replacements: tuple[str, ...],
    ) -> ModelUnloaded | None:
        """Return why a model left, where this poll can tell (else it waits in _pending)."""
        if server_restarted:
            return ModelUnloaded(name, UnloadReason.SERVER_RESTARTED)
        if name in self._evicting:  # whatever else loads or expires meanwhile
            return ModelUnloaded(name, UnloadReason.ON_REQUEST)
        if expired(gone, now):
            return ModelUnloaded(name, UnloadReason.EXPIRED)
        if replacements:
            return ModelUnloaded(name, UnloadReason.DISPLACED, replacements)
        return None

    def evicting(self, model: str, *, now: bool = True) -> None:
        """Note that the caller unloads ``model`` now (when it is gone, it was evicted)."""
        (self._evicting.add if now else self._evicting.discard)(model)

    def _first_sight(
        self,
        model: ResidentModel,
        now: datetime,
        monotonic: float,
        baseline: bool,
        changes: list[ResidencyChange],
    ) -> Sighting:
        # Back one poll after it left: replaced in place, not unloaded.
        reloaded = self._pending.pop(model.name, None) is not None
        expected = self._expected.pop(model.name, -math.inf)
        if model.loading:
            phase = Phase.LOADING
        elif baseline or expected >= monotonic:
            phase, expected = Phase.LOADED, -math.inf
        elif self._floating and self._listed_while_loading:
            phase = Phase.UNSURE
        else:
            # Loaded between two polls, and the server says so: no need to wait.
            phase, reloaded = Phase.LOADED, False
            self._emit(self._loaded(model.name, None, reloaded=False), changes)
        return Sighting(
            phase=phase,
            first_seen=monotonic,
            seen_at=now,
            seen_mono=monotonic,
            expires_at=model.expires_at,
            runner=runner_key(model),
            reloaded=reloaded,
            announced_until=expected,
        )

    def _follow(
        self,
        previous: Sighting,
        model: ResidentModel,
        now: datetime,
        monotonic: float,
        changes: list[ResidencyChange],
    ) -> Sighting:
        """Compare a model with its last sighting; record a load that ended."""
        tracked = replace(
            previous,
            seen_at=now,
            seen_mono=monotonic,
            expires_at=model.expires_at,
            runner=known_facts(previous.runner, runner_key(model)),
        )
        busy = model.loading or (self._floating and expiry_floats(previous, model.expires_at, now))
        announced = previous.announced(monotonic)
        if previous.phase is Phase.LOADED:
            if model.loading or replaced(previous.runner, tracked.runner):
                # A new runner in place of the old one (another num_ctx, a new digest).
                tracked.phase, tracked.first_seen, tracked.reloaded = (
                    Phase.LOADING,
                    monotonic,
                    True,
                )
                if not busy:  # the whole reload happened between two polls
                    tracked.phase, tracked.announced_until = Phase.LOADED, -math.inf
                    tracked.reloaded = False
                    if not announced:
                        self._emit(self._loaded(model.name, None, True), changes)
            return tracked
        if busy:
            tracked.phase = Phase.LOADING
            return tracked
        tracked.phase, tracked.announced_until, tracked.reloaded = Phase.LOADED, -math.inf, False
        if not announced:
            seconds = None
            # Where the server lists a model only once loaded, the time seen loading is
            # the rest of the request after its load: not a figure of the load.
            if previous.phase is Phase.LOADING and self._listed_while_loading:
                ended = (
                    load_end(previous, model.expires_at, monotonic) if self._floating else monotonic
                )
                seconds = round(ended - previous.first_seen, 3)
            self._emit(self._loaded(model.name, seconds, previous.reloaded), changes)
        return tracked

    def _decide_pending(
        self,
        arriving: set[str],
        monotonic: float,
        server_restarted: bool,
        changes: list[ResidencyChange],
    ) -> None:
        # A model that came back is no longer pending: _first_sight took it as a reload.
        for name, gone in list(self._pending.items()):
            replacements = tuple(sorted(arriving - {name}))
            if server_restarted:
                reason = UnloadReason.SERVER_RESTARTED
            elif replacements:
                reason = UnloadReason.DISPLACED
            elif monotonic - gone.left_at >= REPLACEMENT_WINDOW_SECONDS:
                reason = UnloadReason.UNLOADED
            else:
                continue
            del self._pending[name]
            changes.append(ModelUnloaded(name, reason, replacements))

    def _loaded(self, model: str, seconds: float | None, reloaded: bool) -> ModelLoaded:
        return ModelLoaded(model, seconds, reloaded, load_end_seen=self._load_end_seen)

    def _emit(self, change: ModelLoaded, changes: list[ResidencyChange]) -> None:
        own = self._own.get(change.model)
        if own is not None and own.running:
            own.held = change  # the caller's request is loading it: it tells the figures
        else:
            changes.append(change)

    def request_started(self, model: str, *, monotonic: float) -> None:
        """Note that one of the integration's own requests to ``model`` starts now."""
        own = self._own.setdefault(model, _OwnRequests(started_at=monotonic))
        own.running += 1

    def requesting(self) -> frozenset[str]:
        """Return the models an own request is running against now (done ones are dropped)."""
        return frozenset(self._own)

    def request_finished(self, model: str) -> OwnRequestEnd:
        """Note that an own request to ``model`` ended; return what polling saw meanwhile."""
        own = self._own.get(model)
        if own is None:
            return OwnRequestEnd(new_runner=False, held=None, covered=False)
        own.running -= 1
        tracked = self._models.get(model)
        new_runner = (
            not own.announced and tracked is not None and tracked.first_seen >= own.started_at
        )
        end = OwnRequestEnd(new_runner=new_runner, held=None, covered=own.announced)
        if not own.running:
            del self._own[model]
            if not own.announced:
                end = replace(end, held=own.held)
        return end

    def announce_load(self, model: str, *, expect_until: float) -> None:
        """Note that the caller announced a load of ``model`` it caused.

        That runner gives no event of its own when polling sees it settle, first sees it,
        or sees it replace the one it knew, before ``expect_until`` (monotonic); a load
        polling saw meanwhile is dropped. Call once the request that loaded it answered:
        the model counts as loaded from then on.
        """
        if (own := self._own.get(model)) is not None:
            own.announced = True
        if (tracked := self._models.get(model)) is not None:
            if own is None:
                # No request of ours to it runs any more, and the one that loaded it has
                # its answer: this runner is loaded now, not one poll later (its warmth
                # shows it when the action returns); a runner after it is another load.
                tracked.phase, tracked.reloaded = Phase.LOADED, False
                tracked.announced_until = -math.inf
            else:  # another of ours still keeps it busy: polls see it settle later
                tracked.announced_until = expect_until
        else:
            self._expected[model] = expect_until
