"""llama-swaps of a test's own, the emulator or the real binary, set up alike.

The fixture ``swaps`` (tests/conftest.py) is parametrized: ``emulator`` runs
``tests/llama_swap_emulator.py``, ``real`` the kit's llama-swap in front of the kit's
llama-server (``LLM_WARMTH_LLAMA_SWAP_BIN``, ``LLM_WARMTH_LLAMA_SERVER_BIN`` and
``LLM_WARMTH_MODELS_DIR`` from ``scripts/llm_servers env``; skipped without them, failed
in CI). A test names its models and peers once and runs against both.
"""

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
import os
from pathlib import Path
import socket
import time

import aiohttp

from .e2e import server_url
from .llama_swap_emulator import LlamaSwapEmulator, SwapModel, SwapPeer

# What the real llama-swap says when a model's process exits at once (recorded).
EXITED = "upstream command exited prematurely"


@dataclass(frozen=True)
class SwapSpec:
    """One model of a llama-swap's config: the kit's tiny model unless ``broken``."""

    name: str
    ttl: int = 0
    broken: bool = False


def free_port() -> int:
    """Return a loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Swaps:
    """Starts llama-swaps of one kind; ``close`` stops them all."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self._tmp = tmp_path
        self._emulators: dict[str, LlamaSwapEmulator] = {}
        self._processes: dict[str, tuple[list[str], asyncio.subprocess.Process]] = {}
        if kind == "real":
            binary = os.environ.get("LLM_WARMTH_LLAMA_SWAP_BIN")
            server = os.environ.get("LLM_WARMTH_LLAMA_SERVER_BIN")
            models = os.environ.get("LLM_WARMTH_MODELS_DIR")
            if not (binary and server and models):
                server_url("LLM_WARMTH_LLAMA_SWAP_BIN")  # skipped, or failed in CI
            assert binary is not None
            assert server is not None
            assert models is not None
            self._binary, self._server, self._models = binary, server, models

    async def start(
        self,
        models: Sequence[SwapSpec],
        peers: Mapping[str, tuple[str, Sequence[str]]] | None = None,
    ) -> str:
        """Start one with ``models`` and ``peers`` (id: (URL, its models)); return its URL."""
        if self.kind == "emulator":
            emulator = LlamaSwapEmulator(
                [
                    SwapModel(
                        spec.name,
                        load_seconds=0.1,
                        ttl=spec.ttl,
                        load_error=EXITED if spec.broken else None,
                    )
                    for spec in models
                ],
                peers={
                    peer: SwapPeer(url, tuple(names))
                    for peer, (url, names) in (peers or {}).items()
                },
            )
            url = await emulator.start()
            self._emulators[url] = emulator
            return url
        port = free_port()
        config = self._tmp / f"llama-swap-{port}.yaml"
        # Its models' llama-server output goes to its log too (llama-server's own times).
        lines = ["healthCheckTimeout: 15", "logToStdout: both", "models:"]
        for spec in models:
            file = "no-such-model.gguf" if spec.broken else "tiny.gguf"
            # A port of its own, free now: with startPort only the first model's port was
            # known free, and a second model's (startPort + 1) could be another test's
            # (a llama-server that cannot bind "exited prematurely", seen in CI).
            model_port = free_port()
            lines += [
                f"  {spec.name}:",
                f"    cmd: {self._server} -m {self._models}/{file} --host 127.0.0.1"
                f" --port {model_port} -c 512 -t 2",
                f"    proxy: http://127.0.0.1:{model_port}",
            ]
            if spec.ttl:
                lines.append(f"    ttl: {spec.ttl}")
        if peers:
            lines.append("peers:")
            for peer, (url, names) in peers.items():
                lines += [f"  {peer}:", f"    proxy: {url}", "    models:"]
                lines += [f"      - {name}" for name in names]
        config.write_text("\n".join(lines) + "\n")
        argv = [self._binary, "--config", str(config), "--listen", f"127.0.0.1:{port}"]
        url = f"http://127.0.0.1:{port}"
        self._processes[url] = (argv, await self._spawn(argv, port))
        await self._wait_up(url, port)
        return url

    async def _spawn(self, argv: list[str], port: int) -> asyncio.subprocess.Process:
        log = (self._tmp / f"llama-swap-{port}.log").open("ab")
        try:
            return await asyncio.create_subprocess_exec(*argv, stdout=log, stderr=log)
        finally:
            log.close()

    async def _wait_up(self, url: str, port: int) -> None:
        deadline = time.monotonic() + 10
        async with aiohttp.ClientSession() as session:
            while True:
                try:
                    async with session.get(f"{url}/running") as response:
                        if response.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                log = self._tmp / f"llama-swap-{port}.log"
                assert time.monotonic() < deadline, log.read_text()
                await asyncio.sleep(0.1)

    def log(self, url: str) -> str:
        """Return what a real one logged, its models' llama-server output included."""
        port = url.rsplit(":", 1)[1]
        return (self._tmp / f"llama-swap-{port}.log").read_text(errors="replace")

    async def stop(self, url: str) -> None:
        """Stop one (its models' processes with it) and leave its port closed."""
        if url in self._emulators:
            await self._emulators.pop(url).stop()
            return
        _, process = self._processes.pop(url)
        if process.returncode is None:
            process.terminate()
            await process.wait()

    async def down(self, url: str) -> None:
        """Stop serving (an outage): its models' processes stop, its port closes."""
        if url in self._emulators:
            await self._emulators[url].down()
            return
        _, process = self._processes[url]
        process.terminate()
        await process.wait()

    async def up(self, url: str) -> None:
        """Start again on the same port, with the same config, after ``down``."""
        if url in self._emulators:
            await self._emulators[url].start_serving()
            return
        argv, _ = self._processes[url]
        port = int(url.rsplit(":", 1)[1])
        self._processes[url] = (argv, await self._spawn(argv, port))
        await self._wait_up(url, port)

    async def restart(self, url: str) -> None:
        """Stop one and start it again on the same port (its models stopped)."""
        await self.down(url)
        await self.up(url)

    async def close(self) -> None:
        for url in [*self._emulators, *self._processes]:
            await self.stop(url)
