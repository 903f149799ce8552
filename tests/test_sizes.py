"""Code a reader can hold: no function over 60 lines, no source file over 450 lines.

Python functions are counted from ``def`` to their last line (their docstring included);
files are every Python and JavaScript file of the integration, the card's modules too.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "custom_components" / "llm_warmth"
MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 450


def sources(*suffixes: str) -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.suffix in suffixes and p.is_file())


def long_functions(path: Path, root: Path = PACKAGE) -> list[str]:
    return [
        f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_FUNCTION_LINES
    ]


def test_no_function_is_over_60_lines() -> None:
    assert [f for path in sources(".py") for f in long_functions(path)] == []


@pytest.mark.parametrize("path", sources(".py", ".js"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_source_file_is_over_450_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_FILE_LINES


def test_the_counts_see_a_long_function_and_a_long_file(tmp_path: Path) -> None:
    """The rule's own check: 61 lines is too long, 60 is not."""
    body = "\n".join("    x = 1" for _ in range(59))
    (tmp_path / "ok.py").write_text(f"def ok():\n{body}\n")
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n    return x\n")
    assert long_functions(tmp_path / "ok.py", tmp_path) == []
    assert long_functions(tmp_path / "long.py", tmp_path) == ["long.py:1 long (61 lines)"]
