"""What the config flow makes of what a user typed for a server (pure)."""

from hypothesis import given, strategies as st
import pytest

from custom_components.llm_warmth.core.backends.base import ServerKind
from custom_components.llm_warmth.core.server_settings import (
    FAILURE_RANK,
    KIND_TITLES,
    TRIED_PORTS,
    InputRefused,
    candidate_urls,
    entry_title,
    exporter_url,
    guard_host,
    most_telling,
)


def test_the_ports_tried() -> None:
    """llama-swap's and llama-server's 8080 once, Ollama's 11434 first."""
    assert TRIED_PORTS == (11434, 8080)


def test_a_url_without_a_port_tries_each_default() -> None:
    """A host alone: each default port in turn; a port typed: that one alone."""
    assert candidate_urls("gpu-box", "") == ("http://gpu-box:11434", "http://gpu-box:8080")
    assert candidate_urls(" http://GPU-box:9000/ ", "") == ("http://gpu-box:9000",)
    # Behind a reverse proxy the scheme's port is the one: one address.
    assert candidate_urls("https://llm.example.org", "key") == ("https://llm.example.org",)


@pytest.mark.parametrize("entered", ["", "   ", "ftp://gpu-box", "http://", "http://[::1"])
def test_no_usable_host(entered: str) -> None:
    """What names no http(s) host is refused as an invalid URL."""
    with pytest.raises(InputRefused) as err:
        candidate_urls(entered, "")
    assert err.value.key == "invalid_url"


def test_credentials_in_the_url_and_a_key() -> None:
    """Basic auth in the URL and a bearer token cannot go together; either alone can."""
    with pytest.raises(InputRefused) as err:
        candidate_urls("http://me:secret@gpu-box:11434", "key")
    assert err.value.key == "auth_conflict"
    assert err.value.args == ("auth_conflict",)
    assert candidate_urls("http://me:secret@gpu-box:11434", "") == (
        "http://me:secret@gpu-box:11434",
    )


@given(st.text(max_size=40), st.sampled_from(["", "key"]))
def test_anything_typed_gives_addresses_or_an_error_key(entered: str, api_key: str) -> None:
    """Whatever is typed: one or two distinct http(s) addresses, or a refusal's key."""
    try:
        found = candidate_urls(entered, api_key)
    except InputRefused as err:
        refused = err.key
    else:
        assert 1 <= len(found) <= len(TRIED_PORTS)
        assert len(set(found)) == len(found)
        assert all(url.startswith(("http://", "https://")) for url in found)
        return
    assert refused in ("invalid_url", "auth_conflict")


def test_the_most_telling_failure() -> None:
    """A refused key beats another kind, which beats a busy server, which beats silence."""
    keys = ["cannot_connect", "timeout", "tls_error", "not_supported", "invalid_auth", "unknown"]
    assert most_telling(keys, str) == "invalid_auth"
    assert most_telling(["timeout", "cannot_connect"], str) == "timeout"
    assert most_telling(["cannot_connect", "server_busy"], str) == "server_busy"
    assert most_telling(["unknown", "cannot_connect"], str) == "cannot_connect"
    assert most_telling(["not_supported", "openai_compatible"], str) == "not_supported"
    failures = [("a", "unexpected_response"), ("b", "tls_error")]
    assert most_telling(failures, lambda f: f[1]) == ("a", "unexpected_response")
    assert [FAILURE_RANK[k] for k in ("invalid_auth", "openai_compatible", "tls_error")] == [
        0,
        1,
        2,
    ]
    assert (FAILURE_RANK["cannot_connect"], FAILURE_RANK["unknown"]) == (3, 4)


def test_entry_titles() -> None:
    """The kind and the host with its port, never the credentials or a path."""
    assert entry_title(ServerKind.OLLAMA, "http://gpu-box:11434") == "Ollama gpu-box:11434"
    assert (
        entry_title(ServerKind.LLAMA_SWAP, "http://me:pw@gpu-box:8080/swap")
        == "llama-swap gpu-box:8080/swap"
    )
    assert entry_title(ServerKind.LLAMA_SERVER, "http://h:1") == "llama-server h:1"
    # Only the scheme is taken off: a path that names another URL stays whole.
    assert entry_title(ServerKind.OLLAMA, "http://h:1/to/http://x") == "Ollama h:1/to/http://x"
    assert set(KIND_TITLES) == set(ServerKind)


def test_the_guard_host() -> None:
    """Typed host trimmed and in lower case; nothing typed: the entry's own."""
    assert guard_host(" GPU-Box ", "nas") == "gpu-box"
    assert guard_host("", "nas") == "nas"
    assert guard_host("   ", "nas") == "nas"
    assert guard_host(None, "nas") == "nas"


def test_the_exporter_url() -> None:
    """Trimmed; nothing (or no text) typed is empty, which the flow then asks for."""
    assert exporter_url(" http://gpu-box:9400/metrics ") == "http://gpu-box:9400/metrics"
    assert exporter_url(None) == ""
    assert exporter_url(9400) == ""
