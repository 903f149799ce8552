"""The world a benchmark ran in, printed next to its figures, and its goals' verdicts.

``Machine`` notes the machine at a benchmark's start (CPUs, load average, every process's
CPU time, the machine's CPU time) and tells, at its end, the load average again and the
CPU the machine spent meanwhile: this benchmark's own (with its children), the server
under test's (where one is named), and the rest, with the busiest other processes by
name: the concurrent load a figure was measured under.

``verdict(met)`` is the word printed after a figure's goal. ``run_in_pytest`` runs a
benchmark's turns in the test Home Assistant and returns what they wrote.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
import json
import os
from pathlib import Path
import resource
from statistics import median
import subprocess
import sys
import tempfile
from typing import Any

TICKS = os.sysconf("SC_CLK_TCK")


def verdict(met: bool) -> str:
    """Return 'met' or 'NOT met'."""
    return "met" if met else "NOT met"


def _machine_cpu_seconds() -> tuple[float, float]:
    """Return the machine's busy and total CPU seconds since boot (all CPUs)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already in user
    return (total - idle) / TICKS, total / TICKS


def _processes() -> dict[tuple[int, int], tuple[str, float, int]]:
    """Return {(pid, start tick): (name, CPU seconds, parent pid)} of every process."""
    seen: dict[tuple[int, int], tuple[str, float, int]] = {}
    for key, (name, cpu, parent, _) in _processes_waited().items():
        seen[key] = (name, cpu, parent)
    return seen


