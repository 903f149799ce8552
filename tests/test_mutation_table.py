"""scripts/mutation_table: scripts/mutate's lines read into the table, the totals judged."""

from pathlib import Path
from types import ModuleType

import pytest

from .project_scripts import load_script


def script() -> ModuleType:
    return load_script("mutation_table")


MUTATE_OUTPUT = """\
SURVIVED custom_components/llm_warmth/core/day_replay.py:117:53 compare < -> <=
    for stretch in [s for s in state.holds if s.end < day.begin]:

module  mutants  killed  survived  timeouts  not applied  caught
------------------------------------------------------------------
custom_components/llm_warmth/core/day_replay.py  55  52  2  1  0  96.4 %  (18 s)
"""


def test_a_row_and_its_survivors_are_read_from_scripts_mutate() -> None:
    table = script()
    rows = [m.groupdict() for line in MUTATE_OUTPUT.splitlines() if (m := table.ROW.match(line))]
    assert rows == [
        {
            "module": "custom_components/llm_warmth/core/day_replay.py",
            "mutants": "55",
            "killed": "52",
            "survived": "2",
            "timeouts": "1",
            "skipped": "0",
            "caught": "96.4 %",
        }
    ]
    survivors = [
        m["ident"] for line in MUTATE_OUTPUT.splitlines() if (m := table.SURVIVOR.match(line))
    ]
    assert survivors == ["custom_components/llm_warmth/core/day_replay.py:117:53 compare < -> <="]


def test_the_totals_of_core_and_the_shell_are_judged_against_their_goals() -> None:
    table = script()
    row = {"killed": "8", "survived": "1", "timeouts": "1", "skipped": "1", "caught": "-"}
    lines = table.table(
        [
            {"module": "custom_components/llm_warmth/core/a.py", "mutants": "11", **row},
            {"module": "custom_components/llm_warmth/b.py", "mutants": "10", **row, "killed": "7"},
            {"module": "custom_components/llm_warmth/c.py", "error": "boom"},
        ],
        "abc1234",
    )
    assert "`abc1234`" in lines[0]
    assert "| `core/a.py` | 10 | 9 | 1 | 90.0 % |" in lines
    assert "| `c.py` | - | - | - | did not run |" in lines
    assert lines[-2] == "| **core** | 10 | 9 | 1 | **90.0 %** (goal 95 %: NOT met) |"
    assert lines[-1] == "| **shell** | 9 | 8 | 1 | **88.9 %** (goal 85 %: met) |"


def test_every_module_is_measured_core_first_and_no_package_file() -> None:
    modules = script().every_module()
    assert "custom_components/llm_warmth/core/day_replay.py" in modules
    assert "custom_components/llm_warmth/warm_assistant.py" in modules
    assert not any(m.endswith("core/__init__.py") for m in modules)
    sides = ["/core/" in m for m in modules]
    assert sides == sorted(sides, reverse=True)  # core, then the shell


def test_a_run_goes_on_where_it_stopped_and_keeps_no_module_that_did_not_run(
    tmp_path: Path,
) -> None:
    table = script()
    results = tmp_path / ".mutation" / "abc1234.jsonl"
    assert table.measured(results) == {}
    row = {"module": "custom_components/llm_warmth/core/a.py", "mutants": "3", "killed": "3"}
    table.keep(results, row, ["custom_components/llm_warmth/core/a.py:1:1 number 1 -> 2"])
    table.keep(results, {"module": "custom_components/llm_warmth/b.py", "error": "boom"}, [])
    assert table.measured(results) == {
        row["module"]: (row, ["custom_components/llm_warmth/core/a.py:1:1 number 1 -> 2"])
    }


def test_it_waits_while_the_pause_file_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = script()
    pause = tmp_path / "pause"
    pause.write_text("")
    polls: list[float] = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 3:
            pause.unlink()

    monkeypatch.setattr(table.time, "sleep", sleep)
    table.wait_while_paused(pause, poll=0.5)
    assert polls == [0.5, 0.5, 0.5]
    table.wait_while_paused(pause)  # no pause: no wait
    assert len(polls) == 3


def test_the_entry_setup_in_the_package_init_is_a_module_measured() -> None:
    modules = script().every_module()
    assert "custom_components/llm_warmth/__init__.py" in modules
    assert "custom_components/llm_warmth/core/__init__.py" not in modules


def test_an_earlier_commit_is_measured_in_a_worktree_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = script()
    repo = tmp_path / "repo"
    package = repo / "custom_components" / "llm_warmth"
    (package / "core").mkdir(parents=True)
    (package / "core" / "rules.py").write_text("LIMIT = 1\n")
    (package / "sensor.py").write_text("X = 1\n")

    def git(*args: str) -> str:
        return table.git("-c", "user.name=t", "-c", "user.email=t@t", *args, cwd=repo)

    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "one")
    first = git("rev-parse", "--short", "HEAD")
    (package / "later.py").write_text("Y = 2\n")  # in the checkout, not in the commit
    monkeypatch.setattr(table, "ROOT", repo)
    monkeypatch.setattr(table, "RESULTS", repo / ".mutation")
    at, tree = table.tree_at("HEAD")
    assert at == first
    assert tree == repo / ".mutation" / f"tree-{first}"
    assert (tree / ".venv").resolve() == (repo / ".venv").resolve()
    # the commit's modules, core first; not the checkout's
    assert table.every_module(tree) == [
        "custom_components/llm_warmth/core/rules.py",
        "custom_components/llm_warmth/sensor.py",
    ]
    assert table.tree_at(first) == (at, tree)  # made once
    with pytest.raises(SystemExit, match="no such commit"):
        table.tree_at("nope")


def test_a_report_shows_what_is_measured_and_measures_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table = script()
    monkeypatch.setattr(table, "RUNS", tmp_path)
    monkeypatch.setattr(table, "commit", lambda: "abc1234")

    def measure(*args: object) -> None:
        raise AssertionError("a report measures nothing")

    monkeypatch.setattr(table, "measure", measure)
    done = "custom_components/llm_warmth/core/a.py"
    row = {"module": done, "mutants": "4", "killed": "3", "survived": "1", "timeouts": "0"}
    table.keep(tmp_path / "abc1234.jsonl", {**row, "skipped": "0", "caught": "75.0 %"}, [])
    later = "custom_components/llm_warmth/sensor.py"
    monkeypatch.setattr(table.sys, "argv", ["mutation_table", "--report", done, later])
    table.main()
    out = capsys.readouterr().out.splitlines()
    assert "| `core/a.py` | 4 | 3 | 1 | 75.0 % |" in out
    assert "| `sensor.py` | - | - | - | not measured yet |" in out
    monkeypatch.setattr(table.sys, "argv", ["mutation_table", "--report", "--write"])
    with pytest.raises(SystemExit):
        table.main()
