"""Property tests: whatever a server sends, a client returns sane values or raises its own error.

Every reply goes over real HTTP on loopback (the emulator answers with the drawn status and
body). Hypothesis draws from ``malformed.py``: plausible replies with fields missing,
swapped for any JSON value or pushed out of range, text that is not JSON, and pathological
JSON. A failure prints the smallest reply that breaks the rule.
"""

from datetime import UTC
import math

import aiohttp
from homeassistant.core import HomeAssistant
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from hypothesis import HealthCheck, given, settings, strategies as st
import pytest

from custom_components.llm_warmth.core.backends.errors import LlmServerError
from custom_components.llm_warmth.core.backends.events import StateWatch
from custom_components.llm_warmth.core.backends.ollama import OllamaClient
from custom_components.llm_warmth.core.backends.openai_stream import timed_load_ns
from custom_components.llm_warmth.core.backends.replies import (
    MAX_BYTES,
    MAX_DURATION_NS,
    MAX_TEXT,
    MAX_TOKENS,
)
from custom_components.llm_warmth.core.backends.types import ResidentModel, TimedReply
from custom_components.llm_warmth.core.gpu.errors import GpuSourceError
from custom_components.llm_warmth.core.gpu.exporter import ExporterKind, ExporterSource
from custom_components.llm_warmth.core.ttft import breakdown

from . import malformed
from .conftest import LLAMA
from .ollama_emulator import NDJSON, OllamaEmulator

# One emulator and one session for all the examples of a test: each example injects its
# reply for the next request only.
FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
async def client(emulator: OllamaEmulator) -> OllamaClient:
    session = aiohttp.ClientSession()
    yield OllamaClient(session, emulator.url, request_timeout=5)
    await session.close()


def assert_sane_resident(model: ResidentModel) -> None:
    assert 0 < len(model.name) <= MAX_TEXT
    model.name.encode()  # valid text: it goes into JSON
    # Memory the server does not report is unknown (None), never 0.
    assert model.size is None or 0 <= model.size <= MAX_BYTES
    if model.size_vram is not None:
        assert model.size is not None
        assert 0 <= model.size_vram <= model.size
    assert model.ram_spill is None or model.ram_spill >= 0
    assert model.gpu_share is None or 0 <= model.gpu_share <= 100
    if model.expires_at is not None:
        assert model.expires_at.tzinfo is UTC
        assert 1970 <= model.expires_at.year <= 9000
    assert model.context_length is None or 1 <= model.context_length <= MAX_TOKENS


@FUZZ
@given(reply=malformed.replies(malformed.ps_reply))
async def test_running_models(
    client: OllamaClient, emulator: OllamaEmulator, reply: tuple[int, bytes]
) -> None:
    emulator.inject("/api/ps", status=reply[0], body=reply[1])
    try:
        models = await client.running_models()
    except LlmServerError:
        return
    for model in models:
        assert_sane_resident(model)


@FUZZ
@given(reply=malformed.replies(malformed.tags_reply))
async def test_installed_models(
    client: OllamaClient, emulator: OllamaEmulator, reply: tuple[int, bytes]
) -> None:
    emulator.inject("/api/tags", status=reply[0], body=reply[1])
    try:
        models = await client.installed_models()
    except LlmServerError:
        return
    for model in models:
        assert 0 < len(model.name) <= MAX_TEXT
        assert 0 <= model.size <= MAX_BYTES
        assert model.modified_at is None or model.modified_at.tzinfo is UTC


@FUZZ
@given(reply=malformed.replies(malformed.version_reply))
async def test_version(
    client: OllamaClient, emulator: OllamaEmulator, reply: tuple[int, bytes]
) -> None:
    emulator.inject("/api/version", status=reply[0], body=reply[1])
    try:
        version = await client.version()
    except LlmServerError:
        return
    assert 0 < len(version) <= MAX_TEXT


@FUZZ
@given(reply=malformed.replies(malformed.show_reply))
async def test_show(
    client: OllamaClient, emulator: OllamaEmulator, reply: tuple[int, bytes]
) -> None:
    emulator.inject("/api/show", status=reply[0], body=reply[1])
    try:
        info = await client.show(LLAMA)
    except LlmServerError:
        return
    assert info.context_length is None or 1 <= info.context_length <= MAX_TOKENS
    assert all(isinstance(c, str) for c in info.capabilities)


@FUZZ
@given(reply=malformed.generation_streams())
async def test_timed_generation(
    client: OllamaClient, emulator: OllamaEmulator, reply: tuple[int, bytes]
) -> None:
    emulator.inject("/api/chat", status=reply[0], body=reply[1], content_type=NDJSON)
    try:
        timed = await client.timed_generation("chat", LLAMA, "hi", timeout=5)
    except LlmServerError:
        return
    assert timed.sent_ns <= timed.headers_ns <= timed.first_token_ns <= timed.final_ns
    # A figure the server left out is unknown (None), never a made-up 0.
    for value in (timed.load_duration_ns, timed.prompt_eval_duration_ns, timed.eval_duration_ns):
        assert value is None or 0 <= value <= MAX_DURATION_NS
    for count in (timed.prompt_eval_count, timed.eval_count):
        assert count is None or 0 <= count <= MAX_TOKENS
    # The stage math takes any reply a client returns.
    stages = breakdown(timed)
    assert all(
        math.isfinite(value) for value in stages.as_dict().values() if isinstance(value, float)
    )


