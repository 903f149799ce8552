"""``Any`` only where untyped data enters, each such place named (and nowhere else).

The integration's own data is typed records: ``Any`` is allowed only where a server's, a
library's or Home Assistant's untyped data comes in (a reply's JSON, pynvml's handles, a
form's input, an event's data, a stored file, ``services.yaml``) or where Home Assistant's
own signature says ``Any``. Each place is named below with why, and
``docs/development.md`` names each module: ``Any`` anywhere else fails this test, and so
does a place named here that no longer uses it (the list stays true).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "custom_components" / "llm_warmth"

# Each module's places (a function's or class's qualified name; "<module>": at its top
# level) where Any is allowed, and why.
SERVER_REPLY = "a server's reply as decoded JSON, read and checked field by field here"
FORM_INPUT = "what a user typed in a flow's form (Home Assistant's flow signatures)"
HA_KWARGS = "Home Assistant's ToggleEntity signature: async_turn_on/off(**kwargs: Any)"
STORED = "a record as the store read it from its JSON file, checked by the reader given"
ALLOWED: dict[str, tuple[str, frozenset[str]]] = {
    "core/backends/http.py": (SERVER_REPLY, frozenset({"HttpTransport.request"})),
    "core/backends/replies.py": (
        SERVER_REPLY,
        frozenset(
            {"decode_json", "decode_object", "optional_bounded_int", "optional_str", "required_str"}
        ),
    ),
    "core/backends/ollama.py": (
        SERVER_REPLY,
        frozenset(
            {
                "_details",
                "_has_content",
                "_model_list",
                "_parse_installed",
                "_parse_resident",
                "_parse_show",
            }
        ),
    ),
    "core/backends/llama_server.py": (
        SERVER_REPLY,
        frozenset(
            {
                "LlamaServerClient._models",
                "_context_length",
                "_failed",
                "_resident_of",
                "_status",
            }
        ),
    ),
    "core/backends/llama_swap.py": (
        SERVER_REPLY,
        frozenset({"LlamaSwapClient._running", "_model_type", "_peer_id", "_residents", "_served"}),
    ),
    "core/backends/openai_stream.py": (
        "a streamed reply's chunks as decoded JSON (OpenAI's server-sent events)",
        frozenset(
            {"WatchedStream", "_first_choice", "_has_content", "_timed", "read_openai_stream"}
        ),
    ),
    "core/gpu/nvml.py": (
        "pynvml, an untyped library: its module, its handles and what its calls return",
        frozenset(
            {
                "<module>",
                "NvmlSource.__init__",
                "NvmlSource._processes",
                "NvmlSource._read_gpu.optional",
            }
        ),
    ),
    "config_flow.py": (
        FORM_INPUT,
        frozenset(
            {
                "LlmWarmthConfigFlow._async_validate",
                "LlmWarmthConfigFlow.async_step_reauth",
                "LlmWarmthConfigFlow.async_step_reauth_confirm",
                "LlmWarmthConfigFlow.async_step_reconfigure",
                "LlmWarmthConfigFlow.async_step_system",
                "LlmWarmthConfigFlow.async_step_user",
            }
        ),
    ),
    "options_flow.py": (
        FORM_INPUT,
        frozenset(
            {"LlmWarmthOptionsFlow.async_step_exporter", "LlmWarmthOptionsFlow.async_step_init"}
        ),
    ),
    "assistant_flow.py": (
        FORM_INPUT + "; the form's schema, keyed by voluptuous markers",
        frozenset(
            {
                "WarmAssistantFlow._ask",
                "WarmAssistantFlow._refused",
                "WarmAssistantFlow.async_step_reconfigure",
                "WarmAssistantFlow.async_step_user",
            }
        ),
    ),
    "signals_flow.py": (
        FORM_INPUT,
        frozenset(
            {
                "_chosen",
                "WarmingSignalsFlow.async_step_entities",
                "WarmingSignalsFlow.async_step_reconfigure",
                "WarmingSignalsFlow.async_step_user",
            }
        ),
    ),
    "gpu_coordinator.py": (
        "an entry's options (Home Assistant's Mapping[str, Any])",
        frozenset({"gpu_source_from_options"}),
    ),
    "logbook.py": (
        "an event's data from Home Assistant's bus, as the logbook hands it over",
        frozenset(
            {
                "<module>",
                "_auto_warm",
                "_loaded",
                "_restarted",
                "_seconds",
                "_unloaded",
                "_voice_turn",
            }
        ),
    ),
    "diagnostics.py": (
        "Home Assistant's diagnostics signature (dict[str, Any]), in its parts",
        frozenset({"async_get_config_entry_diagnostics", "_entry", "_snapshot", "_gpu"}),
    ),
    "services.py": (
        "services.yaml as Home Assistant's YAML loader reads it, kept in hass.data",
        frozenset({"<module>"}),
    ),
    "entity.py": (
        "the bound of the entity's coordinator type: a DataUpdateCoordinator of any data "
        "(its type parameter is invariant, so no narrower bound admits every coordinator)",
        frozenset({"LlmWarmthEntity"}),
    ),
    "feature.py": (STORED, frozenset({"ModelRecords.__init__"})),
    "storage.py": (STORED, frozenset({"stored_records"})),
    "switch.py": (
        HA_KWARGS,
        frozenset({"KeepWarmSwitch.async_turn_on", "KeepWarmSwitch.async_turn_off"}),
    ),
    "usage_entities.py": (
        HA_KWARGS,
        frozenset({"AutoWarmSwitch.async_turn_on", "AutoWarmSwitch.async_turn_off"}),
    ),
    "voice_entities.py": (
        HA_KWARGS,
        frozenset({"WarmOnWakeSwitch.async_turn_on", "WarmOnWakeSwitch.async_turn_off"}),
    ),
}


def any_places(source: str) -> set[str]:
    """Return where ``source`` uses ``Any`` (or ``typing.Any``): each qualified name.

    An import of it is no use of it; a use in a def's signature counts for that def.
    """
    found: set[str] = set()

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, (*scope, child.name))
                continue
            if (isinstance(child, ast.Name) and child.id == "Any") or (
                isinstance(child, ast.Attribute) and child.attr == "Any"
            ):
                found.add(".".join(scope) or "<module>")
            visit(child, scope)

    visit(ast.parse(source), ())
    return found


def package_places() -> dict[str, set[str]]:
    """Return each module of the package that uses Any, with where."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        places = any_places(path.read_text())
        if places:
            found[path.relative_to(PACKAGE).as_posix()] = places
    return found


