"""The documentation a user reads: README.md in one go, the rest as pages under docs/.

Every relative link (a page, an image, an anchor) must lead somewhere that exists, as
GitHub renders it; every page is linked from the README; and the ownership page names
every store section and every part of an entry's runtime data, read from the code.
"""

from collections import Counter
from collections.abc import Iterable
import dataclasses
from pathlib import Path
import re
from urllib.parse import unquote

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
import pytest

from custom_components.llm_warmth.const import DOMAIN
from custom_components.llm_warmth.data import LlmWarmthData
from custom_components.llm_warmth.storage import STORAGE_MINOR_VERSION, STORAGE_VERSION

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
OWNERSHIP = DOCS / "ownership.md"
PAGES = sorted(DOCS.glob("*.md"))
MARKDOWN = [README, *PAGES]
# What a person reads in one go.
README_MOST_LINES = 400

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_INLINE_CODE = re.compile(r"(`+).+?\1")
# The target of a link or an image: [text](target "title"), ![alt](<target>).
_LINK = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_HTML_ANCHOR = re.compile(r"<a\s[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name


def _prose(path: Path) -> list[str]:
    """Return the file's lines, fenced code blocks blanked out (their links are code)."""
    lines = []
    fence: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if match := _FENCE.match(line):
            marker = match.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
            lines.append("")
            continue
        lines.append("" if fence else line)
    return lines


def slug(heading: str) -> str:
    """Return the anchor GitHub gives a heading (before the -1, -2 of duplicates)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Return the anchors of a Markdown file: its headings' and its explicit ones."""
    found: set[str] = set()
    seen: Counter[str] = Counter()
    for line in _prose(path):
        if match := _HEADING.match(line):
            base = slug(match.group(1))
            found.add(f"{base}-{seen[base]}" if seen[base] else base)
            seen[base] += 1
        found.update(_HTML_ANCHOR.findall(line))
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """Return (line number, target) of every link and image outside code."""
    return [
        (number, target)
        for number, line in enumerate(_prose(path), start=1)
        for target in _LINK.findall(_INLINE_CODE.sub("", line))
    ]


def broken_links(path: Path) -> list[str]:
    """Return a line per relative link of ``path`` that leads nowhere."""
    broken = []
    for number, target in links(path):
        if _SCHEME.match(target):
            continue  # http(s), mailto: not followed
        where = f"{_name(path)}:{number}: ({target})"
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not destination.exists():
            broken.append(f"{where} no such file: {_name(destination)}")
        elif anchor and destination.suffix != ".md":
            broken.append(f"{where} an anchor into a file that is not Markdown")
        elif anchor and unquote(anchor) not in anchors(destination):
            broken.append(f"{where} no heading or anchor #{anchor} in {_name(destination)}")
    return broken


def test_there_are_pages() -> None:
    """The README is not the only page (docs/*.md is found where this test looks)."""
    assert len(PAGES) >= 10, PAGES


@pytest.mark.parametrize("path", MARKDOWN, ids=_name)
def test_every_relative_link_resolves(path: Path) -> None:
    """Each link, image and anchor of a page leads to a file and a heading that exist."""
    assert links(path), f"{_name(path)} links nowhere"
    broken = broken_links(path)
    assert not broken, "\n".join(broken)


def test_the_readme_is_read_in_one_go() -> None:
    """README.md keeps to what a user reads in one go."""
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MOST_LINES, f"README.md has {lines} lines"


def test_every_page_is_linked_from_the_readme() -> None:
    """Each docs/*.md page is reachable from the README."""
    linked = {(README.parent / unquote(t.partition("#")[0])).resolve() for _, t in links(README)}
    missing = [_name(page) for page in PAGES if page.resolve() not in linked]
    assert not missing, f"not linked from README.md: {missing}"


def test_the_readme_keeps_the_fresh_machine_commands() -> None:
    """The two commands that set up and test everything on a fresh machine stay in sight."""
    text = README.read_text(encoding="utf-8")
    assert "scripts/setup" in text
    assert "scripts/test" in text


def _unnamed(names: Iterable[str]) -> list[str]:
    """Return the names the ownership page does not give as code (`name`)."""
    text = OWNERSHIP.read_text(encoding="utf-8")
    return sorted(name for name in names if f"`{name}`" not in text)


def test_the_ownership_page_names_every_part_of_the_runtime_data() -> None:
    """Each field of an entry's runtime data (a feature, a coordinator) has its row."""
    fields = [field.name for field in dataclasses.fields(LlmWarmthData)]
    assert "pins" in fields
    assert not _unnamed(fields), f"{_name(OWNERSHIP)} does not name {_unnamed(fields)}"


async def test_the_ownership_page_names_every_store_section_and_the_store_version(
    hass: HomeAssistant, hass_storage: dict[str, object], init_integration: ConfigEntry
) -> None:
    """Each section an entry writes, and the version it writes, are on the ownership page.

    The sections are those the running code registers: an entry is set up against the
    emulator and unloaded, which writes every section a last time.
    """
    assert await hass.config_entries.async_unload(init_integration.entry_id)
    await hass.async_block_till_done()
    stored = hass_storage[f"{DOMAIN}.{init_integration.entry_id}"]
    assert isinstance(stored, dict)
    sections = sorted(stored["data"])
    assert "pins" in sections
    assert not _unnamed(sections), f"{_name(OWNERSHIP)} does not name {_unnamed(sections)}"
    assert (stored["version"], stored["minor_version"]) == (STORAGE_VERSION, STORAGE_MINOR_VERSION)
    version = f"{STORAGE_VERSION}.{STORAGE_MINOR_VERSION}"
    assert not _unnamed([version]), f"{_name(OWNERSHIP)} does not name the store's {version}"


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("`llm_warmth.dashboard`: a ready dashboard", "llm_warmthdashboard-a-ready-dashboard"),
        ("`llm_warmth.pin` / `llm_warmth.unpin`: keep", "llm_warmthpin--llm_warmthunpin-keep"),
        ("How it works, and known limitations", "how-it-works-and-known-limitations"),
        ("Voice devices (one per Assist pipeline)", "voice-devices-one-per-assist-pipeline"),
        ("See [the card](card.md) → *now*", "see-the-card--now"),
    ],
)
def test_slug_follows_github(heading: str, anchor: str) -> None:
    """Anchors are made as GitHub makes them (underscores kept, punctuation dropped)."""
    assert slug(heading) == anchor