@FUZZ
@given(
    entries=st.lists(
        malformed.plausible_resident_entry,
        min_size=1,
        max_size=3,
        unique_by=lambda entry: entry["name"],
    )
)
async def test_plausible_resident_models_are_read_as_sent(
    client: OllamaClient, emulator: OllamaEmulator, entries: list[dict[str, object]]
) -> None:
    sent = [malformed.as_ps_entry(entry) for entry in entries]
    emulator.inject("/api/ps", status=200, body=malformed.dumps({"models": sent}))
    models = await client.running_models()
    assert [(m.name, m.size, m.size_vram, m.context_length) for m in models] == [
        (e["name"], e["size"], e["size_vram"], e["context_length"]) for e in sent
    ]
    assert [m.expires_at for m in models] == [e["expires_at"] for e in entries]


EXPORTER_METRICS = [
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_PSTATE",
    "nvidia_smi_memory_free_bytes",
    "nvidia_smi_index",
    "nvidia_smi_clocks_current_sm_clock_hz",
    "llamaswap_gpu_memory_used_bytes",
    "llamaswap_gpu_util_percent",
]
CHARSETS = ["utf-8", "latin-1", "hex", "base64", "zlib", "rot13", "idna", "no-such-charset"]


@FUZZ
@given(
    text=malformed.exporter_lines(EXPORTER_METRICS),
    charset=st.sampled_from(CHARSETS),
    kind=st.sampled_from(list(ExporterKind)),
)
async def test_exporter(
    hass: HomeAssistant, emulator: OllamaEmulator, text: str, charset: str, kind: ExporterKind
) -> None:
    emulator.inject(
        "/metrics", status=200, body=text.encode(), content_type=f"text/plain; charset={charset}"
    )
    source = ExporterSource(async_get_clientsession(hass), f"{emulator.url}/metrics", kind)
    try:
        gpus = await source.read()
    except GpuSourceError:
        return
    for gpu in gpus:
        assert 0 <= gpu.index <= 1023
        assert len(gpu.uuid) <= 256
        assert gpu.name is None or len(gpu.name) <= 256
        for memory in (gpu.memory_total, gpu.memory_used, gpu.memory_free):
            assert memory is None or 0 <= memory <= 2**54
        for percent in (gpu.utilization_gpu, gpu.utilization_memory):
            assert percent is None or 0 <= percent <= 100
        assert gpu.temperature is None or -60 <= gpu.temperature <= 250
        assert gpu.performance_state is None or 0 <= gpu.performance_state <= 15
        assert gpu.sm_clock is None or 0 <= gpu.sm_clock <= 100_000


@given(
    sent=st.integers(0, 10**12),
    ready_after=st.one_of(st.none(), st.integers(-(10**9), 10**11)),
    first_after=st.integers(0, 10**11),
    prefill=st.one_of(st.none(), st.integers(0, 10**11)),
    trustworthy=st.booleans(),
)
def test_a_load_from_the_event_stream_never_exceeds_the_ttft_less_the_prefill(
    sent: int, ready_after: int | None, first_after: int, prefill: int | None, trustworthy: bool
) -> None:
    """The ready event may come late; the load cannot have ended after the prefill began."""
    watch = StateWatch("m", "loaded", lambda _frame: [])
    watch.ready_ns = None if ready_after is None else sent + ready_after
    watch._connected = trustworthy  # the stream was there for the whole request, or not
    reply = TimedReply(
        sent_ns=sent,
        headers_ns=sent,
        first_token_ns=sent + first_after,
        final_ns=sent + first_after,
        prompt_eval_duration_ns=prefill,
    )
    load = timed_load_ns(watch, reply)
    if ready_after is None:
        assert load == (0 if trustworthy else None)
        return
    assert load is not None
    assert 0 <= load <= max(ready_after, 0)
    if prefill is not None:
        assert load <= max(first_after - prefill, 0)


async def test_a_lone_surrogate_fails_an_ollama_reply(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    """A name that is not valid text fails its reply (it would break every JSON write after)."""
    emulator.inject("/api/ps", status=200, body='{"models":[{"name":"\\ud800","model":"x"}]}')
    with pytest.raises(LlmServerError, match="not valid Unicode"):
        await client.running_models()
    emulator.inject("/api/ps", status=200, body=b'{"models":[{"name":"\xed\xa0\x80"}]}')
    with pytest.raises(LlmServerError, match="not valid Unicode"):
        await client.running_models()
