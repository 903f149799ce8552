"""Which models and GPUs get entities, read from what the server and the registry say (pure).

An entity's unique id is ``<entry id>[_<subject>]_<key>`` (a subject is a model, or
``gpu_<uuid>``). A model's entities are made once, when it first shows up (and what asks
for them holds), and forgotten once it is gone, so that a model that comes back gets fresh
ones; a model whose entities are registered from an earlier run gets them again at once.
"""

from collections.abc import Collection, Iterable


def models_of_unique_ids(
    unique_ids: Iterable[str], entry_id: str, keys: Collection[str]
) -> set[str]:
    """Return the models whose entity of one of ``keys`` has one of these unique ids.

    ``unique_ids``: the entry's own entities'. The server's own entities and entities of
    other keys name none.
    """
    prefix = f"{entry_id}_"
    models: set[str] = set()
    for unique_id in unique_ids:
        rest = unique_id.removeprefix(prefix)
        models.update(rest.removesuffix(f"_{key}") for key in keys if rest.endswith(f"_{key}"))
    return models


class ModelsSeen:
    """The models whose entities were made, to make each model's once."""

    def __init__(self) -> None:
        """Start with none made."""
        self._known: set[str] = set()

    def new(self, wanted: Iterable[str], present: Iterable[str]) -> list[str]:
        """Return the models whose entities to make now, in order.

        ``wanted``: the models that should have them now; ``present``: the server's models.
        A model is forgotten only once it is gone: its entities stay while it is there,
        also when it is no longer wanted (a profile stopped), and are not made twice.
        """
        new = set(wanted) - self._known
        self._known.intersection_update(present)
        self._known.update(new)
        return sorted(new)


def gpu_device_name(index: int, name: str | None) -> str:
    """Return a GPU's device name: its index, and its model's name when known."""
    return f"GPU {index} {name or ''}".strip()
