"""Config, reconfigure, reauth and options flows (100% of config_flow.py)."""

from collections.abc import AsyncIterator, Callable
import json
from pathlib import Path
from typing import Literal
from unittest.mock import patch

from homeassistant.components import conversation
from homeassistant.components.conversation.const import DATA_COMPONENT as CONVERSATION_AGENTS
from homeassistant.config_entries import SOURCE_USER
from homeassistant.const import CONF_API_KEY, CONF_SCAN_INTERVAL, CONF_URL, CONF_VERIFY_SSL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.selector import NumberSelector
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.llm_warmth import config_flow, options_flow
from custom_components.llm_warmth.const import DOMAIN
from custom_components.llm_warmth.core.assistant_route import MAX_WAIT_SECONDS

from .llama_server_emulator import EmulatedLlamaModel, LlamaServerEmulator
from .ollama_emulator import OllamaEmulator


@pytest.fixture
async def secured(socket_enabled: None) -> OllamaEmulator:
    server = OllamaEmulator(api_key="s3cret")
    await server.start()
    yield server
    await server.stop()


async def test_user_flow(hass: HomeAssistant, emulator: OllamaEmulator) -> None:
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    assert result["errors"] == {}
    host_port = emulator.url.removeprefix("http://")
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: f" {host_port}/ ", CONF_VERIFY_SSL: True}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == f"Ollama {host_port}"
    assert result["data"] == {
        CONF_URL: emulator.url,
        CONF_API_KEY: "",
        CONF_VERIFY_SSL: True,
        "server_kind": "ollama",
    }
    assert result["result"].unique_id == emulator.url


@pytest.mark.parametrize(
    ("prepare", "error"),
    [
        ("stopped", "cannot_connect"),
        ("html", "not_supported"),
        ("bad_url", "invalid_url"),
        ("both_credentials", "auth_conflict"),
        ("crash", "unknown"),
    ],
)
async def test_user_flow_errors_then_recovers(
    hass: HomeAssistant, emulator: OllamaEmulator, prepare: str, error: str
) -> None:
    url = emulator.url
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    user_input = {CONF_URL: url, CONF_API_KEY: "", CONF_VERIFY_SSL: True}
    if prepare == "stopped":
        await emulator.stop()
    elif prepare == "html":
        emulator.inject("/api/version", status=200, body="<html/>", content_type="text/html")
    elif prepare == "bad_url":
        user_input[CONF_URL] = "ftp://gpu-box"
    elif prepare == "both_credentials":
        user_input[CONF_URL] = url.replace("http://", "http://user:pw@")
        user_input[CONF_API_KEY] = "key"
    with (
        patch(
            "custom_components.llm_warmth.config_flow.detect",
            side_effect=RuntimeError("boom"),
        )
        if prepare == "crash"
        else _Nothing()
    ):
        result = await hass.config_entries.flow.async_configure(result["flow_id"], user_input)
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": error}
    if prepare == "stopped":
        await emulator.start()
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {**user_input, CONF_URL: url, CONF_API_KEY: ""}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY


async def test_user_flow_invalid_auth(hass: HomeAssistant, secured: OllamaEmulator) -> None:
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: secured.url, CONF_API_KEY: "wrong", CONF_VERIFY_SSL: True}
    )
    assert result["errors"] == {"base": "invalid_auth"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: secured.url, CONF_API_KEY: "s3cret", CONF_VERIFY_SSL: True}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_API_KEY] == "s3cret"


async def test_user_flow_duplicate(
    hass: HomeAssistant, emulator: OllamaEmulator, mock_config_entry: MockConfigEntry
) -> None:
    mock_config_entry.add_to_hass(hass)
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: emulator.url + "/", CONF_VERIFY_SSL: True}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"


