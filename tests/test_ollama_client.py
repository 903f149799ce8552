"""The Ollama client against the emulator over HTTP: results and every kind of failure."""

import asyncio
from datetime import UTC, datetime, timedelta
import json
from pathlib import Path

import aiohttp
import pytest

from custom_components.llm_warmth.core.backends.errors import (
    LlmModelNotFoundError,
    LlmServerAuthenticationError,
    LlmServerBusyError,
    LlmServerConnectionError,
    LlmServerError,
    LlmServerNotSupportedError,
    LlmServerOutOfMemoryError,
    LlmServerResponseError,
    LlmServerTimeoutError,
    LlmServerTlsError,
    LlmServerUnreachableError,
)
from custom_components.llm_warmth.core.backends.ollama import OllamaClient
from custom_components.llm_warmth.core.backends.replies import parse_timestamp
from custom_components.llm_warmth.core.runner_key import runner_key

from .conftest import GIB, LLAMA, QWEN, ollama_request
from .ollama_emulator import EmulatedModel, HeldAnswer, OllamaEmulator


@pytest.fixture
async def session() -> aiohttp.ClientSession:
    async with aiohttp.ClientSession() as client_session:
        yield client_session


@pytest.fixture
def client(session: aiohttp.ClientSession, emulator: OllamaEmulator) -> OllamaClient:
    return OllamaClient(session, emulator.url, request_timeout=2)


async def test_version_and_lists(client: OllamaClient, emulator: OllamaEmulator) -> None:
    assert await client.version() == emulator.version
    installed = await client.installed_models()
    assert [m.name for m in installed] == [LLAMA, QWEN]
    assert installed[1].family == "qwen3"
    assert installed[1].parameter_size == "8.2B"
    assert installed[1].modified_at is not None
    assert await client.running_models() == ()


async def test_running_model_loading_then_loaded(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.hold_loads()  # the load lasts until finish_loads()
    preload = emulator.clock.now()
    task = asyncio.create_task(ollama_request(emulator, "/api/generate", {"model": LLAMA}))
    async with asyncio.timeout(5):
        await emulator.wait_loading(LLAMA)
    (loading,) = await client.running_models()
    assert loading.loading
    assert loading.expires_at is None
    emulator.finish_loads()
    assert (await task)["done_reason"] == "load"
    (loaded,) = await client.running_models()
    assert not loaded.loading
    assert loaded.expires_at == preload + timedelta(minutes=5)
    assert loaded.size == 3 * GIB
    assert loaded.size_vram == 3 * GIB
    assert loaded.gpu_share == 100.0
    assert loaded.ram_spill == 0
    assert loaded.context_length == 2048
    assert not loaded.kept_forever(emulator.clock.now())


async def test_kept_forever_and_spill(client: OllamaClient, emulator: OllamaEmulator) -> None:
    emulator.add_model(EmulatedModel(name="huge:70b", size=10 * GIB))
    await ollama_request(emulator, "/api/generate", {"model": "huge:70b", "keep_alive": -1})
    (huge,) = await client.running_models()
    assert huge.kept_forever(emulator.clock.now())
    assert huge.size_vram == 8 * GIB
    assert huge.ram_spill == 2 * GIB
    assert huge.gpu_share == 80.0


async def test_legacy_server_without_context_length(
    session: aiohttp.ClientSession, socket_enabled: None
) -> None:
    legacy = OllamaEmulator(version="0.9.3", legacy_expires=True, report_context_length=False)
    legacy.add_model(EmulatedModel(name="tiny:latest", size=1000))
    url = await legacy.start()
    try:
        await ollama_request(legacy, "/api/generate", {"model": "tiny"})
        client = OllamaClient(session, url)
        assert await client.version() == "0.9.3"
        (tiny,) = await client.running_models()
        assert tiny.context_length is None
        assert tiny.expires_at is not None
    finally:
        await legacy.stop()


async def test_show(client: OllamaClient) -> None:
    info = await client.show(QWEN)
    assert info.family == "qwen3"
    assert info.context_length == 40960
    assert info.model_file is not None
    assert info.model_file.startswith("/")
    with pytest.raises(LlmModelNotFoundError):
        await client.show("nope:1b")


async def test_api_key_is_sent(session: aiohttp.ClientSession, socket_enabled: None) -> None:
    secured = OllamaEmulator(api_key="s3cret")
    url = await secured.start()
    try:
        with pytest.raises(LlmServerAuthenticationError):
            await OllamaClient(session, url).running_models()
        with pytest.raises(LlmServerAuthenticationError):
            await OllamaClient(session, url, api_key="wrong").running_models()
        assert await OllamaClient(session, url, api_key="s3cret").running_models() == ()
        assert secured.requests[-1].headers["Authorization"] == "Bearer s3cret"
    finally:
        await secured.stop()


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (401, '{"error": "unauthorized"}', LlmServerAuthenticationError),
        (403, "<html>Forbidden</html>", LlmServerAuthenticationError),
        (503, '{"error": "server busy, please try again."}', LlmServerBusyError),
        (500, '{"error": "cudaMalloc failed: out of memory"}', LlmServerOutOfMemoryError),
        (500, '{"error": "llama runner process has terminated"}', LlmServerResponseError),
        (502, "<html><body>Bad Gateway</body></html>", LlmServerResponseError),
        (200, "<html><body>Welcome to nginx</body></html>", LlmServerResponseError),
        (200, '["not", "an", "object"]', LlmServerResponseError),
        (200, '{"models": {"name": "x"}}', LlmServerResponseError),
        (200, '{"models": ["x"]}', LlmServerResponseError),
        (200, '{"models": [{"name": "x"}]}', LlmServerResponseError),
        (200, '{"models": [{"name": 3, "size": 1, "expires_at": "x"}]}', LlmServerResponseError),
        (
            200,
            '{"models": [{"name": "x", "size": 1, "size_vram": 1, "expires_at": "yesterday"}]}',
            LlmServerResponseError,
        ),
        (
            200,
            '{"models": [{"name": "x", "size": true, "expires_at": "2026-01-01T00:00:00Z"}]}',
            LlmServerResponseError,
        ),
        (
            200,
            '{"models": [{"name": "x", "size": 1, "expires_at": "2026-01-01T00:00:00"}]}',
            LlmServerResponseError,
        ),
    ],
)
async def test_ps_failures(
    client: OllamaClient, emulator: OllamaEmulator, status: int, body: str, error: type
) -> None:
    emulator.inject("/api/ps", status=status, body=body)
    with pytest.raises(error):
        await client.running_models()


