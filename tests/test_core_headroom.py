"""One GPU's memory split between the LLM server and the rest, its headroom, and a
household reserve's room: it must leave 1 GiB of every GPU whose memory is known."""

import pytest

from custom_components.llm_warmth.core.gpu.types import GpuProcess, GpuStatus, ProcessKind
from custom_components.llm_warmth.core.headroom import (
    MIN_ROOM_FOR_MODELS_BYTES,
    GpuMemoryView,
    is_llm_process,
    memory_view,
    reserve_too_large,
)

GIB = 1024**3


def gpu(total: int | None, index: int = 0) -> GpuStatus:
    return GpuStatus(index=index, uuid=f"GPU-{index}", name="GPU", memory_total=total)


def test_a_reserve_is_too_large_when_it_leaves_under_1_gib_of_the_smallest_gpu() -> None:
    gpus = [gpu(24 * GIB), gpu(8 * GIB, 1)]
    assert reserve_too_large(round(7.5 * GIB), gpus) == 8 * GIB
    assert reserve_too_large(7 * GIB, gpus) is None  # exactly 1 GiB left
    assert reserve_too_large(7 * GIB + 1, gpus) == 8 * GIB
    assert MIN_ROOM_FOR_MODELS_BYTES == GIB


def test_gpus_whose_memory_is_unknown_say_nothing() -> None:
    assert reserve_too_large(100 * GIB, []) is None
    assert reserve_too_large(100 * GIB, [gpu(None), gpu(0, 1)]) is None
    # Any size above 0 is a known size, however small.
    assert reserve_too_large(0, [gpu(None), gpu(1, 1)]) == 1


# ---------------------------------------------------------------- one GPU's memory, split


def process(pid: int, name: str | None, used: int | None) -> GpuProcess:
    return GpuProcess(pid=pid, name=name, used_bytes=used, kind=ProcessKind.COMPUTE)


def card(
    *, used: int | None = 10 * GIB, free: int | None = 14 * GIB, processes: object = None
) -> GpuStatus:
    return GpuStatus(
        index=0,
        uuid="GPU-0",
        name="GPU",
        memory_total=24 * GIB,
        memory_used=used,
        memory_free=free,
        processes=processes,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    "name",
    ["ollama", "llama-server", "llama-swap", "vllm", "local-ai", "localai", "Ollama_Runner"],
)
def test_each_llm_servers_process_is_told_by_its_name(name: str) -> None:
    assert is_llm_process(process(1, name, GIB))


@pytest.mark.parametrize("name", ["Plex Transcoder", "frigate.detector", "python3", "", None])
def test_other_processes_are_not_llm_servers(name: str | None) -> None:
    assert not is_llm_process(process(1, name, GIB))


def test_the_llm_servers_share_is_what_its_processes_hold() -> None:
    plex = process(2, "Plex Transcoder", GIB)
    view = memory_view(
        card(processes=(process(1, "ollama", 6 * GIB), process(3, "llama-server", None), plex)),
        reserve_bytes=2 * GIB,
        llm_resident_vram=5 * GIB,
        gpu_count=2,
    )
    assert view == GpuMemoryView(
        headroom=12 * GIB, llm_used=6 * GIB, other_used=4 * GIB, other_processes=(plex,)
    )
    assert view.headroom_low is False


def test_without_the_servers_processes_one_gpu_takes_the_resident_models_share() -> None:
    one = memory_view(card(processes=()), reserve_bytes=0, llm_resident_vram=3 * GIB, gpu_count=1)
    assert (one.llm_used, one.other_used, one.other_processes) == (3 * GIB, 7 * GIB, ())
    # On two GPUs the models' share cannot be told apart by GPU: unknown, and so is "other".
    two = memory_view(card(), reserve_bytes=0, llm_resident_vram=3 * GIB, gpu_count=2)
    assert (two.llm_used, two.other_used, two.other_processes) == (None, None, None)
    # More resident than the GPU says it uses (readings a moment apart): other is 0, not less.
    over = memory_view(card(used=GIB), reserve_bytes=0, llm_resident_vram=3 * GIB, gpu_count=1)
    assert over.other_used == 0
    unknown = memory_view(card(used=None), reserve_bytes=0, llm_resident_vram=GIB, gpu_count=1)
    assert (unknown.llm_used, unknown.other_used) == (GIB, None)


@pytest.mark.parametrize(
    ("free", "headroom", "low"),
    [(3 * GIB, GIB, False), (2 * GIB, 0, False), (2 * GIB - 1, -1, True), (None, None, None)],
)
def test_headroom_is_the_free_memory_less_the_reserve_and_low_below_it(
    free: int | None, headroom: int | None, low: bool | None
) -> None:
    view = memory_view(card(free=free), reserve_bytes=2 * GIB, llm_resident_vram=None, gpu_count=1)
    assert (view.headroom, view.headroom_low) == (headroom, low)