async def test_reconfigure(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    other = OllamaEmulator()
    await other.start()
    try:
        result = await init_integration.start_reconfigure_flow(hass)
        assert result["step_id"] == "reconfigure"
        await other.stop()
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: other.url, CONF_VERIFY_SSL: True}
        )
        assert result["errors"] == {"base": "cannot_connect"}
        await other.start()
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: other.url, CONF_VERIFY_SSL: True}
        )
        assert result["type"] is FlowResultType.ABORT
        assert result["reason"] == "reconfigure_successful"
        assert init_integration.data[CONF_URL] == other.url
        assert init_integration.unique_id == other.url
    finally:
        await hass.async_block_till_done()
        await hass.config_entries.async_unload(init_integration.entry_id)
        await other.stop()


async def test_reconfigure_same_server_keeps_unique_id(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    result = await init_integration.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: emulator.url, CONF_VERIFY_SSL: False}
    )
    assert result["reason"] == "reconfigure_successful"
    assert init_integration.data[CONF_VERIFY_SSL] is False


async def test_reconfigure_onto_another_configured_server(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    other = OllamaEmulator()
    await other.start()
    try:
        MockConfigEntry(
            domain=DOMAIN,
            version=2,
            unique_id=other.url,
            data={CONF_URL: other.url, "server_kind": "ollama"},
        ).add_to_hass(hass)
        result = await init_integration.start_reconfigure_flow(hass)
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: other.url, CONF_VERIFY_SSL: True}
        )
        assert result["type"] is FlowResultType.ABORT
        assert result["reason"] == "already_configured"
        assert init_integration.data[CONF_URL] == emulator.url
    finally:
        await other.stop()


async def test_reconfigure_onto_a_server_of_another_kind_is_refused(
    hass: HomeAssistant, init_integration: MockConfigEntry, emulator: OllamaEmulator
) -> None:
    other = LlamaServerEmulator([EmulatedLlamaModel("tiny")])
    await other.start()
    try:
        result = await init_integration.start_reconfigure_flow(hass)
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: other.url, CONF_VERIFY_SSL: True}
        )
        assert result["type"] is FlowResultType.ABORT
        assert result["reason"] == "other_server_kind"
        assert result["description_placeholders"] == {
            "kind": "llama-server",
            "configured": "Ollama",
        }
        assert init_integration.data[CONF_URL] == emulator.url
    finally:
        await other.stop()


async def test_reauth(hass: HomeAssistant, secured: OllamaEmulator) -> None:
    entry = MockConfigEntry(
        domain=DOMAIN,
        unique_id=secured.url,
        version=2,
        data={
            CONF_URL: secured.url,
            CONF_API_KEY: "old",
            CONF_VERIFY_SSL: True,
            "server_kind": "ollama",
        },
    )
    entry.add_to_hass(hass)
    result = await entry.start_reauth_flow(hass)
    assert result["step_id"] == "reauth_confirm"
    assert result["description_placeholders"]["url"] == secured.url
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: "still-wrong"}
    )
    assert result["errors"] == {"base": "invalid_auth"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: "s3cret"}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reauth_successful"
    assert entry.data[CONF_API_KEY] == "s3cret"
    await hass.async_block_till_done()
    await hass.config_entries.async_unload(entry.entry_id)


