"""One conversation, three providers: started on Anthropic, continued on OpenAI (the
Responses API, or Chat Completions), then on Google, and round again, all in one session.
Each provider is the real plugin driving its official SDK against a loopback server that
speaks the API's wire format.

Every request each API received is checked against that API's documented rules
(``provider_wire``): roles and turn order, tool calls answered by their results, images
as valid inline data, and reasoning replayed natively only to the model that produced
it, with its own signature, while no signature ever reaches another model. The earlier
turns' substance (tool results, images, answers) must reach every later provider.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import importlib.util
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import tether
from tether import Agent
from tether.config import Config, ProviderConfig
from tether.messages import ImageBlock, TextBlock
from tether.provider import ThinkingConfig
from tether.retry import RetryPolicy
from tether.sessions import InMemorySession
from tether_testing.http import FakeServer


def _wire() -> ModuleType:
    """``tests/provider_wire.py``, loaded by path (tests are not a package)."""
    module = sys.modules.get("provider_wire")
    if module is None:
        spec = importlib.util.spec_from_file_location(
            "provider_wire", Path(__file__).with_name("provider_wire.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["provider_wire"] = module
        spec.loader.exec_module(module)
    return module


wire = _wire()

CLAUDE = "claude-sonnet-4-6"
RESPONSES_MODEL = "gpt-5.4-mini"
CHAT_MODEL = "gpt-4.1"
GEMINI_3 = "gemini-3-flash-preview"
GEMINI_25 = "gemini-2.5-flash"

CHART_PNG = wire.tiny_png((30, 120, 200))
HARBOUR_PNG = wire.tiny_png((10, 90, 60))
HARBOUR_PROMPT = "When are the tides there today? This is the harbour now."
FORECASTS = {
    "Lisbon": "Lisbon: sunny, 24°C, wind NW 12 km/h",
    "Porto": "Porto: light rain, 19°C, wind W 20 km/h",
    "Faro": "Faro: clear, 27°C, wind S 8 km/h",
}
TIDES = "Lisbon tides: high 06:12 (3.4 m) and 18:40 (3.6 m), low 00:05 and 12:27"
TIDES_ERROR = "no tide table for Faro"


@tether.tool
def get_forecast(city: str) -> str:
    """Today's weather forecast for a city."""
    return FORECASTS[city]


@tether.tool
def render_chart(city: str) -> list[TextBlock | ImageBlock]:
    """A temperature chart for a city, as an image."""
    return [TextBlock(text=f"Temperature chart for {city}"), ImageBlock.from_bytes(CHART_PNG)]


@tether.tool
def get_tides(port: str) -> str:
    """Tide times for a port."""
    if port != "Lisbon":
        raise ValueError(TIDES_ERROR.replace("Faro", port))
    return TIDES


TOOLS = [get_forecast, render_chart, get_tides]

# -- the conversation --------------------------------------------------------------------------
THINK_A1 = "The user wants Lisbon's weather. Fetch the forecast and draw the chart."
THINK_A4 = "Summarise all three cities from the earlier tool results."
THINK_O1 = "Tides matter for the boat trip; look up Lisbon's tide table."
THINK_O2 = "Combine the tide times with the forecast already given."
THINK_O5 = "Faro is the warmest; the tides only matter in Lisbon."
THINK_G1 = "Compare Porto and Faro: both forecasts and the Faro tides, in parallel."
THINK_G6 = "Rain in Porto means a light jacket."

ANSWERS = (
    "Lisbon is sunny at 24°C; the chart is attached.",
    "High tide is at 18:40, a good time to sail back.",
    "Faro is warmer and dry; Porto gets light rain.",
    "Lisbon and Faro are dry, Porto is wet; sail back at 18:40.",
    "Start in Faro, then Lisbon for the evening tide.",
    "Pack sunscreen and a light rain jacket for Porto.",
)
TURNS: tuple[tuple[str, str | list[TextBlock | ImageBlock]], ...] = (
    ("anthropic", "What's the weather in Lisbon? Show me a chart."),
    ("openai", [TextBlock(text=HARBOUR_PROMPT), ImageBlock.from_bytes(HARBOUR_PNG)]),
    ("google", "Compare Porto and Faro for tomorrow."),
    ("anthropic", "Sum it all up in one line."),
    ("openai", "Which city first?"),
    ("google", "Anything to pack?"),
)
REQUESTS_PER_TURN = (2, 2, 2, 1, 1, 1)
"""Model calls each turn makes (a tool round adds one)."""


