"""The fixed prompts of probes and diagnoses: the same text, so that runs compare."""

from collections.abc import Mapping
from typing import Final

DEFAULT_PROMPT: Final = "Reply with one word: ready?"
# About 1,200 tokens of ordinary prose: a prefill long enough to measure.
LONG_PROMPT: Final = " ".join(
    [
        "Summarise the following notes about the house in one sentence.",
        *(
            f"Note {i}: the heating in room {i % 7} was set to {18 + i % 5} degrees at "
            f"{6 + i % 12} o'clock, the lights stayed off, and the windows were closed."
            for i in range(48)
        ),
    ]
)
# The warm-up of a comparison: a prompt that shares nothing with the ones compared after it
# but the chat template, so that the server's prompt cache helps neither of them (a short
# run that repeated the warm-up's prompt was served from the cache: its prefill near 0
# overstated what a prompt token costs by about 15 % on the real Ollama 0.9.3).
WARM_UP_PROMPT: Final = "Count from one to three."
# The turn of a preload's warm-up and of a warm-up at a satellite's wake, after the agent's
# system prompt: the server's prompt cache keeps that prefix for the agent's next turn.
AGENT_WARM_UP_PROMPT: Final = "Hello."
# A probe asks for a few tokens only: enough for a decode rate, quick to finish.
DEFAULT_NUM_PREDICT: Final = 16


def probe_options(
    num_ctx: int | None, given: Mapping[str, object] | None = None
) -> dict[str, object]:
    """Return a probe's options: a few tokens, ``given``, and the context to ask with.

    ``num_ctx``: the one the model's agent asks with (Ollama), so that the probe does not
    reload the model for a context of its own; None: the server's.
    """
    options: dict[str, object] = {"num_predict": DEFAULT_NUM_PREDICT, **(given or {})}
    if num_ctx is not None:
        options["num_ctx"] = num_ctx
    return options
