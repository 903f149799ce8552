"""Typed, immutable results shared by every backend client."""

from dataclasses import dataclass
from datetime import datetime, timedelta

# Ollama prints "Forever" for an expiry more than 20 years out (format/time.go); a model
# kept with a negative keep_alive expires at now + MaxInt64 ns, about 292 years ahead.
KEPT_FOREVER_AFTER = timedelta(days=365 * 20)


@dataclass(frozen=True, slots=True)
class InstalledModel:
    """A model the server has on disk."""

    name: str
    size: int
    digest: str
    family: str | None = None
    parameter_size: str | None = None
    quantization_level: str | None = None
    modified_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ResidentModel:
    """A model loaded in the server's memory, as one poll saw it.

    ``expires_at`` is ``None`` while the model is loading (Ollama reports the zero time until
    the request that loads it finishes).
    """

    name: str
    size: int
    size_vram: int
    expires_at: datetime | None
    digest: str = ""
    context_length: int | None = None
    family: str | None = None
    parameter_size: str | None = None
    quantization_level: str | None = None

    @property
    def loading(self) -> bool:
        """Return True while the server reports the model as still loading."""
        return self.expires_at is None

    @property
    def ram_spill(self) -> int:
        """Bytes of the model that did not fit on the GPU and live in system RAM."""
        return max(self.size - self.size_vram, 0)

    @property
    def gpu_share(self) -> float | None:
        """Percentage of the model held in GPU memory, or None for an empty size."""
        if self.size <= 0:
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
    final chunk when a one-token answer comes in one piece). The server's own durations are
    copied from the final chunk; a server that does not report one leaves it at 0.
    """

    sent_ns: int
    headers_ns: int
    first_token_ns: int
    final_ns: int
    load_duration_ns: int = 0
    prompt_eval_count: int = 0
    prompt_eval_duration_ns: int = 0
    eval_count: int = 0
    eval_duration_ns: int = 0
    total_duration_ns: int = 0
    done_reason: str | None = None