def _signature(label: str, size: int = 96) -> str:
    """A realistic opaque signature: base64 of bytes unique to ``label``."""
    seed = label.encode() * (size // len(label) + 1)
    return base64.b64encode(bytes((b * 7 + i) % 256 for i, b in enumerate(seed[:size]))).decode()


def _script_anthropic(server: FakeServer, ledger: Any) -> dict[str, str]:
    origin = f"anthropic/{CLAUDE}"
    a1 = ledger.issue(origin, _signature("claude-turn-1"), THINK_A1)
    a1_redacted = ledger.issue(origin, "EmwKAhgBEgy" + _signature("claude-redacted"))
    a4 = ledger.issue(origin, _signature("claude-turn-4"), THINK_A4)
    server.queue(
        wire.anthropic_reply(
            CLAUDE,
            wire.anthropic_thinking(0, THINK_A1, a1),
            wire.anthropic_redacted_thinking(1, a1_redacted),
            wire.anthropic_text(2, "I'll fetch the forecast and draw a chart."),
            wire.anthropic_tool_use(
                3, "toolu_01A09q90qw90lq917835lq9", "get_forecast", {"city": "Lisbon"}
            ),
            wire.anthropic_tool_use(
                4, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "render_chart", {"city": "Lisbon"}
            ),
            stop_reason="tool_use",
        ),
        wire.anthropic_reply(CLAUDE, wire.anthropic_text(0, ANSWERS[0]), stop_reason="end_turn"),
        wire.anthropic_reply(
            CLAUDE,
            wire.anthropic_thinking(0, THINK_A4, a4),
            wire.anthropic_text(1, ANSWERS[3]),
            stop_reason="end_turn",
        ),
    )
    return {"a1": a1, "a1_redacted": a1_redacted, "a4": a4}


def _script_responses(server: FakeServer, ledger: Any) -> dict[str, str]:
    o1, o2, o5 = (f"gAAAAABo{_signature(f'openai-reasoning-{n}')}" for n in (1, 2, 5))
    server.queue(
        wire.ResponsesStream(RESPONSES_MODEL, ledger)
        .reasoning("rs_68af1c6e4d2c81939f0a1b2c3d4e5f60", THINK_O1, o1)
        .call(
            "fc_68af1c6f0e3c8193a1b2c3d4e5f6a7b8",
            "call_Tq3pZlmA9c0vR2xK",
            "get_tides",
            {"port": "Lisbon"},
        )
        .completed(),
        wire.ResponsesStream(RESPONSES_MODEL, ledger)
        .reasoning("rs_68af1c70a5b48193b0c1d2e3f4a5b6c7", THINK_O2, o2)
        .message("msg_68af1c71c6d58193c1d2e3f4a5b6c7d8", ANSWERS[1])
        .completed(),
        wire.ResponsesStream(RESPONSES_MODEL, ledger)
        .reasoning("rs_68af1c80b6c58193d2e3f4a5b6c7d8e9", THINK_O5, o5)
        .message("msg_68af1c81c7d68193e3f4a5b6c7d8e9f0", ANSWERS[4])
        .completed(),
    )
    return {"o1": o1, "o2": o2, "o5": o5}


def _script_chat(server: FakeServer) -> dict[str, str]:
    server.queue(
        wire.chat_reply(
            CHAT_MODEL,
            "Checking the tide table.",
            [("call_Kx7wQ2mZ", "get_tides", {"port": "Lisbon"})],
        ),
        wire.chat_reply(CHAT_MODEL, ANSWERS[1]),
        wire.chat_reply(CHAT_MODEL, ANSWERS[4]),
    )
    return {}


def _script_gemini(server: FakeServer, ledger: Any, gemini: str) -> dict[str, str]:
    origin = f"google/{gemini}"

    def issue(label: str, thought: str | None = None) -> str:
        raw = base64.b64decode(_signature(label))
        signature: str = ledger.issue_gemini(origin, raw, thought)
        return signature

    g1, g1_call, g3, g6 = (
        issue("gemini-thought", THINK_G1),
        issue("gemini-call"),
        issue("gemini-answer"),
        issue("gemini-turn-6", THINK_G6),
    )
    part = wire.gemini_part
    server.queue(
        wire.gemini_reply(
            gemini,
            [part(text=THINK_G1, thought=True, signature=g1)],
            [
                part(call=("get_forecast", {"city": "Porto"}), signature=g1_call),
                part(call=("get_forecast", {"city": "Faro"})),
                part(call=("get_tides", {"port": "Faro"})),
            ],
        ),
        wire.gemini_reply(gemini, [part(text=ANSWERS[2], signature=g3)]),
        wire.gemini_reply(
            gemini, [part(text=THINK_G6, thought=True, signature=g6)], [part(text=ANSWERS[5])]
        ),
    )
    return {"g1": g1, "g1_call": g1_call, "g3": g3, "g6": g6}


# -- running it ----------------------------------------------------------------------------------
@dataclass
class Conversation:
    """The finished conversation: what each API received, in the order it was sent."""

    ledger: Any
    session: InMemorySession
    openai_api: str
    gemini: str
    signatures: dict[str, str]
    sent: list[tuple[str, Any]] = field(default_factory=list)
    """(API label, request body) per request; labels: anthropic, responses, chat, google."""
    paths: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def body(self, index: int) -> Any:
        return copy.deepcopy(self.sent[index][1])

    def receiver(self, label: str) -> str:
        """The ``provider/model`` a request with this label went to."""
        return {
            "anthropic": f"anthropic/{CLAUDE}",
            "responses": f"openai/{RESPONSES_MODEL}",
            "chat": f"openai/{CHAT_MODEL}",
            "google": f"google/{self.gemini}",
        }[label]


ISOLATED_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_API_VERSION",
    "TETHER_MODEL",
    "TETHER_CONFIG",
    "TETHER_DISABLE_PLUGIN_AUTOLOAD",
    "TETHER_PLUGINS_DENY",
)


