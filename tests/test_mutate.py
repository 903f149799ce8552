"""scripts/mutate on a tiny package of its own: which mutants it finds, kills and counts."""

import json
from pathlib import Path
import re
import shutil
import subprocess
import sys
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "mutate"

CALC = '''"""A tiny module for the mutation tool's test."""

import logging

LOGGER = logging.getLogger(__name__)
SCALE = 3
LIMIT = 10


def clamp(value: int, low: int = 0, high: int = LIMIT) -> int:
    """Return ``value`` within [low, high]."""
    if value < low:
        return low
    return min(value, high)


def triple(value: int) -> int:
    """Return three times ``value``."""
    LOGGER.debug("tripling %s", value + 1)
    return value * SCALE


class Box:
    """A box with a size."""

    def __init__(self, size: int) -> None:
        """Keep the size."""
        self.size = size

    @property
    def big(self) -> bool:
        """Return True for a big box."""
        return self.size > 5


PAIR_A, PAIR_B = 2, 3


def pair_sum() -> int:
    """Return the pair's sum."""
    return PAIR_A + PAIR_B


def _sizes(base: int) -> tuple[int, ...]:
    """Build the sizes, at import."""
    return (base, base * 2)


SIZES = _sizes(4)


def _label(name: str) -> str:
    """Build a label, at import (no test reads it)."""
    return name.upper()


LABEL = _label("box")
'''

# Imported by name, after the patch: a mutant of clamp or of Box.big is what they call.
TEST_CALC = """from pkg.calc import Box, clamp, pair_sum, triple


def test_clamp():
    assert clamp(-1) == 0
    assert clamp(50) == 10
    assert clamp(5) == 5


def test_triple():
    assert triple(2) == 6
    assert pair_sum() == 5


def test_box():
    assert Box(9).big
    assert not Box(1).big


def test_sizes():
    from pkg.calc import SIZES

    assert SIZES == (4, 8)
"""

PYPROJECT = """[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
"""


def mutate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--root", str(root)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "calc.py").write_text(CALC)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TEST_CALC)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    return tmp_path


def test_mutants_of_a_module(project: Path) -> None:
    listed = mutate(project, "pkg/calc.py", "--list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert "pkg/calc.py:6:9 number 3 -> 4  [statement]" in lines
    assert "pkg/calc.py:12:14 compare < -> <=  [code]" in lines
    assert "pkg/calc.py:14:12 min_max min -> max  [code]" in lines
    assert "pkg/calc.py:10:34 default 0 -> 1  [default]" in lines
    assert "pkg/calc.py:33:9 return_none return self.size > 5 -> return None  [code]" in lines
    # neither the logger call's argument, nor a docstring, nor an annotation, nor -> None
    assert not [line for line in lines if re.match(r"pkg/calc.py:(1|19|26|28):", line)]
    assert "pkg/calc.py:36:21 number 3 -> 4  [statement]" in lines
    assert "pkg/calc.py:46:24 arith * -> /  [code]" in lines
    assert len(lines) == 22


def test_killed_survived_and_not_applied(project: Path) -> None:
    before = (project / "pkg" / "calc.py").read_text()
    result = mutate(project, "pkg/calc.py", "--jobs", "2", "--verbose", "--fail-under", "90")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr  # under --fail-under
    assert "pkg/calc.py: tests tests/test_calc.py (by name)" in out
    # seen through `from pkg.calc import clamp`: the test modules import after the patch
    assert "KILLED pkg/calc.py:14:12 min_max min -> max" in out
    assert "KILLED pkg/calc.py:33:26 compare > -> >=" not in out
    # a module constant read at run time is patched in the module's namespace
    assert "KILLED pkg/calc.py:6:9 number 3 -> 4" in out
    assert "KILLED pkg/calc.py:36:21 number 3 -> 4" in out  # PAIR_A, PAIR_B = 2, 3
    assert "SURVIVED pkg/calc.py:33:26 compare > -> >=\n    return self.size > 5" in out
    assert "SURVIVED pkg/calc.py:12:14 compare < -> <=" in out
    # LIMIT is the default of clamp, bound when the module was imported: no patch in place
    # reaches it, so the module is imported again with the mutant
    assert "KILLED pkg/calc.py:7:9 number 10 -> 11" in out
    # _sizes runs at import only (no test's trace sees its lines): imported again, the
    # mutant is what built SIZES
    assert "KILLED pkg/calc.py:46:24 arith * -> /" in out
    assert "KILLED pkg/calc.py:46:5 return_none" in out
    # ... and imported again, a fault no test reads survives (the import itself is no kill)
    assert "SURVIVED pkg/calc.py:54:5 return_none return name.upper() -> return None" in out
    row = next(line for line in out.splitlines() if line.startswith("pkg/calc.py "))
    assert row.split()[1:7] == ["22", "18", "4", "0", "0", "81.8"], row
    assert (project / "pkg" / "calc.py").read_text() == before


def test_since_keeps_the_changed_lines(project: Path) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("no git")
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([git, "init", "-q"], cwd=project, check=True)
    subprocess.run([git, *env, "add", "."], cwd=project, check=True)
    subprocess.run([git, *env, "commit", "-qm", "x"], cwd=project, check=True)
    calc = project / "pkg" / "calc.py"
    calc.write_text(calc.read_text().replace("self.size > 5", "self.size > 6"))
    listed = mutate(project, "pkg/calc.py", "--list", "--since", "HEAD")
    assert listed.stdout.splitlines() == [
        "pkg/calc.py:33:9 return_none return self.size > 6 -> return None  [code]",
        "pkg/calc.py:33:26 compare > -> >=  [code]",
        "pkg/calc.py:33:28 number 6 -> 7  [code]",
    ]
    # a module with no mutant on its changed lines runs no test, not even the baseline
    (project / "tests" / "test_calc.py").write_text("def test_broken():\n    assert False\n")
    subprocess.run([git, *env, "commit", "-qam", "y"], cwd=project, check=True)
    unchanged = mutate(project, "pkg/calc.py", "--since", "HEAD")
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "no mutants: no baseline run" in unchanged.stdout


def test_failing_tests_stop_it(project: Path) -> None:
    test = project / "tests" / "test_calc.py"
    test.write_text(test.read_text().replace("== 6", "== 7"))
    result = mutate(project, "pkg/calc.py", "--tests", str(test))
    assert result.returncode == 2
    assert "the tests fail without a mutant" in result.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="no node")
