"""The store's migrations without Home Assistant: each minor version's change to the dict."""

import copy
import json

from hypothesis import given, strategies as st

from custom_components.llm_warmth.core.store_migration import (
    MIGRATIONS,
    STORAGE_MINOR_VERSION,
    STORAGE_VERSION,
    StoredData,
    migrate,
)

# Whatever a damaged file may hold: JSON values of any shape.
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "models",
        "diagnoses",
        "load_seconds",
        "load_source",
        "cold_request_seconds",
        "cold_request_source",
        "verdict",
        "said",
        "usage",
        "days",
        "planner",
        "edges",
    ]
)
SHAPED = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.sampled_from(["polling", "server"]),
    lambda inner: st.dictionaries(KEYS | st.text(max_size=3), inner, max_size=4),
    max_leaves=16,
)


def test_the_version_is_the_last_migration() -> None:
    """A file written now needs no migration: the last one brings it to today's minor."""
    assert STORAGE_VERSION == 1
    assert max(MIGRATIONS) == STORAGE_MINOR_VERSION == 8
    assert list(MIGRATIONS) == sorted(MIGRATIONS)


def test_1_1_polled_load_becomes_the_cold_request() -> None:
    """1.2: a 1.1 load time was what polls saw of the cold request, not the server's load."""
    data: StoredData = {"models": {"a": {"load_seconds": 4.5}, "b": {"load_seconds": 0}}}
    migrate(data, 1)
    assert data["models"] == {
        "a": {
            "cold_request_at_least_seconds": 4.5,
            "cold_request_source": None,
        },
        # A zero was no measurement: dropped, not kept as a figure.
        "b": {},
    }


def test_1_1_to_1_2_alone() -> None:
    """The 1.2 step on its own: moved and marked as a polling figure."""
    data: StoredData = {"models": {"a": {"load_seconds": 4.5, "other": 1}}}
    MIGRATIONS[2](data)
    assert data["models"] == {
        "a": {"cold_request_seconds": 4.5, "cold_request_source": "polling", "other": 1}
    }


def test_1_2_server_load_gets_its_source() -> None:
    """1.3: a load time kept by 1.2 was the server's (Ollama's) own; a set source stays."""
    data: StoredData = {
        "models": {
            "a": {"load_seconds": 3.0},
            "b": {"load_seconds": 3.0, "load_source": "timings"},
            "c": {"load_seconds": None},
        }
    }
    migrate(data, 2)
    assert data["models"] == {
        "a": {"load_seconds": 3.0, "load_source": "server"},
        "b": {"load_seconds": 3.0, "load_source": "timings"},
        "c": {"load_seconds": None},
    }


def test_1_4_gets_the_sections_of_1_5() -> None:
    """1.5: the diagnoses, TTFT targets and idle profiles, empty; ones a 1.4 file has stay."""
    data: StoredData = {"ttft_targets": {"a": 1.0}}
    migrate(data, 4)
    assert data == {"ttft_targets": {"a": 1.0}, "diagnoses": {}, "idle_profiles": {}}


def test_1_5_verdict_words_kept_as_said() -> None:
    """1.6: a diagnosis' English verdict is said as it was; one with a sentence stays."""
    said = {"key": "k", "figures": {}}
    data: StoredData = {
        "diagnoses": {
            "a": {"verdict": "Too slow", "x": 1},
            "b": {"verdict": 3},
            "c": {},
            "d": {"said": said, "verdict": "kept"},
            "e": "damaged",
        }
    }
    MIGRATIONS[6](data)
    assert data["diagnoses"] == {
        "a": {"x": 1, "said": {"key": "diagnosis_as_stored", "figures": {"words": "Too slow"}}},
        "b": {"said": {"key": "diagnosis_as_stored", "figures": {"words": ""}}},
        "c": {"said": {"key": "diagnosis_as_stored", "figures": {"words": ""}}},
        "d": {"said": said, "verdict": "kept"},
        "e": "damaged",
    }


