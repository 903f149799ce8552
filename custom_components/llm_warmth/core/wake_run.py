"""A satellite's turn while it runs, and what warming at the wake holds (pure, clock passed in).

The shell (``voice.py``, ``voice_wake.py``) follows the satellites' states and warms the
agent's model; here is what it notes at each step of a turn (the wake, the load, the
prompt warm-up, the agent's start, the end), what it decides from that (whether a prompt
warm-up is sent, what the server did, what the turn keeps), and what warming holds per
model (the prompt the server's cache holds, a false wake's load). Times are monotonic
seconds the shell reads and passes in: what the turn waited for is not moved by a clock
change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from .backends.types import ServedRequest
from .model_timing import ModelTiming
from .monitor import LoadObserved, MonitorChange, ServerRestarted, ServerSnapshot
from .residency import ModelUnloaded
from .voice import VoiceTurn, prefix_warm_fits, wake_outcome
from .voice_record import VoiceRecord, WakeCounts, prefix_outcome
from .voice_stages import ServerSide, explain, waited_load

# How much of the slowest recent prompt warm-up is kept at each new one.
PREFIX_FADE = 0.8
GIB = 1024**3


class PrefixStep(StrEnum):
    """What becomes of the warm-up of the agent's prompt prefix at a wake."""

    # The agent asked already: its own request warms the prefix.
    ASKED = "asked"
    # The server's prompt cache holds it, or another satellite's warm-up of it runs.
    HELD = "held"
    # It would not end before the agent starts.
    SKIPPED = "skipped"
    # Sent now.
    SEND = "send"


@dataclass(frozen=True, slots=True)
class WastedHold:
    """A false wake's load still held: since when (monotonic), the model's size, the pipeline."""

    since: float
    size: int
    pipeline_id: str

    def gib_seconds(self, now: float) -> float:
        """Return the GiB-seconds the load held the model from ``since`` until ``now``."""
        return self.size / GIB * max(now - self.since, 0.0)


@dataclass(slots=True)
class WakeHolds:
    """What warming at the wake holds per model, for one server.

    ``prefix_held``: the (pipeline, satellite) whose prompt the server served last on this
    load of the model. ``prefix_running``: the models a prompt warm-up runs for.
    ``wasted``: false wakes' loads still held.
    """

    prefix_held: dict[str, tuple[str, str]] = field(default_factory=dict)
    prefix_running: set[str] = field(default_factory=set)
    wasted: dict[str, WastedHold] = field(default_factory=dict)

    def after_changes(self, changes: Iterable[MonitorChange]) -> list[str]:
        """Forget what a load held once it is gone; return the models whose false wake's hold ends.

        A restart forgets every prompt held and ends every hold; a model unloaded, its
        prompt and its hold; a model loaded again (a new runner's prompt cache is empty)
        its prompt, unless our prompt warm-up of it is what loads it.
        """
        ended: list[str] = []
        for change in changes:
            if isinstance(change, ServerRestarted):
                self.prefix_held.clear()
                ended += list(self.wasted)
            elif isinstance(change, ModelUnloaded):
                self.prefix_held.pop(change.model, None)
                ended.append(change.model)
            elif isinstance(change, LoadObserved) and change.model not in self.prefix_running:
                self.prefix_held.pop(change.model, None)
        return ended

    def gone(self, held: Collection[str]) -> list[str]:
        """Return the models of false wakes' holds a poll no longer sees ``held``."""
        return [model for model in self.wasted if model not in held]

    def clear(self) -> None:
        """Forget the prompts held and the false wakes' holds (the entry unloads)."""
        self.wasted.clear()
        self.prefix_held.clear()


def faded_prefix_seconds(took: float, last: float | None) -> float:
    """Return the prompt warm-up's seconds to keep: the slowest recent one, fading.

    One served from the prompt cache says little of the next after the cache was lost:
    the last figure, times ``PREFIX_FADE``, is kept while it is above the new one.
    """
    kept = last * PREFIX_FADE if last else 0.0
    return round(max(took, kept), 3)


