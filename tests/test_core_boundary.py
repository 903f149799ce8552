"""The core package stays free of Home Assistant: a boundary that a test enforces."""

import ast
from pathlib import Path
import subprocess
import sys

CORE = Path(__file__).parent.parent / "custom_components" / "llm_warmth" / "core"
MODULES = sorted(CORE.rglob("*.py"))


def _imported_names(path: Path) -> list[str]:
    """Return every module an ``import`` or absolute ``from`` in ``path`` names."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_core_has_modules() -> None:
    """The walk below sees the package (an empty walk would prove nothing)."""
    names = {path.relative_to(CORE).as_posix() for path in MODULES}
    assert {"backends/base.py", "backends/ollama.py", "monitor.py", "gpu/nvml.py"} <= names


def test_no_module_imports_home_assistant_or_the_shell() -> None:
    """Only relative imports reach the integration; nothing names homeassistant."""
    offenders = {
        path.relative_to(CORE).as_posix(): name
        for path in MODULES
        for name in _imported_names(path)
        if name.split(".")[0] in ("homeassistant", "custom_components")
    }
    assert offenders == {}


BLOCKER = """
import importlib.abc, importlib.util, pkgutil, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "homeassistant":
            raise ImportError(f"core imported {name}")
        return None

sys.meta_path.insert(0, Block())
core = sys.argv[1]
spec = importlib.util.spec_from_file_location(
    "llm_warmth_core", core + "/__init__.py", submodule_search_locations=[core]
)
package = importlib.util.module_from_spec(spec)
sys.modules["llm_warmth_core"] = package
spec.loader.exec_module(package)
loaded = [
    importlib.import_module(info.name).__name__
    for info in pkgutil.walk_packages(package.__path__, "llm_warmth_core.")
]
print(len(loaded))
"""


def test_core_loads_without_home_assistant() -> None:
    """Every core module imports with Home Assistant made unimportable."""
    result = subprocess.run(
        [sys.executable, "-c", BLOCKER, str(CORE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == len([p for p in MODULES if p.name != "__init__.py"]) + len(
        [p for p in MODULES if p.name == "__init__.py" and p.parent != CORE]
    )