@pytest.fixture(scope="module")
def conversation_of() -> Iterator[Callable[[str, str], Conversation]]:
    """``conversation_of(openai_api, gemini)``: the finished conversation of a scenario,
    run once per module. Only the three provider plugins load, from their entry points;
    no key, gateway or model from the developer's shell reaches them."""
    done: dict[tuple[str, str], Conversation] = {}

    def get(openai_api: str, gemini: str) -> Conversation:
        if (openai_api, gemini) not in done:
            with ExitStack() as stack:
                servers = {
                    name: stack.enter_context(FakeServer())
                    for name in ("anthropic", "openai", "google")
                }
                conversation = asyncio.run(converse(servers, openai_api=openai_api, gemini=gemini))
            done[openai_api, gemini] = conversation
        return done[openai_api, gemini]

    with pytest.MonkeyPatch.context() as patch:
        for name in ISOLATED_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setenv("TETHER_PLUGINS_ALLOW", "anthropic,openai,google")
        yield get


async def converse(servers: dict[str, FakeServer], *, openai_api: str, gemini: str) -> Conversation:
    """Run the six turns on one session, each on its provider's agent, and collect every
    request in the order it was sent."""
    ledger = wire.Ledger()
    signatures = _script_anthropic(servers["anthropic"], ledger)
    if openai_api == "responses":
        signatures |= _script_responses(servers["openai"], ledger)
    else:
        signatures |= _script_chat(servers["openai"])
    signatures |= _script_gemini(servers["google"], ledger, gemini)

    def settings(name: str, suffix: str = "") -> ProviderConfig:
        return ProviderConfig.model_validate(
            {"base_url": servers[name].url + suffix, "api_key": "test"}
        )

    config = Config(
        providers={
            "anthropic": settings("anthropic"),
            "openai": settings("openai", "/v1"),
            "google": settings("google"),
        }
    )
    session = InMemorySession()
    models = {
        "anthropic": f"anthropic/{CLAUDE}",
        "openai": f"openai/{RESPONSES_MODEL if openai_api == 'responses' else CHAT_MODEL}",
        "google": f"google/{gemini}",
    }
    agents = {
        name: Agent(
            model,
            config=config,
            session=session,
            tools=TOOLS,
            system="You are a concise travel assistant.",
            thinking=ThinkingConfig(budget_tokens=2048),
            retry=RetryPolicy(max_attempts=1),
        )
        for name, model in models.items()
    }
    conversation = Conversation(ledger, session, openai_api, gemini, signatures)
    label = {"anthropic": "anthropic", "openai": openai_api, "google": "google"}
    seen = dict.fromkeys(servers, 0)
    try:
        for name, prompt in TURNS:
            result = await agents[name].run(prompt)
            assert result.ok, (name, prompt, result.outcome, result.error)
            assert result.retries == 0
            conversation.outputs.append(result.output)
            for request in servers[name].requests[seen[name] :]:
                conversation.sent.append((label[name], request.json()))
                conversation.paths.append(request.path)
            seen[name] = len(servers[name].requests)
    finally:
        for agent in agents.values():
            await agent.aclose()
    return conversation