@dataclass(slots=True)
class WakeRun:
    """A satellite's turn while it runs: what LLM Warmth saw and did at its wake and start."""

    pipeline_id: str
    model: str
    satellite: str
    # Monotonic seconds: what the turn waited for is not moved by a clock change.
    woke: float
    load_started: float | None = None
    load_ended: float | None = None
    prefix_started: float | None = None
    prefix_ended: float | None = None
    prefix_skipped: bool = False
    # Left out: the server holds the prompt, or another satellite's warm-up of it runs.
    prefix_held: bool = False
    intent_started: float | None = None
    # The load time warming at the wake hid from the turn (None: no load at the wake).
    hidden: float | None = None
    server: ServerSide | None = None
    figures_before: tuple[float | None, float | None] = (None, None)
    # The run ended with no command while its load at the wake still ran: the false wake
    # is counted when that load ends (at the run's end it had held nothing yet).
    ended: bool = False

    @property
    def agent_started(self) -> bool:
        """Return True once the pipeline's agent started (it may start during an await)."""
        return self.intent_started is not None

    @property
    def false_wake(self) -> bool:
        """Return True for a wake no command followed whose load at the wake ended."""
        return self.intent_started is None and self.load_ended is not None

    @property
    def awaits_load(self) -> bool:
        """Return True for a run no command followed whose load at the wake still runs."""
        return self.intent_started is None and self.load_started is not None and not self.load_ended

    def load_done(self, ended: float, seconds: float | None) -> None:
        """Note the end of the load at the wake; its own time (``seconds``) moves its start.

        The load's own time is its request's, not the reading of residency around it.
        """
        self.load_ended = ended
        if seconds is not None:
            self.load_started = max(self.load_started or 0.0, ended - seconds)

    def start_intent(self, now: float, snapshot: ServerSnapshot, counts: WakeCounts) -> None:
        """Note, at the agent's start, whether its model was resident, loading or cold.

        Counts how soon after the wake the agent started, and a prompt warm-up still
        running then; keeps the model's load figures from before the turn.
        """
        loading = self.model in snapshot.loading or (
            self.load_started is not None and self.load_ended is None
        )
        self.intent_started = now
        counts.intent_after(now - self.woke)
        if self.prefix_started is not None and self.prefix_ended is None:
            counts.prefix_overlapped += 1
        self.server = ServerSide(
            self.model,
            resident=self.model in snapshot.held and not loading,
            loading=loading,
        )
        timing = snapshot.timings.get(self.model)
        self.figures_before = (
            (timing.load_seconds, timing.load_at_least_seconds) if timing else (None, None)
        )

    def prefix_step(self, holds: WakeHolds, counts: WakeCounts, now: float) -> PrefixStep:
        """Return whether the agent's prompt prefix is warmed now; count it when left out.

        Held: the server's prompt cache holds it (this satellite's last turn ran on this
        load), or another satellite's warm-up runs: another would only queue. Skipped: it
        would not end before the agent starts (``prefix_warm_fits``).
        """
        if self.intent_started is not None:
            return PrefixStep.ASKED
        held = holds.prefix_held.get(self.model) == (self.pipeline_id, self.satellite)
        if held or self.model in holds.prefix_running:
            counts.prefix_held += 1
            self.prefix_held = True
            return PrefixStep.HELD
        if not prefix_warm_fits(
            prefix_seconds=counts.prefix_seconds,
            wake_to_intent=counts.wake_to_intent,
            elapsed=now - self.woke,
        ):
            counts.prefix_skipped += 1
            self.prefix_skipped = True
            return PrefixStep.SKIPPED
        return PrefixStep.SEND

    def prefix_sent(self, now: float, counts: WakeCounts) -> None:
        """Note a prompt warm-up sent at ``now``."""
        counts.prefix_sent += 1
        self.prefix_started = now

    def prefix_warmed(self, holds: WakeHolds, counts: WakeCounts) -> None:
        """Note a prompt warm-up that succeeded: the server's cache holds this prompt now.

        Unless the agent asked meanwhile (its own request is then what the cache holds).
        """
        if not self.agent_started:
            holds.prefix_held[self.model] = (self.pipeline_id, self.satellite)
        if self.prefix_started is not None and self.prefix_ended is not None:
            took = self.prefix_ended - self.prefix_started
            counts.prefix_seconds = faded_prefix_seconds(took, counts.prefix_seconds)

    def prefix_let_go(self, now: float, counts: WakeCounts) -> None:
        """Note a prompt warm-up let go at the agent's start: it takes longer than it ran."""
        self.prefix_ended = now
        if self.prefix_started is not None:
            took = now - self.prefix_started
            counts.prefix_seconds = faded_prefix_seconds(took, counts.prefix_seconds)

    def wasted_hold(self, snapshot: ServerSnapshot) -> WastedHold | None:
        """Return the hold a false wake's load keeps on the model (None: not held now)."""
        held = snapshot.held.get(self.model)
        if held is None or self.load_ended is None:
            return None
        return WastedHold(self.load_ended, held.size_vram or held.size or 0, self.pipeline_id)

    def turn_served(self, holds: WakeHolds, turn: VoiceTurn) -> None:
        """Note that the agent's request ran on this load: the server's prompt cache holds it."""
        if self.intent_started is not None and turn.error is None:
            holds.prefix_held[self.model] = (self.pipeline_id, self.satellite)

    def count_outcome(self, counts: WakeCounts) -> None:
        """Count what the load at the wake did for the turn, where both it and the agent ran."""
        if self.load_started is None or self.intent_started is None:
            return
        outcome = wake_outcome(
            load_started=self.load_started,
            load_ended=self.load_ended,
            intent_started=self.intent_started,
        )
        counts.helped += outcome.helped
        counts.too_late += outcome.too_late
        counts.hidden_seconds += outcome.hidden_seconds
        self.hidden = outcome.hidden_seconds

    def server_side(self, timing: ModelTiming | None) -> ServerSide | None:
        """Return what the server did: the load the turn waited for, and who measured it."""
        figures = (
            (
                timing.load_seconds,
                timing.load_at_least_seconds,
                timing.load_source.value if timing.load_source else None,
            )
            if timing
            else (None, None, None)
        )
        return waited_load(
            self.server,
            loaded_at_wake=self.load_started is not None,
            wake_load_ended=self.load_ended,
            intent_started=self.intent_started,
            figures=figures,
            figures_before=self.figures_before,
        )

    def with_request(self, server: ServerSide, request: ServedRequest | None) -> ServerSide:
        """Return what the server did, joined with its record of the agent's request.

        Cold at the agent's start with no load at the wake: the request waited for the
        load, as the server timed it (its wait before the prefill).
        """
        if request is None:
            return server
        server = replace(server, request=request)
        waited = request.waited_seconds
        if server.resident is False and self.load_started is None and waited is not None:
            server = replace(server, load_seconds=waited, load_source="server")
        return server

    def record(self, turn: VoiceTurn, server: ServerSide | None) -> VoiceRecord:
        """Return the turn as the pipeline keeps it: explained, with what warming did."""
        return VoiceRecord(
            turn,
            self.model,
            server,
            explain(turn, server),
            self.load_started is not None,
            self.hidden,
            prefix_outcome(
                started=self.prefix_started,
                ended=self.prefix_ended,
                intent_started=self.intent_started,
                held=self.prefix_held,
                skipped=self.prefix_skipped,
            ),
        )