def test_javascript(tmp_path: Path) -> None:
    (tmp_path / "web").mkdir()
    source = (
        "// `a < b` in a comment stays\n"
        "export function clamp(v, top = 10) {\n"
        '  return v < 0 ? 0 : v > top ? top : v + "" === "x" ? 1 : v;\n'
        "}\n"
    )
    (tmp_path / "web" / "calc.mjs").write_text(source)
    (tmp_path / "tests" / "web").mkdir(parents=True)
    (tmp_path / "tests" / "web" / "calc.test.mjs").write_text(
        'import assert from "node:assert/strict";\n'
        'import { test } from "node:test";\n'
        'import { clamp } from "../../web/calc.mjs";\n'
        'test("clamp", () => { assert.equal(clamp(-1), 0); assert.equal(clamp(50), 10); });\n'
    )
    result = mutate(tmp_path, "web/calc.mjs", "--jobs", "2")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "web/calc.mjs: tests tests/web/calc.test.mjs (by name)" in out
    assert "SURVIVED web/calc.mjs:3:12 compare < -> <=" in out
    assert "web/calc.mjs:1:" not in out  # the comment
    assert '"x"' not in out.split("SURVIVED", 1)[0]
    row = next(line for line in out.splitlines() if line.startswith("web/calc.mjs "))
    assert row.split()[1:7] == ["7", "2", "5", "0", "0", "28.6"], row
    assert (tmp_path / "web" / "calc.mjs").read_text() == source


