"""What identifies a model's runner across readings, and when it changed (pure)."""

from custom_components.llm_warmth.core.backends.types import ResidencyState, ResidentModel
from custom_components.llm_warmth.core.runner_key import known_facts, replaced, runner_key


def test_a_runner_is_its_size_gpu_memory_context_and_digest() -> None:
    model = ResidentModel(
        "m", ResidencyState.LOADED, size=10, size_vram=8, context_length=4096, digest="d1"
    )
    assert runner_key(model) == (10, 8, 4096, "d1")


def test_a_fact_a_reading_lacks_is_taken_from_the_one_before() -> None:
    before = (10, 8, 4096, "d1")
    assert known_facts(before, (None, None, None, "")) == before
    assert known_facts(before, (0, 1, 2, "d2")) == (0, 1, 2, "d2")
    assert known_facts(before, (None, 7, None, "d2")) == (10, 7, 4096, "d2")


def test_a_runner_is_replaced_when_a_fact_known_on_both_sides_changed() -> None:
    before = (10, 8, 4096, "d1")
    assert not replaced(before, before)
    for changed in (
        (11, 8, 4096, "d1"),
        (10, 9, 4096, "d1"),
        (10, 8, 2048, "d1"),
        (10, 8, 4096, "d2"),
    ):
        assert replaced(before, changed), changed
    # Unknown on either side is no change.
    assert not replaced(before, (None, None, None, ""))
    assert not replaced((None, None, None, ""), before)
    assert replaced((0, None, None, ""), (1, None, None, ""))