def test_1_6_polled_figures_kept_apart() -> None:
    """1.7: a figure polls saw is a lower bound, kept apart; an exact one stays."""
    data: StoredData = {
        "models": {
            "a": {"load_seconds": 2.0, "load_source": "polling"},
            "b": {"cold_request_source": "polling"},
            "c": {"load_seconds": 2.0, "load_source": "server", "cold_request_seconds": 5.0},
        }
    }
    migrate(data, 6)
    assert data["models"] == {
        "a": {"load_at_least_seconds": 2.0, "load_source": None},
        "b": {"cold_request_at_least_seconds": None, "cold_request_source": None},
        "c": {"load_seconds": 2.0, "load_source": "server", "cold_request_seconds": 5.0},
    }


def test_1_8_gives_each_usage_record_its_signal_column_and_no_edges() -> None:
    """1.8: a scoreboard row of three columns gets the fourth (warm thanks to a signal)."""
    planner = {"uses": ["2026-11-02T07:00:00+00:00"], "days": 3}
    data: StoredData = {
        "usage": {
            "a": {
                "days": {"2026-11-02": [1.0, 2.0, 0.5], "2026-11-03": [1, 0, 0, 4]},
                "planner": planner,
            },
            "b": {"days": "damaged", "planner": 3},
            "c": 7,
        }
    }
    migrate(data, 7)
    assert data["usage"] == {
        "a": {
            # The row of four (written by 1.8 already) is left as it is.
            "days": {"2026-11-02": [1.0, 2.0, 0.5, 0.0], "2026-11-03": [1, 0, 0, 4]},
            "planner": {**planner, "edges": {}},
        },
        "b": {"days": "damaged", "planner": 3},
        "c": 7,
    }
    # A planner that has edges keeps them; a file of 1.8 is not migrated again.
    kept: StoredData = {"usage": {"a": {"planner": {"edges": {"x": {}}}, "days": {}}}}
    assert migrate(copy.deepcopy(kept), 7) == kept
    assert migrate({"usage": "damaged"}, 7) == {"usage": "damaged"}
    assert migrate(copy.deepcopy(data), 8) == data


def test_only_the_later_migrations_run() -> None:
    """A 1.6 file's load figure is not moved again by 1.2's step; a current one is kept."""
    stored: StoredData = {"models": {"a": {"load_seconds": 2.0, "load_source": "server"}}}
    for minor in (6, STORAGE_MINOR_VERSION):
        data = copy.deepcopy(stored)
        assert migrate(data, minor) is data
        assert data == stored


def test_each_migration_runs_from_the_version_before_it() -> None:
    """From 1.(n-1), the step to 1.n runs; from 1.n it does not."""
    sections = {"diagnoses": {}, "ttft_targets": {}, "idle_profiles": {}}
    assert migrate({}, 4) == sections
    assert migrate({}, 5) == {}
    data: StoredData = {"models": {"a": {"load_seconds": 1.0}}}
    assert migrate(data, 3)["models"] == {"a": {"load_seconds": 1.0}}


def test_a_damaged_file_is_left_for_the_features() -> None:
    """Sections and models that are not mappings are left as they were."""
    data: StoredData = {"models": ["x"], "diagnoses": 3}
    migrate(data, 1)
    assert data == {
        "models": ["x"],
        "diagnoses": 3,
        "ttft_targets": {},
        "idle_profiles": {},
    }
    data = {"models": {"a": 2, "b": {"load_seconds": 1.0}}}
    migrate(data, 1)
    assert data["models"] == {
        "a": 2,
        "b": {"cold_request_at_least_seconds": 1.0, "cold_request_source": None},
    }


@given(
    data=st.dictionaries(KEYS | st.text(max_size=3), SHAPED | JSON, max_size=4),
    minor=st.integers(0, 8),
)
def test_any_file_migrates_without_error(data: StoredData, minor: int) -> None:
    """Whatever a file holds, the migrations do not fail; the result is still JSON."""
    migrated = migrate(copy.deepcopy(data), minor)
    json.dumps(migrated)
    if minor >= STORAGE_MINOR_VERSION:
        assert migrated == data


@given(data=st.dictionaries(KEYS, SHAPED, max_size=4))
def test_migrating_twice_is_migrating_once(data: StoredData) -> None:
    """A file already migrated and migrated again from 1.7 is unchanged."""
    once = migrate(copy.deepcopy(data), 1)
    assert migrate(copy.deepcopy(once), STORAGE_MINOR_VERSION) == once
    models = once.get("models")
    for values in models.values() if isinstance(models, dict) else ():
        if isinstance(values, dict):
            assert "polling" not in (values.get("load_source"), values.get("cold_request_source"))