def violations(conversation: Conversation, label: str, body: Any) -> list[str]:
    """Every rule the receiving API would reject ``body`` for."""
    ledger = conversation.ledger
    if label == "anthropic":
        found = wire.anthropic_violations(body, ledger)
    elif label == "responses":
        found = wire.responses_violations(body, ledger)
    elif label == "chat":
        found = wire.chat_violations(body)
    else:
        gemini_3 = conversation.gemini.startswith("gemini-3")
        found = wire.gemini_violations(
            body,
            ledger,
            model=conversation.gemini,
            multimodal_responses=gemini_3,
            strict_signatures=gemini_3,
        )
    leaks: list[str] = wire.signature_leaks(body, ledger, conversation.receiver(label))
    return [*found, *leaks]


def first_request_of_turn(turn: int) -> int:
    return sum(REQUESTS_PER_TURN[:turn])


SCENARIOS = [
    pytest.param("responses", GEMINI_3, id="responses-gemini3"),
    pytest.param("chat", GEMINI_3, id="chat-gemini3"),
    pytest.param("responses", GEMINI_25, id="responses-gemini2.5"),
    pytest.param("chat", GEMINI_25, id="chat-gemini2.5"),
]


# -- the tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("openai_api", "gemini"), SCENARIOS)
def test_every_request_of_a_conversation_across_providers_is_valid_for_its_api(
    conversation_of: Callable[[str, str], Conversation], openai_api: str, gemini: str
) -> None:
    conversation = conversation_of(openai_api, gemini)

    assert conversation.outputs == list(ANSWERS)
    route = {"anthropic": "/v1/messages", "google": f"/v1/models/{gemini}:streamGenerateContent"}
    route["responses"] = "/v1/responses"
    route["chat"] = "/v1/chat/completions"
    labels = {"anthropic": "anthropic", "openai": openai_api, "google": "google"}
    expected = [
        labels[name]
        for (name, _), count in zip(TURNS, REQUESTS_PER_TURN, strict=True)
        for _ in range(count)
    ]
    assert [label for label, _ in conversation.sent] == expected
    # The Gemini API version (v1 or v1beta) is the SDK's choice.
    paths = [re.sub(r"^/v1beta/", "/v1/", p).split("?")[0] for p in conversation.paths]
    assert paths == [route[label] for label in expected]

    problems = {
        f"request {i} ({label})": violations(conversation, label, body)
        for i, (label, body) in enumerate(conversation.sent)
    }
    assert problems == {key: [] for key in problems}


