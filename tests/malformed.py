"""Hypothesis strategies for server replies: plausible ones, and the ones a broken server sends.

Each reply strategy mixes three kinds of body: the reply's own shape with each field either
plausible, missing, or replaced by any JSON value (huge, negative and boolean numbers,
NaN, far-off timestamps, long texts, nested containers); text that is not JSON at all; and
pathological JSON (nested 100,000 levels deep, truncated). What is sent is what a server
on the wire could send: bytes, with an HTTP status.
"""

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
import json
from typing import Any

from hypothesis import strategies as st

HUGE = 10**400
MISSING = object()

numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**31, 2**53, 2**63, 2**64 + 1, HUGE, -HUGE]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
timestamps = st.one_of(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from([UTC, None]),
    ).map(lambda d: d.isoformat().replace("+00:00", "Z")),
    st.sampled_from(
        [
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:00:00-01:00",
            "2026-11-29T08:05:00.123456789Z",
            "2318-09-10T08:00:00Z",
            "2026-11-29T08:05:00",
            "yesterday",
            "",
        ]
    ),
)
texts = st.one_of(
    st.text(max_size=12),
    # A lone surrogate ("\\ud800" in JSON) reads as a str, and breaks every JSON write after.
    st.sampled_from(
        ["llama3.2:3b", "tiny:latest", "x" * 300, "²", "\x00", "0.9.3", "\ud800", "a\udfff"]
    ),
)
json_values = st.recursive(
    st.one_of(st.none(), numbers, texts, timestamps),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=12,
)


type Field = st.SearchStrategy[Any] | tuple[st.SearchStrategy[Any], tuple[object, ...]]


