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
    # Nothing runs under a new prefix: no variable is printed.
    listed = subprocess.run([*kit, "env"], capture_output=True, text=True, env=env, check=False)
    assert (listed.returncode, listed.stdout) == (0, "")


def test_the_kit_installs_llama_swap_from_its_module_else_the_binary_named(
    tmp_path: Path,
) -> None:
    """`go install` first; where the module proxy refuses, LLAMA_SWAP_BIN, checked in words.

    A stand-in `go` answers as this workplace's module proxy does (no network is used).
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    go = bin_dir / "go"
    go.write_text(
        "#!/bin/sh\necho 'go: github.com/mostlygeek/llama-swap@0bdb372: reading"
        " https://proxy/...: 403 Forbidden' >&2\necho '\tserver response: This module"
        " version is not available.' >&2\nexit 1\n"
    )
    fake = tmp_path / "llama-swap"
    fake.write_text("#!/bin/sh\necho 'version: v999 (test), built at never'\n")
    for path in (go, fake):
        path.chmod(0o755)
    kit = [str(ROOT / "scripts" / "llm_servers"), "install", "llama_swap"]
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    missing = {**env, "PREFIX": str(tmp_path / "a"), "LLAMA_SWAP_BIN": str(tmp_path / "none")}
    refused = subprocess.run(kit, capture_output=True, text=True, env=missing, check=False)
    assert refused.returncode == 1
    assert f"LLAMA_SWAP_BIN={tmp_path / 'none'} is not an executable" in refused.stderr
    named = {**env, "PREFIX": str(tmp_path / "b"), "LLAMA_SWAP_BIN": str(fake)}
    installed = subprocess.run(kit, capture_output=True, text=True, env=named, check=False)
    assert installed.returncode == 0, installed.stderr
    assert (tmp_path / "b" / "llama-swap" / "VERSION").read_text().startswith("version: v999")
    assert (
        "This module version is not available"
        in (tmp_path / "b" / "llama-swap" / "go-install.log").read_text()
    )


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
