"""Which agents use a server, and their settings, read from plain entry records (pure)."""

from hypothesis import given, strategies as st

from custom_components.llm_warmth.core.agent_options import (
    OLLAMA_DEFAULT_KEEP_ALIVE,
    OLLAMA_DEFAULT_NUM_CTX,
    Agent,
    AgentOfModel,
    EntryView,
    OpenAICompatibleAgent,
    SubentryView,
    agent_of_entity,
    agent_using,
    agents_of_model,
    apis,
    first,
    ollama_agent,
    ollama_agents,
    openai_compatible_agents,
    same_server,
    whole,
)

SERVER = "http://gpu-box:11434"
SWAP = "http://gpu-box:8080"
ANY_VALUE = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=6)
    | st.lists(st.none() | st.integers() | st.text(max_size=4), max_size=3)
)


def sub(
    sid: str, data: dict[str, object], kind: str = "conversation", title: str = ""
) -> SubentryView:
    return SubentryView(sid, kind, title or f"Agent {sid}", data)


def ollama(url: object, *subentries: SubentryView, entry_id: str = "o1") -> EntryView:
    return EntryView("ollama", entry_id, "Ollama", {"url": url}, {}, subentries)


def test_whole_numbers() -> None:
    """The UI stores numbers as floats: a whole float counts, a fraction or a flag not."""
    assert whole(4096, 1) == 4096
    assert whole(4096.0, 1) == 4096
    assert whole(-1.0, 7) == -1
    assert whole(0, 7) == 0
    assert whole(4096.5, 1) == 1
    assert whole(True, 1) == 1
    assert whole(False, 9) == 9
    assert whole("4096", 1) == 1
    assert whole(None, 3) == 3
    # Found by the property test below: int() of these raised instead of giving the default.
    assert whole(float("nan"), 5) == 5
    assert whole(float("inf"), 5) == 5
    assert whole(float("-inf"), 5) == 5


@given(ANY_VALUE, st.integers())
def test_whole_is_the_value_or_the_default(value: object, default: int) -> None:
    """Whatever is stored, an int comes back: the value when it is whole, else the default."""
    result = whole(value, default)
    assert isinstance(result, int)
    assert result in (default, value)


def test_apis() -> None:
    """One API id or a list of them; anything else in the list is dropped."""
    assert apis("assist") == ("assist",)
    assert apis(["assist", 3, "web"]) == ("assist", "web")
    assert apis([]) == ()
    assert apis(None) == ()
    assert apis(("assist",)) == ()


def test_first_text() -> None:
    """The first key with a non-empty text wins; empty texts and other types are skipped."""
    keys = ("base_url", "api_base", "url")
    assert first({"base_url": "", "api_base": 3, "url": "u"}, keys) == "u"
    assert first({"base_url": "a", "url": "u"}, keys) == "a"
    assert first({"other": "x"}, keys) is None
    assert first({}, ()) is None


def test_same_server() -> None:
    """A base URL names the server with or without /v1, a slash or spaces; others do not."""
    assert same_server(f"{SERVER}/v1", SERVER, 11434)
    assert same_server(f" {SERVER}/v1/ ", SERVER, 11434)
    assert same_server("http://gpu-box", SERVER, 11434)
    assert not same_server("http://gpu-box", SERVER, 8080)
    assert not same_server("http://other:11434/v1", SERVER, 11434)
    assert not same_server("", SERVER, 11434)
    assert not same_server("   ", SERVER, 11434)
    assert not same_server(None, SERVER, 11434)
    assert not same_server("http://[::1", SERVER, 11434)


@given(st.text(max_size=30), st.integers(1, 65535))
def test_same_server_never_fails(url: str, port: int) -> None:
    """Whatever another integration stored as its URL, the check answers."""
    assert same_server(url, SERVER, port) in (True, False)


def test_an_ollama_agent_and_its_settings() -> None:
    """Every setting read with its type checked; the integration's defaults otherwise."""
    data: dict[str, object] = {
        "model": "llama3.2:3b",
        "num_ctx": 4096.0,
        "keep_alive": 300,
        "prompt": "Be brief.",
        "llm_hass_api": ["assist"],
        "think": False,
    }
    assert ollama_agent(sub("s1", data, title="Kitchen")) == Agent(
        "Kitchen", "llama3.2:3b", 4096, 300, "Be brief.", ("assist",), False, "s1"
    )
    bare = ollama_agent(sub("s2", {"model": "m", "num_ctx": "big", "prompt": 3, "think": "yes"}))
    assert bare == Agent(
        "Agent s2", "m", OLLAMA_DEFAULT_NUM_CTX, OLLAMA_DEFAULT_KEEP_ALIVE, subentry_id="s2"
    )
    assert (OLLAMA_DEFAULT_NUM_CTX, OLLAMA_DEFAULT_KEEP_ALIVE) == (8192, -1)


def test_what_is_no_ollama_agent() -> None:
    """No model, an empty or odd one, or another kind of subentry: no agent."""
    assert ollama_agent(sub("s", {})) is None
    assert ollama_agent(sub("s", {"model": ""})) is None
    assert ollama_agent(sub("s", {"model": 3})) is None
    assert ollama_agent(sub("s", {"model": "m"}, kind="ai_task_data")) is None


@given(
    st.dictionaries(
        st.sampled_from(["model", "num_ctx", "keep_alive", "prompt", "llm_hass_api", "think"]),
        ANY_VALUE,
    )
)
def test_any_ollama_subentry_is_read(data: dict[str, object]) -> None:
    """Whatever the subentry holds, it is an agent with typed settings or none."""
    agent = ollama_agent(sub("s", data))
    if agent is None:
        assert not isinstance(data.get("model"), str) or not data.get("model")
        return
    assert isinstance(agent.num_ctx, int)
    assert isinstance(agent.keep_alive, int)
    assert agent.prompt is None or isinstance(agent.prompt, str)
    assert all(isinstance(a, str) for a in agent.llm_apis)
    assert agent.think in (None, True, False)


