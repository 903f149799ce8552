"""The words people read: every translation key the code uses exists and renders.

In the spirit of Home Assistant core's ``check_translations``: the code is read (its
``translation_key=`` arguments, with the placeholders given beside them), and every key it
names must exist in ``translations/en.json`` with no placeholder the code does not give;
every key there must be used; the server errors render for the poll, the flow and the
actions with the placeholders those give; every sentence of core has its words under
``common``, with exactly the figures it carries.
"""

import ast
from collections.abc import Iterator
import json
from pathlib import Path
import string

import pytest

from custom_components.llm_warmth import errors
from custom_components.llm_warmth.core.backends.detection import OpenAiCompatibleError
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
)
from custom_components.llm_warmth.core.repairs import Kept, ThrashCause
from custom_components.llm_warmth.core.sentence import PLACEHOLDERS, Duration, Sentence

PACKAGE = Path(__file__).resolve().parent.parent / "custom_components" / "llm_warmth"
STRINGS = json.loads((PACKAGE / "translations" / "en.json").read_text())
# The platform whose entities a module describes.
PLATFORMS = {
    "sensor.py": "sensor",
    "sensor_descriptions.py": "sensor",
    "gpu_sensor.py": "sensor",
    "diagnosis_sensor.py": "sensor",
    "guard_sensor.py": "sensor",
    "assistant.py": "sensor",
    "binary_sensor.py": "binary_sensor",
    "switch.py": "switch",
    "number.py": "number",
}
EXCEPTION_CALLS = ("Error", "Failed", "NotReady", "Unauthorized")
# Elsewhere, the platform a description names (a module with entities of several).
DESCRIPTIONS = {
    "SwitchEntityDescription": "switch",
    "BinarySensorEntityDescription": "binary_sensor",
    "NumberEntityDescription": "number",
    "SensorEntityDescription": "sensor",
    "VoiceSensorDescription": "sensor",
    "ScoreDescription": "sensor",
    "UsageSensorDescription": "sensor",
}
# The values a repair's key is completed with (f"keep_alive_overrides_{what}" and the like).
KEY_ENDINGS = {
    "keep_alive_overrides_": [kept.value for kept in Kept],  # KeepAliveConflict.what
}


def fields(text: str) -> set[str]:
    """Return the placeholders a translated text needs."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def sources() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == name), None)


def given(node: ast.Call) -> set[str] | None:
    """Return the placeholder names a call gives (None: not a literal, cannot tell)."""
    value = keyword(node, "translation_placeholders")
    if value is None:
        return set()
    if isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) for k in value.keys):
        return {k.value for k in value.keys if isinstance(k, ast.Constant)}
    return None


def issue_keys(node: ast.expr) -> list[str]:
    """Return the keys a repair's key expression can take (a literal or an f-string)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr) and isinstance(node.values[0], ast.Constant):
        prefix = str(node.values[0].value)
        assert prefix in KEY_ENDINGS, f"a repair key {prefix}... whose endings are not known"
        suffix = "".join(str(v.value) for v in node.values[2:] if isinstance(v, ast.Constant))
        return [prefix + ending + suffix for ending in KEY_ENDINGS[prefix]]
    return []


def repairs() -> list[tuple[str, str, str, set[str] | None]]:
    """Return the issues core/repair_issues.py raises: its (key, {placeholders}) pairs.

    The placeholders are a dict literal, or a call of ``_thrash_placeholders`` (the names
    of the dict it returns and its keyword arguments).
    """
    path = PACKAGE / "core" / "repair_issues.py"
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            key, placeholders = node.elts
            names = _placeholder_names(tree, placeholders)
            if names is not None:
                found += [
                    ("issues", name, f"repair_issues.py:{node.lineno}", names)
                    for name in issue_keys(key)
                ]
    return found


