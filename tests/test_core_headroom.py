"""A household reserve's room: it must leave 1 GiB of every GPU whose memory is known."""

from custom_components.llm_warmth.core.gpu.types import GpuStatus
from custom_components.llm_warmth.core.headroom import MIN_ROOM_FOR_MODELS_BYTES, reserve_too_large

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
