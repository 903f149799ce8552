"""The fixed prompts of probes and diagnoses: the same text, so that runs compare."""

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
# A probe asks for a few tokens only: enough for a decode rate, quick to finish.
DEFAULT_NUM_PREDICT: Final = 16
