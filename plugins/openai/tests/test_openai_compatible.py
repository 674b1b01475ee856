"""OpenAI-compatible servers as named providers: a loopback server stands in for
Ollama's ``/v1/chat/completions`` (same wire format, no key)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tether
from tether.config import Config, ProviderConfig
from tether.errors import AuthenticationError, ProviderConnectionError
from tether.events import TextDelta, ThinkingDelta
from tether_openai import plugin
from tether_openai.profiles import PROFILES
from tether_testing.http import FakeResponse, FakeServer


def ollama_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-512",
        "object": "chat.completion.chunk",
        "created": 1739300000,
        "model": "llama3.2",
        "system_fingerprint": "fp_ollama",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def ollama_reply(*pieces: str, reasoning: str | None = None) -> FakeResponse:
    chunks: list[tuple[str | None, Any]] = []
    if reasoning:
        chunks.append(
            (None, ollama_chunk({"role": "assistant", "content": "", "reasoning": reasoning}))
        )
    chunks += [(None, ollama_chunk({"role": "assistant", "content": p})) for p in pieces]
    chunks.append((None, ollama_chunk({"role": "assistant", "content": ""}, "stop")))
    chunks.append(
        (
            None,
            {
                "id": "chatcmpl-512",
                "object": "chat.completion.chunk",
                "created": 1739300000,
                "model": "llama3.2",
                "system_fingerprint": "fp_ollama",
                "choices": [],
                "usage": {"prompt_tokens": 26, "completion_tokens": 9, "total_tokens": 35},
            },
        )
    )
    chunks.append((None, "[DONE]"))
    return FakeResponse.sse(chunks)


def agent(model: str, server: FakeServer, **settings: Any) -> tether.Agent:
    name = model.partition("/")[0]
    config = Config(
        providers={
            name: ProviderConfig.model_validate({"base_url": server.url + "/v1", **settings})
        }
    )
    return tether.Agent(model, config=config, plugins=[plugin])


async def test_ollama_model_string_works_with_no_key(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak-to-other-servers")
    fake_server.queue(ollama_reply("Hello", " from", " llama", reasoning="Greeting."))

    events = [
        e
        async for e in agent(
            "ollama/llama3.2",
            fake_server,
        ).stream("Hi")
    ]

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", " from", " llama"]
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["Greeting."]
    result = events[-1].result
    assert result.output == "Hello from llama"
    assert result.messages[-1].meta.model == "ollama/llama3.2"
    assert result.usage.input_tokens == 26

    sent = fake_server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert "sk-must-not-leak" not in sent.headers.get("authorization", "")
    body = sent.json()
    assert body["model"] == "llama3.2"
    assert "prompt_cache_key" not in body


async def test_compatible_servers_get_max_tokens_not_openais_parameter(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(ollama_reply("ok"))
    a = agent("vllm/Qwen/Qwen3-8B", fake_server)
    a.max_output_tokens = 64
    await a.run("Hi")
    body = fake_server.requests[0].json()
    assert body["model"] == "Qwen/Qwen3-8B"
    assert body["max_tokens"] == 64 and "max_completion_tokens" not in body


async def test_openrouter_requires_its_own_key(fake_server: FakeServer) -> None:
    with pytest.raises(AuthenticationError, match="OPENROUTER_API_KEY"):
        await agent("openrouter/anthropic/claude-sonnet-4", fake_server).run("Hi")
    assert fake_server.requests == []


async def test_openrouter_sends_its_key(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key-123456")
    fake_server.queue(ollama_reply("hi"))
    await agent("openrouter/anthropic/claude-sonnet-4", fake_server).run("Hi")
    assert fake_server.requests[0].headers["authorization"] == "Bearer or-key-123456"
    assert fake_server.requests[0].json()["model"] == "anthropic/claude-sonnet-4"


async def test_unreachable_local_server_is_a_connection_error_naming_the_url() -> None:
    with FakeServer() as server:
        url = server.url
    config = Config(providers={"ollama": ProviderConfig(base_url=url + "/v1")})
    with pytest.raises(ProviderConnectionError, match="Ollama") as info:
        await tether.Agent(
            "ollama/llama3.2",
            config=config,
            plugins=[plugin],
            retry=tether.RetryPolicy(max_attempts=1),
        ).run("Hi")
    assert url in str(info.value)


def test_every_profile_has_a_default_base_url_except_openai_and_azure() -> None:
    urls = {p.name: p.base_url for p in PROFILES}
    assert urls == {
        "openai": None,
        "azure": None,
        "ollama": "http://localhost:11434/v1",
        "vllm": "http://localhost:8000/v1",
        "lmstudio": "http://localhost:1234/v1",
        "llamacpp": "http://localhost:8080/v1",
        "llama-cpp-python": "http://localhost:8000/v1",
        "openrouter": "https://openrouter.ai/api/v1",
    }


def test_base_url_from_the_profiles_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from tether_openai.client import Connection

    profile = next(p for p in PROFILES if p.name == "ollama")
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://gpu-box:11434/v1")
    assert Connection.from_config(profile, ProviderConfig()).endpoint == "http://gpu-box:11434/v1"
    explicit = ProviderConfig(base_url="http://other:1/v1")
    assert Connection.from_config(profile, explicit).endpoint == "http://other:1/v1"


async def test_complete_calls_that_all_claim_index_zero_stay_separate(
    fake_server: FakeServer,
) -> None:
    def call(call_id: str, city: str) -> dict[str, Any]:
        function = {"name": "weather", "arguments": json.dumps({"city": city})}
        return ollama_chunk(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": call_id, "index": 0, "type": "function", "function": function}
                ],
            }
        )

    fake_server.queue(
        FakeResponse.sse(
            [
                (None, call("call_a", "Oslo")),
                (None, call("call_b", "Lima")),
                (None, ollama_chunk({}, "tool_calls")),
                (None, "[DONE]"),
            ]
        )
    )
    provider = agent("ollama/qwen3", fake_server).provider()
    from tether.messages import Message
    from tether.provider import ModelRequest

    events = [
        e async for e in provider.stream(ModelRequest(model="qwen3", messages=[Message.user("x")]))
    ]
    calls = events[-1].message.tool_calls
    assert [(c.id, c.arguments) for c in calls] == [
        ("call_a", {"city": "Oslo"}),
        ("call_b", {"city": "Lima"}),
    ]


async def test_a_compatible_server_on_the_responses_api_gets_no_openai_only_fields(
    fake_server: FakeServer,
) -> None:
    from tether.messages import Message
    from tether.provider import ModelRequest

    done = {
        "type": "response.completed",
        "sequence_number": 1,
        "response": {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "status": "completed",
            "model": "openai/gpt-oss-20b",
            "output": [
                {
                    "id": "msg_1",
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "hi", "annotations": []}],
                }
            ],
        },
    }
    fake_server.queue(FakeResponse.sse([("response.completed", done)]))
    provider = agent("vllm/openai/gpt-oss-20b", fake_server, api="responses").provider()
    request = ModelRequest(
        model="openai/gpt-oss-20b", messages=[Message.user("x")], session_id="s1"
    )
    events = [e async for e in provider.stream(request)]
    assert events[-1].message.text == "hi"
    assert fake_server.requests[0].path == "/v1/responses"
    assert "prompt_cache_key" not in fake_server.requests[0].json()