@st.composite
def _shaped(
    draw: st.DrawFn,
    fields: Mapping[str, Field],
    coherent: Callable[[dict[str, Any]], dict[str, Any]] | None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, spec in fields.items():
        plausible = spec[0] if isinstance(spec, tuple) else spec
        obj[key] = draw(plausible)
    if coherent is not None:
        obj = coherent(obj)
    # A few fields (often none, often one) are off: an edge value, absent, or anything.
    # The rest stay plausible, so that the reply gets past them to the one that is off.
    broken = draw(st.sampled_from([0, 0, 0, 1, 1, 2]))
    for key in draw(st.permutations(list(fields)))[:broken]:
        spec = fields[key]
        edges = spec[1] if isinstance(spec, tuple) else ()
        off = [st.just(MISSING), json_values]
        if edges:
            off += [st.sampled_from(edges)] * 2
        obj[key] = draw(st.one_of(*off))
    return {k: v for k, v in obj.items() if v is not MISSING}


def shaped(
    fields: Mapping[str, Field],
    coherent: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON object with these fields: plausible, but for a few that are off.

    ``coherent`` makes the plausible fields agree with each other (a model's GPU share is
    no more than its size) before any is put off.
    """
    return _shaped(fields, coherent)


# Values just past what a parser must accept, and the ones that once broke it.
NUMBER_EDGES = (-1, True, 1.5, 2**53 + 1, 2**63, 2**64 + 1, HUGE)
TIME_EDGES = (
    "9999-12-31T23:00:00-01:00",
    "0001-01-01T00:00:00+01:00",
    "1969-12-31T23:59:59Z",
    "2026-11-29T08:05:00",
    "x" * 100,
)


def dumps(obj: object) -> bytes:
    """Serialise like a careless server: NaN and huge integers included."""
    return json.dumps(obj, allow_nan=True).encode()


pathological = st.sampled_from(
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"models": ' + b"[" * 100_000,
        b"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>",
        b'{"models": [',
        b"",
        b"\xff\xfe\x00garbage",
        b'{"version": NaN}',
    ]
)


def replies(objects: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[int, bytes]]:
    """An HTTP status and a body: mostly the shaped object, sometimes anything."""
    status = st.sampled_from([200] * 8 + [400, 401, 404, 500, 503])
    body = st.one_of(
        objects.map(dumps),
        objects.map(dumps),
        objects.map(dumps),
        json_values.map(dumps),
        st.binary(max_size=64),
        pathological,
    )
    return st.tuples(status, body)


details = shaped({"family": texts, "parameter_size": texts, "quantization_level": texts})
sizes = (st.integers(min_value=0, max_value=64 * 1024**3), NUMBER_EDGES)
recent = st.datetimes(
    min_value=datetime(2026, 1, 1),
    max_value=datetime(2320, 1, 1),
    timezones=st.just(UTC),
).map(lambda d: d.isoformat().replace("+00:00", "Z"))
expiries = (st.one_of(recent, st.just("0001-01-01T00:00:00Z")), TIME_EDGES)
names = st.sampled_from(["llama3.2:3b", "qwen3:8b", "tiny:latest", "new:1b"])
resident_entry = shaped(
    {
        "name": (names, ("", "x" * 300, "\x00", 7, "\ud800")),
        "model": names,
        "size": sizes,
        "size_vram": sizes,
        "digest": texts,
        "details": details,
        "expires_at": expiries,
        "context_length": (st.integers(min_value=0, max_value=131072), NUMBER_EDGES),
    },
    coherent=lambda entry: entry | {"size_vram": min(entry["size_vram"], entry["size"])},
)
installed_entry = shaped(
    {
        "name": (names, ("", "x" * 300)),
        "size": sizes,
        "digest": texts,
        "details": details,
        "modified_at": (recent, TIME_EDGES),
    }
)
ps_reply = shaped({"models": st.lists(resident_entry, max_size=3)})
tags_reply = shaped({"models": st.lists(installed_entry, max_size=3)})
version_reply = shaped({"version": (st.sampled_from(["0.9.3", "0.12.6"]), ("", "1" * 300))})
show_reply = shaped(
    {
        "modelfile": st.sampled_from(["FROM /models/blobs/sha256-1\n", "# none"]),
        "details": details,
        "model_info": shaped(
            {"general.architecture": st.just("llama"), "llama.context_length": numbers}
        ),
        "capabilities": st.lists(texts, max_size=3),
    }
)

durations = (st.integers(min_value=0, max_value=60 * 10**9), NUMBER_EDGES)
counts = (st.integers(min_value=0, max_value=100_000), NUMBER_EDGES)
content_chunk = shaped(
    {
        "message": shaped({"role": st.just("assistant"), "content": texts, "thinking": texts}),
        "response": texts,
        "done": st.just(False),
    }
)
final_chunk = shaped(
    {
        "message": shaped({"content": texts}),
        "done": st.just(True),
        "done_reason": st.sampled_from(["stop", "length", "load"]),
        "load_duration": durations,
        "prompt_eval_count": counts,
        "prompt_eval_duration": durations,
        "eval_count": counts,
        "eval_duration": durations,
        "total_duration": durations,
    }
)
error_chunk = shaped({"error": texts})


@st.composite
def generation_streams(draw: st.DrawFn) -> tuple[int, bytes]:
    """An NDJSON stream: content chunks, maybe an error or junk line, maybe a final chunk."""
    lines = [dumps(chunk) for chunk in draw(st.lists(content_chunk, max_size=3))]
    ending = draw(
        st.sampled_from(["final", "final", "final", "error", "junk", "none", "pathological"])
    )
    if ending == "final":
        lines.append(dumps(draw(final_chunk)))
    elif ending == "error":
        lines.append(dumps(draw(error_chunk)))
    elif ending == "junk":
        lines.append(draw(st.binary(max_size=32)).replace(b"\n", b""))
    elif ending == "pathological":
        lines.append(draw(pathological))
    body = b"\n".join(lines) + draw(st.sampled_from([b"\n", b""]))
    return draw(st.sampled_from([200, 200, 200, 404, 500, 503])), body


plausible_resident_entry = st.fixed_dictionaries(
    {
        "name": st.text(min_size=1, max_size=40),
        "size": st.integers(min_value=1, max_value=2**40),
        "expires_at": st.datetimes(
            min_value=datetime(2000, 1, 1),
            max_value=datetime(2400, 1, 1),
            timezones=st.just(UTC),
        ),
        "vram_share": st.floats(min_value=0, max_value=1),
        "context_length": st.integers(min_value=1, max_value=2**20),
    }
)


def as_ps_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Return a plausible entry as Ollama writes it in /api/ps."""
    expires: datetime = entry["expires_at"]
    return {
        "name": entry["name"],
        "size": entry["size"],
        "size_vram": int(entry["size"] * entry["vram_share"]),
        "expires_at": expires.isoformat().replace("+00:00", "Z"),
        "context_length": entry["context_length"],
    }


def exporter_lines(names: list[str]) -> st.SearchStrategy[str]:
    """Prometheus text lines of the given metric names with odd labels and values."""
    label_values = st.one_of(
        st.sampled_from(["0", "1", "²", "GPU-1", "x" * 300, ""]), st.text(max_size=8)
    ).map(lambda v: v.replace("\\", "").replace('"', "").replace("\n", ""))
    values = st.one_of(
        numbers.map(lambda n: repr(n) if isinstance(n, float) else str(n)),
        st.sampled_from(["1e308", "NaN", "+Inf", "-Inf", "0x10", "1_000", "", "12 1700000000"]),
    )
    line = st.builds(
        lambda name, gpu, uuid, value: (
            f'{name}{{gpu="{gpu}",UUID="{uuid}",uuid="{uuid}",id="{gpu}",name="{uuid}"}} {value}'
        ),
        st.sampled_from(names),
        label_values,
        label_values,
        values,
    )
    junk = st.sampled_from(["# HELP x y", "# TYPE x gauge", "garbage line", "{}", "x{a=} 1"])
    return st.lists(st.one_of(line, line, line, junk), max_size=8).map("\n".join)


# llama.cpp's llama-server (router mode): /props, /models, the OpenAI stream with timings.
llama_statuses = st.sampled_from(["unloaded", "loading", "loaded", "sleeping", "failed", "x"])
llama_model_entry = shaped(
    {
        "id": (st.sampled_from(["tiny", "big", "qwen3-8b"]), ("", "x" * 300, 7, "\ud800")),
        "status": shaped(
            {
                "value": llama_statuses,
                "args": st.lists(
                    st.sampled_from(["--ctx-size", "-c", "512", "99999999999", "x", "--port"]),
                    max_size=4,
                ),
                "failed": st.booleans(),
            }
        ),
        "context_length": (st.integers(min_value=0, max_value=131072), NUMBER_EDGES),
    }
)
llama_models_reply = shaped({"data": st.lists(llama_model_entry, max_size=3)})
llama_props_reply = shaped(
    {
        "role": st.sampled_from(["router", "router", "model"]),
        "build_info": (st.just("b11669-Debian"), ("", "x" * 300)),
    }
)
llama_timings = shaped(
    {
        "cache_n": counts,
        "prompt_n": counts,
        "prompt_ms": (st.floats(min_value=0, max_value=60_000), (-1.0, HUGE, float("nan"))),
        "predicted_n": counts,
        "predicted_ms": (st.floats(min_value=0, max_value=60_000), (-1.0, float("inf"))),
    }
)
openai_chunk = shaped(
    {
        "choices": st.lists(
            shaped(
                {
                    "delta": shaped({"content": texts, "reasoning_content": texts}),
                    "text": texts,
                    "finish_reason": st.sampled_from([None, "stop", "length"]),
                }
            ),
            max_size=1,
        )
    }
)
openai_final_chunk = shaped({"choices": st.just([]), "timings": llama_timings})


@st.composite
def openai_streams(draw: st.DrawFn) -> tuple[int, bytes]:
    """An SSE stream: content chunks, maybe an error or junk, maybe timings and [DONE]."""
    events = [dumps(chunk) for chunk in draw(st.lists(openai_chunk, max_size=3))]
    ending = draw(st.sampled_from(["final", "final", "final", "error", "junk", "none"]))
    if ending == "final":
        events += [dumps(draw(openai_final_chunk)), b"[DONE]"]
    elif ending == "error":
        events.append(dumps({"error": draw(json_values)}))
    elif ending == "junk":
        events.append(draw(st.binary(max_size=32)).replace(b"\n", b""))
    body = b"".join(b"data: " + event + b"\n\n" for event in events)
    return draw(st.sampled_from([200, 200, 200, 400, 500, 503])), body


# llama-swap: /running, /v1/models, and /api/events frames (JSON inside a JSON string).
swap_states = st.sampled_from(["stopped", "starting", "ready", "stopping", "shutdown", "?"])
running_entry = shaped(
    {
        "model": (st.sampled_from(["tiny", "big"]), ("", "x" * 300, 7, "\ud800")),
        "state": swap_states,
        "ttl": numbers,
    }
)
running_reply = shaped({"running": st.lists(running_entry, max_size=3)})
swap_models_reply = shaped(
    {
        "data": st.lists(
            shaped(
                {
                    "id": (st.sampled_from(["tiny", "big", "small"]), ("", 7, "\ud800")),
                    "owned_by": st.just("llama-swap"),
                    "meta": shaped(
                        {"llamaswap": shaped({"type": st.sampled_from(["model", "alias"])})}
                    ),
                }
            ),
            max_size=3,
        )
    }
)
model_status = shaped(
    {
        "id": (st.sampled_from(["tiny", "big"]), ("", 7, "\ud800")),
        "state": swap_states,
        "peerID": texts,
    }
)


@st.composite
def swap_event_streams(draw: st.DrawFn) -> bytes:
    """llama-swap's event stream: envelopes whose data is (mostly) JSON text."""
    frames = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        kind = draw(st.sampled_from(["modelStatus", "modelStatus", "inflight", "logData", 7]))
        inner = draw(st.one_of(st.lists(model_status, max_size=3), json_values))
        data: object = draw(st.sampled_from(["json", "json", "raw"]))
        envelope = {"type": kind, "data": json.dumps(inner) if data == "json" else inner}
        frames.append(b"event:message\ndata:" + dumps(envelope) + b"\n\n")
    return b"".join(frames)


# llama-swap's activity log (``/api/metrics/activity``): a page of ``ActivityLogEntry``.
activity_tokens = shaped(
    {
        "cache_tokens": (st.integers(min_value=-1, max_value=4096), NUMBER_EDGES),
        "input_tokens": (st.integers(min_value=0, max_value=4096), NUMBER_EDGES),
        "output_tokens": (st.integers(min_value=0, max_value=4096), NUMBER_EDGES),
        "prompt_per_second": (st.floats(min_value=-1, max_value=1e5), NUMBER_EDGES),
        "tokens_per_second": (st.floats(min_value=-1, max_value=1e5), NUMBER_EDGES),
    }
)
activity_entry = shaped(
    {
        "id": (st.integers(min_value=1, max_value=10**6), NUMBER_EDGES),
        "timestamp": (recent, TIME_EDGES),
        "model": st.just("tiny"),
        "req_path": st.just("/v1/chat/completions"),
        "resp_status_code": (st.sampled_from([200, 404, 502]), NUMBER_EDGES),
        "tokens": activity_tokens,
        "duration_ms": (st.integers(min_value=0, max_value=600_000), NUMBER_EDGES),
    }
)
activity_reply = shaped({"data": st.lists(activity_entry, max_size=4), "total": st.integers()})