@pytest.mark.parametrize(("openai_api", "gemini"), SCENARIOS)
def test_earlier_turns_reach_every_later_provider(
    conversation_of: Callable[[str, str], Conversation], openai_api: str, gemini: str
) -> None:
    conversation = conversation_of(openai_api, gemini)
    after_tools = {0: 1, 1: 3, 2: 5}  # turn -> the request that first carries its tool results
    facts = [
        (FORECASTS["Lisbon"], after_tools[0]),
        ("Temperature chart for Lisbon", after_tools[0]),
        (TIDES, after_tools[1]),
        (FORECASTS["Porto"], after_tools[2]),
        (FORECASTS["Faro"], after_tools[2]),
        (TIDES_ERROR, after_tools[2]),
        (HARBOUR_PROMPT, first_request_of_turn(1)),
        *((answer, first_request_of_turn(turn + 1)) for turn, answer in enumerate(ANSWERS[:-1])),
    ]
    missing = [
        (fact, i, conversation.sent[i][0])
        for fact, first in facts
        for i in range(first, len(conversation.sent))
        if not wire.contains_text(conversation.sent[i][1], fact)
    ]
    assert missing == []
    images = [(CHART_PNG, after_tools[0]), (HARBOUR_PNG, first_request_of_turn(1))]
    without_image = [
        (image == CHART_PNG, i)
        for image, first in images
        for i in range(first, len(conversation.sent))
        if not wire.contains_image(conversation.sent[i][1], image)
    ]
    assert without_image == []


@pytest.mark.parametrize(("openai_api", "gemini"), SCENARIOS)
def test_a_failed_tool_call_stays_an_error_for_every_later_provider(
    conversation_of: Callable[[str, str], Conversation], openai_api: str, gemini: str
) -> None:
    conversation = conversation_of(openai_api, gemini)
    unmarked = [
        (i, label)
        for i, (label, body) in enumerate(conversation.sent[5:], start=5)
        if not _marked_as_error(label, body, TIDES_ERROR)
    ]
    assert unmarked == []