def test_a_backends_module_is_tested_through_the_modules_that_import_it(tmp_path: Path) -> None:
    from .project_scripts import load_script  # noqa: PLC0415

    backends = tmp_path / "custom_components" / "llm_warmth" / "core" / "backends"
    backends.mkdir(parents=True)
    (backends / "http.py").write_text("def get() -> None: ...\n")
    (backends / "ollama.py").write_text("from .http import get\n")
    (backends / "unrelated.py").write_text("from .ollama import OllamaClient\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    client = "from custom_components.llm_warmth.core.backends.ollama import get\n"
    (tests / "test_ollama.py").write_text("def test_it(): ...\n")
    (tests / "test_client.py").write_text(client)
    (tests / "test_browser.py").write_text(client)
    (tests / "test_e2e_ollama.py").write_text(client)
    (tests / "test_other.py").write_text("def test_it(): ...\n")
    chosen = dict(
        load_script("mutate")._tests_for_python(
            tmp_path, "custom_components/llm_warmth/core/backends/http.py"
        )
    )
    # ollama imports http: its tests by name and by import; never e2e, the browser or others
    assert chosen == {
        "tests/test_ollama.py": "through ollama",
        "tests/test_client.py": "through ollama",
    }


def test_a_constant_or_a_default_runs_only_the_tests_that_can_see_it() -> None:
    """SCALE is read in triple: its lines; LIMIT only at import (a default): every test; a
    default of clamp: clamp's lines."""
    from .project_scripts import load_script  # noqa: PLC0415

    mutate = load_script("mutate")
    mutator = mutate.PythonMutator("pkg/calc.py", CALC)
    by_line = {(m.line, m.op): m for m in mutator.mutants()}
    lines = CALC.splitlines()
    triple_reads = lines.index("    return value * SCALE") + 1
    scale = by_line[(lines.index("SCALE = 3") + 1, "number")]
    assert mutate._observers(mutator.tree, scale.extra.ctx) == {triple_reads}
    limit = by_line[(lines.index("LIMIT = 10") + 1, "number")]
    assert mutate._observers(mutator.tree, limit.extra.ctx) is None
    low = by_line[
        (
            lines.index("def clamp(value: int, low: int = 0, high: int = LIMIT) -> int:") + 1,
            "default",
        )
    ]
    clamp_body = mutate._observers(mutator.tree, low.extra.ctx)
    assert lines.index("    if value < low:") + 1 in clamp_body
    assert triple_reads not in clamp_body


TEST_IT = "def test_it(): ...\n"


def _integration(root: Path, modules: dict[str, str], tests: dict[str, str]) -> Any:
    """Write a tiny integration and its tests under ``root``; return scripts/mutate."""
    from .project_scripts import load_script  # noqa: PLC0415

    package = root / "custom_components" / "llm_warmth"
    package.mkdir(parents=True)
    for name, text in modules.items():
        (package / name).write_text(text)
    (root / "tests").mkdir()
    for name, text in tests.items():
        (root / "tests" / name).write_text(text)
    return load_script("mutate")


def test_a_part_no_test_names_is_tested_through_the_module_that_imports_it(
    tmp_path: Path,
) -> None:
    mutate = _integration(
        tmp_path,
        {
            "first_words.py": "def first_words() -> None: ...\n",
            "warm_assistant.py": "from .first_words import first_words\n",
        },
        {"test_warm_assistant.py": TEST_IT, "test_demo.py": "# first_words warm_assistant\n"},
    )
    chosen = dict(mutate._tests_for_python(tmp_path, "custom_components/llm_warmth/first_words.py"))
    # the demo's Home Assistant runs in its own process: no mutant reaches it
    assert chosen == {"tests/test_warm_assistant.py": "through warm_assistant"}


def test_a_module_a_test_only_imports_is_tested_through_its_importers_too(
    tmp_path: Path,
) -> None:
    imports = "from custom_components.llm_warmth.sensor_descriptions import SENSORS\n"
    mutate = _integration(
        tmp_path,
        {
            "sensor_descriptions.py": "SENSORS = ()\n",
            "sensor.py": "from .sensor_descriptions import SENSORS\n",
            "voice.py": "from .voice_entities import X\n",
            "voice_entities.py": "X = 1\n",
        },
        {
            "test_sensor.py": TEST_IT,
            "test_voice.py": TEST_IT,
            "test_voice_entities.py": TEST_IT,
            "test_translations.py": imports,
        },
    )
    chosen = dict(
        mutate._tests_for_python(tmp_path, "custom_components/llm_warmth/sensor_descriptions.py")
    )
    # the translations' test imports it for its keys; the sensors' tests read its figures
    assert chosen == {
        "tests/test_translations.py": "imports it",
        "tests/test_sensor.py": "through sensor",
    }
    # a module with tests of its own name keeps them alone
    chosen = dict(
        mutate._tests_for_python(tmp_path, "custom_components/llm_warmth/voice_entities.py")
    )
    assert chosen == {"tests/test_voice_entities.py": "by name"}


def test_the_packages_setup_is_tested_by_test_init_and_what_imports_from_it(
    tmp_path: Path,
) -> None:
    setup = "async def async_setup_entry(hass, entry):\n    return True\n"
    mutate = _integration(
        tmp_path,
        {"__init__.py": setup, "const.py": "DOMAIN = 'llm_warmth'\n"},
        {
            "test_init.py": TEST_IT,
            "test_voice.py": "from custom_components.llm_warmth import async_setup_entry\n",
            "test_const.py": "from custom_components.llm_warmth.const import DOMAIN\n",
            "test_docs.py": "# __init__\n",
            "test_mutate.py": "# custom_components/llm_warmth/__init__.py\n",
        },
    )
    chosen = dict(mutate._tests_for_python(tmp_path, "custom_components/llm_warmth/__init__.py"))
    # not every test that mentions "__init__", nor every test of the package's modules
    assert chosen == {"tests/test_init.py": "by name", "tests/test_voice.py": "imports it"}


def test_a_flows_tests_are_those_that_start_it_wherever_they_live(tmp_path: Path) -> None:
    from .project_scripts import load_script  # noqa: PLC0415

    package = tmp_path / "custom_components" / "llm_warmth"
    package.mkdir(parents=True)
    (package / "options_flow.py").write_text(
        "from homeassistant.config_entries import OptionsFlowWithReload\n\n\n"
        "class Options(OptionsFlowWithReload):\n    pass\n"
    )
    (package / "gpu.py").write_text("def read() -> None: ...\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    starts = "await hass.config_entries.options.async_init(entry.entry_id)\n"
    (tests / "test_gpu.py").write_text(starts)
    (tests / "test_e2e_gpu.py").write_text(starts)
    (tests / "test_config_flow.py").write_text("await hass.config_entries.flow.async_init(D)\n")
    mutate = load_script("mutate")
    chosen = dict(
        mutate._tests_for_python(tmp_path, "custom_components/llm_warmth/options_flow.py")
    )
    # the options flow's steps tested in test_gpu.py; a config flow's start is not its own
    assert chosen == {"tests/test_gpu.py": "starts its flow"}
    # a module with no flow gets none this way
    assert dict(mutate._tests_for_python(tmp_path, "custom_components/llm_warmth/gpu.py")) == {
        "tests/test_gpu.py": "by name"
    }


def test_the_tests_that_reach_a_module_at_run_time_are_found_by_one_pass(
    tmp_path: Path,
) -> None:
    """The controller, reached through the entry's setup, is named by no test (test_pin.py)."""
    _integration(
        tmp_path,
        {
            "__init__.py": "from .controller import Controller\n\n\n"
            "def setup() -> Controller:\n    return Controller()\n",
            "controller.py": "class Controller:\n"
            "    def doubled(self, x: int) -> int:\n        return x * 2\n",
        },
        {
            "test_pin.py": "from custom_components.llm_warmth import setup\n\n\n"
            "def test_pin():\n    assert setup().doubled(2) == 4\n",
            "test_words.py": 'def test_words():\n    assert "a b".split() == ["a", "b"]\n',
        },
    )
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    reach = tmp_path / "reach.json"
    wrote = mutate(tmp_path, "--write-reach", str(reach))
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    found = json.loads(reach.read_text())
    module = "custom_components/llm_warmth/controller.py"
    assert found["reach"][module] == ["tests/test_pin.py"]
    assert found["reach"]["custom_components/llm_warmth/__init__.py"] == ["tests/test_pin.py"]
    # the same pass is each module's baseline: which lines each test runs
    assert found["order"] == ["tests/test_pin.py::test_pin", "tests/test_words.py::test_words"]
    assert found["lines"][module] == {"tests/test_pin.py::test_pin": [2, 3]}
    assert found["lines"]["custom_components/llm_warmth/__init__.py"] == {
        "tests/test_pin.py::test_pin": [4, 5]
    }
    assert set(found["durations"]) == set(found["order"])
    # by name and by import no test is found; with what each test runs, test_pin.py is
    alone = mutate(tmp_path, str(tmp_path / module))
    assert alone.returncode == 2
    assert f"no tests found for {module}" in alone.stderr
    measured = mutate(tmp_path, str(tmp_path / module), "--reach", str(reach))
    assert measured.returncode == 0, measured.stdout + measured.stderr
    assert ": tests tests/test_pin.py (runs its code)" in measured.stdout
    assert "baseline: 1 tests, from the pass over every unit test" in measured.stdout
    row = re.search(rf"^{re.escape(module)}\s+(\d+)\s+(\d+)\s+(\d+)\s", measured.stdout, re.M)
    assert row is not None, measured.stdout
    assert int(row[1]) >= 2  # x * 2: the operator, the number
    assert row[2] == row[1]  # every one killed
    assert row[3] == "0"


def test_a_reach_file_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "reach.json"
    broken.write_text("{not json")
    refused = mutate(ROOT, "custom_components/llm_warmth/const.py", "--reach", str(broken))
    assert refused.returncode == 2
    assert "--reach" in refused.stderr
    nothing = mutate(ROOT)
    assert nothing.returncode == 2
    assert "give a MODULE_PATH" in nothing.stderr


def test_a_core_module_is_measured_by_its_own_tests_and_the_shell_by_what_runs_it() -> None:
    from .project_scripts import load_script  # noqa: PLC0415

    mutate = load_script("mutate")
    reach = {
        "custom_components/llm_warmth/core/pins.py": ["tests/test_pin.py"],
        "custom_components/llm_warmth/core/sentence.py": ["tests/test_pin.py"],
        "custom_components/llm_warmth/controller.py": ["tests/test_pin.py", "tests/test_e2e_x.py"],
    }
    own = [("tests/test_core_pins.py", "by name")]
    assert mutate._with_reach(own, reach, "custom_components/llm_warmth/core/pins.py") == own
    # a core module no test names is measured by what runs it
    assert mutate._with_reach([], reach, "custom_components/llm_warmth/core/sentence.py") == [
        ("tests/test_pin.py", "runs its code")
    ]
    assert mutate._with_reach(
        [("tests/test_controller.py", "by name")],
        reach,
        "custom_components/llm_warmth/controller.py",
    ) == [("tests/test_controller.py", "by name"), ("tests/test_pin.py", "runs its code")]


def test_a_modules_baseline_is_read_from_the_pass_in_the_order_its_tests_were_chosen() -> None:
    from .project_scripts import load_script  # noqa: PLC0415

    mutate = load_script("mutate")
    module = "custom_components/llm_warmth/controller.py"
    passed = {
        "order": ["tests/test_a.py::one", "tests/test_a.py::two", "tests/test_b.py::three"],
        "durations": {
            "tests/test_a.py::one": 1.0,
            "tests/test_a.py::two": 2.0,
            "tests/test_b.py::three": 4.0,
        },
        "lines": {module: {"tests/test_a.py::two": [5, 6], "tests/test_b.py::three": [6]}},
        "outside": {module: [1]},
    }
    base = mutate._baseline_from_pass(passed, module, ["tests/test_b.py", "tests/test_a.py"])
    assert base.order == ["tests/test_b.py::three", "tests/test_a.py::one", "tests/test_a.py::two"]
    assert base.covered == {
        "tests/test_b.py::three": {6},
        "tests/test_a.py::one": set(),
        "tests/test_a.py::two": {5, 6},
    }
    assert base.outside == {1}
    assert base.seconds == 1.0 + 2.0 + 4.0 + 2 * 2.0
    # only b's tests: a's seconds are not counted
    assert mutate._baseline_from_pass(passed, module, ["tests/test_b.py"]).seconds == 6.0
    # a test file the pass did not run, a node id, no pass: a traced baseline of its own
    assert mutate._baseline_from_pass(passed, module, ["tests/test_c.py"]) is None
    assert mutate._baseline_from_pass(passed, module, ["tests/test_a.py::one"]) is None
    assert mutate._baseline_from_pass(None, module, ["tests/test_a.py"]) is None


UNITS = '''"""Units, with a table of them built at import."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    """A unit and its scale."""

    name: str
    scale: float = 1.0


UNITS = {"byte": Unit("byte"), "mib": Unit("mib", 1024.0)}


def scaled(unit: str, value: float) -> float:
    """Return ``value`` in bytes."""
    return value * UNITS[unit].scale
'''


def test_a_dataclass_default_an_import_time_table_took_is_measured_by_importing_again(
    project: Path,
) -> None:
    """Patching the field's default reaches no instance the import built: the byte's
    scale of 1.0 would survive every test; imported again, the table holds the mutant."""
    (project / "pkg" / "units.py").write_text(UNITS)
    (project / "tests" / "test_units.py").write_text(
        "from pkg.units import scaled\n\n\ndef test_bytes():\n    assert scaled('byte', 3) == 3\n"
    )
    result = mutate(project, "pkg/units.py", "--verbose")
    assert "KILLED pkg/units.py:11:20 number 1.0 -> 2.0" in result.stdout, result.stdout


LIMITS = '''"""A limit a test reads by name."""

MAX = 5


def clamp(value: int) -> int:
    """Return ``value``, at most MAX."""
    return min(value, MAX)
'''


def test_a_constant_a_test_imports_by_name_is_measured_by_that_test_too(project: Path) -> None:
    """test_figure runs no line of the module that reads MAX; it imports MAX and states
    it. Choosing only the tests that run the reading lines would leave the mutant alive."""
    (project / "pkg" / "limits.py").write_text(LIMITS)
    (project / "tests" / "test_limits.py").write_text(
        "from pkg.limits import MAX, clamp\n\n\n"
        "def test_clamp():\n    assert clamp(3) == 3\n\n\n"
        "def test_figure():\n    assert MAX == 5\n"
    )
    result = mutate(project, "pkg/limits.py", "--verbose")
    assert "KILLED pkg/limits.py:3:7 number 5 -> 6" in result.stdout, result.stdout