def _placeholder_names(tree: ast.Module, node: ast.expr) -> set[str] | None:
    """Return the names a placeholders expression holds (None: not placeholders)."""
    if isinstance(node, ast.Dict):
        return {k.value for k in node.keys if isinstance(k, ast.Constant)}
    if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_thrash_placeholders"):
        return None
    (helper,) = [
        f
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.name == "_thrash_placeholders"
    ]
    common = next(n for n in ast.walk(helper) if isinstance(n, ast.Dict))
    told = {k.arg for k in node.keywords if k.arg is not None}
    spread = {
        k.value
        for kw in node.keywords
        if kw.arg is None and isinstance(kw.value, ast.Name)
        for assign in ast.walk(tree)
        if isinstance(assign, ast.Assign)
        and any(getattr(t, "id", None) == kw.value.id for t in assign.targets)
        and isinstance(assign.value, ast.Dict)
        for k in assign.value.keys
        if isinstance(k, ast.Constant)
    }
    return {k.value for k in common.keys if isinstance(k, ast.Constant)} | told | spread


def uses() -> list[tuple[str, str, str, set[str] | None]]:
    """Return (section, key, where, placeholders given) for each key in the code."""
    found = repairs()
    for path, tree in sources():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            key = keyword(node, "translation_key")
            # A key, or one of two ("a" if ... else "b"): each is checked.
            keys = [key.body, key.orelse] if isinstance(key, ast.IfExp) else [key]
            texts_of = [k.value for k in keys if isinstance(k, ast.Constant)]
            if not texts_of or not all(isinstance(k, str) for k in texts_of):
                continue
            name, where = called(node), f"{path.name}:{node.lineno}"
            if name == "async_create_issue":
                section = "issues"
            elif name.endswith(EXCEPTION_CALLS):
                section = "exceptions"
            else:
                platform = PLATFORMS.get(path.name) or DESCRIPTIONS.get(name)
                assert platform, f"{where}: {name}(translation_key=...) of no known platform"
                section = f"entity.{platform}"
            found.extend((section, k, where, given(node)) for k in texts_of)
    return found


def lookup(section: str) -> dict[str, dict[str, str]]:
    table = STRINGS
    for part in section.split("."):
        table = table[part]
    return table


def texts(entry: object) -> list[str]:
    if isinstance(entry, str):
        return [entry]
    assert isinstance(entry, dict)
    return [t for value in entry.values() for t in texts(value)]


def test_the_code_reads_keys_of_every_kind() -> None:
    """The scan itself finds what it looks for (a scan that finds nothing proves nothing)."""
    sections = {section for section, *_ in uses()}
    assert {"issues", "exceptions", "entity.sensor", "entity.binary_sensor"} <= sections
    assert {key for _, key, _, _ in repairs()} >= {
        f"reload_thrash_{cause.value}" for cause in ThrashCause
    }
    assert "keep_alive_overrides_preload_forever" in {key for _, key, _, _ in repairs()}


