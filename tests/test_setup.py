"""scripts/setup on a fresh machine: it provides its own Python, and is quick the second time.

The interpreter recipe (scripts/python314) unpacks Debian's python3.14 into a private
prefix; here into a temporary one, so that the test runs it for real (it needs root and
Debian's package archive, as a fresh Debian 12 machine has them).
"""

from __future__ import annotations

import os
from pathlib import Path
import shutil
import subprocess

import pytest

ROOT = Path(__file__).resolve().parent.parent

_CAN_INSTALL = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("dpkg") is not None


def _run(*command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.mark.skipif(
    not _CAN_INSTALL and not os.environ.get("LLM_WARMTH_REQUIRE_E2E"),
    reason="scripts/python314 installs as root on Debian",
)
def test_python314_provides_an_interpreter_with_headers(tmp_path: Path) -> None:
    prefix = tmp_path / "python3.14"
    first = _run("scripts/python314", env={"PY314_PREFIX": str(prefix)})
    assert first.returncode == 0, first.stderr
    python = first.stdout.strip()
    assert python == f"{prefix}/bin/python3.14"
    version = _run(
        python, "-c", "import sys, ssl, sqlite3; print(sys.version_info[:3] >= (3, 14, 2))"
    )
    assert version.stdout.strip() == "True", version.stderr
    # With headers: Home Assistant builds C extensions (pymicro-vad) against them.
    assert (prefix / "usr" / "include" / "python3.14" / "Python.h").is_file()
    again = _run("scripts/python314", env={"PY314_PREFIX": str(prefix)})
    assert (again.returncode, again.stdout.strip()) == (0, python)
    assert "cached" in again.stderr
    shutil.rmtree(prefix)  # 130 MB: not for pytest's kept temporary folders


def test_setup_is_quick_the_second_time() -> None:
    """After scripts/setup (CI runs it just before the tests) a second run only checks."""
    second = _run("scripts/setup")
    assert second.returncode == 0, second.stderr
    assert "is up to date" in second.stdout, second.stdout + second.stderr


def test_the_server_kit_names_what_it_can_start(tmp_path: Path) -> None:
    """scripts/llm_servers: usage, a refused server said in words, an unknown one refused."""
    kit = [str(ROOT / "scripts" / "llm_servers")]
    env = {**os.environ, "PREFIX": str(tmp_path)}
    usage = subprocess.run(kit, capture_output=True, text=True, env=env, check=False)
    assert usage.returncode == 0
    assert "ollama_current" in usage.stdout
    wrong = subprocess.run([*kit, "launch"], capture_output=True, text=True, env=env, check=False)
    assert wrong.returncode == 2
    unknown = subprocess.run(
        [*kit, "stop", "vllm"], capture_output=True, text=True, env=env, check=False
    )
    assert unknown.returncode == 0  # nothing of that name was started: nothing to stop
    swap = subprocess.run(
        [*kit, "install", "llama_swap"], capture_output=True, text=True, env=env, check=False
    )
    assert "Go module proxy refuses" in swap.stderr
    # Nothing runs under a new prefix: no variable is printed.
    listed = subprocess.run([*kit, "env"], capture_output=True, text=True, env=env, check=False)
    assert (listed.returncode, listed.stdout) == (0, "")


@pytest.mark.parametrize(
    ("closing", "said"),
    [
        (
            "====== 671 passed, 40 skipped in 180.12s (0:03:00) ======",
            "scripts/test: 40 tests skipped",
        ),
        (
            "== 1 failed, 3 passed, 1 skipped, 2 warnings in 1.50s ==",
            "scripts/test: 1 tests skipped",
        ),
        ("======= 711 passed in 734.35s (0:12:14) ========", "scripts/test: no test skipped"),
    ],
)
def test_the_test_command_says_how_many_tests_were_skipped_and_how_to_run_them(
    tmp_path: Path, closing: str, said: str
) -> None:
    """scripts/test ends with the count of skipped tests, not only with `s` letters."""
    log = tmp_path / "pytest.log"
    # A test's output line that looks like a closing line comes before the real one.
    log.write_text(f"tests/test_x.py ss.\n== 9 skipped in 0.1s ==\nnoise\n{closing}\n")
    result = _run("scripts/skipped", str(log))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(said)
    assert ("scripts/llm_servers start" in result.stdout) is ("no test" not in said)
    assert "scripts/skipped" in (ROOT / "scripts" / "test").read_text()
