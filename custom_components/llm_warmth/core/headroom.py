"""GPU memory headroom and who uses the memory (pure logic).

Headroom is the free memory less the household reserve: what can still be given to a model
before the other GPU users (transcodes, cameras, image tools) run short. It may be negative.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .gpu.types import GpuProcess, GpuStatus

# Process names of LLM servers and their runners (as /proc/<pid>/comm shows them).
LLM_PROCESS_MARKERS = ("ollama", "llama-server", "llama-swap", "vllm", "local-ai", "localai")


@dataclass(frozen=True, slots=True)
class GpuMemoryView:
    """One GPU's memory, split between the LLM server and everything else."""

    headroom: int | None
    llm_used: int | None
    other_used: int | None
    other_processes: tuple[GpuProcess, ...] | None

    @property
    def headroom_low(self) -> bool | None:
        """Return True when less than the reserve is free (None when unknown)."""
        return None if self.headroom is None else self.headroom < 0


def is_llm_process(process: GpuProcess) -> bool:
    """Return True for a process of an LLM server."""
    name = (process.name or "").lower()
    return any(marker in name for marker in LLM_PROCESS_MARKERS)


def memory_view(
    gpu: GpuStatus, *, reserve_bytes: int, llm_resident_vram: int | None, gpu_count: int
) -> GpuMemoryView:
    """Split one GPU's memory.

    The LLM server's share comes from the process list when it names the server's
    processes; otherwise, on a single-GPU host, from the backend (the resident models'
    ``size_vram``); otherwise it is unknown. "Other" is the rest of the used memory,
    driver overhead included.
    """
    headroom = gpu.memory_free - reserve_bytes if gpu.memory_free is not None else None
    processes = gpu.processes
    llm_processes = [p for p in processes or () if is_llm_process(p)]
    llm_used: int | None
    if llm_processes:
        llm_used = sum(p.used_bytes or 0 for p in llm_processes)
    elif gpu_count == 1:
        llm_used = llm_resident_vram
    else:
        llm_used = None
    other_used = (
        max(gpu.memory_used - llm_used, 0)
        if gpu.memory_used is not None and llm_used is not None
        else None
    )
    others = None if processes is None else tuple(p for p in processes if not is_llm_process(p))
    return GpuMemoryView(
        headroom=headroom, llm_used=llm_used, other_used=other_used, other_processes=others
    )


# What a household reserve must leave of a GPU for the models: less is no room for one.
MIN_ROOM_FOR_MODELS_BYTES: Final = 1024**3


def reserve_too_large(reserve_bytes: int, gpus: Sequence[GpuStatus]) -> int | None:
    """Return the smallest GPU's memory when a reserve leaves under 1 GiB of it for models.

    The reserve is kept on each GPU; None when it leaves room on every GPU whose memory is
    known (or none is known).
    """
    totals = [g.memory_total for g in gpus if g.memory_total is not None and g.memory_total > 0]
    if not totals or reserve_bytes + MIN_ROOM_FOR_MODELS_BYTES <= min(totals):
        return None
    return min(totals)
