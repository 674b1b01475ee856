"""Chat Completions through the official SDK against a loopback server speaking its wire
format: ``data:`` chunks of ``chat.completion.chunk`` objects, a usage-only chunk (with
``stream_options.include_usage``) and ``data: [DONE]``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tether.config import ProviderConfig
from tether.errors import (
    AuthenticationError,
    ContextOverflowError,
    OverloadedError,
    ProviderConnectionError,
    RateLimitError,
)
from tether.events import Compaction, Retry, TextDelta, ThinkingDelta, ToolEnd
from tether.messages import (
    ImageBlock,
    Message,
    MessageMeta,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tether.provider import ModelRequest, ModelResponse, ToolDefinition
from tether.result import Outcome
from tether_openai.profiles import OPENAI
from tether_openai.provider import OpenAIProvider
from tether_testing.http import FakeResponse, FakeServer, collect_announcing, gated_chunks

API_KEY = "sk-test-0123456789abcdef"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": "gpt-4.1-2025-04-14",
        "service_tier": "default",
        "system_fingerprint": "fp_b376dfbbd5",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }


def usage_chunk(
    prompt: int = 120, completion: int = 30, cached: int = 64, reasoning: int = 0
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": "gpt-4.1-2025-04-14",
        "system_fingerprint": "fp_b376dfbbd5",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": reasoning,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
    }


def sse(*chunks: dict[str, Any], done: bool = True, **options: Any) -> FakeResponse:
    events: list[tuple[str | None, Any]] = [(None, c) for c in chunks]
    if done:
        events.append((None, "[DONE]"))
    return FakeResponse.sse(events, **options)


def text_reply(*parts: str, finish: str = "stop") -> FakeResponse:
    return sse(
        chunk({"role": "assistant", "content": "", "refusal": None}),
        *(chunk({"content": p}) for p in parts),
        chunk(finish=finish),
        usage_chunk(),
    )


def error_body(
    message: str, kind: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def provider_for(server: FakeServer, **settings: Any) -> OpenAIProvider:
    config = ProviderConfig.model_validate(
        {"base_url": server.url + "/v1", "api_key": API_KEY, **settings}
    )
    return OpenAIProvider(config, profile=OPENAI)


def request(*messages: Message, **kwargs: Any) -> ModelRequest:
    kwargs.setdefault("model", "gpt-4.1")
    return ModelRequest(messages=list(messages), **kwargs)


async def collect(provider: OpenAIProvider, req: ModelRequest) -> tuple[list[Any], ModelResponse]:
    events = [e async for e in provider.stream(req)]
    assert isinstance(events[-1], ModelResponse)
    return events[:-1], events[-1]


async def test_text_streams_as_deltas_and_reports_usage_with_cached_tokens(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(text_reply("Hel", "lo, ", "world"))
    provider = provider_for(fake_server)

    deltas, response = await collect(
        provider,
        request(Message.user("Hi"), system="Be brief.", session_id="session-42", temperature=0.2),
    )

    assert [d.text for d in deltas if isinstance(d, TextDelta)] == ["Hel", "lo, ", "world"]
    assert response.message.text == "Hello, world"
    assert response.stop_reason is StopReason.END_TURN
    assert response.message.meta.model == "openai/gpt-4.1"
    assert (
        response.usage.input_tokens,
        response.usage.output_tokens,
        response.usage.cache_read_tokens,
    ) == (120, 30, 64)

    sent = fake_server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    body = sent.json()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    assert body["temperature"] == 0.2
    key = body["prompt_cache_key"]
    assert len(key) <= 64 and "session-42" not in key
    await provider.aclose()


async def test_prompt_cache_key_is_stable_per_session_and_differs_between_sessions(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(text_reply("a"), text_reply("b"), text_reply("c"))
    provider = provider_for(fake_server)
    long_id = "s" * 500
    for session in (long_id, long_id, "other"):
        await collect(provider, request(Message.user("Hi"), session_id=session))
    keys = [r.json()["prompt_cache_key"] for r in fake_server.requests]
    assert keys[0] == keys[1] != keys[2]
    assert all(len(k) <= 64 for k in keys)


async def test_tool_call_fragments_split_inside_strings_and_multibyte_characters(
    fake_server: FakeServer,
) -> None:
    arguments = json.dumps({"city": "München", "note": 'snow ☃ "quoted"'}, ensure_ascii=False)
    cut = [arguments[:5], arguments[5:13], arguments[13:29], arguments[29:]]
    response_chunks = [
        chunk({"role": "assistant", "content": None}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_w1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": ""},
                    }
                ]
            }
        ),
        *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}) for part in cut),
        chunk(finish="tool_calls"),
        usage_chunk(),
    ]
    reply = sse(*response_chunks)
    body = b"".join(reply.chunks or ())
    snowman = body.index("☃".encode())
    umlaut = body.index("ü".encode())
    fake_server.queue(sse(*response_chunks, split_at=[snowman + 1, snowman + 2, umlaut + 1]))
    provider = provider_for(fake_server)

    _, response = await collect(provider, request(Message.user("Weather?")))

    (call,) = response.message.tool_calls
    assert call.id == "call_w1" and call.name == "weather"
    assert call.arguments == {"city": "München", "note": 'snow ☃ "quoted"'}
    assert response.stop_reason is StopReason.TOOL_USE


async def test_parallel_tool_calls_are_assembled_by_index(fake_server: FakeServer) -> None:
    fake_server.queue(
        sse(
            chunk({"role": "assistant", "content": None}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "add", "arguments": ""},
                        }
                    ]
                }
            ),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "mul", "arguments": ""},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"a": 3, '}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 1, "b"'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 2}"}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": '"b": 4}'}}]}),
            chunk(finish="tool_calls"),
            usage_chunk(),
        )
    )
    _, response = await collect(provider_for(fake_server), request(Message.user("Compute")))
    calls = response.message.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_a", "add", {"a": 1, "b": 2}),
        ("call_b", "mul", {"a": 3, "b": 4}),
    ]


async def test_arguments_that_are_not_a_json_object_are_kept_raw(fake_server: FakeServer) -> None:
    fake_server.queue(
        sse(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_x",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a": '},
                        }
                    ]
                }
            ),
            chunk(finish="tool_calls"),
        )
    )
    _, response = await collect(provider_for(fake_server), request(Message.user("x")))
    (call,) = response.message.tool_calls
    assert call.arguments == {} and call.raw_arguments == '{"a": '


@pytest.mark.parametrize(
    "arguments",
    [
        '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}",
        '{"a": 1, "a": 2}',
        '{"a": "\\u0000"}',
    ],
)
async def test_hostile_argument_text_is_kept_raw_not_raised(
    fake_server: FakeServer, arguments: str
) -> None:
    fake_server.queue(
        sse(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_x",
                            "type": "function",
                            "function": {"name": "f", "arguments": arguments},
                        }
                    ]
                }
            ),
            chunk(finish="tool_calls"),
        )
    )
    _, response = await collect(provider_for(fake_server), request(Message.user("x")))
    (call,) = response.message.tool_calls
    assert call.arguments == {} and call.raw_arguments == arguments


async def test_agent_sends_tool_results_as_tool_messages_right_after_the_calls(
    openai_agent: Any, fake_server: FakeServer
) -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    fake_server.queue(
        sse(
            chunk({"content": "Adding."}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                        }
                    ]
                }
            ),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_2",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a": 5, "b": 5}'},
                        }
                    ]
                }
            ),
            chunk(finish="tool_calls"),
            usage_chunk(),
        ),
        text_reply("3 and 10"),
    )
    agent = openai_agent(tools=[add], system="You add.")

    result = await agent.run("Add 1+2 and 5+5")

    assert result.outcome is Outcome.COMPLETED and result.output == "3 and 10"
    messages = fake_server.requests[1].json()["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert messages[2]["content"] == "Adding."
    assert [c["id"] for c in messages[2]["tool_calls"]] == ["call_1", "call_2"]
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}
    assert messages[4] == {"role": "tool", "tool_call_id": "call_2", "content": "10"}
    assert fake_server.requests[1].json()["tools"][0]["function"]["name"] == "add"


async def test_max_tokens_stop_ends_the_run_with_max_tokens(
    openai_agent: Any, fake_server: FakeServer
) -> None:
    fake_server.queue(text_reply("It was the best of", finish="length"))
    result = await openai_agent(max_output_tokens=5).run("Write a novel")
    assert result.outcome is Outcome.MAX_TOKENS
    assert result.output == "It was the best of"
    assert fake_server.requests[0].json()["max_completion_tokens"] == 5


async def test_rate_limit_is_retried_after_the_servers_retry_after(
    openai_agent: Any, fake_server: FakeServer, sleep: Any
) -> None:
    fake_server.queue(
        FakeResponse.json(
            error_body(
                "Rate limit reached for gpt-4.1 on tokens per min.", "tokens", "rate_limit_exceeded"
            ),
            status=429,
            headers={"retry-after": "7"},
        ),
        FakeResponse.json(
            error_body("Rate limit reached.", "requests", "rate_limit_exceeded"),
            status=429,
            headers={"retry-after-ms": "1500"},
        ),
        text_reply("Finally"),
    )
    events = [e async for e in openai_agent().stream("Hi")]
    retries = [e for e in events if isinstance(e, Retry)]
    assert [r.delay for r in retries] == [7.0, 1.5]
    assert all(isinstance(r.error, RateLimitError) for r in retries)
    assert sleep.delays == [7.0, 1.5]
    assert events[-1].result.output == "Finally"
    assert len(fake_server.requests) == 3


async def test_rejected_key_fails_at_once_naming_the_variable_without_echoing_the_key(
    openai_agent: Any, fake_server: FakeServer
) -> None:
    fake_server.queue(
        FakeResponse.json(
            error_body(
                "Incorrect API key provided: sk-test-********cdef. You can find your API key at https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                "invalid_api_key",
            ),
            status=401,
        )
    )
    with pytest.raises(AuthenticationError) as info:
        await openai_agent().run("Hi")
    assert "OPENAI_API_KEY" in str(info.value)
    assert "sk-test" not in str(info.value) and API_KEY not in str(info.value)
    assert len(fake_server.requests) == 1


async def test_missing_key_fails_before_any_request(fake_server: FakeServer) -> None:
    provider = OpenAIProvider(ProviderConfig(base_url=fake_server.url + "/v1"))
    assert any(m.id == "gpt-4.1" for m in provider.catalogue())
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        await collect(provider, request(Message.user("Hi")))
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        await provider.validate_auth()
    assert fake_server.requests == []


async def test_overloaded_error_mid_stream_is_retried(
    openai_agent: Any, fake_server: FakeServer
) -> None:
    fake_server.queue(
        sse(
            chunk({"content": "Partial "}),
            {
                "error": {
                    "message": "The server is currently overloaded with other requests. Please retry.",
                    "type": "server_error",
                    "param": None,
                    "code": "server_is_overloaded",
                }
            },
            done=False,
        ),
        text_reply("Complete answer"),
    )
    events = [e async for e in openai_agent().stream("Hi")]
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert isinstance(retry.error, OverloadedError)
    result = events[-1].result
    assert result.output == "Complete answer"
    assert [m.text for m in result.messages if m.role == "assistant"] == ["Complete answer"]


async def test_connection_dropped_mid_stream_is_retried_without_duplicating_text(
    openai_agent: Any, fake_server: FakeServer
) -> None:
    fake_server.queue(
        sse(
            chunk({"content": "The answer "}),
            chunk({"content": "is"}),
            chunk({"content": " 4"}),
            chunk(finish="stop"),
            drop_after=2,
        ),
        text_reply("The answer ", "is 4"),
    )
    events = [e async for e in openai_agent().stream("2+2?")]
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert isinstance(retry.error, ProviderConnectionError)
    result = events[-1].result
    assert result.output == "The answer is 4"
    assert [m.role for m in result.messages] == ["user", "assistant"]


async def test_stream_cut_before_finish_reason_is_a_connection_error(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(sse(chunk({"content": "Half"}), done=False))
    with pytest.raises(ProviderConnectionError, match="ended before the response was complete"):
        await collect(provider_for(fake_server), request(Message.user("Hi")))


class RecordingCompaction:
    """Drops everything but the last user message when forced."""

    name = "test-drop-old"

    def __init__(self) -> None:
        self.forced: list[bool] = []

    async def compact(self, context: Any) -> Any:
        from tether.compaction import CompactionResult

        self.forced.append(context.force)
        if not context.force:
            return None
        return CompactionResult(
            messages=[context.messages[-1]], tokens_before=1000, tokens_after=10
        )


async def test_context_overflow_compacts_and_retries_once(
    openai_agent: Any, fake_server: FakeServer
) -> None:
    from tether.sessions import InMemorySession

    session = InMemorySession()
    session.append(Message.user("an old question " * 50))
    session.append(
        Message(
            role="assistant",
            content=[TextBlock(text="an old answer")],
            meta=MessageMeta(model="openai/gpt-4.1"),
        )
    )
    fake_server.queue(
        FakeResponse.json(
            error_body(
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130415 tokens. Please reduce the length of the messages.",
                "invalid_request_error",
                "context_length_exceeded",
                "messages",
            ),
            status=400,
        ),
        text_reply("Fits now"),
    )
    strategy = RecordingCompaction()
    events = [
        e async for e in openai_agent(compaction=strategy).stream("New question", session=session)
    ]

    assert strategy.forced == [True]
    assert any(isinstance(e, Compaction) for e in events)
    assert events[-1].result.output == "Fits now"
    assert len(fake_server.requests) == 2
    assert [m["role"] for m in fake_server.requests[1].json()["messages"]] == ["user"]


async def test_context_overflow_is_reported_when_compaction_cannot_help(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(
        FakeResponse.json(
            error_body(
                "Your input exceeds the context window of this model.",
                "invalid_request_error",
                "context_length_exceeded",
            ),
            status=400,
        )
    )
    with pytest.raises(ContextOverflowError):
        await collect(provider_for(fake_server), request(Message.user("Hi")))


def foreign_history() -> list[Message]:
    """A turn produced by Anthropic: signed thinking, a tool call with Anthropic's id
    format, and a tool result with an image."""
    return [
        Message.user("What is in the screenshot?"),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(
                    text="I should take a screenshot.",
                    signature="EqQBCkgIARABGAIiQL-anthropic-signature",
                ),
                ThinkingBlock(text="", signature="opaque", redacted=True),
                TextBlock(text="Taking one."),
                ToolCallBlock(
                    id="toolu_01A09q90qw90lq917835lq9.with.dots-and-a-very-long-suffix",
                    name="screenshot",
                    arguments={},
                ),
            ],
            meta=MessageMeta(model="anthropic/claude-sonnet-4-5"),
        ),
        Message.tool(
            [
                ToolResultBlock(
                    call_id="toolu_01A09q90qw90lq917835lq9.with.dots-and-a-very-long-suffix",
                    content=[
                        TextBlock(text="Captured."),
                        ImageBlock(mime_type="image/png", data="iVBORw0KGgo="),
                    ],
                )
            ]
        ),
        Message.user("Describe it."),
    ]


async def test_a_foreign_history_is_sent_validly(fake_server: FakeServer) -> None:
    fake_server.queue(text_reply("A login form."))
    await collect(provider_for(fake_server), request(*foreign_history()))

    raw = fake_server.requests[0].body.decode()
    assert "anthropic-signature" not in raw and "opaque" not in raw
    messages = fake_server.requests[0].json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user", "user"]
    assistant, tool, images = messages[1], messages[2], messages[3]
    assert (
        "I should take a screenshot." in assistant["content"]
        and "Taking one." in assistant["content"]
    )
    call_id = assistant["tool_calls"][0]["id"]
    assert len(call_id) <= 40 and tool["tool_call_id"] == call_id
    assert isinstance(tool["content"], str) and "Captured." in tool["content"]
    assert {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    } in images["content"]


async def test_own_reasoning_is_not_sent_back_to_chat_completions(fake_server: FakeServer) -> None:
    fake_server.queue(text_reply("ok"))
    own = Message(
        role="assistant",
        content=[ThinkingBlock(text="private chain"), TextBlock(text="Earlier answer")],
        meta=MessageMeta(model="openai/gpt-4.1"),
    )
    await collect(provider_for(fake_server), request(Message.user("q"), own, Message.user("again")))
    messages = fake_server.requests[0].json()["messages"]
    assert messages[1] == {"role": "assistant", "content": "Earlier answer"}


async def test_images_in_user_messages_are_sent_as_image_parts(fake_server: FakeServer) -> None:
    fake_server.queue(text_reply("A cat."))
    image = ImageBlock(url="https://example.com/cat.png")
    await collect(provider_for(fake_server), request(Message.user("What is this?", image)))
    content = fake_server.requests[0].json()["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    ]


async def test_tool_definitions_and_results_round_trip_through_agent_events(
    openai_agent: Any, fake_server: FakeServer
) -> None:
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    fake_server.queue(
        sse(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_s",
                            "type": "function",
                            "function": {"name": "shout", "arguments": '{"text": "héllo"}'},
                        }
                    ]
                }
            ),
            chunk(finish="tool_calls"),
        ),
        text_reply("Done"),
    )
    events = [e async for e in openai_agent(tools=[shout]).stream("Shout héllo")]
    (end,) = [e for e in events if isinstance(e, ToolEnd)]
    assert end.result.text == "HÉLLO"
    tool_def = fake_server.requests[0].json()["tools"][0]
    assert tool_def["type"] == "function"
    assert tool_def["function"]["parameters"]["properties"]["text"]["type"] == "string"


async def test_refusal_deltas_end_the_turn_as_a_refusal(fake_server: FakeServer) -> None:
    fake_server.queue(sse(chunk({"refusal": "I can't help with that."}), chunk(finish="stop")))
    deltas, response = await collect(provider_for(fake_server), request(Message.user("bad")))
    assert response.stop_reason is StopReason.REFUSAL
    assert [d.text for d in deltas if isinstance(d, TextDelta)] == ["I can't help with that."]


async def test_reasoning_request_uses_effort_and_reports_reasoning_tokens(
    fake_server: FakeServer,
) -> None:
    from tether.provider import ThinkingConfig

    fake_server.queue(
        sse(
            chunk({"content": "42"}),
            chunk(finish="stop"),
            usage_chunk(prompt=10, completion=200, cached=0, reasoning=190),
        )
    )
    provider = provider_for(fake_server, api="chat")
    req = request(
        Message.user("Think"),
        model="o4-mini",
        thinking=ThinkingConfig(budget_tokens=20_000),
        temperature=0.5,
    )
    req.capabilities = provider.capabilities("o4-mini")
    _, response = await collect(provider, req)
    body = fake_server.requests[0].json()
    assert body["reasoning_effort"] == "high"
    assert "temperature" not in body
    assert response.usage.reasoning_tokens == 190


async def test_compatible_server_reasoning_field_streams_as_thinking(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(
        sse(
            chunk({"reasoning_content": "Let me think."}),
            chunk({"content": "Yes."}),
            chunk(finish="stop"),
        )
    )
    deltas, response = await collect(provider_for(fake_server), request(Message.user("?")))
    assert [type(d) for d in deltas] == [ThinkingDelta, TextDelta]
    assert isinstance(response.message.content[0], ThinkingBlock)
    assert response.message.content[0].text == "Let me think."


def test_tools_definition_shape() -> None:
    from tether_openai.chat.request import chat_params

    req = request(
        Message.user("x"),
        tools=[ToolDefinition("f", "Does f.", {"type": "object", "properties": {}})],
    )
    params = chat_params(req, model_string="openai/gpt-4.1", openai_features=True)
    assert params["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "f",
                "description": "Does f.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]


async def test_an_image_without_data_or_url_is_an_invalid_request(fake_server: FakeServer) -> None:
    from tether.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match="neither `data` nor `url`"):
        await collect(provider_for(fake_server), request(Message.user("Look", ImageBlock())))
    assert fake_server.requests == []


def _head(index: int, call_id: str, arguments: str) -> dict[str, Any]:
    call = {"index": index, "id": call_id, "type": "function"}
    return chunk({"tool_calls": [{**call, "function": {"name": "lookup", "arguments": arguments}}]})


def _tail(index: int, arguments: str) -> dict[str, Any]:
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})


async def test_a_call_is_announced_complete_when_the_next_call_starts_or_the_choice_finishes(
    fake_server: FakeServer,
) -> None:
    """The server sends what follows the moment a call is complete only once the client
    has announced it: call 0 with call 1's first fragment, call 1 with the finish."""
    import threading

    from tether.provider import ToolCallReady

    payload = sse(
        chunk({"role": "assistant", "content": None}),
        _head(0, "call_a", '{"key"'),
        _tail(0, ': "a"}'),
        _head(1, "call_b", ""),
        _tail(1, '{"key": "bee"}'),
        chunk(finish="tool_calls"),
        usage_chunk(),
    )
    announced = [threading.Event(), threading.Event()]
    waited: list[bool] = []
    gates = [(b"bee", announced[0]), (b'"prompt_tokens"', announced[1])]
    chunks = gated_chunks(payload.chunks, gates, waited)
    fake_server.queue(FakeResponse(status=200, headers=payload.headers, chunks=chunks))
    stream = provider_for(fake_server).stream(request(Message.user("look")))
    seen = await collect_announcing(stream, announced)
    assert waited == [True, True]
    calls = seen[-1].message.tool_calls
    assert [(e.call, e.index) for e in seen if isinstance(e, ToolCallReady)] == [
        (calls[0], 0),
        (calls[1], 1),
    ]
    assert [(c.id, c.arguments) for c in calls] == [
        ("call_a", {"key": "a"}),
        ("call_b", {"key": "bee"}),
    ]


async def test_calls_of_a_server_that_interleaves_them_are_announced_only_when_whole(
    fake_server: FakeServer,
) -> None:
    from tether.provider import ToolCallReady

    fake_server.queue(
        sse(
            chunk({"role": "assistant", "content": None}),
            _head(0, "call_a", ""),
            _head(1, "call_b", '{"key": '),
            _tail(0, '{"key": "a"}'),
            _tail(1, '"b"}'),
            chunk(finish="tool_calls"),
            usage_chunk(),
        )
    )
    events, response = await collect(provider_for(fake_server), request(Message.user("look")))
    ready = [(e.call, e.index) for e in events if isinstance(e, ToolCallReady)]
    calls = response.message.tool_calls
    assert ready == [(calls[0], 0), (calls[1], 1)]
    assert [c.arguments for c in calls] == [{"key": "a"}, {"key": "b"}]
