"""The Responses API through the official SDK against a loopback server speaking its
streaming wire format: named SSE events (``event: response.output_text.delta``) whose
data repeats the type and carries a ``sequence_number``, ending in ``response.completed``,
``response.incomplete`` or ``response.failed``."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from tether.config import ProviderConfig
from tether.errors import (
    ContextOverflowError,
    OverloadedError,
    ProviderConnectionError,
    ServerError,
)
from tether.events import Retry, TextDelta, ThinkingDelta
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
from tether.provider import ModelRequest, ModelResponse, ThinkingConfig
from tether.result import Outcome
from tether_openai.provider import OpenAIProvider
from tether_testing.http import FakeResponse, FakeServer, collect_announcing, gated_chunks

API_KEY = "sk-test-0123456789abcdef"
MODEL = "gpt-5.4-mini"
ENCRYPTED = "gAAAAABo_encrypted_reasoning_0123456789=="


class Stream:
    """Builds one streamed response, numbering events as the API does."""

    def __init__(self, model: str = MODEL) -> None:
        self.model = model
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.output: list[dict[str, Any]] = []
        self._seq = itertools.count()
        self.add("response.created", response=self.response("in_progress"))
        self.add("response.in_progress", response=self.response("in_progress"))

    def response(self, status: str, **extra: Any) -> dict[str, Any]:
        return {
            "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
            "object": "response",
            "created_at": 1741476542,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "max_output_tokens": None,
            "model": f"{self.model}-2026-03-17",
            "output": list(self.output) if status != "in_progress" else [],
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "store": False,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": None,
            "user": None,
            "metadata": {},
            **extra,
        }

    def add(self, kind: str, **data: Any) -> Stream:
        self.events.append((kind, {"type": kind, "sequence_number": next(self._seq), **data}))
        return self

    def reasoning(
        self, *summary: str, item_id: str = "rs_1", encrypted: str | None = ENCRYPTED
    ) -> Stream:
        index = len(self.output)
        self.add(
            "response.output_item.added",
            output_index=index,
            item={"id": item_id, "type": "reasoning", "summary": []},
        )
        for number, text in enumerate(summary):
            part = {"type": "summary_text", "text": ""}
            self.add(
                "response.reasoning_summary_part.added",
                item_id=item_id,
                output_index=index,
                summary_index=number,
                part=part,
            )
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                self.add(
                    "response.reasoning_summary_text.delta",
                    item_id=item_id,
                    output_index=index,
                    summary_index=number,
                    delta=piece,
                )
            self.add(
                "response.reasoning_summary_text.done",
                item_id=item_id,
                output_index=index,
                summary_index=number,
                text=text,
            )
            self.add(
                "response.reasoning_summary_part.done",
                item_id=item_id,
                output_index=index,
                summary_index=number,
                part={"type": "summary_text", "text": text},
            )
        item = {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": t} for t in summary],
            "encrypted_content": encrypted,
        }
        self.output.append(item)
        return self.add("response.output_item.done", output_index=index, item=item)

    def message(self, *pieces: str, item_id: str = "msg_1") -> Stream:
        index = len(self.output)
        self.add(
            "response.output_item.added",
            output_index=index,
            item={
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            },
        )
        self.add(
            "response.content_part.added",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part={"type": "output_text", "annotations": [], "text": ""},
        )
        for piece in pieces:
            self.add(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        text = "".join(pieces)
        self.add(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        )
        part = {"type": "output_text", "annotations": [], "text": text}
        self.add(
            "response.content_part.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part=part,
        )
        item = {
            "id": item_id,
            "type": "message",
            "status": "completed",
            "content": [part],
            "role": "assistant",
        }
        self.output.append(item)
        return self.add("response.output_item.done", output_index=index, item=item)

    def call(
        self, name: str, arguments: str, *, call_id: str, item_id: str, pieces: int = 3
    ) -> Stream:
        index = len(self.output)
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call_id,
            "name": name,
        }
        self.add("response.output_item.added", output_index=index, item=item)
        size = max(1, len(arguments) // pieces)
        for start in range(0, len(arguments), size):
            self.add(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=arguments[start : start + size],
            )
        self.add(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=arguments,
        )
        done = {**item, "status": "completed", "arguments": arguments}
        self.output.append(done)
        return self.add("response.output_item.done", output_index=index, item=done)

    def completed(self, *, cached: int = 0, reasoning: int = 0) -> FakeResponse:
        usage = {
            "input_tokens": 300,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": 50,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": 350,
        }
        self.add("response.completed", response=self.response("completed", usage=usage))
        return self.sse()

    def incomplete(self, reason: str) -> FakeResponse:
        self.add(
            "response.incomplete",
            response=self.response("incomplete", incomplete_details={"reason": reason}),
        )
        return self.sse()

    def sse(self, **options: Any) -> FakeResponse:
        return FakeResponse.sse(self.events, **options)


def provider_for(server: FakeServer, **settings: Any) -> OpenAIProvider:
    return OpenAIProvider(
        ProviderConfig.model_validate(
            {"base_url": server.url + "/v1", "api_key": API_KEY, **settings}
        )
    )


def request(
    provider: OpenAIProvider, *messages: Message, model: str = MODEL, **kwargs: Any
) -> ModelRequest:
    return ModelRequest(
        model=model, messages=list(messages), capabilities=provider.capabilities(model), **kwargs
    )


async def collect(provider: OpenAIProvider, req: ModelRequest) -> tuple[list[Any], ModelResponse]:
    events = [e async for e in provider.stream(req)]
    assert isinstance(events[-1], ModelResponse)
    return events[:-1], events[-1]


def input_items(server: FakeServer, index: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = server.requests[index].json()["input"]
    return items


async def test_reasoning_models_use_the_responses_api_statelessly(fake_server: FakeServer) -> None:
    fake_server.queue(
        Stream()
        .reasoning("Weighing options.", "Picking one.")
        .message("Hel", "lo")
        .completed(cached=128, reasoning=20)
    )
    provider = provider_for(fake_server)

    deltas, response = await collect(
        provider,
        request(
            provider,
            Message.user("Hi"),
            system="Be kind.",
            session_id="abc",
            thinking=ThinkingConfig(effort="low"),
        ),
    )

    assert [(type(d).__name__, d.text) for d in deltas] == [
        ("ThinkingDelta", "Weighing"),
        ("ThinkingDelta", " options."),
        ("ThinkingDelta", "\n\n"),
        ("ThinkingDelta", "Pickin"),
        ("ThinkingDelta", "g one."),
        ("TextDelta", "Hel"),
        ("TextDelta", "lo"),
    ]
    thinking, text = response.message.content
    assert isinstance(thinking, ThinkingBlock) and isinstance(text, TextBlock)
    assert (
        thinking.text
        == "Weighing options.\n\nPicking one."
        == "".join(d.text for d in deltas if isinstance(d, ThinkingDelta))
    )
    assert thinking.signature == ENCRYPTED
    assert text.text == "Hello"
    assert response.stop_reason is StopReason.END_TURN
    assert response.usage.cache_read_tokens == 128 and response.usage.reasoning_tokens == 20
    assert response.usage.input_tokens == 300

    sent = fake_server.requests[0]
    assert sent.path == "/v1/responses"
    body = sent.json()
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "Be kind."
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert len(body["prompt_cache_key"]) <= 64
    assert body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]


async def test_reasoning_and_parallel_calls_are_replayed_with_results_in_order(
    openai_agent: Any, fake_server: FakeServer
) -> None:
    def lookup(city: str) -> str:
        """Population of a city."""
        return {"Zürich": "421k", "São Paulo": "11.4M"}[city]

    first_args = json.dumps({"city": "Zürich"}, ensure_ascii=False)
    second_args = json.dumps({"city": "São Paulo"}, ensure_ascii=False)
    turn = (
        Stream()
        .reasoning("Need two lookups.")
        .call("lookup", first_args, call_id="call_zrh", item_id="fc_1")
        .call("lookup", second_args, call_id="call_sao", item_id="fc_2")
    )
    body = b"".join(turn.completed().chunks or ())
    # Cut the byte stream inside the two-byte characters of both argument fragments.
    cuts = [body.index("ü".encode()) + 1, body.index("ã".encode()) + 1]
    fake_server.queue(
        turn.sse(split_at=cuts), Stream().message("Zürich 421k, São Paulo 11.4M").completed()
    )
    agent = openai_agent(
        f"openai/{MODEL}", tools=[lookup], thinking=ThinkingConfig(effort="medium")
    )

    result = await agent.run("Populations?")

    assert result.outcome is Outcome.COMPLETED
    assert result.output == "Zürich 421k, São Paulo 11.4M"
    calls = result.messages[1].tool_calls
    assert [c.arguments for c in calls] == [{"city": "Zürich"}, {"city": "São Paulo"}]
    items = input_items(fake_server, 1)
    assert [i.get("type", "message") for i in items] == [
        "message",
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    reasoning = items[1]
    assert reasoning["id"] == "rs_1" and reasoning["encrypted_content"] == ENCRYPTED
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Need two lookups."}]
    assert [(i["id"], i["call_id"]) for i in items[2:4]] == [
        ("fc_1", "call_zrh"),
        ("fc_2", "call_sao"),
    ]
    assert items[4] == {"type": "function_call_output", "call_id": "call_zrh", "output": "421k"}
    assert items[5] == {"type": "function_call_output", "call_id": "call_sao", "output": "11.4M"}


def own(*blocks: Any, model: str = MODEL) -> Message:
    return Message(
        role="assistant", content=list(blocks), meta=MessageMeta(model=f"openai/{model}")
    )


def signed(text: str = "thought", item_id: str = "rs_9") -> ThinkingBlock:
    return ThinkingBlock.model_validate(
        {"text": text, "signature": ENCRYPTED, "item_id": item_id, "summary": [text]}
    )


async def test_a_reasoning_item_is_never_sent_without_the_item_that_followed_it(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(Stream().message("ok").completed())
    provider = provider_for(fake_server)
    cut_off = own(signed())  # the response ended (max tokens) right after reasoning
    await collect(provider, request(provider, Message.user("a"), cut_off, Message.user("b")))
    items = input_items(fake_server, 0)
    assert all(i.get("type") != "reasoning" for i in items)
    assert [i["role"] for i in items] == ["user", "user"]


async def test_items_of_an_unreplayable_reasoning_go_without_their_ids(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(Stream().message("ok").completed())
    provider = provider_for(fake_server)
    unsigned = ThinkingBlock.model_validate({"text": "t", "item_id": "rs_5"})
    call = ToolCallBlock.model_validate(
        {"id": "call_1", "name": "f", "arguments": {}, "item_id": "fc_5"}
    )
    history = [
        Message.user("a"),
        own(unsigned, call),
        Message.tool([ToolResultBlock(call_id="call_1", content="done")]),
    ]
    await collect(provider, request(provider, *history))
    items = input_items(fake_server, 0)
    assert items[1] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "f",
        "arguments": "{}",
    }


async def test_reasoning_of_another_model_is_downgraded_to_text(fake_server: FakeServer) -> None:
    fake_server.queue(Stream().message("ok").completed())
    provider = provider_for(fake_server)
    history = [
        Message.user("a"),
        own(signed("Other model's idea"), TextBlock(text="Answer"), model="gpt-5.4"),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(text="Claude's idea", signature="anthropic-sig"),
                TextBlock(text="More"),
            ],
            meta=MessageMeta(model="anthropic/claude-sonnet-4-5"),
        ),
        Message.user("b"),
    ]
    await collect(provider, request(provider, *history))
    raw = fake_server.requests[0].body.decode()
    assert ENCRYPTED not in raw and "anthropic-sig" not in raw
    items = input_items(fake_server, 0)
    assert all(i.get("type") != "reasoning" for i in items)
    texts = [i["content"] for i in items if i.get("role") == "assistant"]
    assert texts == [
        "<thinking>\nOther model's idea\n</thinking>",
        "Answer",
        "<thinking>\nClaude's idea\n</thinking>",
        "More",
    ]


async def test_images_in_tool_results_stay_in_the_function_call_output(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(Stream().message("A chart.").completed())
    provider = provider_for(fake_server)
    history = [
        Message.user("Plot it"),
        Message(
            role="assistant",
            content=[ToolCallBlock(id="toolu_01XYZ", name="plot", arguments={"x": 1})],
            meta=MessageMeta(model="anthropic/claude-sonnet-4-5"),
        ),
        Message.tool(
            [
                ToolResultBlock(
                    call_id="toolu_01XYZ",
                    content=[TextBlock(text="Plotted."), ImageBlock(data="iVBORw0KGgo=")],
                )
            ]
        ),
    ]
    assert provider.capabilities(MODEL).images_in_tool_results is True
    await collect(provider, request(provider, *history))
    items = input_items(fake_server, 0)
    assert items[1] == {
        "type": "function_call",
        "call_id": "toolu_01XYZ",
        "name": "plot",
        "arguments": '{"x": 1}',
    }
    assert items[2] == {
        "type": "function_call_output",
        "call_id": "toolu_01XYZ",
        "output": [
            {"type": "input_text", "text": "Plotted."},
            {
                "type": "input_image",
                "image_url": "data:image/png;base64,iVBORw0KGgo=",
                "detail": "auto",
            },
        ],
    }


async def test_incomplete_response_for_max_output_tokens(fake_server: FakeServer) -> None:
    fake_server.queue(Stream().message("Once upon").incomplete("max_output_tokens"))
    provider = provider_for(fake_server)
    _, response = await collect(
        provider, request(provider, Message.user("story"), max_output_tokens=3)
    )
    assert response.stop_reason is StopReason.MAX_TOKENS
    assert response.message.text == "Once upon"
    assert fake_server.requests[0].json()["max_output_tokens"] == 3


async def test_failed_response_is_a_retryable_server_error(fake_server: FakeServer) -> None:
    stream = Stream().message("Par")
    error = {"code": "server_error", "message": "The model failed to generate a response."}
    stream.add("response.failed", response=stream.response("failed", error=error))
    fake_server.queue(stream.sse())
    provider = provider_for(fake_server)
    with pytest.raises(ServerError, match="failed to generate") as info:
        await collect(provider, request(provider, Message.user("x")))
    assert info.value.retryable


async def test_error_event_for_context_length_is_a_context_overflow(
    fake_server: FakeServer,
) -> None:
    stream = Stream()
    stream.add(
        "error",
        code="context_length_exceeded",
        message="Your input exceeds the context window of this model.",
        param="input",
    )
    fake_server.queue(stream.sse())
    provider = provider_for(fake_server)
    with pytest.raises(ContextOverflowError):
        await collect(provider, request(provider, Message.user("x")))


async def test_overloaded_error_event_mid_stream_is_retried_by_the_agent(
    openai_agent: Any, fake_server: FakeServer
) -> None:
    stream = Stream().message("Partial")
    stream.add(
        "error",
        code="server_is_overloaded",
        message="Our servers are currently overloaded. Please try again later.",
        param=None,
    )
    fake_server.queue(stream.sse(), Stream().message("Whole").completed())
    events = [e async for e in openai_agent(f"openai/{MODEL}").stream("x")]
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert isinstance(retry.error, OverloadedError)
    assert events[-1].result.output == "Whole"


async def test_connection_dropped_mid_stream_then_success(
    openai_agent: Any, fake_server: FakeServer
) -> None:
    dropped = Stream().message("Dropped ", "text")
    dropped.completed()
    fake_server.queue(dropped.sse(drop_after=5), Stream().message("Clean ", "text").completed())
    events = [e async for e in openai_agent(f"openai/{MODEL}").stream("x")]
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert isinstance(retry.error, ProviderConnectionError)
    result = events[-1].result
    assert [m.text for m in result.messages if m.role == "assistant"] == ["Clean text"]


async def test_api_can_be_chosen_in_config(fake_server: FakeServer) -> None:
    provider = provider_for(fake_server, api="responses")
    assert provider.api_for("gpt-4.1") == "responses"
    assert provider_for(fake_server).api_for("gpt-4.1") == "chat"
    assert provider_for(fake_server).api_for(MODEL) == "responses"
    per_model = provider_for(fake_server, models={MODEL: {"api": "chat", "context_window": 1000}})
    assert per_model.api_for(MODEL) == "chat"
    assert per_model.capabilities(MODEL).context_window == 1000
    assert per_model.capabilities(MODEL).images_in_tool_results is False


async def test_text_deltas_reach_the_consumer_before_the_stream_ends(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(Stream().message("first", "second").completed())
    provider = provider_for(fake_server)
    stream = provider.stream(request(provider, Message.user("x")))
    first = await anext(stream)
    assert first == TextDelta("first")
    rest = [e async for e in stream]
    assert isinstance(rest[-1], ModelResponse)


async def test_a_function_call_is_announced_complete_at_its_output_item_done(
    fake_server: FakeServer,
) -> None:
    """The server sends what follows a function call's ``response.output_item.done`` only
    once the client has announced that call: ToolCallReady comes there, not at the end."""
    import threading

    from tether.provider import ToolCallReady

    payload = (
        Stream()
        .message("Looking.")
        .call("lookup", '{"key": "a"}', call_id="call_a", item_id="fc_a")
        .call("lookup", '{"key": "b"}', call_id="call_b", item_id="fc_b")
        .completed()
    )
    announced = [threading.Event(), threading.Event()]
    waited: list[bool] = []
    gates = [(b'"fc_b"', announced[0]), (b"response.completed", announced[1])]
    chunks = gated_chunks(payload.chunks, gates, waited)
    fake_server.queue(FakeResponse(status=200, headers=payload.headers, chunks=chunks))
    provider = provider_for(fake_server)
    seen = await collect_announcing(
        provider.stream(request(provider, Message.user("look"))), announced
    )
    assert waited == [True, True]
    calls = seen[-1].message.tool_calls
    assert [(e.call, e.index) for e in seen if isinstance(e, ToolCallReady)] == [
        (calls[0], 0),
        (calls[1], 1),
    ]
    assert [(c.id, c.arguments) for c in calls] == [
        ("call_a", {"key": "a"}),
        ("call_b", {"key": "b"}),
    ]
    assert type(seen[0]) is TextDelta