def _processes_waited() -> dict[tuple[int, int], tuple[str, float, int, float]]:
    """Return {(pid, start tick): (name, CPU s, parent pid, its ended children's CPU s)}."""
    seen: dict[tuple[int, int], tuple[str, float, int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            text = (entry / "stat").read_text()
            name = text[text.index("(") + 1 : text.rindex(")")]
            rest = text[text.rindex(")") + 2 :].split()
            # After the name: state ppid ... utime(12) stime(13) ... starttime(20)
            cpu = (int(rest[11]) + int(rest[12])) / TICKS
            waited = (int(rest[13]) + int(rest[14])) / TICKS
            seen[int(entry.name), int(rest[19])] = (name, cpu, int(rest[1]), waited)
    return seen


def _descendants(root: int, processes: dict[tuple[int, int], tuple[Any, ...]]) -> set[int]:
    """Return ``root`` and the pids of its descendants among ``processes``."""
    children: dict[int, list[int]] = {}
    for (pid, _), (_, _, parent, *_) in processes.items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def _own_cpu_seconds() -> float:
    """Return this process's CPU seconds and its waited-for children's."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _command(pid: int, width: int = 60) -> str:
    """Return a process's command line, its program without its folder, cut to ``width``."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    words = [a.decode(errors="replace") for a in argv if a]
    if not words:
        return ""
    words[0] = words[0].rsplit("/", 1)[-1]
    text = " ".join(words)
    return text if len(text) <= width else text[: width - 3] + "..."


def listening_pid(port: int) -> int | None:
    """Return the pid of the process listening on TCP ``port`` (loopback or any), if seen."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                parts = line.split()
                if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(parts[9])
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    return int(entry.name)
    return None


def read_throttle(pid: int) -> str:
    """Return the disk read limit of ``pid``'s block-I/O cgroup, or 'none seen'."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, controllers, group = line.split(":", 2)
            if controllers == "blkio" and group != "/":
                limits = Path(f"/sys/fs/cgroup/blkio{group}/blkio.throttle.read_bps_device")
                rates = [int(r.split()[1]) for r in limits.read_text().split("\n") if r.strip()]
                if rates:
                    return f"{min(rates) / 1024**2:g} MiB/s read (blkio cgroup {group})"
            if controllers == "" and group != "/":
                limits = Path(f"/sys/fs/cgroup/unified{group}/io.max")
                if not limits.exists():
                    limits = Path(f"/sys/fs/cgroup{group}/io.max")
                for field in limits.read_text().split():
                    if field.startswith("rbps=") and field != "rbps=max":
                        return f"{int(field[5:]) / 1024**2:g} MiB/s read (cgroup {group})"
    return "none seen"


@dataclass
class Machine:
    """The machine at a benchmark's start, and what it spent until ``end()``."""

    server_pid: int | None = None  # the server under test, counted on its own

    def __post_init__(self) -> None:
        self.cpus = os.cpu_count() or 1
        self.load_start = os.getloadavg()
        self.busy_start, self.total_start = _machine_cpu_seconds()
        self.own_start = _own_cpu_seconds()
        self.processes_start = _processes_waited()

    def _server_cpu(self, processes: dict[tuple[int, int], tuple[Any, ...]]) -> float:
        """Return the CPU seconds the server and its children (its runners) spent meanwhile.

        A runner that exited meanwhile is in the server's waited-for children's time, with
        what it had spent before the start, which is taken off.
        """
        if not self.server_pid:
            return 0.0
        before = self.processes_start
        start_tree = _descendants(self.server_pid, before)
        end_tree = _descendants(self.server_pid, processes)
        spent = 0.0
        for key, (_, cpu, _, waited) in processes.items():
            if key[0] not in end_tree:
                continue
            old = before.get(key)
            spent += cpu - (old[1] if old else 0.0)
            if key[0] == self.server_pid:
                spent += waited - (old[3] if old else 0.0)
        for key, (_, cpu, _, waited) in before.items():
            if key[0] in start_tree and key[0] != self.server_pid and key not in processes:
                spent -= cpu + waited  # counted again in the server's waited-for time
        return max(0.0, spent)

    @staticmethod
    def _load(load: tuple[float, float, float]) -> str:
        return " ".join(f"{value:.2f}" for value in load)

    def start_line(self) -> str:
        """Return the machine at the start: CPUs and load average (1, 5, 15 min)."""
        return (
            f"machine: {self.cpus} CPUs (os.cpu_count()), load average "
            f"{self._load(self.load_start)} (1, 5, 15 min) at the start"
        )

    def end_lines(self) -> list[str]:
        """Return the machine at the end and the CPU spent meanwhile, by whom."""
        load_end = os.getloadavg()
        busy_end, total_end = _machine_cpu_seconds()
        processes = _processes_waited()
        elapsed = (total_end - self.total_start) / self.cpus
        busy = busy_end - self.busy_start
        own = _own_cpu_seconds() - self.own_start
        ours = _descendants(os.getpid(), processes)
        served = _descendants(self.server_pid, processes) if self.server_pid else set()
        server = self._server_cpu(processes)
        others: dict[str, float] = {}
        for key, (name, cpu, *_) in processes.items():
            spent = cpu - self.processes_start.get(key, (name, 0.0))[1]
            if key[0] in ours or key[0] in served or spent <= 0:
                continue
            label = _command(key[0]) or name
            others[label] = others.get(label, 0.0) + spent
        # What ended meanwhile and was not ours (its time is in the machine's total only).
        rest = max(0.0, busy - own - server)
        busiest = sorted(others.items(), key=lambda item: -item[1])[:4]
        named = "; ".join(
            f"{label} {seconds:.0f} CPU-s" for label, seconds in busiest if seconds >= 1
        )
        share = 100 * busy / (elapsed * self.cpus) if elapsed else 0.0
        lines = [
            f"machine: load average {self._load(load_end)} at the end; over {elapsed:.1f} s "
            f"the CPUs were {share:.0f} % busy: this benchmark {own:.1f} CPU-s"
            + (f", the server under test {server:.1f} CPU-s" if self.server_pid else "")
            + f", everything else {rest:.1f} CPU-s (of {elapsed * self.cpus:.1f})"
        ]
        if named:
            lines.append(f"machine: busiest other processes (still running): {named}")
        return lines


def run_in_pytest(
    module: str, settings: dict[str, str], keep: Path | None = None
) -> dict[str, Any]:
    """Run ``module`` (a ``tests/bench_*.py``) in pytest and return the JSON it wrote.

    ``settings``: its ``LLM_WARMTH_BENCH_*`` variables; ``keep``: also write the result
    there. What pytest said is printed, and the benchmark ends, when it did not run.
    """
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "turns.json"
        env = {**os.environ, **settings, "LLM_WARMTH_BENCH_OUT": str(out)}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += ["-o", "addopts=", "--timeout=0", module]
        done = subprocess.run(
            command, check=False, cwd=root, env=env, capture_output=True, text=True
        )
        if done.returncode != 0 or not out.exists():
            print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
            raise SystemExit(f"{module} did not run (above: what pytest said)")
        result: dict[str, Any] = json.loads(out.read_text())
        if keep:
            keep.write_text(json.dumps(result, indent=1))
        return result


LABEL = 46  # the width of a figure's label in a benchmark's table


def spread(values: list[float], unit: str = "s", *, signed: bool = False) -> str:
    """Return 'median (min to max)' of ``values``."""
    if not values:
        return "no figure"
    form = ("+" if signed else "") + (".0f" if unit == "%" else ".2f")

    def number(value: float) -> str:
        text = f"{value:{form}}"
        return f"{0.0:{form}}" if float(text) == 0 else text  # no "-0"

    low, high = min(values), max(values)
    return f"{number(median(values))} ({number(low)} to {number(high)}) {unit}"


def row(label: str, figure: str, goal: str = "", met: bool | None = None) -> str:
    """Return one line: the figure, its goal and whether it was met."""
    tail = f"goal: {goal}" if goal else ""
    if met is not None:
        tail += f" -> {verdict(met)}"
    return f"  {label:{LABEL}} {figure:>28}   {tail}".rstrip()
