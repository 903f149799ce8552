"""What identifies a model's runner across readings: a reload in place changes it."""

from .backends.types import ResidentModel

# Size, GPU memory, context length, digest: a reload in place changes one of these.
type RunnerKey = tuple[int | None, int | None, int | None, str]


def runner_key(model: ResidentModel) -> RunnerKey:
    """Return what identifies ``model``'s runner."""
    return (model.size, model.size_vram, model.context_length, model.digest)


def known_facts(before: RunnerKey, after: RunnerKey) -> RunnerKey:
    """Return ``after`` with the facts it lacks taken from ``before``."""
    size, vram, context, digest = after
    return (
        before[0] if size is None else size,
        before[1] if vram is None else vram,
        before[2] if context is None else context,
        digest or before[3],
    )


def replaced(before: RunnerKey, after: RunnerKey) -> bool:
    """Return True when a runner's known facts changed (unknown on either side is no change)."""
    return any(
        a not in (None, "") and b not in (None, "") and a != b
        for a, b in zip(before, after, strict=True)
    )
