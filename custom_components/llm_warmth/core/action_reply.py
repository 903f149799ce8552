"""What the actions answer: their figures and the sentences of their summary (pure).

``probe``, ``evict``, ``preload`` (and its warm-up), ``pin`` and ``unpin`` each answer a
dict of JSON values with a ``summary``: core decides the figures and which sentences the
summary says, the shell renders the sentences in the household's words and puts them at
their place (``Reply.answer``).
"""

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .backends.base import KeepAlive
from .json_value import JsonValue
from .monitor import ProbeResult
from .pins import REASSERT_COST, Pin
from .residency_control import Preloaded, Unpinned
from .sentence import Number, Sentence
from .summary import summary
from .ttft import StageBreakdown

# What a warm-up's next turn shows: how much of its prompt the server's cache kept.
NEXT_TURN_FIELDS = ("prompt_cache_reuse", "prefill_ms", "ttft_ms")


@dataclass(frozen=True, slots=True)
class Reply:
    """An action's answer: the fields before its ``summary``, the sentences, the fields after."""

    said: tuple[Sentence, ...]
    before: Mapping[str, JsonValue] = field(default_factory=dict)
    after: Mapping[str, JsonValue] = field(default_factory=dict)

    def answer(self, words: str) -> dict[str, JsonValue]:
        """Return the answer with ``words`` (the sentences rendered) as its summary."""
        return {**self.before, "summary": words, **self.after}


def pushed_out(done: Preloaded) -> list[Sentence]:
    """Say what a load made room for, if anything."""
    if not done.pushed_out:
        return []
    return [Sentence("pushed_out", {"models": ", ".join(done.pushed_out)})]


def evict_reply(
    asked: Sequence[str] | None, unloaded: Sequence[str], pinned: Collection[str]
) -> Reply:
    """Say what an eviction unloaded, which pins went with it, what was not resident.

    ``asked``: the models the call named (None: all the server held); ``pinned``: the
    models pinned before it. An evicted pin goes with its model (it would load it again at
    the next poll).
    """
    not_resident = [model for model in asked or [] if model not in unloaded]
    unpinned = [model for model in unloaded if model in pinned]
    said = [Sentence("evict_unloaded", {"models": ", ".join(unloaded)})] if unloaded else []
    if unpinned:
        said.append(Sentence("evict_unpinned", {"models": ", ".join(unpinned)}))
    if not_resident:
        said.append(Sentence("evict_not_resident", {"models": ", ".join(not_resident)}))
    return Reply(
        tuple(said or [Sentence("evict_nothing")]),
        before={
            "unloaded": list[JsonValue](unloaded),
            "unpinned": list[JsonValue](unpinned),
            "not_resident": list[JsonValue](not_resident),
        },
    )


def preload_reply(
    done: Preloaded,
    *,
    num_ctx: int | None,
    agent: str | None,
    warm_up: Mapping[str, JsonValue] | None,
) -> Reply:
    """Say whether a preload found the model resident or loaded it, and in how long."""
    model = done.model
    return Reply(
        (
            Sentence("preload_already_resident", {"model": model})
            if done.already_resident or done.seconds is None
            else Sentence("preload_loaded", {"model": model, "seconds": Number(done.seconds, 1)}),
            *pushed_out(done),
        ),
        before={
            "model": model,
            "already_resident": done.already_resident,
            "load_seconds": done.seconds,
            "pushed_out": list[JsonValue](done.pushed_out),
            "num_ctx": num_ctx,
            "agent": agent,
            "warm_up": None if warm_up is None else dict(warm_up),
        },
    )


def warm_up_wanted(*, warm_up: bool, prompt: str | None, system_prompt: str | None) -> bool:
    """Return True when a preload asks for a warm-up (or gives its prompts)."""
    return warm_up or prompt is not None or system_prompt is not None


def next_turn(sample: StageBreakdown) -> dict[str, JsonValue]:
    """Return what the turn after a warm-up shows: what the prompt cache kept, its timings."""
    shown = sample.as_response()
    return {key: shown[key] for key in NEXT_TURN_FIELDS}


def warm_up_reply(
    probe: ProbeResult, *, system_prompt_from: str | None, next_turn: JsonValue
) -> Reply:
    """Say how a warm-up's request went: whose system prompt, its stages, the next turn.

    ``system_prompt_from``: "call", the agent's name, or None (no system prompt).
    """
    return Reply(
        (summary(probe.sample, probe.verdict),),
        before={"system_prompt_from": system_prompt_from},
        after={**probe.sample.as_response(), "next_turn": next_turn},
    )


def pin_reply(
    pin: Pin,
    done: Preloaded,
    *,
    agent: str | None,
    keep_alive: KeepAlive,
    until_words: str | None,
    until_stamp: str | None,
) -> Reply:
    """Say until when a model is pinned and what asserting it again costs.

    ``until_words``: the pin's end as a household reads it (in the sentence);
    ``until_stamp``: as an answer's time (ISO 8601 in the household's zone); None for a
    pin until unpinned. ``keep_alive``: how the server keeps a model by itself.
    """
    model = pin.model
    said = (
        Sentence("pin_until", {"model": model, "until": until_words})
        if until_words is not None
        else Sentence("pin_until_unpinned", {"model": model})
    )
    return Reply(
        (said, *pushed_out(done)),
        before={
            "model": model,
            "already_resident": done.already_resident,
            "load_seconds": done.seconds,
            "pushed_out": list[JsonValue](done.pushed_out),
            "until": until_stamp,
            "priority": pin.priority,
            "num_ctx": pin.num_ctx,
            "agent": agent,
            "reassert_cost": REASSERT_COST[keep_alive],
        },
    )


def unpin_reply(model: str, pin: Pin | None, residency: Unpinned) -> Reply:
    """Say whether the model was pinned, and what became of it."""
    return Reply(
        (
            Sentence("unpinned" if pin else "not_pinned", {"model": model}),
            Sentence(f"unpin_{residency.value}"),
        ),
        before={"model": model, "was_pinned": pin is not None, "residency": residency.value},
    )


def probe_reply(model: str, probe: ProbeResult, *, num_ctx: JsonValue, agent: str | None) -> Reply:
    """Say how a probe went: the verdict first, then the raw figures.

    ``num_ctx``: the context the probe's options asked for (None: the server's).
    """
    return Reply(
        (summary(probe.sample, probe.verdict),),
        after={
            "model": model,
            "classification": probe.verdict.classification.value,
            "dominant_stage": probe.verdict.dominant_stage.value,
            "num_ctx": num_ctx,
            "agent": agent,
            **probe.sample.as_response(),
        },
    )


def dashboard_hours(hours: float) -> float:
    """Return a dashboard's span as a person writes it: whole hours as such (6, not 6.0)."""
    return int(hours) if hours.is_integer() else hours


def offered_models(installed: Iterable[Iterable[str]]) -> list[str]:
    """Return the models the servers have installed (each server's names), once, sorted."""
    return sorted({model for models in installed for model in models})


def model_selector(models: Sequence[str]) -> dict[str, JsonValue]:
    """Return the model field's selector: the ``models`` offered, free to type another."""
    return {
        "select": {"options": list[JsonValue](models), "custom_value": True, "mode": "dropdown"}
    }
