"""Local OpenAI-compatible servers as a new user meets them: loopback fakes that answer
the way llama.cpp's ``llama-server`` and llama-cpp-python's server do, byte for byte
where it matters (their chunk shapes, their HTTP 500 bodies, llama-cpp-python's empty
200 to a streamed request carrying ``tool_choice``)."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from pydantic import BaseModel

import tether
from tether.config import Config, ProviderConfig
from tether.errors import ProviderConnectionError, ServerError
from tether.runner import RetryPolicy
from tether.testing import RecordingSleep
from tether.testing.http import FakeResponse, FakeServer, RecordedRequest
from tether_openai import plugin

_FINGERPRINT = "b4273-a1b2c3d4"


def llamacpp_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """A chunk as ``llama-server`` streams it (its field order, its fingerprint)."""
    return {
        "choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
        "created": 1764950000,
        "id": "chatcmpl-Qm3V8yPx",
        "model": "qwen2.5-0.5b-instruct-q4_k_m.gguf",
        "system_fingerprint": _FINGERPRINT,
        "object": "chat.completion.chunk",
    }


def llamacpp_stream(*deltas: dict[str, Any], finish: str, usage: bool = True) -> FakeResponse:
    events: list[tuple[str | None, Any]] = [(None, llamacpp_chunk(d)) for d in deltas]
    last = llamacpp_chunk({}, finish)
    if usage:
        last["usage"] = {"completion_tokens": 7, "prompt_tokens": 41, "total_tokens": 48}
    events.append((None, last))
    events.append((None, "[DONE]"))
    return FakeResponse.sse(events)


def llamacpp_500(message: str) -> FakeResponse:
    return FakeResponse.json(
        {"error": {"code": 500, "message": message, "type": "server_error"}}, status=500
    )


def weather_call() -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "index": 0,
                "id": "gFd2xQk1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
            }
        ]
    }


def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 4 degrees, rain"


def local_agent(model: str, server: FakeServer, **kwargs: Any) -> tether.Agent:
    name = model.partition("/")[0]
    settings = kwargs.pop("settings", {})
    config = Config(
        providers={
            name: ProviderConfig.model_validate({"base_url": server.url + "/v1", **settings})
        }
    )
    kwargs.setdefault("retry", RetryPolicy(sleep=RecordingSleep()))
    return tether.Agent(model, config=config, plugins=[plugin], **kwargs)


def llama_server(request: RecordedRequest) -> FakeResponse:
    """``llama-server``: a message whose ``content`` is null is a 500 (it accepts "")."""
    body = request.json()
    for message in body["messages"]:
        if message.get("content") is None:
            return llamacpp_500("[json.exception.type_error.302] type must be string, but is null")
    return llamacpp_stream({"content": "Rain in Oslo."}, finish="stop")


async def test_llamacpp_tool_call_turn_is_replayed_with_empty_content_the_server_accepts() -> None:
    with FakeServer(llama_server) as server:
        server.queue(llamacpp_stream(weather_call(), finish="tool_calls"))
        result = await local_agent("llamacpp/qwen", server, tools=[weather]).run("Oslo?")
        assert result.output == "Rain in Oslo."
        replayed = server.requests[1].json()["messages"]
        (assistant,) = [m for m in replayed if m["role"] == "assistant"]
        assert assistant["content"] == "" and assistant["tool_calls"][0]["id"] == "gFd2xQk1"


async def test_openai_itself_still_gets_null_content_with_tool_calls() -> None:
    from tether.messages import Message, ToolCallBlock
    from tether_openai.chat.request import chat_messages

    call = Message(role="assistant", content=[ToolCallBlock(id="c1", name="f", arguments={})])
    assert chat_messages([call], "", "openai/gpt-4.1")[0]["content"] is None
    assert chat_messages([call], "", "llamacpp/q", "")[0]["content"] == ""


def llama_cpp_python(request: RecordedRequest) -> FakeResponse:
    """llama-cpp-python's server: ``tools`` without ``tool_choice`` are ignored, and a
    streamed request with ``tool_choice`` gets HTTP 200 with an empty body."""
    body = request.json()
    has_tool_result = any(m["role"] == "tool" for m in body["messages"])
    if "tool_choice" in body and body.get("stream"):
        return FakeResponse(status=200, headers={"content-type": "text/event-stream"}, body=b"")
    if "tool_choice" in body and not has_tool_result:
        return FakeResponse.json(
            {
                "id": "chatcmpl-5f0c",
                "object": "chat.completion",
                "created": 1764950000,
                "model": "qwen",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "content": None,
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "id": "call__0_weather_cmpl-5f0c",
                                    "type": "function",
                                    "function": {
                                        "name": "weather",
                                        "arguments": '{"city": "Oslo"}',
                                    },
                                }
                            ],
                        },
                        "logprobs": None,
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
            }
        )
    if has_tool_result:
        return FakeResponse.json(
            {
                "id": "chatcmpl-5f0d",
                "object": "chat.completion",
                "created": 1764950001,
                "model": "qwen",
                "choices": [
                    {
                        "index": 0,
                        "message": {"content": "Rainy, 4 degrees.", "role": "assistant"},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 150, "completion_tokens": 6, "total_tokens": 156},
            }
        )
    return llamacpp_stream({"content": "I cannot check the weather."}, finish="stop")


async def test_llama_cpp_python_tool_turns_go_unstreamed_with_tool_choice() -> None:
    with FakeServer(llama_cpp_python) as server:
        result = await local_agent("llama-cpp-python/qwen", server, tools=[weather]).run("Oslo?")
        assert result.output == "Rainy, 4 degrees."
        first = server.requests[0].json()
        assert first["tool_choice"] == "auto" and "stream" not in first
        tool_message = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"]
        assert tool_message[0]["content"] == "Oslo: 4 degrees, rain"
        assert result.usage.input_tokens == 270


async def test_tool_choice_setting_is_sent_and_streaming_kept_where_the_server_streams() -> None:
    with FakeServer(llama_server) as server:
        server.queue(llamacpp_stream(weather_call(), finish="tool_calls"))
        agent = local_agent(
            "llamacpp/qwen", server, tools=[weather], settings={"tool_choice": "required"}
        )
        await agent.run("Oslo?")
        first = server.requests[0].json()
        assert first["tool_choice"] == "required" and first["stream"] is True


async def test_a_model_configured_as_not_streaming_tool_choice_goes_unstreamed() -> None:
    with FakeServer(llama_cpp_python) as server:
        agent = local_agent(
            "llamacpp/qwen",
            server,
            tools=[weather],
            settings={"models": {"qwen": {"tool_choice": "auto", "stream_tool_choice": False}}},
        )
        assert (await agent.run("Oslo?")).output == "Rainy, 4 degrees."


class City(BaseModel):
    name: str
    country: str


async def test_llamacpp_structured_output_uses_its_json_schema_response_format() -> None:
    with FakeServer() as server:
        server.queue(
            llamacpp_stream(
                {"content": '{"name": "Oslo", '}, {"content": '"country": "NO"}'}, finish="stop"
            )
        )
        result = await local_agent("llamacpp/qwen", server, output_type=City).run("A city?")
        assert result.output == City(name="Oslo", country="NO")
        body = server.requests[0].json()
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"]["required"] == ["name", "country"]
        assert "final_result" not in json.dumps(body.get("tools", []))


async def test_a_500_saying_the_feature_is_unsupported_is_not_retried() -> None:
    sleep = RecordingSleep()
    with FakeServer() as server:
        server.queue(
            llamacpp_500(
                'Either "json_schema" or "grammar" can be specified, '
                "but not both; response_format type json_object is not supported"
            )
        )
        agent = local_agent("llamacpp/qwen", server, retry=RetryPolicy(sleep=sleep))
        with pytest.raises(ServerError, match="does not support") as info:
            await agent.run("Hi")
        assert len(server.requests) == 1 and sleep.delays == []
        assert info.value.retryable is False


async def test_an_ordinary_500_is_still_retried() -> None:
    sleep = RecordingSleep()
    with FakeServer() as server:
        server.queue(
            llamacpp_500("slot unavailable"),
            llamacpp_stream({"content": "ok"}, finish="stop"),
        )
        agent = local_agent("llamacpp/qwen", server, retry=RetryPolicy(sleep=sleep))
        assert (await agent.run("Hi")).output == "ok"
        assert len(server.requests) == 2


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_refused_loopback_server_fails_at_once_naming_base_url_and_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("LLAMACPP_BASE_URL", url)
    sleep = RecordingSleep()
    agent = tether.Agent(
        "llamacpp/qwen", config=Config(), plugins=[plugin], retry=RetryPolicy(sleep=sleep)
    )
    with pytest.raises(ProviderConnectionError) as info:
        await agent.run("Hi")
    message = str(info.value)
    assert url in message and "LLAMACPP_BASE_URL" in message and "base_url" in message
    assert sleep.delays == []


async def test_a_stream_without_usage_gets_an_estimate_labelled_as_such() -> None:
    with FakeServer() as server:
        server.queue(
            llamacpp_stream({"content": "Hello there, friend."}, finish="stop", usage=False)
        )
        result = await local_agent("llamacpp/qwen", server).run("Say hello to me, please.")
    assert result.usage.estimated is True
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.messages[-1].meta.usage is not None
    assert result.messages[-1].meta.usage.estimated is True


async def test_reported_usage_is_not_labelled_estimated() -> None:
    with FakeServer() as server:
        server.queue(llamacpp_stream({"content": "Hi."}, finish="stop"))
        result = await local_agent("llamacpp/qwen", server).run("Hi")
    assert result.usage.input_tokens == 41 and result.usage.estimated is None
    assert "estimated" not in result.messages[-1].to_json()
