"""Normalising the address a user typed."""

import pytest

from custom_components.llm_warmth.core.server_url import (
    host_of,
    normalize_url,
    redact_url,
    unique_id_for,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("127.0.0.1", "http://127.0.0.1:11434"),
        ("  gpu-box  ", "http://gpu-box:11434"),
        ("http://GPU-Box:8080/", "http://gpu-box:8080"),
        ("http://gpu-box", "http://gpu-box:11434"),
        ("https://ollama.example.org", "https://ollama.example.org"),
        ("http://proxy.lan/ollama/", "http://proxy.lan/ollama"),
        ("https://u:p@proxy.lan:8443/ollama?x=1#y", "https://u:p@proxy.lan:8443/ollama"),
    ],
)
def test_normalize_url(raw: str, expected: str) -> None:
    assert normalize_url(raw, 11434) == expected


@pytest.mark.parametrize("raw", ["ftp://gpu-box", "http://", "", "http://:80"])
def test_normalize_url_rejects(raw: str) -> None:
    with pytest.raises(ValueError, match="not an http"):
        normalize_url(raw, 11434)


def test_unique_id_and_redaction_drop_credentials() -> None:
    url = "https://u:secret@proxy.lan:8443/ollama"
    assert unique_id_for(url) == "https://proxy.lan:8443/ollama"
    assert "secret" not in redact_url(url)
    assert redact_url(url) == "https://**REDACTED**@proxy.lan:8443/ollama"
    assert redact_url("http://gpu-box:11434") == "http://gpu-box:11434"


def test_a_password_without_a_user_is_redacted_too() -> None:
    assert redact_url("http://:s3cret@gpu-box:11434") == "http://**REDACTED**@gpu-box:11434"
    assert "s3cret" not in redact_url("http://:s3cret@gpu-box:11434")


def test_the_machine_a_url_names_is_its_host_in_lower_case() -> None:
    assert host_of("http://GPU-Box.lan:11434/ollama") == "gpu-box.lan"
    assert host_of("http://me:pw@10.0.0.5:8080") == "10.0.0.5"
    assert host_of("/relative") == ""