@pytest.mark.parametrize(
    ("section", "key", "where", "placeholders"),
    uses(),
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_every_key_the_code_uses_exists_and_renders(
    section: str, key: str, where: str, placeholders: set[str] | None
) -> None:
    table = lookup(section)
    assert key in table, f"{where}: {section}.{key} is not in translations/en.json"
    if placeholders is None or section.startswith("entity."):
        return  # built at run time (tested below), or entity names (no placeholders)
    needed = set().union(*(fields(text) for text in texts(table[key])))
    assert needed <= placeholders, f"{where}: {section}.{key} needs {needed - placeholders}"


def test_no_key_is_left_unused() -> None:
    """Every exception, issue, entity and abort key is named somewhere in the code."""
    constants = {
        node.value
        for _, tree in sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    } | {key for _, key, _, _ in repairs()}
    sections = ["exceptions", "issues", "config.abort", "config.error"] + [
        f"entity.{platform}" for platform in STRINGS["entity"]
    ]
    unused = [
        f"{section}.{key}"
        for section in sections
        for key in lookup(section)
        # Home Assistant's own flow helpers abort with these three.
        if key not in constants
        and key not in {"already_configured", "reauth_successful", "reconfigure_successful"}
    ]
    assert unused == []


ERRORS: list[LlmServerError] = [
    LlmServerAuthenticationError("refused"),
    OpenAiCompatibleError("vllm"),
    LlmServerTimeoutError("slow"),
    LlmServerTlsError("handshake"),
    LlmServerConnectionError("refused"),
    LlmServerNotSupportedError("a web server"),
    LlmModelNotFoundError("no such model"),
    LlmServerBusyError("queue full"),
    LlmServerOutOfMemoryError("cudaMalloc failed"),
    LlmServerResponseError("not JSON"),
]


def test_every_reason_an_unknown_sensor_gives_has_its_words() -> None:
    """A sensor with no value says why (its ``reason`` attribute): each reason in words."""
    from custom_components.llm_warmth.sensor_descriptions import (  # noqa: PLC0415
        MODEL_SENSORS,
    )
    from custom_components.llm_warmth.usage_entities import NEXT_USE  # noqa: PLC0415
    from custom_components.llm_warmth.voice_entities import VOICE_SENSORS  # noqa: PLC0415

    described = [
        (d.key, d.translation_key, d.reasons)
        for d in (*MODEL_SENSORS, NEXT_USE, *VOICE_SENSORS)
        if d.reasons
    ]
    assert {key for key, _, _ in described} >= {
        "last_measured_load_duration",
        "last_cold_request_duration",
        "unloads_at",
        "next_expected_use",
        "voice_silence",
    }
    for key, translation_key, reasons in described:
        words = STRINGS["entity"]["sensor"][translation_key]["state_attributes"]["reason"]
        assert words["name"], key
        assert set(words["state"]) == {reason.value for reason in reasons}, key


def test_every_server_error_has_its_words() -> None:
    """The table maps each error; each key exists for the actions, and for the flow too."""
    keys = {errors.translation_key(err) for err in ERRORS}
    assert len(keys) == len(ERRORS)  # each error its own words
    for key in keys:
        assert key in STRINGS["exceptions"], key
    for err in ERRORS:
        assert errors.server_translation_key(err) in STRINGS["config"]["error"]


@pytest.mark.parametrize(
    "err",
    # A refused key is no poll failure: the coordinator starts re-authentication instead.
    [err for err in ERRORS if not isinstance(err, LlmServerAuthenticationError)],
    ids=lambda err: type(err).__name__,
)
def test_a_poll_failure_renders_and_names_the_server(err: LlmServerError) -> None:
    failure = errors.update_failed(err, "http://gpu-box:11434")
    assert failure.translation_key is not None
    assert failure.translation_placeholders is not None
    message = STRINGS["exceptions"][failure.translation_key]["message"]
    rendered = message.format(**failure.translation_placeholders)
    assert "http://gpu-box:11434" in rendered


def test_every_sentence_has_its_words_with_exactly_its_figures() -> None:
    """Core's sentences (summaries, verdicts, idle profiles) each have a translation.

    Each one shows exactly the figures a sentence of its key carries (``Sentence``
    refuses to be made with others), and there is no translation without a sentence.
    """
    common = STRINGS["common"]
    assert sorted(common) == sorted(PLACEHOLDERS)
    wrong = {
        key: (sorted(fields(common[key])), sorted(names))
        for key, names in PLACEHOLDERS.items()
        if fields(common[key]) != names
    }
    assert wrong == {}


def test_a_sentence_with_other_figures_than_its_words_show_is_refused() -> None:
    with pytest.raises(ValueError, match="shows"):
        Sentence("probe_warm", {"ttft": Duration(80.0), "load": Duration(1.0)})
    with pytest.raises(ValueError, match="no sentence"):
        Sentence("probe_lukewarm", {"ttft": Duration(80.0)})