async def test_null_models_is_empty(client: OllamaClient, emulator: OllamaEmulator) -> None:
    emulator.inject("/api/ps", status=200, body='{"models": null}')
    assert await client.running_models() == ()


async def test_tags_failures(client: OllamaClient, emulator: OllamaEmulator) -> None:
    emulator.inject("/api/tags", status=200, body='{"models": [{"name": ""}]}')
    with pytest.raises(LlmServerResponseError, match="/api/tags"):
        await client.installed_models()


async def test_not_ollama(client: OllamaClient, emulator: OllamaEmulator) -> None:
    emulator.inject(
        "/api/version", status=404, body="<html>Not Found</html>", content_type="text/html"
    )
    with pytest.raises(LlmServerNotSupportedError):
        await client.version()
    emulator.inject("/api/version", status=200, body='{"name": "llama-swap"}')
    with pytest.raises(LlmServerNotSupportedError, match="no version"):
        await client.version()
    emulator.inject("/api/version", status=200, body="Ollama is running", content_type="text/plain")
    with pytest.raises(LlmServerNotSupportedError):
        await client.version()


async def test_timeout(client: OllamaClient, emulator: OllamaEmulator) -> None:
    emulator.inject("/api/ps", hold=HeldAnswer())  # never released
    with pytest.raises(LlmServerTimeoutError):
        await client.running_models(timeout=0.2)


async def test_dropped_connection(client: OllamaClient, emulator: OllamaEmulator) -> None:
    # aiohttp retries an idempotent request once on a dropped connection: drop both.
    emulator.inject("/api/ps", drop=True, times=2)
    with pytest.raises(LlmServerConnectionError):
        await client.running_models()


async def test_unreachable(session: aiohttp.ClientSession, emulator: OllamaEmulator) -> None:
    url = emulator.url
    await emulator.stop()
    with pytest.raises(LlmServerConnectionError, match="Cannot reach"):
        await OllamaClient(session, url).version()


