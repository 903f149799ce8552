"""Which models and GPUs get entities (pure)."""

from hypothesis import given, strategies as st

from custom_components.llm_warmth.core.entity_subjects import (
    ModelsSeen,
    gpu_device_name,
    models_of_unique_ids,
)


def test_models_of_unique_ids() -> None:
    """The model between the entry's id and one of the keys; others name none."""
    ids = [
        "E1_llama3.2:3b_last_ttft",
        "E1_qwen3_8b_idle_profile",
        "E1_last_ttft",  # the server's own entity of the key
        "E1_phi4_other_key",
        "E1_gemma_last_ttft_extra",
    ]
    assert models_of_unique_ids(ids, "E1", {"last_ttft", "idle_profile"}) == {
        "llama3.2:3b",
        "qwen3_8b",
    }
    assert models_of_unique_ids(ids, "E1", {"idle_profile"}) == {"qwen3_8b"}
    assert models_of_unique_ids(ids, "E1", set()) == set()
    assert models_of_unique_ids([], "E1", {"k"}) == set()
    # A model whose name ends like a key: only the key is taken off.
    assert models_of_unique_ids(["E1_a_k_k"], "E1", {"k"}) == {"a_k"}


@given(
    st.text(st.characters(codec="ascii", exclude_characters="\x00"), min_size=1, max_size=12),
    st.sampled_from(["last_ttft", "idle_profile", "warmth"]),
)
def test_a_models_unique_id_names_it(model: str, key: str) -> None:
    """Whatever the model is called, the unique id made for it names it again."""
    assert models_of_unique_ids([f"E1_{model}_{key}"], "E1", {key}) == {model}


def test_each_models_entities_are_made_once() -> None:
    """New models in order; one still there is not made again, one gone is forgotten."""
    seen = ModelsSeen()
    assert seen.new(["b", "a"], ["a", "b", "c"]) == ["a", "b"]
    assert seen.new(["a", "b", "c"], ["a", "b", "c"]) == ["c"]
    # "b" is no longer wanted but still there: its entities stay, nothing made.
    assert seen.new(["a"], ["a", "b", "c"]) == []
    assert seen.new(["a", "b"], ["a", "b", "c"]) == []
    # "c" is gone, then back: made anew.
    assert seen.new([], ["a", "b"]) == []
    assert seen.new(["c"], ["a", "b", "c"]) == ["c"]
    assert seen.new([], []) == []
    assert seen.new(["a"], ["a"]) == ["a"]


def test_gpu_device_names() -> None:
    """The index, and the model's name when the GPU said it."""
    assert gpu_device_name(0, "RTX 4090") == "GPU 0 RTX 4090"
    assert gpu_device_name(1, None) == "GPU 1"
    assert gpu_device_name(2, "") == "GPU 2"
