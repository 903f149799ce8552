"""scripts/setup waits for Debian's package lock instead of failing at once (issue 32).

scripts/apt_lock.sh, which scripts/setup sources, runs here for real in bash, on lock files
of the test's own (LLM_WARMTH_DPKG_LOCKS) and with a stand-in apt-get first on PATH: no root
and no real apt. The lock is held as dpkg and apt hold theirs, with an fcntl write lock, by
a child process that calls itself 'unattended-upgr' (as unattended-upgrades shows in
/proc/PID/comm).
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import os
from pathlib import Path
import re
import subprocess
import sys

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    not Path("/proc/locks").exists(), reason="the holder is read from Linux's /proc/locks"
)

_HOLDER = r"""
import ctypes, fcntl, sys
ctypes.CDLL(None).prctl(15, b"unattended-upgr", 0, 0, 0)  # PR_SET_NAME
lock = open(sys.argv[1], "a")
fcntl.lockf(lock, fcntl.LOCK_EX)  # F_SETLKW, a write lock, as dpkg's and apt's
print("held", flush=True)
sys.stdin.read()  # until the test closes it
"""

_STILL_HELD = (
    "scripts/setup: Debian's package lock is still held by process {holder} after {wait} s;"
    " wait for it to finish (or stop it) and run scripts/setup again."
)


@contextlib.contextmanager
def _held(path: Path) -> Iterator[subprocess.Popen[str]]:
    """A process that holds an fcntl write lock on PATH until its standard input closes."""
    path.touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        _release(holder)


def _release(holder: subprocess.Popen[str]) -> None:
    if holder.stdin and not holder.stdin.closed:
        holder.stdin.close()
    try:
        holder.wait(timeout=30)
    except subprocess.TimeoutExpired:
        holder.kill()
        holder.wait()
    if holder.stdout:
        holder.stdout.close()


def _fake_apt_get(tmp_path: Path, body: str = "exit 0") -> Path:
    """A stand-in apt-get that logs its arguments, one call a line, then runs BODY."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "apt-get.log"
    script = bin_dir / "apt-get"
    script.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\n{body}\n')
    script.chmod(0o755)
    return log


def _env(tmp_path: Path, locks: list[Path], wait: int) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "LLM_WARMTH_DPKG_LOCKS": " ".join(str(lock) for lock in locks),
        "LLM_WARMTH_APT_LOCK_WAIT": str(wait),
    }


def _timeouts_and_args(log: Path) -> list[tuple[int, str]]:
    """Each call's DPkg::Lock::Timeout (the seconds left of the wait) and the rest."""
    calls = []
    for call in _calls(log):
        match = re.fullmatch(r"-o DPkg::Lock::Timeout=(\d+) (.*)", call)
        assert match, call
        calls.append((int(match[1]), match[2]))
    return calls


def _bash(step: str) -> list[str]:
    # As scripts/setup runs it: sourced, under set -euo pipefail.
    return ["bash", "-c", f"set -euo pipefail; . scripts/apt_lock.sh; {step}"]


def _calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_setup_runs_its_apt_steps_through_the_wait() -> None:
    setup = (ROOT / "scripts" / "setup").read_text()
    assert ". scripts/apt_lock.sh" in setup
    assert "LLM_WARMTH_APT_LOCK_WAIT" in setup  # documented in its header
    commands = [line.strip() for line in setup.splitlines() if not line.lstrip().startswith("#")]
    assert any(line.startswith("apt_get update") for line in commands)
    assert any("apt_get install" in line for line in commands)
    # apt-get itself is run nowhere else: only looked for, or named to the user.
    bare = [
        line
        for line in commands
        if "apt-get" in line.replace("command -v apt-get", "") and not line.startswith("echo")
    ]
    assert not bare
    subprocess.run(["bash", "-n", str(ROOT / "scripts" / "setup")], check=True)


def test_python314_runs_its_apt_steps_through_the_wait_too() -> None:
    """scripts/python314 (run by setup, or alone) installs its tools through apt_get as well."""
    script = (ROOT / "scripts" / "python314").read_text()
    assert '. "$(dirname "$0")/apt_lock.sh"' in script
    commands = [line.strip() for line in script.splitlines() if not line.lstrip().startswith("#")]
    assert any(line.startswith("apt_get update") for line in commands)
    assert any("apt_get install" in line for line in commands)
    bare = [
        line
        for line in commands
        if "apt-get" in line and not line.startswith(("log ", '[ "$(id -u)"'))
    ]
    assert not bare
    subprocess.run(["bash", "-n", str(ROOT / "scripts" / "python314")], check=True)


