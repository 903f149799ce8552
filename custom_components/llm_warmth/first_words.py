"""A delegate's first sign of life in a turn: the first delta it writes to the chat log.

Inside an Assist pipeline the turn's chat log streams what the agent writes (its delta
listener feeds text-to-speech); the warm assistant waits for an agent's first words only
so long (``core.assistant_route.words_due_in``) before the next agent is asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from homeassistant.components import conversation
from homeassistant.components.conversation.chat_log import current_chat_log


@contextmanager
def first_words(heard: Callable[[], None]) -> Iterator[None]:
    """Call ``heard`` once, at the first delta a delegate writes into the turn's chat log.

    Inside an Assist pipeline the delegate writes into the pipeline's chat log, whose
    listener streams the reply: the first delta (a word, a tool call) is the agent's first
    sign of life. Elsewhere there is no chat log to watch, and the bound is on the reply.
    """
    chat_log = current_chat_log.get()
    if chat_log is None:
        yield
        return
    listener = chat_log.delta_listener
    said = False

    def delta(log: conversation.ChatLog, content: dict[str, object]) -> None:
        nonlocal said
        if not said:
            said = True
            heard()
        if listener is not None:
            listener(log, content)

    chat_log.delta_listener = delta
    try:
        yield
    finally:
        chat_log.delta_listener = listener
