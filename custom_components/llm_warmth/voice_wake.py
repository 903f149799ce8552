"""What a satellite's wake starts: its run, and warming its agent's model for the turn.

Warm on wake: a load-only request with the agent's settings at the wake, then (for Home
Assistant's Ollama agent) its prompt prefix, each only where it helps the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
import time

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er

from .agents import Agent, AgentDirectory, agent_system_prompt
from .const import LOGGER
from .controller import ResidencyController
from .core.backends.base import GENERATION_TIMEOUT, LlmBackend
from .core.backends.errors import LlmServerError
from .core.monitor import ServerSnapshot
from .core.voice import wake_keep
from .core.voice_record import WakeCounts
from .core.wake_run import PrefixStep, WakeHolds, WakeRun
from .own_requests import OwnRequests
from .probe_prompts import AGENT_WARM_UP_PROMPT, probe_options
from .warm_assistant import assistant_primary


@dataclass(frozen=True, slots=True)
class VoicePipeline:
    """An Assist pipeline whose conversation agent uses a model of this server.

    ``agent``: Home Assistant's Ollama agent, whose requests LLM Warmth knows how to ask
    like (its context, keep, think, system prompt); None for an OpenAI-compatible agent
    of another integration, whose model is known but not how it asks.
    """

    id: str
    name: str
    model: str
    agent: Agent | None
    # The pipeline's agent when it is a warm assistant (whose primary agent is ``agent``):
    # its turns say which agent answered.
    assistant: str | None = None


def pipelines_of(hass: HomeAssistant, agents: AgentDirectory) -> dict[str, VoicePipeline]:
    """Return the Assist pipelines whose agent uses a model of ``agents``' server, by id.

    A warm assistant's pipeline is its primary agent's: its model is the one to warm.
    """
    from homeassistant.components.assist_pipeline import (  # noqa: PLC0415
        async_get_pipelines,
    )

    registry = er.async_get(hass)
    found: dict[str, VoicePipeline] = {}
    for pipeline in async_get_pipelines(hass):
        entity = registry.async_get(pipeline.conversation_engine or "")
        assistant = None
        if entity is not None and (primary := assistant_primary(hass, entity)):
            assistant, entity = entity.entity_id, registry.async_get(primary)
        if entity is None:
            continue  # Home Assistant's own agent, or one without an entity
        if used := agents.agent_of_entity(entity.config_entry_id, entity.config_subentry_id):
            found[pipeline.id] = VoicePipeline(pipeline.id, pipeline.name, *used, assistant)
    return found


class WakeWarmer:
    """Warms the model of a pipeline's agent at a wake, for one server."""

    def __init__(
        self,
        hass: HomeAssistant,
        title: str,
        client: LlmBackend,
        *,
        controller: ResidencyController,
        own_requests: OwnRequests,
        counts: Callable[[str], WakeCounts],
        changed: Callable[[], None],
        snapshot: Callable[[], ServerSnapshot],
    ) -> None:
        """Load through ``controller``, warm prompts as ``own_requests``; count in ``counts``."""
        self._hass = hass
        self._title = title
        self._client = client
        self._controller = controller
        self._own = own_requests
        self._counts = counts
        self._changed = changed
        self._snapshot = snapshot
        # Per satellite: its prompt warm-up's request while it runs (cancelled when the
        # agent starts: the agent's own request never queues behind it).
        self._prefix_requests: dict[str, asyncio.Task[float]] = {}
        # Per model: the prompt the server's cache holds, and false wakes' loads held.
        self.holds = WakeHolds()

    def wasted_wake(self, run: WakeRun, snapshot: ServerSnapshot) -> None:
        """Count a wake no command followed whose load holds the model, and follow the hold."""
        self._counts(run.pipeline_id).wasted += 1
        if (hold := run.wasted_hold(snapshot)) is not None:
            self.holds.wasted[run.model] = hold
        self._changed()

    def close_wasted(self, model: str) -> None:
        """Add the GiB-seconds a false wake's load held ``model`` until now."""
        if (held := self.holds.wasted.pop(model, None)) is None:
            return
        self._counts(held.pipeline_id).wasted_gib_seconds += held.gib_seconds(time.monotonic())
        self._changed()

    async def warm(self, run: WakeRun, agent: Agent | None, *, cold: bool) -> None:
        """Make the model ready for the agent: load it, then warm its prompt prefix.

        The load is a load-only request with the agent's settings (its ``num_ctx`` and
        ``keep_alive``): it holds no slot, so the turn's own request waits for nothing but
        the load it would have waited for anyway; it is never aborted when the turn comes.
        """
        if cold:
            try:
                done = await self._controller.preload(
                    run.model,
                    keep_seconds=self._keep(agent),
                    num_ctx=agent.num_ctx if agent else None,
                    timeout=GENERATION_TIMEOUT,
                )
            except (LlmServerError, HomeAssistantError) as err:
                LOGGER.debug("%s: warming %s on wake failed: %s", self._title, run.model, err)
                run.load_started = None
                return
            run.load_done(time.monotonic(), done.seconds)
            if run.ended:  # the run ended with no command before its load did
                self.wasted_wake(run, self._snapshot())
                return
        if agent is not None:
            await self._warm_prefix(run, agent)

    def _keep(self, agent: Agent | None) -> float | None:
        """Return the keep a load at the wake asks for: short, until the agent's own asks.

        Home Assistant's Ollama agent sends its keep with every request (last writer
        wins), so the turn's own keep applies once a command reaches it; until then, and
        after a false wake, the model is held ``WAKE_KEEP`` (or the agent's keep, when
        shorter: ``core.voice.wake_keep``). An agent that sends no keep
        (OpenAI-compatible) keeps the server's own, and so does a server whose requests
        set no keep.
        """
        if agent is None or not self._client.capabilities.requests_set_keep_and_context:
            return None
        return wake_keep(agent.keep_alive)

    async def _warm_prefix(self, run: WakeRun, agent: Agent) -> None:
        """Send the agent's system prompt with one short turn, where it ends in time.

        The server's prompt cache then holds the prefix of the agent's next request (the
        instructions, the exposed entities, the satellite's area), so the agent's turn
        reads only the rest of its prompt. It asks for one token, with the agent's
        ``num_ctx`` and ``think`` and no ``keep_alive`` (the model keeps the agent's). On a
        server with one slot, a turn that comes while it runs waits for the rest of it:
        it is sent only when it is expected to end first (``prefix_warm_fits``). Only for
        Home Assistant's Ollama agent: another agent's prompt is not known.
        """
        counts = self._counts(run.pipeline_id)
        step = run.prefix_step(self.holds, counts, time.monotonic())
        if step is not PrefixStep.SEND:
            if step is not PrefixStep.ASKED:
                self._changed()
            return
        # One warm-up per model at a time, from here (the prompt is read with an await).
        self.holds.prefix_running.add(run.model)
        try:
            await self._send_prefix(run, agent, counts)
        finally:
            self.holds.prefix_running.discard(run.model)

    async def _send_prefix(self, run: WakeRun, agent: Agent, counts: WakeCounts) -> None:
        """Render the agent's system prompt and send it with one short turn; time it."""
        satellite = er.async_get(self._hass).async_get(run.satellite)
        try:
            system = await agent_system_prompt(
                self._hass, agent, satellite.device_id if satellite else None
            )
        except HomeAssistantError as err:  # the agent's prompt template does not render
            LOGGER.debug("%s: the agent's prompt for a warm-up: %s", self._title, err)
            return
        if run.agent_started:
            return  # the agent asked meanwhile
        options = probe_options(agent.num_ctx, {"num_predict": 1})

        async def warm_up() -> None:
            await self._client.timed_generation(
                "chat",
                run.model,
                AGENT_WARM_UP_PROMPT,
                options=options,
                timeout=GENERATION_TIMEOUT,
                system=system,
                think=agent.think,
            )

        run.prefix_sent(time.monotonic(), counts)
        request = asyncio.create_task(self._own.async_load(run.model, warm_up, was_resident=True))
        self._prefix_requests[run.satellite] = request
        try:
            await request
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the entry unloads
            LOGGER.debug(
                "%s: %s's agent started: its prompt warm-up let go", self._title, run.model
            )
            run.prefix_let_go(time.monotonic(), counts)
            self._changed()
            return
        except (LlmServerError, HomeAssistantError) as err:
            LOGGER.debug("%s: warming %s's prompt failed: %s", self._title, run.model, err)
            return
        finally:
            run.prefix_ended = time.monotonic()
            if self._prefix_requests.get(run.satellite) is request:
                del self._prefix_requests[run.satellite]
        run.prefix_warmed(self.holds, counts)
        self._changed()

    def agent_started(self, satellite: str) -> None:
        """Let a prompt warm-up still running go: the agent's request must not wait for it.

        The model is loaded (the warm-up is a prompt, never a load), so closing its request
        costs the server nothing but the prefill it had begun.
        """
        if (request := self._prefix_requests.pop(satellite, None)) is not None:
            request.cancel()
