"""What HACS and Home Assistant check before they install the integration."""

from __future__ import annotations

import json
from pathlib import Path

from awesomeversion import AwesomeVersion as parse_version
from homeassistant.const import __version__ as HA_VERSION

ROOT = Path(__file__).resolve().parent.parent
INTEGRATION = ROOT / "custom_components" / "llm_warmth"


def test_hacs_finds_what_it_needs() -> None:
    """HACS needs a license, its hacs.json, and one integration under custom_components."""
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    hacs = json.loads((ROOT / "hacs.json").read_text())
    assert hacs["name"] == "LLM Warmth"
    # The oldest Home Assistant with what the integration uses (child devices: 2026.10).
    assert parse_version(hacs["homeassistant"]) <= parse_version(HA_VERSION)
    assert parse_version(hacs["homeassistant"]) >= parse_version("2026.10.0")
    assert [p.name for p in (ROOT / "custom_components").iterdir() if p.is_dir()] == ["llm_warmth"]


def test_the_manifest_is_complete() -> None:
    """The keys Home Assistant requires of a custom integration, and those HACS shows."""
    manifest = json.loads((INTEGRATION / "manifest.json").read_text())
    for key in (
        "domain",
        "name",
        "codeowners",
        "config_flow",
        "documentation",
        "integration_type",
        "iot_class",
        "issue_tracker",
        "requirements",
        "version",
    ):
        assert manifest.get(key) not in (None, ""), key
    assert manifest["domain"] == INTEGRATION.name
    assert parse_version(manifest["version"]).valid  # a custom integration needs one
    # requirements.txt mirrors the manifest (the test environment installs it).
    pinned = [
        line
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert pinned == manifest["requirements"]
    # The brand images Home Assistant serves for a custom integration.
    assert (INTEGRATION / "brand" / "icon.png").is_file()
