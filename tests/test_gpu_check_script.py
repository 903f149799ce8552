"""scripts/gpu_check: the table a user gets on a real NVIDIA box, and its exit codes."""

from pathlib import Path
import subprocess
import sys
from types import ModuleType

import pytest

from .fake_nvml import NVML_ERROR_DRIVER_NOT_LOADED, FakeNvml, skip_if_nvidia_driver_works, two_gpus
from .project_scripts import load_script as load_script_named

SCRIPT = Path(__file__).parent.parent / "scripts" / "gpu_check"


def load_script() -> ModuleType:
    return load_script_named("gpu_check")


async def test_prints_one_table_per_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    script = load_script()
    assert await script.check(["--reserve-gib", "10"], nvml=FakeNvml(two_gpus())) == 0
    out = capsys.readouterr().out
    assert "GPU 0  NVIDIA GeForce RTX 4090  GPU-5f2a1c3e" in out
    assert "GPU 1  NVIDIA GeForce RTX 3060" in out
    assert "headroom (free - 10 GiB)         -0.43 GiB" in out
    assert "headroom low                     true" in out
    assert "performance state                P2" in out
    assert "power                            182.5 W" in out
    assert "processes (3)" in out


async def test_lost_gpu_and_empty_host(capsys: pytest.CaptureFixture[str]) -> None:
    script = load_script()
    gpus = two_gpus()
    gpus[1].lost = True
    gpus[0].unsupported = {"processes", "pstate"}
    assert await script.check([], nvml=FakeNvml(gpus)) == 0
    out = capsys.readouterr().out
    assert "unavailable: GPU is lost" in out
    assert "processes                        - (not available)" in out
    assert await script.check([], nvml=FakeNvml([])) == 3
    assert "sees no GPU" in capsys.readouterr().out


async def test_unusable_nvml(capsys: pytest.CaptureFixture[str]) -> None:
    nvml = FakeNvml(two_gpus())
    nvml.init_error = NVML_ERROR_DRIVER_NOT_LOADED
    assert await load_script().check([], nvml=nvml) == 2
    assert "NVML unusable: NVML cannot be used: the NVIDIA driver is not loaded" in (
        capsys.readouterr().out
    )


def test_runs_without_home_assistant_and_without_a_driver() -> None:
    """As a user runs it: its own process, exit status 2 and one line on this GPU-less box."""
    skip_if_nvidia_driver_works()
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout.startswith("NVML unusable:")
    assert "Traceback" not in result.stderr


async def test_counts_the_servers_resident_models(emulator) -> None:  # type: ignore[no-untyped-def]
    import asyncio  # noqa: PLC0415

    from .conftest import LLAMA, ollama_request  # noqa: PLC0415

    script = load_script()
    assert await asyncio.to_thread(script._resident_vram, None) is None
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    assert await asyncio.to_thread(script._resident_vram, emulator.url) == 3 * 1024**3