def test_ollama_agents_at_the_server() -> None:
    """Agents of entries at this address, by subentry id; others and bad URLs skipped."""
    entries = [
        ollama("gpu-box", sub("b", {"model": "m2"}), sub("a", {"model": "m1"}), sub("c", {})),
        ollama("http://other:11434", sub("d", {"model": "m3"}), entry_id="o2"),
        ollama("http://[::1", sub("e", {"model": "m4"}), entry_id="o3"),
        ollama(None, sub("f", {"model": "m5"}), entry_id="o4"),
        ollama(f"{SERVER}/", sub("g", {"model": "m6"}), entry_id="o5"),
    ]
    found = ollama_agents(entries, SERVER)
    assert [(a.subentry_id, a.model) for a in found] == [("a", "m1"), ("b", "m2"), ("g", "m6")]
    assert ollama_agents(entries, "http://nowhere:11434") == ()
    # An entry whose URL cannot be read after one at the server: its agents are not taken.
    after = [entries[0], entries[2]]
    assert [a.model for a in ollama_agents(after, SERVER)] == ["m1", "m2"]


def test_openai_compatible_agents() -> None:
    """An entry's own model (options over data) and its conversation subentries' models."""
    entries = [
        EntryView(
            "extended_openai_conversation",
            "e1",
            "Office",
            {"base_url": f"{SERVER}/v1", "chat_model": "old"},
            {"chat_model": "qwen3:8b"},
        ),
        EntryView(
            "compatible",
            "e2",
            "Compatible",
            {"api_base": f"{SERVER}/v1/"},
            {},
            (
                sub("z", {"model": "b"}, title="Garage"),
                sub("y", {"chat_model": "a"}, title="Hall"),
                sub("x", {}, title="No model"),
                sub("w", {"model": "c"}, kind="ai_task_data"),
            ),
        ),
        EntryView("elsewhere", "e3", "Elsewhere", {"url": "http://other:11434", "model": "m"}, {}),
        EntryView("nourl", "e4", "No URL", {"model": "m"}, {}),
        EntryView("llm_warmth", "e5", "Ours", {"url": SERVER, "model": "m"}, {}),
        EntryView("ollama", "e6", "Ollama", {"url": SERVER, "model": "m"}, {}),
    ]
    assert openai_compatible_agents(entries, SERVER, 11434, "llm_warmth") == (
        OpenAICompatibleAgent("Office", "qwen3:8b", "extended_openai_conversation", "e1"),
        OpenAICompatibleAgent("Hall", "a", "compatible", "e2", "y"),
        OpenAICompatibleAgent("Garage", "b", "compatible", "e2", "z"),
    )
    assert openai_compatible_agents(entries, SERVER, 11434, "other")[-1] == OpenAICompatibleAgent(
        "Ours", "m", "llm_warmth", "e5"
    )
    # The port of a URL without one is the server kind's.
    assert openai_compatible_agents(entries[:1], SWAP, 8080, "llm_warmth") == ()


def test_the_agent_of_an_entity() -> None:
    """An Ollama agent by its subentry; an OpenAI-compatible one by subentry, then entry."""
    mine = Agent("K", "llama", 8192, -1, subentry_id="s1")
    others = (
        OpenAICompatibleAgent("Office", "qwen", "x", "e1"),
        OpenAICompatibleAgent("Garage", "phi", "x", "e2", "s9"),
        OpenAICompatibleAgent("Whole", "gemma", "x", "e2"),
    )
    assert agent_of_entity((mine,), others, "o1", "s1") == ("llama", mine)
    assert agent_of_entity((mine,), others, "o1", None) is None
    assert agent_of_entity((Agent("N", "m", 1, 1),), (), "o1", None) is None
    assert agent_of_entity((mine,), others, "e1", None) == ("qwen", None)
    assert agent_of_entity((mine,), others, "e1", "s5") == ("qwen", None)
    assert agent_of_entity((mine,), others, "e2", "s9") == ("phi", None)
    assert agent_of_entity((mine,), others, "e2", "s8") == ("gemma", None)
    assert agent_of_entity((mine,), others, "e3", None) is None
    # A subentry's own agent wins over the entry's, whatever their order.
    assert agent_of_entity((), tuple(reversed(others)), "e2", "s9") == ("phi", None)


def test_agents_of_a_model() -> None:
    """Agents whose model, as the server names it, is the model; Ollama's first."""
    resolve = {"llama": "llama:latest"}.get
    agents = (Agent("K", "llama", 1, 1), Agent("L", "other", 1, 1), Agent("M", "llama", 2, 2))

    def name(model: str) -> str:
        return resolve(model) or model

    assert agent_using(agents, "llama:latest", name) == agents[0]
    assert agent_using(agents, "llama", name) is None
    assert agent_using((), "x", name) is None
    others = (
        OpenAICompatibleAgent("O", "llama", "ext", "e1"),
        OpenAICompatibleAgent("P", "q", "ext", "e2"),
    )
    assert agents_of_model(agents, others, "llama:latest", name) == [
        AgentOfModel("K", "ollama"),
        AgentOfModel("M", "ollama"),
        AgentOfModel("O", "ext"),
    ]
    assert agents_of_model(agents, others, "q", name) == [AgentOfModel("P", "ext")]