async def test_server_restart_between_requests(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    assert len(await client.running_models()) == 1
    await emulator.restart(version="0.13.0")
    assert await client.version() == "0.13.0"
    assert await client.running_models() == ()


def test_error_classes_share_a_base() -> None:
    for error in (
        LlmServerConnectionError,
        LlmServerTimeoutError,
        LlmServerAuthenticationError,
        LlmServerNotSupportedError,
        LlmServerResponseError,
        LlmModelNotFoundError,
        LlmServerBusyError,
        LlmServerOutOfMemoryError,
    ):
        assert issubclass(error, LlmServerError)


def test_parse_timestamp() -> None:
    assert parse_timestamp("0001-01-01T00:00:00Z") is None
    assert parse_timestamp("0001-01-01T00:00:00+01:00") is None
    parsed = parse_timestamp("2026-11-29T09:03:35.478036874-07:00")
    assert parsed == datetime(2026, 11, 29, 16, 3, 35, 478036, tzinfo=UTC)
    assert parsed.utcoffset() == timedelta(0)
    # Ollama's "forever": now + 292 years.
    assert parse_timestamp("2318-09-10T08:00:00Z") == datetime(2318, 9, 10, 8, tzinfo=UTC)
    with pytest.raises(ValueError, match="timezone"):
        parse_timestamp("2026-11-29T09:03:35")
    with pytest.raises(ValueError, match="not a timestamp"):
        parse_timestamp(None)
    # Past the largest datetime once in UTC; and years no server means.
    for text in ("9999-12-31T23:00:00-01:00", "9500-01-01T00:00:00Z", "1969-12-31T23:59:59Z"):
        with pytest.raises(ValueError, match="out of range"):
            parse_timestamp(text)
    with pytest.raises(ValueError, match="not a timestamp"):
        parse_timestamp("2026-11-29T09:03:35Z" + " " * 100)


async def test_error_body_that_is_json_but_not_an_error_object(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.inject("/api/ps", status=500, body='["boom"]')
    with pytest.raises(LlmServerResponseError, match=r'HTTP 500 \["boom"\]'):
        await client.running_models()


async def test_show_of_a_sparse_reply(client: OllamaClient, emulator: OllamaEmulator) -> None:
    emulator.inject("/api/show", status=200, body='{"model_info": [], "modelfile": "# none"}')
    info = await client.show(LLAMA)
    assert info.context_length is None
    assert info.model_file is None
    assert info.capabilities == ()


def test_url_credentials_and_api_key_are_exclusive(session: aiohttp.ClientSession) -> None:
    with pytest.raises(ValueError, match="not both"):
        OllamaClient(session, "http://u:p@gpu-box:11434", api_key="key")


def test_gpu_share_of_an_empty_model() -> None:
    from custom_components.llm_warmth.core.backends.types import (  # noqa: PLC0415
        ResidencyState,
        ResidentModel,
    )

    loaded = ResidencyState.LOADED
    assert ResidentModel(name="x", state=loaded, size=0, size_vram=0).gpu_share is None
    unknown = ResidentModel(name="x", state=loaded)
    assert (unknown.gpu_share, unknown.ram_spill) == (None, None)


@pytest.mark.parametrize("api", ["chat", "generate"])
async def test_timed_generation_stages(
    client: OllamaClient, emulator: OllamaEmulator, api: str
) -> None:
    model = emulator.models[LLAMA]
    model.load_delay, model.prefill_delay, model.token_delay = 0.2, 0.05, 0.01
    timed = await client.timed_generation(api, LLAMA, "hello there", options={"num_ctx": 4096})  # type: ignore[arg-type]
    assert timed.sent_ns < timed.headers_ns <= timed.first_token_ns < timed.final_ns
    assert timed.load_duration_ns >= 200_000_000
    assert timed.prompt_eval_duration_ns >= 50_000_000
    assert timed.eval_count == 3  # "Hello there friend"
    assert timed.done_reason == "stop"
    request = emulator.requests[-1]
    assert request.path == f"/api/{api}"
    assert "keep_alive" not in request.json
    assert request.json["options"] == {"num_ctx": 4096}
    # The first token came after load and prefill: the client saw both.
    assert timed.first_token_ns - timed.sent_ns >= 250_000_000


async def test_timed_generation_thinking_counts_as_first_token(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    model = emulator.models[LLAMA]
    model.thinking, model.token_delay = "Let me think", 0.05
    timed = await client.timed_generation("chat", LLAMA, "hi", options={"think": True})
    # Thinking chunks come first and count: the three content tokens (50 ms each) follow.
    assert timed.final_ns - timed.first_token_ns >= 2 * 50_000_000
    assert timed.first_token_ns - timed.headers_ns < timed.final_ns - timed.first_token_ns


async def test_timed_generation_one_chunk_reply(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.models[LLAMA].reply = "Yes"
    timed = await client.timed_generation("generate", LLAMA, "ready?")
    assert timed.first_token_ns == timed.final_ns
    assert timed.eval_count == 1


async def test_timed_generation_mid_stream_error(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.inject_stream_fault(kind="error_line", after_chunks=1)
    with pytest.raises(LlmServerResponseError, match="error was encountered"):
        await client.timed_generation("chat", LLAMA, "hi")
    emulator.inject_stream_fault(kind="error_line", message="CUDA error: out of memory")
    with pytest.raises(LlmServerOutOfMemoryError):
        await client.timed_generation("chat", LLAMA, "hi")


async def test_timed_generation_dropped_connection(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.inject_stream_fault(kind="drop", after_chunks=1)
    with pytest.raises(LlmServerConnectionError):
        await client.timed_generation("chat", LLAMA, "hi")


async def test_timed_generation_without_final_chunk(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.inject_stream_fault(kind="hang", after_chunks=1)
    with pytest.raises(LlmServerTimeoutError, match="no complete reply"):
        await client.timed_generation("chat", LLAMA, "hi", timeout=0.5)


async def test_timed_generation_stream_ends_early(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.inject(
        "/api/chat", status=200, body='{"message": {"content": "Hi"}, "done": false}\n\n',
        content_type="application/x-ndjson",
    )  # fmt: skip
    with pytest.raises(LlmServerConnectionError, match="without a final chunk"):
        await client.timed_generation("chat", LLAMA, "hi")


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (404, '{"error": "model \\"x\\" not found, try pulling it first"}', LlmModelNotFoundError),
        (503, '{"error": "server busy, please try again."}', LlmServerBusyError),
        (500, '{"error": "model requires more system memory (9 GiB)"}', LlmServerOutOfMemoryError),
    ],
)
async def test_timed_generation_http_errors(
    client: OllamaClient, emulator: OllamaEmulator, status: int, body: str, error: type
) -> None:
    emulator.inject("/api/generate", status=status, body=body)
    with pytest.raises(error):
        await client.timed_generation("generate", LLAMA, "hi")


async def test_timed_generation_unreachable(
    session: aiohttp.ClientSession, emulator: OllamaEmulator
) -> None:
    url = emulator.url
    await emulator.stop()
    with pytest.raises(LlmServerConnectionError):
        await OllamaClient(session, url).timed_generation("chat", LLAMA, "hi")


async def test_errors_never_show_url_credentials(
    session: aiohttp.ClientSession, socket_enabled: None
) -> None:
    client = OllamaClient(session, "http://user:s3cret@127.0.0.1:1")
    with pytest.raises(LlmServerConnectionError) as err:
        await client.version()
    assert "s3cret" not in str(err.value)
    assert "http://127.0.0.1:1" in str(err.value)
    with pytest.raises(LlmServerConnectionError) as err:
        await client.timed_generation("chat", LLAMA, "hi")
    assert "s3cret" not in str(err.value)


async def test_url_credentials_are_sent_as_basic_auth(
    session: aiohttp.ClientSession, emulator: OllamaEmulator
) -> None:
    url = emulator.url.replace("http://", "http://me:pa55@")
    assert await OllamaClient(session, url).running_models() == ()
    # base64("me:pa55")
    assert emulator.requests[-1].headers["Authorization"] == "Basic bWU6cGE1NQ=="


# What 10,000 fuzzed replies found (issue 7): each now ends in one of our own errors.
DEEP = "[" * 100_000 + "]" * 100_000
NDJSON = "application/x-ndjson"
REPLIES = "custom_components.llm_warmth.core.backends.replies"


@pytest.mark.parametrize("path", ["/api/version", "/api/ps", "/api/tags"])
@pytest.mark.parametrize("status", [200, 500])
async def test_deeply_nested_json_is_a_response_error(
    client: OllamaClient, emulator: OllamaEmulator, path: str, status: int
) -> None:
    emulator.inject(path, status=status, body=DEEP)
    call = {"/api/version": client.version, "/api/ps": client.running_models}.get(
        path, client.installed_models
    )
    with pytest.raises(LlmServerError):
        await call()


async def test_deeply_nested_stream_line_and_error_body(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.inject("/api/chat", status=200, body=DEEP + "\n", content_type=NDJSON)
    with pytest.raises(LlmServerResponseError, match="not JSON"):
        await client.timed_generation("chat", LLAMA, "hi")
    emulator.inject("/api/chat", status=500, body=DEEP)
    with pytest.raises(LlmServerResponseError, match="HTTP 500"):
        await client.timed_generation("chat", LLAMA, "hi")


async def test_oversize_stream_line_and_body(
    client: OllamaClient, emulator: OllamaEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "custom_components.llm_warmth.core.backends.replies.MAX_LINE_BYTES", 512 * 1024
    )
    monkeypatch.setattr(
        "custom_components.llm_warmth.core.backends.replies.MAX_REPLY_BYTES", 1 << 20
    )
    line = json.dumps({"message": {"content": "x" * (600 * 1024)}, "done": False})
    emulator.inject("/api/chat", status=200, body=line + "\n", content_type=NDJSON)
    with pytest.raises(LlmServerResponseError, match="stream line longer"):
        await client.timed_generation("chat", LLAMA, "hi")
    # The same line without its newline, in a stream that ends there.
    emulator.inject("/api/chat", status=200, body=line, content_type=NDJSON)
    with pytest.raises(LlmServerResponseError, match="stream line longer"):
        await client.timed_generation("chat", LLAMA, "hi")
    emulator.inject("/api/ps", status=200, body='{"models": [], "pad": "' + "x" * (2 << 20) + '"}')
    with pytest.raises(LlmServerResponseError, match="larger than"):
        await client.running_models()


async def test_lines_just_under_the_limit_are_read(
    client: OllamaClient, emulator: OllamaEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("custom_components.llm_warmth.core.backends.replies.MAX_LINE_BYTES", 4096)
    final = {"done": True, "done_reason": "stop", "eval_count": 2, "pad": "y" * 3000}
    body = "\n".join(
        json.dumps(chunk) for chunk in ({"message": {"content": "x" * 3000}, "done": False}, final)
    )
    emulator.inject("/api/chat", status=200, body=body, content_type=NDJSON)
    timed = await client.timed_generation("chat", LLAMA, "hi")
    assert timed.eval_count == 2


@pytest.mark.parametrize(
    "metrics",
    [
        {"load_duration": int("9" * 401)},
        {"eval_duration": int("9" * 401)},
        {"prompt_eval_count": 2**64 + 1},
        {"prompt_eval_duration": -1},
        {"eval_count": True},
        {"total_duration": 1.5},
    ],
)
async def test_final_chunk_numbers_are_bounded(
    client: OllamaClient, emulator: OllamaEmulator, metrics: dict[str, object]
) -> None:
    final = json.dumps({"message": {"content": "Hi"}, "done": True, **metrics})
    emulator.inject("/api/chat", status=200, body=final + "\n", content_type=NDJSON)
    with pytest.raises(LlmServerResponseError, match="unexpected final chunk"):
        await client.timed_generation("chat", LLAMA, "hi")


@pytest.mark.parametrize(
    "entry",
    [
        {"size": int("9" * 401)},
        {"size_vram": int("9" * 401)},
        {"size": 10, "size_vram": 11},
        {"context_length": True},
        {"context_length": 2**40},
        {"expires_at": "9999-12-31T23:00:00-01:00"},
        {"name": "x" * 300},
        {"size": "1"},
    ],
)
async def test_resident_values_are_checked_for_type_and_range(
    client: OllamaClient, emulator: OllamaEmulator, entry: dict[str, object]
) -> None:
    model = {"name": "x", "size": 10, "size_vram": 10, "expires_at": "2026-11-29T08:05:00Z"}
    body = json.dumps({"models": [model | entry]})
    emulator.inject("/api/ps", status=200, body=body)
    with pytest.raises(LlmServerResponseError, match="unexpected model entry"):
        await client.running_models()


@pytest.mark.parametrize("body", ['{"version": NaN}', '{"size": Infinity}', '{"version": "x"'])
async def test_json_constants_and_truncation_are_not_json(
    client: OllamaClient, emulator: OllamaEmulator, body: str
) -> None:
    emulator.inject("/api/ps", status=200, body=body)
    with pytest.raises(LlmServerResponseError, match="not JSON"):
        await client.running_models()


async def test_a_version_that_is_no_short_text_is_not_ollama(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.inject("/api/version", status=200, body=json.dumps({"version": "1" * 1000}))
    with pytest.raises(LlmServerNotSupportedError, match="no version"):
        await client.version()


async def test_show_ignores_odd_metadata(client: OllamaClient, emulator: OllamaEmulator) -> None:
    for odd in (True, -5, 2**40, "8192"):
        body = {"model_info": {"general.architecture": "llama", "llama.context_length": odd}}
        emulator.inject("/api/show", status=200, body=json.dumps(body))
        assert (await client.show(LLAMA)).context_length is None


@pytest.mark.parametrize("path", ["/api/ps", "/api/tags"])
async def test_a_model_listed_twice_is_a_response_error(
    client: OllamaClient, emulator: OllamaEmulator, path: str
) -> None:
    entry = {"name": "x", "size": 1, "size_vram": 1, "expires_at": "2026-11-29T08:05:00Z"}
    emulator.inject(path, status=200, body=json.dumps({"models": [entry, entry]}))
    call = client.running_models if path == "/api/ps" else client.installed_models
    with pytest.raises(LlmServerResponseError, match="listed twice"):
        await call()


OLLAMA_FIXTURES = Path(__file__).parent / "fixtures" / "ollama"


async def test_recorded_replies_of_ollama_0_9_3(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    """What the real server sent (scripts/record_fixtures), byte for byte, as it meant it."""

    def recorded(name: str) -> bytes:
        return (OLLAMA_FIXTURES / name).read_bytes()

    emulator.inject("/api/version", status=200, body=recorded("version.json"))
    assert await client.version() == "0.9.3"
    emulator.inject("/api/tags", status=200, body=recorded("tags.json"))
    assert sorted(m.name for m in await client.installed_models()) == [
        "big:latest",
        "tiny:latest",
    ]
    emulator.inject("/api/ps", status=200, body=recorded("ps_empty.json"))
    assert await client.running_models() == ()
    emulator.inject("/api/ps", status=200, body=recorded("ps_loaded.json"))
    (tiny,) = await client.running_models()
    assert (tiny.name, tiny.state, tiny.context_length) == ("tiny:latest", "loaded", None)
    assert tiny.size is not None
    assert tiny.size_vram == 0  # the CPU-only test server
    assert tiny.ram_spill == tiny.size
    # 0.10 s into a load, 0.9.3 lists the model as loaded already (a moving expiry, not
    # the zero one): why its moving expiry is a capability the tracker reads.
    emulator.inject("/api/ps", status=200, body=recorded("ps_loading.json"))
    (big,) = await client.running_models()
    assert (big.name, big.state) == ("big:latest", "loaded")
    emulator.inject("/api/show", status=200, body=recorded("show_tiny.json"))
    info = await client.show("tiny:latest")
    assert info.capabilities == ("completion",)
    for api in ("chat", "generate"):
        emulator.inject(
            f"/api/{api}",
            status=200,
            body=recorded(f"{api}_stream_tiny.ndjson"),
            content_type=NDJSON,
        )
        reply = await client.timed_generation(api, "tiny:latest", "Reply with one word: ready?")
        assert reply.eval_count == 4
        assert reply.load_duration_ns is not None
        assert reply.prompt_cached_count is None  # Ollama counts cached tokens in, unsaid
    status = int((OLLAMA_FIXTURES / "error_model_not_found.status").read_text())
    emulator.inject("/api/chat", status=status, body=recorded("error_model_not_found.json"))
    with pytest.raises(LlmModelNotFoundError, match="try pulling it first"):
        await client.timed_generation("chat", "nope", "hi")


CURRENT_FIXTURES = Path(__file__).parent / "fixtures" / "ollama_current"


async def test_recorded_replies_of_a_current_ollama(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    """What the real 0.34.4 sent (scripts/record_fixtures), and what the client makes of it."""

    def replay(path: str, name: str, content_type: str = "application/json") -> None:
        status_file = CURRENT_FIXTURES / Path(name).with_suffix(".status").name
        status = int(status_file.read_text()) if status_file.exists() else 200
        body = (CURRENT_FIXTURES / name).read_bytes()
        emulator.inject(path, status=status, body=body, content_type=content_type)

    replay("/api/version", "version.json")
    assert await client.version() == "0.34.4"
    # The version tells what this release does that its kind alone does not.
    assert not client.capabilities.lists_while_loading
    assert client.capabilities.reports_prompt_cache
    # Polled every 0.05 s through a cold load of big: nothing is listed until it is
    # loaded, then it is, with the context its runner got.
    replay("/api/ps", "ps_during_load.json")
    assert await client.running_models() == ()
    replay("/api/ps", "ps_after_load.json")
    (big,) = await client.running_models()
    assert (big.name, big.state, big.context_length) == ("big:latest", "loaded", 512)
    # On this CPU-only machine the weights llama.cpp repacked for the CPU's AMX units are
    # counted as the size_vram of a device: the server's figure, passed on as it is.
    assert (big.size, big.size_vram) == (1345123778, 1233125376)
    # Another num_ctx: reloaded, with the new context and a new size.
    replay("/api/ps", "ps_num_ctx_512.json")
    (small,) = await client.running_models()
    replay("/api/ps", "ps_num_ctx_2048.json")
    (large,) = await client.running_models()
    assert (small.context_length, large.context_length) == (512, 2048)
    assert large.size is not None
    assert small.size is not None
    assert large.size > small.size
    assert runner_key(small) != runner_key(large)
    # The same request again: the reply says how much of the prompt came from the cache.
    for name, cached in (("generate_reload_num_ctx.json", 0), ("generate_cached_prompt.json", 53)):
        replay("/api/generate", name, NDJSON)
        reply = await client.timed_generation("generate", "tiny:latest", "hi")
        assert (reply.prompt_eval_count, reply.prompt_cached_count) == (54, cached)
    # A short keep_alive: the expiry says when, and once it passed nothing is listed.
    replay("/api/ps", "ps_keep_2s.json")
    (kept,) = await client.running_models()
    assert kept.expires_at is not None
    for name in ("ps_expired.json", "ps_unloaded.json", "ps_after_restart.json"):
        replay("/api/ps", name)
        assert await client.running_models() == (), name
    replay("/api/version", "version_after_restart.json")
    assert await client.version() == "0.34.4"
    replay("/api/generate", "error_generate_unknown.json")
    with pytest.raises(LlmModelNotFoundError, match="'nope' not found"):
        await client.timed_generation("generate", "nope", "hi")
    replay("/api/show", "error_show_unknown.json")
    with pytest.raises(LlmModelNotFoundError, match="not found"):
        await client.show("nope")


async def test_https_to_a_plain_http_server_is_a_tls_error_not_an_outage(
    session: aiohttp.ClientSession, emulator: OllamaEmulator
) -> None:
    client = OllamaClient(session, emulator.url.replace("http://", "https://"))
    with pytest.raises(LlmServerTlsError) as err:
        await client.running_models()
    assert not isinstance(err.value, LlmServerUnreachableError)  # no restart follows


@pytest.mark.parametrize(
    ("keep_seconds", "num_ctx", "sent"),
    [
        (None, None, {"model": LLAMA}),  # its keep_alive stays as it is
        (-5, None, {"model": LLAMA, "keep_alive": -1}),  # for ever
        (0, None, {"model": LLAMA, "keep_alive": 1}),  # never 0: that would unload it
        (0.2, None, {"model": LLAMA, "keep_alive": 1}),
        (30.5, None, {"model": LLAMA, "keep_alive": 31}),  # whole seconds, rounded up
        (30, 8192, {"model": LLAMA, "keep_alive": 30, "options": {"num_ctx": 8192}}),
    ],
)
async def test_a_preload_asks_for_what_it_was_given(
    client: OllamaClient,
    emulator: OllamaEmulator,
    keep_seconds: float | None,
    num_ctx: int | None,
    sent: dict[str, object],
) -> None:
    await client.load(LLAMA, keep_seconds=keep_seconds, num_ctx=num_ctx)
    request = emulator.requests[-1]
    assert (request.path, request.json) == ("/api/generate", sent)


@pytest.mark.parametrize(
    ("api", "system", "think", "fields"),
    [
        ("generate", "Be brief.", None, {"prompt": "hi", "system": "Be brief."}),
        ("generate", None, False, {"prompt": "hi", "think": False}),
        (
            "chat",
            "Be brief.",
            True,
            {
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "hi"},
                ],
                "think": True,
            },
        ),
        ("chat", None, None, {"messages": [{"role": "user", "content": "hi"}]}),
    ],
)
async def test_a_generation_sends_its_system_prompt_and_thinking_only_when_given(
    client: OllamaClient,
    emulator: OllamaEmulator,
    api: str,
    system: str | None,
    think: bool | None,
    fields: dict[str, object],
) -> None:
    await client.timed_generation(api, LLAMA, "hi", system=system, think=think)  # type: ignore[arg-type]
    assert emulator.requests[-1].json == {"model": LLAMA, "stream": True, **fields}


async def test_an_unload_asks_for_keep_alive_0(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    await client.unload(LLAMA)
    assert emulator.requests[-1].json == {"model": LLAMA, "keep_alive": 0}


def _ps(**entry: object) -> str:
    base = {"name": LLAMA, "model": LLAMA, "size": GIB, "size_vram": GIB, "digest": "d"}
    base["expires_at"] = "2026-12-07T08:00:00Z"
    return json.dumps({"models": [base | entry]})


async def test_a_context_length_of_0_is_not_told(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.inject("/api/ps", status=200, body=_ps(context_length=0))
    (resident,) = await client.running_models()
    assert resident.context_length is None
    emulator.inject("/api/ps", status=200, body=_ps(context_length=4096))
    (resident,) = await client.running_models()
    assert resident.context_length == 4096


async def test_an_installed_model_without_a_size_has_size_0(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    emulator.inject("/api/tags", status=200, body=json.dumps({"models": [{"name": LLAMA}]}))
    (installed,) = await client.installed_models()
    assert installed.size == 0


async def test_show_reads_the_first_from_line_and_a_context_of_one(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    body = {
        "modelfile": "# made\nFROM /blobs/first\nFROM /blobs/second\n",
        "model_info": {"general.architecture": "llama", "llama.context_length": 1},
    }
    emulator.inject("/api/show", status=200, body=json.dumps(body))
    info = await client.show(LLAMA)
    assert (info.model_file, info.context_length) == ("/blobs/first", 1)
    body["model_info"] = {"general.architecture": "llama", "llama.context_length": 0}
    emulator.inject("/api/show", status=200, body=json.dumps(body))
    assert (await client.show(LLAMA)).context_length is None


async def test_the_first_token_is_text_or_the_end_never_a_number(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    """A chunk whose response is a number carries no text: the first token is the end."""
    lines = [
        {"model": LLAMA, "response": 5, "done": False},
        {"model": LLAMA, "response": "", "done": True, "done_reason": "stop"},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines)
    emulator.inject("/api/generate", status=200, body=body, content_type=NDJSON)
    timed = await client.timed_generation("generate", LLAMA, "hi")
    assert timed.first_token_ns == timed.final_ns


async def test_a_models_digest_is_read_from_both_lists(
    client: OllamaClient, emulator: OllamaEmulator
) -> None:
    """The digest tells one build of a name from another (a pull under the same tag)."""
    digest = emulator.models[LLAMA].digest
    assert len(digest) == 64
    installed = {m.name: m.digest for m in await client.installed_models()}
    assert installed[LLAMA] == digest
    await ollama_request(emulator, "/api/generate", {"model": LLAMA})
    (resident,) = await client.running_models()
    assert resident.digest == digest
