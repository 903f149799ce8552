"""Run the demo: ``scripts/demo [--port 8123] [--server URL]``; Ctrl+C stops it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from datetime import datetime
from functools import partial
import os
from pathlib import Path
import signal
import sys
import webbrowser

import aiohttp

from tests.ollama_emulator import OllamaEmulator

from . import home_assistant as ha, household_actors as actors
from .household import ASSISTANT, CHAT, NAS_MODEL, GpuExporter, Household, gpu_box, morning, nas_box


def say(line: str) -> None:
    """Print one line of the demo's own (Home Assistant's log goes to a file)."""
    print(line, flush=True)


async def run(args: argparse.Namespace) -> int:
    """Start everything, play the morning, stay up until stopped (Ctrl+C, also while starting)."""
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopped.set)
    state: Path = args.state_dir
    log = state / "home-assistant.log"
    url = f"http://127.0.0.1:{args.port}"
    ha.write_config(state, args.port)
    server, exporter = (None, None) if args.server else await _start_gpu_box()
    nas = None if args.server else await _start_nas()
    server_url = server.url if server else args.server
    exporter_url = exporter.url if exporter else None
    say(f"Starting Home Assistant on {url} (its log: {log}); the first start takes a while")
    process = await ha.start(state / "config", log)
    household: asyncio.Task[None] | None = None
    try:
        async with aiohttp.ClientSession() as http:
            setup = asyncio.create_task(
                _set_up(http, url, process, server_url, exporter_url, nas=nas)
            )
            waiting = asyncio.create_task(stopped.wait())
            await asyncio.wait({setup, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if not setup.done():  # stopped while starting
                setup.cancel()
                return _stopped()
            waiting.cancel()
            if setup.exception() is not None:
                say(f"The demo could not start: {setup.exception()}; see {log}")
                return 1
            session, entry_id, path, routine = setup.result()
            say(f"Sign in as '{ha.USERNAME}' with password '{ha.PASSWORD}'")
            say(f"Dashboard: {url}{path}")
            say("ready (Ctrl+C stops the demo)")
            if os.environ.get("DISPLAY") and not args.no_browser:
                webbrowser.open(f"{url}{path}")
            if server is not None and routine is not None:
                household = asyncio.create_task(
                    morning(server, _household(session, entry_id), say, routine=routine)
                )
            ended = asyncio.create_task(process.wait())
            waiting = asyncio.create_task(stopped.wait())
            await asyncio.wait({ended, waiting}, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            if ended.done():
                say(f"Home Assistant exited ({process.returncode}); see {log}")
                return 1
    finally:
        await _stop(process, server, household)
        if exporter is not None:
            await exporter.stop()
        if nas is not None:
            await nas.stop()
    return _stopped()


async def _start_gpu_box() -> tuple[OllamaEmulator, GpuExporter]:
    """Start the emulated GPU box: its Ollama, its GPU's exporter."""
    server = gpu_box()
    await server.start()
    exporter = GpuExporter(server)
    await exporter.start()
    say(f"Emulated Ollama (8 GiB GPU; {', '.join(sorted(server.models))}) on {server.url}")
    say(f"Its GPU, as nvidia_gpu_exporter shows it, on {exporter.url}")
    return server, exporter


async def _start_nas() -> OllamaEmulator:
    """Start the household's NAS (another host) with its small model already loaded."""
    nas = nas_box()
    await nas.start()
    async with aiohttp.ClientSession() as http:
        load = {"model": NAS_MODEL, "keep_alive": -1}
        async with http.post(f"{nas.url}/api/generate", json=load) as answer:
            answer.raise_for_status()
    say(f"Emulated NAS (another host: Ollama, 4 GiB GPU; {NAS_MODEL} kept loaded) on {nas.url}")
    return nas


def _household(session: ha.Session, entry_id: str) -> Household:
    """Return what the scripted household does, through the demo's Home Assistant."""

    async def probe(model: str) -> str:
        return await ha.probe(session, entry_id, model)

    async def speak(text: str) -> str:
        return await actors.voice_turn(session, text)

    return Household(
        probe=probe,
        speak=speak,
        refresh_dashboard=partial(ha.save_dashboard, session),
        warm_on_wake=partial(actors.warm_on_wake, session),
    )


def _stopped() -> int:
    say("Demo stopped")
    return 0


async def _set_up(
    http: aiohttp.ClientSession,
    url: str,
    process: asyncio.subprocess.Process,
    server_url: str,
    exporter_url: str | None,
    *,
    nas: OllamaEmulator | None = None,
) -> tuple[ha.Session, str, str, datetime | None]:
    """Wait for Home Assistant, create the owner, add the server, save the dashboard.

    On the emulated GPU box (its GPU read from the exporter at ``exporter_url``) the
    household too: its voice (a satellite, an agent on the assistant model, a pipeline),
    its NAS (a second server, whose warm small model the warm assistant answers from while
    the assistant model loads) and its past (three weeks of uses); then its routine's next
    time is returned.
    """
    await ha.wait_until_up(http, url, process)
    session = await ha.onboard(http, url)
    emulated = exporter_url is not None
    entry_id = await ha.add_server(
        session, server_url, ASSISTANT if emulated else None, exporter_url
    )
    routine = None
    if emulated:
        pipeline = await actors.add_household(session, server_url, ASSISTANT)
        if nas is not None:
            await ha.add_server(session, nas.url, None)
            await actors.add_warm_assistant(session, entry_id, nas.url, NAS_MODEL, pipeline)
        routine = await actors.learn_household(session, entry_id, ASSISTANT, CHAT)
    return session, entry_id, await ha.add_dashboard(session), routine


async def _stop(
    process: asyncio.subprocess.Process,
    server: OllamaEmulator | None,
    household: asyncio.Task[None] | None,
) -> None:
    """Stop the morning, Home Assistant (it saves its state) and the emulated server."""
    if household is not None:
        if household.done() and not household.cancelled() and household.exception():
            say(f"The scripted morning stopped early: {household.exception()!r}")
        household.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await household
    if process.returncode is None:
        process.terminate()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(60):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
    if server is not None:
        await server.stop()


def main() -> int:
    """Parse the arguments and run the demo."""
    parser = argparse.ArgumentParser(prog="scripts/demo", description=__doc__)
    parser.add_argument("--port", type=int, default=8123, help="Home Assistant's port")
    parser.add_argument(
        "--server", help="a real server's URL (Ollama, llama-server, llama-swap) instead"
    )
    parser.add_argument("--state-dir", default=".demo", help="where the demo keeps its files")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    args = parser.parse_args()
    args.state_dir = Path(args.state_dir).resolve()
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
