"""What an action's fields may ask for: durations, end times, keeps, contexts (pure).

Checked before anything is sent to a server. A field the server cannot honour, or one out
of its range, is ``Refused``: the translation key and the placeholders the shell says it
in (a ``ServiceValidationError``). Times are placeholders as times: the shell shows them
in the household's time zone. The clock and the time zone are passed in.
"""

from collections.abc import Collection, Mapping
from datetime import UTC, datetime, timedelta, tzinfo

from .backends.base import Capabilities, KeepAlive
from .diagnose import Scenario

# The longest keep asked for by a time or a duration (ten years): every server can hold it
# and every clock can count it (Ollama drops a model at once when asked for more than
# about 9.2e9 s, Python's dates end in 9999). For ever is keep_forever, or a pin without end.
MAX_KEEP = timedelta(days=3650)
MIN_KEEP = timedelta(seconds=1)
# The keep_alive that keeps a model for ever (Ollama's -1).
FOREVER = -1.0


class Refused(Exception):
    """An action's call refused before anything is sent: its translation key and placeholders."""

    def __init__(self, key: str, placeholders: Mapping[str, str | datetime] | None = None) -> None:
        """Refuse with the ``exceptions`` translation ``key`` and what it shows."""
        super().__init__(key)
        self.key = key
        self.placeholders: Mapping[str, str | datetime] = dict(placeholders or {})


def checked_duration(field: str, given: timedelta) -> timedelta:
    """Return the call's duration at ``field``; refuse, in words, one out of its range.

    At least a second (0 would be an unload, a negative one means nothing), at most
    ``MAX_KEEP``: refused before anything is sent.
    """
    if given < MIN_KEEP:
        raise Refused(
            "duration_too_short", {"field": field, "seconds": f"{given.total_seconds():g}"}
        )
    if given > MAX_KEEP:
        raise Refused("duration_too_long", {"field": field, "days": str(MAX_KEEP.days)})
    return given


def end_time(given: datetime | str, now: datetime, zone: tzinfo) -> datetime:
    """Return the time a call gives (UTC); refuse one past or too far ahead.

    A time without a zone is the household's (``zone``). Refused in words before anything
    is sent: a time at least a second ahead of ``now``, at most ``MAX_KEEP``; a text that
    is no time Python can hold (the year 10000) as given.
    """
    if isinstance(given, str):
        raise Refused("time_not_read", {"given": given, "days": str(MAX_KEEP.days)})
    try:
        local = given.replace(tzinfo=zone) if given.tzinfo is None else given
        until: datetime | None = local.astimezone(zone).astimezone(UTC)
    except OverflowError:  # a naive 9999-12-31 in a zone behind UTC
        until = None
    if until is None or until - now > MAX_KEEP:
        # As given where it is past any time zone's reach (9999-12-31).
        shown = until if until is not None else given.isoformat()
        raise Refused("keep_too_far", {"until": shown, "days": str(MAX_KEEP.days)})
    if (until - now).total_seconds() < 1:
        raise Refused("keep_until_past", {"until": until})
    return until


def keep_seconds(
    *,
    forever: bool,
    keep_for: timedelta | None,
    keep_until: datetime | str | None,
    now: datetime,
    zone: tzinfo,
    capabilities: Capabilities,
    server: str,
) -> float | None:
    """Return how long a preload keeps the model (-1: for ever; None: as the server does).

    One of ``forever``, ``keep_for`` (field ``keep_for``) or ``keep_until`` (field
    ``keep_until``), each checked in its range first. Only a server whose requests set the
    keep takes one: elsewhere how the server keeps a model by itself is the translation's
    to say (``server``: the entry's title).
    """
    if forever:
        seconds = FOREVER
    elif keep_for is not None:
        seconds = checked_duration("keep_for", keep_for).total_seconds()
    elif keep_until is not None:
        seconds = (end_time(keep_until, now, zone) - now).total_seconds()
    else:
        return None
    if not capabilities.requests_set_keep_and_context:
        lru = capabilities.keep_alive is KeepAlive.LRU
        raise Refused(
            "keep_not_supported_lru" if lru else "keep_not_supported_ttl", {"server": server}
        )
    return seconds


def pin_end(
    *, pin_for: timedelta | None, until: datetime | str | None, now: datetime, zone: tzinfo
) -> datetime | None:
    """Return when a pin ends (None: when unpinned): ``pin_for`` from ``now``, or ``until``."""
    if pin_for is not None:
        return now + checked_duration("for", pin_for)
    if until is None:
        return None
    return end_time(until, now, zone)


def check_evict_target(*, every: bool, model: str | None) -> None:
    """Refuse an eviction that names a model and asks for all, or neither."""
    if every == (model is not None):
        raise Refused("evict_target")


def context_asked[T](given: T | None, capabilities: Capabilities, server: str) -> T | None:
    """Return the context a call gives (None: it gives none); refuse it where it cannot be.

    Only Ollama takes a context per request: the other servers' configuration sets it, and
    a call that gives one there is refused (``server``: the entry's title).
    """
    if given is not None and not capabilities.requests_set_keep_and_context:
        raise Refused("num_ctx_not_supported", {"server": server})
    return given


def check_diagnosis_models(
    scenario: Scenario, model: str, other: str | None, pinned: Collection[str]
) -> None:
    """Refuse a diagnosis of a pinned model, or a switch without another model.

    The scenarios evict: that would unpin it. A switch or a competing load needs another
    model than ``model``.
    """
    for name in (model, other):
        if name is not None and name in pinned:
            raise Refused("diagnose_pinned", {"model": name})
    if scenario.needs_other_model and (other is None or other == model):
        raise Refused("diagnose_other_model", {"scenario": scenario})


def check_context_change(
    scenario: Scenario,
    num_ctx: int | None,
    *,
    model: str,
    capabilities: Capabilities,
    server: str,
) -> None:
    """Refuse a context change without a context to change to.

    Only Ollama loads a model with the context a request asks for: there the call (or the
    model's agent) must give one; the other servers cannot run the scenario at all.
    """
    if scenario is not Scenario.CONTEXT_CHANGE or num_ctx is not None:
        return
    if capabilities.requests_set_keep_and_context:
        raise Refused("diagnose_no_context", {"model": model})
    raise Refused("context_change_not_supported", {"server": server})