async def test_options_flow(hass: HomeAssistant, init_integration: MockConfigEntry) -> None:
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    assert result["type"] is FlowResultType.FORM
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {CONF_SCAN_INTERVAL: 30}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert init_integration.options == {
        "assistant_model": "",
        CONF_SCAN_INTERVAL: 30,
        "gpu_source": "none",
        "exporter_url": "",
        "exporter_kind": "auto",
        "reserve_gib": 1.0,
        "protected_entities": [],
        "guard_clear_minutes": 10,
        # Kept from the entry's migration: its URL's host.
        "host": "127.0.0.1",
    }
    await hass.async_block_till_done()
    coordinator = init_integration.runtime_data.coordinator
    assert coordinator.update_interval.total_seconds() == 30
    # The household guard's entities and wait, as the guard reads them.
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {
            CONF_SCAN_INTERVAL: 30,
            "protected_entities": ["binary_sensor.plex_transcoding", "switch.game_pc"],
            "guard_clear_minutes": 15.0,
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    guard = init_integration.runtime_data.guard
    assert init_integration.runtime_data.household.protected == [
        "binary_sensor.plex_transcoding",
        "switch.game_pc",
    ]
    assert guard.guard.clear_for.total_seconds() == 15 * 60


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


@pytest.fixture(name="llama")
async def llama_fixture(socket_enabled: None) -> AsyncIterator[LlamaServerEmulator]:
    emulator = LlamaServerEmulator([EmulatedLlamaModel("tiny")])
    await emulator.start()
    yield emulator
    await emulator.stop()


async def test_an_openai_compatible_server_is_named_as_such(
    hass: HomeAssistant, llama: LlamaServerEmulator
) -> None:
    """Something that only speaks the OpenAI API: said so, not "cannot connect"."""
    llama.inject("/props", status=404, body="not found", times=None)
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: llama.url, CONF_VERIFY_SSL: True}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": "openai_compatible"}
    assert "OpenAI-compatible" in result["description_placeholders"]["found"]
    llama.clear_faults()
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: llama.url, CONF_VERIFY_SSL: True}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"]["server_kind"] == "llama_server"
    assert result["title"] == f"llama-server {llama.url.removeprefix('http://')}"


@pytest.mark.parametrize(
    "models",
    ['{"data": []}', '{"object": "list", "data": {}}', '{"object": "page", "data": []}'],
    ids=["no object", "data not a list", "not a list object"],
)
async def test_a_models_list_that_is_not_the_openai_one_is_not_called_openai(
    hass: HomeAssistant, llama: LlamaServerEmulator, models: str
) -> None:
    """Only OpenAI's shape of /v1/models (``object: list`` with a ``data`` list) is named so."""
    llama.inject("/props", status=404, body="not found", times=None)
    llama.inject("/v1/models", status=200, body=models, times=None)
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: llama.url, CONF_VERIFY_SSL: True}
    )
    assert result["errors"] == {"base": "not_supported"}


async def test_without_a_port_each_default_is_tried_and_the_clearest_failure_shown(
    hass: HomeAssistant, emulator: OllamaEmulator, unused_tcp_port_factory: Callable[[], int]
) -> None:
    """The first port answers with something else, the second not at all: say the first."""
    emulator.inject("/api/version", status=200, body="<html/>", content_type="text/html")
    closed = unused_tcp_port_factory()
    port = int(emulator.url.rsplit(":", 1)[1])
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    with patch("custom_components.llm_warmth.core.server_settings.TRIED_PORTS", [port, closed]):
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: "127.0.0.1", CONF_VERIFY_SSL: True}
        )
        assert result["errors"] == {"base": "not_supported"}
        # The odd reply was a one-off: Ollama on the first port is taken.
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: "127.0.0.1", CONF_VERIFY_SSL: True}
        )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_URL] == emulator.url


async def test_https_against_a_plain_http_server_says_so(
    hass: HomeAssistant, emulator: OllamaEmulator
) -> None:
    """Not just "cannot connect": the TLS handshake is what failed."""
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_URL: emulator.url.replace("http://", "https://"), CONF_VERIFY_SSL: True},
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": "tls_error"}


class NamedAgent(conversation.ConversationEntity):
    """A conversation agent that exists (the form checks that its agents do), and no more."""

    def __init__(self, object_id: str) -> None:
        self.entity_id = f"conversation.{object_id}"
        self._attr_unique_id = object_id

    @property
    def supported_languages(self) -> Literal["*"]:
        return "*"


async def _assistant_flow(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    # Home Assistant's core integration, which the conversation agents need, and agents.
    assert await async_setup_component(hass, "homeassistant", {})
    assert await async_setup_component(hass, "conversation", {})
    await hass.data[CONVERSATION_AGENTS].async_add_entities([NamedAgent("big"), NamedAgent("nas")])
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, "warm_assistant"), context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    return str(result["flow_id"])


