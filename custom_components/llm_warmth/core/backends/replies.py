"""Reading server replies without trusting them (no Home Assistant imports).

Every byte a server sends passes through here before the rest of the code sees it: bodies
and stream lines are size-limited, JSON is decoded without recursion or number surprises,
and each value is checked for type and range where it is read. A value that breaks a rule
raises ``ValueError`` (the parsers turn it into ``LlmServerResponseError``); an oversize or
undecodable reply raises ``LlmServerResponseError`` directly. So the rest of the
integration only ever sees sane values: nothing that overflows a float, a sensor or the
store.
"""

from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
import json
from typing import Any, Final

import aiohttp

from .errors import LlmServerResponseError

# A whole JSON reply (/api/tags of a box with hundreds of models is well under 1 MiB).
MAX_REPLY_BYTES: Final = 8 * 1024 * 1024
# One NDJSON line of a generation stream (the final /api/generate chunk carries the token
# ids of the whole context: about 1 MiB at 128k tokens).
MAX_LINE_BYTES: Final = 4 * 1024 * 1024
# Durations the servers report, in nanoseconds: nothing real takes a day.
MAX_DURATION_NS: Final = 86_400 * 1_000_000_000
# Token counts and context lengths.
MAX_TOKENS: Final = 2**31 - 1
# Memory sizes in bytes (8 PiB; exact as a float).
MAX_BYTES: Final = 2**53
# Names, versions and other short texts a server reports (model names, families, ...).
MAX_TEXT: Final = 256
# Timestamps outside these years are not times a server means (Ollama's "forever" is
# now + 292 years; the Go zero time, year 1, means "no time").
MIN_YEAR: Final = 1970
MAX_YEAR: Final = 9000


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def decode_json(data: bytes | str) -> Any:
    """Decode JSON, refusing NaN/Infinity and text that is not valid Unicode.

    Every failure is a ``ValueError``.

    Deeply nested input makes the decoder recurse until ``RecursionError``: that is a
    malformed reply too.
    """
    try:
        decoded = json.loads(data, parse_constant=_reject_constant)
    except RecursionError as err:
        raise ValueError("JSON nested too deeply") from err
    _check_text(decoded)
    return decoded


class InvalidText(ValueError):
    """A reply's JSON holds a text that is not valid Unicode."""


def _check_text(decoded: object) -> None:
    """Raise ``ValueError`` when a text in ``decoded`` is not valid Unicode.

    JSON can carry a lone surrogate (an escaped U+D800): Python reads it, and every later JSON
    write of Home Assistant (states, registries, the store) fails on it. Every string a
    server sends, keys too, must be text before it goes anywhere.
    """
    pending = [decoded]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as err:
                raise InvalidText(f"a text that is not valid Unicode: {value!r}") from err
        elif isinstance(value, dict):
            pending.extend(value)
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)


def decode_object(body: bytes, path: str) -> dict[str, Any]:
    """Decode a JSON object or raise ``LlmServerResponseError``."""
    try:
        payload = decode_json(body)
    except InvalidText as err:
        raise LlmServerResponseError(f"{path}: {err}") from err
    except ValueError as err:
        raise LlmServerResponseError(f"{path}: reply is not JSON") from err
    if not isinstance(payload, dict):
        raise LlmServerResponseError(f"{path}: reply is not a JSON object")
    return payload


async def read_limited(response: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """Read a whole reply body; None when it is longer than ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def read_body(response: aiohttp.ClientResponse, path: str) -> bytes:
    """Read a whole reply body, at most ``MAX_REPLY_BYTES``."""
    body = await read_limited(response, MAX_REPLY_BYTES)
    if body is None:
        raise LlmServerResponseError(f"{path}: reply larger than {MAX_REPLY_BYTES} bytes")
    return body


async def iter_lines(response: aiohttp.ClientResponse, path: str) -> AsyncIterator[bytes]:
    """Yield a streamed reply's lines (without the newline), each at most ``MAX_LINE_BYTES``."""
    buffer = bytearray()
    async for chunk in response.content.iter_any():
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            if end > MAX_LINE_BYTES:
                break
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            yield line
        if len(buffer) > MAX_LINE_BYTES:
            raise LlmServerResponseError(f"{path}: stream line longer than {MAX_LINE_BYTES} bytes")
    if buffer:
        yield bytes(buffer)


def bounded_int(value: object, name: str, maximum: int, minimum: int = 0) -> int:
    """Return ``value`` if it is an integer (not a bool) in [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"'{name}' is not an integer")
    if not minimum <= value <= maximum:
        raise ValueError(f"'{name}' is out of range")
    return value


def optional_bounded_int(
    item: Mapping[str, Any], key: str, maximum: int, minimum: int = 0
) -> int | None:
    """Return the bounded integer at ``key``, None when it is absent or null."""
    value = item.get(key)
    return None if value is None else bounded_int(value, key, maximum, minimum)


def valid_name(value: object) -> str | None:
    """Return ``value`` when it is a text that can name something (a model, a version).

    One to ``MAX_TEXT`` characters; the JSON reader already refused text that is not
    valid Unicode. None for anything else. Every name a server sends is read with it,
    from a reply or from an event stream.
    """
    return value if isinstance(value, str) and 0 < len(value) <= MAX_TEXT else None


def required_str(item: Mapping[str, Any], key: str) -> str:
    """Return the non-empty string at ``key``, at most ``MAX_TEXT`` characters."""
    value = valid_name(item.get(key))
    if value is None:
        raise ValueError(f"'{key}' is missing, not a string or too long")
    return value


def optional_str(item: Mapping[str, Any], key: str) -> str | None:
    """Return the string at ``key``; None when it is absent, empty, too long or not a string."""
    return valid_name(item.get(key))


def parse_timestamp(value: object) -> datetime | None:
    """Parse an RFC 3339 timestamp (nanoseconds allowed) into UTC.

    The Go zero time (year 1) means "no time yet" and gives None. Raise ``ValueError`` for
    anything else that is not a time between ``MIN_YEAR`` and ``MAX_YEAR``.
    """
    if not isinstance(value, str) or len(value) > 64:
        raise ValueError(f"not a timestamp: {value!r}")
    try:
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            raise ValueError(f"timestamp without a timezone: {value!r}")
        if parsed.year <= 1:
            return None
        utc = parsed.astimezone(UTC)
    except OverflowError as err:
        raise ValueError(f"timestamp out of range: {value!r}") from err
    if not MIN_YEAR <= utc.year <= MAX_YEAR:
        raise ValueError(f"timestamp out of range: {value!r}")
    return utc