def test_a_broken_link_and_a_missing_anchor_are_found(tmp_path: Path) -> None:
    """The checker itself: a missing file, a missing anchor, a duplicate's suffix."""
    (tmp_path / "other.md").write_text("# Other\n\n## A `code` heading\n", encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"")
    page = tmp_path / "page.md"
    page.write_text(
        '# Title\n\n## Twice\n\n## Twice\n\n<a id="kept"></a>\n\n'
        "[ok](#twice-1) [ok](#kept) [ok](other.md#a-code-heading) ![ok](image.png)\n"
        "[skipped](https://example.org/x#y) `[code](nowhere.md)`\n"
        "[gone](no-such-page.md) [no anchor](#twice-2) [no anchor](other.md#b)\n\n"
        "```md\n[in a fence](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert [line.split(": ", 1)[1] for line in broken_links(page)] == [
        "(no-such-page.md) no such file: no-such-page.md",
        "(#twice-2) no heading or anchor #twice-2 in page.md",
        "(other.md#b) no heading or anchor #b in other.md",
    ]


def test_the_ownership_page_names_every_module() -> None:
    """Each module of the package is on the ownership page, by its path in the package."""
    package = ROOT / "custom_components" / "llm_warmth"
    modules = [
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if path.name != "__init__.py" or path.parent == package
    ]
    assert "core/backends/ollama.py" in modules
    assert not _unnamed(modules), f"{_name(OWNERSHIP)} does not name {_unnamed(modules)}"