@pytest.mark.parametrize(
    ("settings", "field", "error"),
    [
        (
            {"primary_agent": "conversation.big", "fallback_agents": ["conversation.big"]},
            "fallback_agents",
            "assistant_agents_repeat",
        ),
        (
            {"primary_agent": "conversation.big", "fallback_agents": ["conversation.warm"]},
            "fallback_agents",
            "assistant_delegates_to_assistant",
        ),
        (
            {"primary_agent": "conversation.warm"},
            "primary_agent",
            "assistant_delegates_to_assistant",
        ),
        ({"primary_agent": "conversation.nope"}, "primary_agent", "assistant_agent_unknown"),
        (
            {"primary_agent": "conversation.big", "fallback_agents": ["conversation.nope"]},
            "fallback_agents",
            "assistant_agent_unknown",
        ),
    ],
)
async def test_warm_assistant_flow_refuses_what_cannot_work(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    settings: dict[str, object],
    field: str,
    error: str,
) -> None:
    """Each refusal is tied to its field, in words; the form keeps what was entered."""
    er.async_get(hass).async_get_or_create(
        "conversation", DOMAIN, "other_assistant", suggested_object_id="warm"
    )
    flow_id = await _assistant_flow(hass, init_integration)
    result = await hass.config_entries.subentries.async_configure(
        flow_id, {"name": "House", "max_wait_seconds": 3, **settings}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {field: error}
    assert not init_integration.subentries


async def test_warm_assistant_flow_adds_then_reconfigures(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """A new assistant becomes a conversation agent at once; reconfiguring changes it."""
    flow_id = await _assistant_flow(hass, init_integration)
    result = await hass.config_entries.subentries.async_configure(
        flow_id,
        {
            "name": "House assistant",
            "primary_agent": "conversation.big",
            "fallback_agents": ["conversation.nas", "conversation.home_assistant"],
            "max_wait_seconds": 2.5,
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    (subentry,) = init_integration.subentries.values()
    assert subentry.title == "House assistant"
    assert dict(subentry.data) == {
        "primary_agent": "conversation.big",
        "fallback_agents": ["conversation.nas", "conversation.home_assistant"],
        "max_wait_seconds": 2.5,
    }
    state = hass.states.get("conversation.house_assistant")
    assert state is not None
    assert state.attributes["fallback_agents"] == [
        "conversation.nas",
        "conversation.home_assistant",
    ]

    result = await init_integration.start_subentry_reconfigure_flow(hass, subentry.subentry_id)
    assert result["step_id"] == "reconfigure"
    refused = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            "primary_agent": "conversation.nas",
            "fallback_agents": ["conversation.nas"],
            "max_wait_seconds": 1,
        },
    )
    assert refused["errors"] == {"fallback_agents": "assistant_agents_repeat"}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {"primary_agent": "conversation.nas", "max_wait_seconds": 0}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert dict(init_integration.subentries[subentry.subentry_id].data) == {
        "primary_agent": "conversation.nas",
        "fallback_agents": [],
        "max_wait_seconds": 0.0,
    }
    state = hass.states.get("conversation.house_assistant")
    assert state is not None
    assert state.attributes["primary_agent"] == "conversation.nas"


def test_every_number_field_says_its_range_beside_it() -> None:
    """Home Assistant's own refusal of a number out of range names no range ("Value -5.0
    is too small"): each number field's description says it, from the field's own bounds."""
    strings = json.loads(
        (Path(config_flow.__file__).parent / "translations" / "en.json").read_text()
    )
    descriptions = strings["options"]["step"]["init"]["data_description"]
    numbers = {
        str(key): selector.config
        for key, selector in options_flow._OPTIONS_SCHEMA.schema.items()
        if isinstance(selector, NumberSelector)
    }
    assert set(numbers) == {CONF_SCAN_INTERVAL, "reserve_gib", "guard_clear_minutes"}
    for key, config in numbers.items():
        low, high = (f"{config[bound]:g}" for bound in ("min", "max"))
        assert f"({low}-{high}" in descriptions[key], key
    wait = strings["config_subentries"]["warm_assistant"]["step"]
    for step in ("user", "reconfigure"):
        assert f"(0-{MAX_WAIT_SECONDS:g} s)" in wait[step]["data_description"]["max_wait_seconds"]