def _marked_as_error(label: str, body: Any, text: str) -> bool:
    """Whether the tool result holding ``text`` reaches the API as a failure: Anthropic's
    ``is_error``, Gemini's ``error`` key, or (OpenAI has no flag) text opening with "Error"."""
    if label == "anthropic":
        return any(
            b.get("type") == "tool_result" and text in str(b.get("content")) and b.get("is_error")
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
        )
    if label == "google":
        return any(
            text in str(p["functionResponse"]["response"].get("error", ""))
            for c in body["contents"]
            for p in c["parts"]
            if "functionResponse" in p
        )
    outputs = (
        [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if label == "chat"
        else [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
    )
    return any(isinstance(o, str) and text in o and o.startswith("Error") for o in outputs)


@pytest.mark.parametrize(("openai_api", "gemini"), SCENARIOS)
def test_reasoning_goes_back_natively_only_to_the_model_that_produced_it(
    conversation_of: Callable[[str, str], Conversation], openai_api: str, gemini: str
) -> None:
    conversation = conversation_of(openai_api, gemini)
    sig = conversation.signatures
    a1 = {"type": "thinking", "thinking": THINK_A1, "signature": sig["a1"]}

    # Claude gets its signed thinking back in the tool loop and, after two other
    # providers, turns later; nobody else's reasoning is native there.
    redacted = {"type": "redacted_thinking", "data": sig["a1_redacted"]}
    assert conversation.sent[1][1]["messages"][1]["content"][:2] == [a1, redacted]
    later = conversation.sent[first_request_of_turn(3)][1]["messages"]
    native = [
        b
        for m in later
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] in ("thinking", "redacted_thinking")
    ]
    assert native == [a1, redacted]
    assert later[1]["content"][:2] == [a1, redacted]

    # OpenAI's reasoning items go back with their encrypted content, in the tool loop and
    # in later turns, each with the item it belongs with.
    if openai_api == "responses":
        in_loop = conversation.sent[3][1]["input"]
        assert [i["encrypted_content"] for i in in_loop if i.get("type") == "reasoning"] == [
            sig["o1"]
        ]
        later_items = conversation.sent[first_request_of_turn(4)][1]["input"]
        assert [i["encrypted_content"] for i in later_items if i.get("type") == "reasoning"] == [
            sig["o1"],
            sig["o2"],
        ]

    # Gemini gets each signature back on the part it came with.
    def signed(contents: list[Any]) -> list[tuple[bytes, bool, bool]]:
        return [
            (wire.b64decode_any(p["thoughtSignature"]), "functionCall" in p, bool(p.get("thought")))
            for c in contents
            for p in c["parts"]
            if "thoughtSignature" in p
            and wire.b64decode_any(p["thoughtSignature"]) != wire.GEMINI_SKIP_SIGNATURE
        ]

    g1 = (base64.b64decode(sig["g1"]), False, True)
    g1_call = (base64.b64decode(sig["g1_call"]), True, False)
    g3 = (base64.b64decode(sig["g3"]), False, False)
    assert signed(conversation.sent[5][1]["contents"]) == [g1, g1_call]
    assert signed(conversation.sent[first_request_of_turn(5)][1]["contents"]) == [g1, g1_call, g3]

    # Everyone else's reasoning reaches a model as plain text or not at all.
    for index, (label, body) in enumerate(conversation.sent):
        foreign = conversation.ledger.reasoning_texts(not_by=conversation.receiver(label))
        assert [t for t in _native_reasoning(label, body) if t in foreign] == [], (index, label)


def _native_reasoning(label: str, body: Any) -> list[str]:
    """The text of every block the receiving API treats as the model's own reasoning."""
    if label == "anthropic":
        return [
            b.get("thinking", "")
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") in ("thinking", "redacted_thinking")
        ]
    if label == "responses":
        return [
            s["text"]
            for item in body["input"]
            if item.get("type") == "reasoning"
            for s in item["summary"]
        ]
    if label == "google":
        return [p.get("text", "") for c in body["contents"] for p in c["parts"] if p.get("thought")]
    return []  # Chat Completions has no way to send reasoning back


def test_the_session_records_which_model_produced_each_message(
    conversation_of: Callable[[str, str], Conversation],
) -> None:
    conversation = conversation_of("responses", GEMINI_3)
    producers = [m.meta.model for m in conversation.session.messages if m.role == "assistant"]
    claude, gpt, gemini = (
        f"anthropic/{CLAUDE}",
        f"openai/{RESPONSES_MODEL}",
        f"google/{GEMINI_3}",
    )
    assert producers == [claude, claude, gpt, gpt, gemini, gemini, claude, gpt, gemini]


# -- the rules are strict enough to catch a broken conversion ---------------------------------
Mutation = Callable[[Conversation], tuple[str, Any]]


def _foreign_thinking_replayed_to_claude(conversation: Conversation) -> tuple[str, Any]:
    """Claude receives OpenAI's or Gemini's reasoning as a native thinking block."""
    index = first_request_of_turn(3)
    body = conversation.body(index)
    key = "o1" if "o1" in conversation.signatures else "g1"
    text = THINK_O1 if key == "o1" else THINK_G1
    for message in body["messages"]:
        blocks = message["content"]
        if message["role"] == "assistant" and any(text in b.get("text", "") for b in blocks):
            message["content"] = [
                {"type": "thinking", "thinking": text, "signature": conversation.signatures[key]},
                *(b for b in blocks if text not in b.get("text", "")),
            ]
            return "anthropic", body
    raise AssertionError("the foreign reasoning did not reach Claude")


def _claude_thinking_replayed_as_a_reasoning_item(conversation: Conversation) -> tuple[str, Any]:
    body = conversation.body(2)
    body["input"].insert(
        1,
        {
            "type": "reasoning",
            "id": "rs_68af1c6e4d2c81939f0a1b2c3d4e5f60",
            "summary": [{"type": "summary_text", "text": THINK_A1}],
            "encrypted_content": conversation.signatures["a1"],
        },
    )
    return "responses", body


def _claude_thinking_sent_as_chat_reasoning(conversation: Conversation) -> tuple[str, Any]:
    body = conversation.body(2)
    body["messages"][2]["reasoning_content"] = THINK_A1
    return "chat", body


def _call_id_sent_without_its_reasoning_item(conversation: Conversation) -> tuple[str, Any]:
    body = conversation.body(3)
    body["input"] = [i for i in body["input"] if i.get("type") != "reasoning"]
    return "responses", body


def _claude_signature_on_a_gemini_call(conversation: Conversation) -> tuple[str, Any]:
    body = conversation.body(4)
    for part in body["contents"][1]["parts"]:
        if "functionCall" in part:
            part["thoughtSignature"] = conversation.signatures["a1"]
    return "google", body


def _claude_thinking_sent_to_gemini_as_a_thought(conversation: Conversation) -> tuple[str, Any]:
    body = conversation.body(4)
    for part in body["contents"][1]["parts"]:
        if THINK_A1 in part.get("text", ""):
            part.clear()
            part.update({"text": THINK_A1, "thought": True})
    return "google", body


def _tool_call_left_unanswered(conversation: Conversation) -> tuple[str, Any]:
    label, body = conversation.sent[2][0], conversation.body(2)
    if label == "responses":
        outputs = [
            i for i, item in enumerate(body["input"]) if item.get("type") == "function_call_output"
        ]
        del body["input"][outputs[1]]
    else:
        del body["messages"][[i for i, m in enumerate(body["messages"]) if m["role"] == "tool"][1]]
    return label, body


def _gemini_calls_answered_out_of_order(conversation: Conversation) -> tuple[str, Any]:
    body = conversation.body(5)
    body["contents"][-1]["parts"][0]["functionResponse"]["name"] = "render_chart"
    return "google", body


def _gemini_3_call_of_this_turn_unsigned(conversation: Conversation) -> tuple[str, Any]:
    body = conversation.body(5)
    for part in body["contents"][-2]["parts"]:
        part.pop("thoughtSignature", None)
    return "google", body


def _chart_with_the_wrong_media_type(conversation: Conversation) -> tuple[str, Any]:
    body = conversation.body(1)
    for block in body["messages"][2]["content"]:
        for part in block["content"] if isinstance(block.get("content"), list) else []:
            if part["type"] == "image":
                part["source"]["media_type"] = "image/jpeg"
    return "anthropic", body


MUTATIONS = [
    pytest.param("responses", _foreign_thinking_replayed_to_claude, id="openai-thinking-to-claude"),
    pytest.param("chat", _foreign_thinking_replayed_to_claude, id="gemini-thinking-to-claude"),
    pytest.param(
        "responses", _claude_thinking_replayed_as_a_reasoning_item, id="claude-to-responses"
    ),
    pytest.param("chat", _claude_thinking_sent_as_chat_reasoning, id="claude-to-chat"),
    pytest.param("responses", _call_id_sent_without_its_reasoning_item, id="orphan-item-id"),
    pytest.param("responses", _claude_signature_on_a_gemini_call, id="claude-signature-to-gemini"),
    pytest.param(
        "chat", _claude_thinking_sent_to_gemini_as_a_thought, id="claude-thought-to-gemini"
    ),
    pytest.param("responses", _tool_call_left_unanswered, id="unanswered-responses"),
    pytest.param("chat", _tool_call_left_unanswered, id="unanswered-chat"),
    pytest.param("chat", _gemini_calls_answered_out_of_order, id="gemini-answer-order"),
    pytest.param("chat", _gemini_3_call_of_this_turn_unsigned, id="gemini-3-unsigned-call"),
    pytest.param("chat", _chart_with_the_wrong_media_type, id="bad-image"),
]


@pytest.mark.parametrize(("openai_api", "mutate"), MUTATIONS)
def test_the_rules_reject_what_a_broken_conversion_would_send(
    conversation_of: Callable[[str, str], Conversation], openai_api: str, mutate: Mutation
) -> None:
    conversation = conversation_of(openai_api, GEMINI_3)
    label, body = mutate(conversation)
    assert violations(conversation, label, body) != []