def test_the_scan_finds_any_in_every_kind_of_place() -> None:
    """A scan that found nothing would let everything through: it is tried on each form."""
    source = """
import typing
from typing import Any

ALIAS: dict[str, Any] = {}

def reads(value: Any) -> int: ...

def answers() -> list[Any]: ...

async def turns(**kwargs: Any) -> None: ...

class Entity[T: list[Any]]:
    def method(self) -> typing.Any:
        def inner(x: int = typing.cast(Any, 1)) -> None: ...

def typed(value: object) -> int: ...
"""
    assert any_places(source) == {
        "<module>",
        "reads",
        "answers",
        "turns",
        "Entity",
        "Entity.method",
        "Entity.method.inner",
    }
    assert any_places("from typing import Any\n\ndef f(x: object) -> None: ...\n") == set()


def test_any_is_used_only_where_untyped_data_enters() -> None:
    unnamed = sorted(
        f"{module}: {place}"
        for module, places in package_places().items()
        for place in places - ALLOWED.get(module, ("", frozenset()))[1]
    )
    assert unnamed == [], "Any outside the named edges: type it, or name the place and why"


def test_every_named_place_still_uses_any() -> None:
    """A place typed since is taken off the list, so that the list says what is true."""
    found = package_places()
    stale = sorted(
        f"{module}: {place}"
        for module, (_, places) in ALLOWED.items()
        for place in places - found.get(module, set())
    )
    assert stale == []


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_the_development_page_names_each_edge(module: str) -> None:
    """docs/development.md says where Any is allowed: each module of the list, by path."""
    page = (ROOT / "docs" / "development.md").read_text()
    assert f"`{module}`" in page