def test_with_no_lock_held_apt_runs_at_once_without_a_word(tmp_path: Path) -> None:
    log = _fake_apt_get(tmp_path)
    lock = tmp_path / "lock-frontend"
    lock.touch()
    done = subprocess.run(
        _bash("apt_get update -qq; apt_wait_for_lock; apt_lock_holder || echo none"),
        cwd=ROOT,
        env=_env(tmp_path, [tmp_path / "absent", lock], 30),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "waiting" not in done.stderr
    assert done.stderr == ""
    assert done.stdout == "none\n"
    [(left, args)] = _timeouts_and_args(log)
    assert 25 <= left <= 30  # the whole wait is left, for apt's own
    assert args == "update -qq"


def test_a_held_lock_is_waited_for_said_once_and_apt_runs_once_it_is_let_go(
    tmp_path: Path,
) -> None:
    log = _fake_apt_get(tmp_path)
    lock = tmp_path / "lock-frontend"
    with _held(lock) as holder:
        setup = subprocess.Popen(
            _bash("apt_get install -y chromium; echo apt done"),
            cwd=ROOT,
            env=_env(tmp_path, [tmp_path / "lists-lock", lock], 120),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert setup.stderr is not None
            first = setup.stderr.readline()
            assert first == (
                "scripts/setup: waiting up to 120 s for Debian's package lock, held by"
                f" process {holder.pid} (unattended-upgr)\n"
            )
            assert _calls(log) == []  # apt-get waits while the lock is held
            _release(holder)  # unattended-upgrades is done
            out, rest = setup.communicate(timeout=120)
        finally:
            if setup.poll() is None:
                setup.kill()
                setup.communicate()
    assert setup.returncode == 0, first + rest
    assert out == "apt done\n"
    assert "waiting" not in rest  # said once
    assert rest == ""
    # apt itself waits for what is left of the 120 s, should the lock be taken again.
    [(left, args)] = _timeouts_and_args(log)
    assert 0 < left <= 120
    assert args == "install -y chromium"


def test_a_lock_still_held_at_the_end_of_the_wait_stops_setup_with_one_sentence(
    tmp_path: Path,
) -> None:
    log = _fake_apt_get(tmp_path)
    lock = tmp_path / "archives-lock"
    with _held(lock) as holder:
        done = subprocess.run(
            _bash("apt_get update -qq; echo went on"),
            cwd=ROOT,
            env=_env(tmp_path, [tmp_path / "absent", lock], 1),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        waited = subprocess.run(
            _bash("apt_wait_for_lock"),
            cwd=ROOT,
            env=_env(tmp_path, [lock], 1),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    holder_said = f"{holder.pid} (unattended-upgr)"
    assert done.returncode == 1
    assert done.stdout == ""  # set -e: setup stops there
    assert _calls(log) == []
    sentence = _STILL_HELD.format(holder=holder_said, wait=1)
    print(sentence)
    assert done.stderr.splitlines() == [
        "scripts/setup: waiting up to 1 s for Debian's package lock, held by process"
        f" {holder_said}",
        sentence,
    ]
    assert waited.returncode == 1
    assert waited.stderr.splitlines()[-1] == sentence


def test_apt_refusing_a_lock_taken_after_the_look_is_waited_for_too(tmp_path: Path) -> None:
    """A lock taken between the look and apt-get: apt's own 'It is held by process' message."""
    refusal = (
        "echo 'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process"
        " 4242 (packagekitd)' >&2; exit 100"
    )
    lock = tmp_path / "lock"
    lock.touch()
    # Refused once, then let in.
    log = _fake_apt_get(
        tmp_path, f'[ "$(wc -l < "{tmp_path / "apt-get.log"}")" -gt 1 ] || {{ {refusal}; }}'
    )
    again = subprocess.run(
        _bash("apt_get update -qq"),
        cwd=ROOT,
        env=_env(tmp_path, [lock], 60),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert again.stderr == (
        "scripts/setup: waiting up to 60 s for Debian's package lock, held by process"
        " 4242 (packagekitd)\n"
    )
    assert len(_calls(log)) == 2
    # Refused throughout: the same one sentence as for a lock seen held, not apt's error.
    log.unlink()
    log = _fake_apt_get(tmp_path, refusal)
    refused = subprocess.run(
        _bash("apt_get update -qq"),
        cwd=ROOT,
        env=_env(tmp_path, [lock], 1),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 1
    assert "Could not get lock" not in refused.stderr
    assert refused.stderr.splitlines()[-1] == _STILL_HELD.format(
        holder="4242 (packagekitd)", wait=1
    )
    assert 1 <= len(_calls(log)) <= 5


def test_apt_failing_otherwise_says_its_own_error(tmp_path: Path) -> None:
    _fake_apt_get(tmp_path, "echo 'E: Unable to locate package chromium' >&2; exit 100")
    lock = tmp_path / "lock"
    lock.touch()
    failed = subprocess.run(
        _bash("apt_get install -y chromium"),
        cwd=ROOT,
        env=_env(tmp_path, [lock], 30),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert failed.returncode == 100
    assert failed.stderr == "E: Unable to locate package chromium\n"


def test_a_wait_that_is_no_number_is_refused_in_words(tmp_path: Path) -> None:
    log = _fake_apt_get(tmp_path)
    env = {**_env(tmp_path, [tmp_path / "lock"], 0), "LLM_WARMTH_APT_LOCK_WAIT": "5m"}
    refused = subprocess.run(
        _bash("apt_get update"), cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert refused.returncode == 2
    assert "LLM_WARMTH_APT_LOCK_WAIT=5m is not a whole number of seconds" in refused.stderr
    assert _calls(log) == []
