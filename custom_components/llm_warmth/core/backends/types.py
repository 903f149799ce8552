"""Typed, immutable results shared by every backend client.

They say what the server said, in its own terms: a residency ``state`` that each parser
sets from the server's own field, and ``None`` for whatever a server does not report
(unknown is not 0).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

# Ollama prints "Forever" for an expiry more than 20 years out (format/time.go); a model
# kept with a negative keep_alive expires at now + MaxInt64 ns, about 292 years ahead.
KEPT_FOREVER_AFTER = timedelta(days=365 * 20)


class ResidencyState(StrEnum):
    """What a server says of a model it holds (a model it does not hold is not listed).

    ``loading``: Ollama's zero expiry, llama-server's ``loading``, llama-swap's
    ``starting``. ``loaded``: ready to answer. ``sleeping``: llama-server's idle sleep (the
    process stays, its weights and cache are gone). ``unloading``: llama-swap's
    ``stopping``.
    """

    LOADING = "loading"
    LOADED = "loaded"
    SLEEPING = "sleeping"
    UNLOADING = "unloading"


@dataclass(frozen=True, slots=True)
class InstalledModel:
    """A model the server can load.

    ``peer``: the server that runs it where this one only forwards its requests (a
    llama-swap peer's id); None for a model of the server's own.
    """

    name: str
    size: int | None = None
    digest: str = ""
    family: str | None = None
    parameter_size: str | None = None
    quantization_level: str | None = None
    modified_at: datetime | None = None
    peer: str | None = None


@dataclass(frozen=True, slots=True)
class ResidentModel:
    """A model the server holds, as one poll saw it.

    ``expires_at``: when the server will unload it (Ollama's idle timer); None where the
    server has no such time or did not give one. ``size``/``size_vram``: None where the
    server does not report memory. ``context_length``: the context it was loaded with.
    """

    name: str
    state: ResidencyState
    size: int | None = None
    size_vram: int | None = None
    expires_at: datetime | None = None
    digest: str = ""
    context_length: int | None = None
    family: str | None = None
    parameter_size: str | None = None
    quantization_level: str | None = None

    @property
    def loading(self) -> bool:
        """Return True while the server reports the model as still loading."""
        return self.state is ResidencyState.LOADING

    @property
    def ram_spill(self) -> int | None:
        """Bytes of the model that did not fit on the GPU and live in system RAM."""
        if self.size is None or self.size_vram is None:
            return None
        return max(self.size - self.size_vram, 0)

    @property
    def gpu_share(self) -> float | None:
        """Percentage of the model held in GPU memory, or None when unknown."""
        if self.size is None or self.size_vram is None or self.size <= 0:
            return None
        return round(100.0 * self.size_vram / self.size, 1)

    def kept_forever(self, now: datetime) -> bool:
        """Return True when the expiry lies so far ahead that the model is pinned."""
        return self.expires_at is not None and self.expires_at - now > KEPT_FOREVER_AFTER


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What ``/api/show`` tells about one installed model."""

    name: str
    family: str | None
    parameter_size: str | None
    quantization_level: str | None
    context_length: int | None
    model_file: str | None
    capabilities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TimedReply:
    """One streamed generation, timed by the client on one monotonic clock (ns).

    ``first_token_ns`` is when the first chunk carrying content or thinking arrived (the
    final chunk when a one-token answer comes in one piece). The other figures are the
    server's, copied from its reply; one it does not report is None.

    ``load_duration_ns``: from the request's arrival until the model was ready (queue wait
    included): Ollama's ``load_duration``; for llama-server the client's own reading of the
    ``loaded`` event. ``queue_ns``: the part of it spent behind other requests, where the
    server tells it. ``prompt_eval_count`` counts every prompt token; ``prompt_cached_count``
    those served from the prompt cache (llama.cpp's ``cache_n``).
    """

    sent_ns: int
    headers_ns: int
    first_token_ns: int
    final_ns: int
    load_duration_ns: int | None = None
    queue_ns: int | None = None
    prompt_eval_count: int | None = None
    prompt_cached_count: int | None = None
    prompt_eval_duration_ns: int | None = None
    eval_count: int | None = None
    eval_duration_ns: int | None = None
    total_duration_ns: int | None = None
    done_reason: str | None = None


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One request the server served, any client's, as the server recorded it.

    llama-swap's activity log: ``ended_at`` when it was recorded (the request's end),
    ``seconds`` from its arrival at llama-swap to then (its wall time, or the upstream's
    prompt and generation time when that is longer), the prompt tokens the upstream
    evaluated and those it took from its cache, and the seconds of its prefill and of
    its generation (tokens over rates, where the upstream reported them).
    """

    id: int
    model: str
    ended_at: datetime
    seconds: float
    status: int
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    prefill_seconds: float | None = None
    generation_seconds: float | None = None

    @property
    def started_at(self) -> datetime:
        """Return when the request arrived (its end less its seconds)."""
        return self.ended_at - timedelta(seconds=self.seconds)

    @property
    def waited_seconds(self) -> float | None:
        """Return the seconds before its prefill began: queue, a swap and a load, HTTP.

        None unless the upstream told its prefill and generation times.
        """
        if self.prefill_seconds is None or self.generation_seconds is None:
            return None
        return round(max(self.seconds - self.prefill_seconds - self.generation_seconds, 0.0), 3)
