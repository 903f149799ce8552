"""A sentence's key and typed figures: as a person reads them, stored, and read back (pure)."""

import pytest

from custom_components.llm_warmth.core.sentence import (
    Duration,
    Number,
    Sentence,
    Size,
    shown,
)

GIB = 1024**3


def test_each_kind_of_figure_is_stored_and_read_back_the_same() -> None:
    cost = Sentence(
        "diagnosis_prompt_cost",
        {
            "per_token": Number(2.5, 6),
            "long_tokens": 1000,
            "long_prefill": Duration(8123.5),
            "short_tokens": 0,
            "short_prefill": Duration(0.0),
        },
    )
    switch = Sentence(
        "diagnosis_switch_evicts_sized",
        {
            "load": Duration(5000.0),
            "model": "tiny",
            "model_size": Size(2**63),
            "other_model": "big",
            "other_size": Size(0),
        },
    )
    for said in (cost, switch):
        assert Sentence.from_dict(said.as_dict()) == said


@pytest.mark.parametrize(
    "stored",
    [
        [],
        {"key": "", "figures": {}},
        {"key": 3, "figures": {}},
        {"key": "k", "figures": []},
        {"key": "k", "figures": {"not a name": 1}},
        {"key": "k", "figures": {3: 1}},
        {"key": "k", "figures": {"size": {"bytes": 2**63 + 1}}},
        {"key": "k", "figures": {"size": {"bytes": -1}}},
        {"key": "k", "figures": {"size": {"bytes": True}}},
        {"key": "k", "figures": {"n": {"value": 1.0, "digits": 7}}},
        {"key": "k", "figures": {"n": {"value": float("nan"), "digits": 1}}},
        {"key": "k", "figures": {"n": {"value": True, "digits": 1}}},
        {"key": "k", "figures": {"d": {"ms": "1"}}},
        {"key": "k", "figures": {"d": {"ms": 1, "extra": 2}}},
        {"key": "k", "figures": {"flag": True}},
        {"key": "k", "figures": {"x": 1.5}},
    ],
)
def test_a_damaged_stored_sentence_is_refused(stored: object) -> None:
    with pytest.raises(ValueError, match="not a"):
        Sentence.from_dict(stored)


def test_a_duration_reads_in_ms_below_a_second_and_in_s_from_there() -> None:
    assert shown(Duration(999.4)) == "999 ms"
    assert shown(Duration(1000.0)) == "1.0 s"
    assert shown(Duration(7450.0)) == "7.5 s"


def test_a_size_reads_in_gib_and_a_number_with_its_digits() -> None:
    assert shown(Size(3 * GIB // 2)) == "1.5"
    assert shown(Size(GIB + GIB // 20 - 1024)) == "1.0"
    assert shown(Size(GIB + GIB // 20 + 1)) == "1.1"  # 1.05 GiB and a byte: GiB of 1024**3
    assert shown(Number(0.18349, 2)) == "0.18"
    assert shown("qwen3:8b") == "qwen3:8b"
    assert shown(12) == "12"
