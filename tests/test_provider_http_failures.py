"""Every provider plugin, through its official SDK over loopback, fails the same way:
an HTTP 400 names the endpoint and quotes the server's message (and is not retried); an
unreachable server is a retryable connection error, retried with ``Retry`` events, then
a failure that names the server."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field
from typing import Any

import pytest

import tether
from tether.config import Config, ProviderConfig
from tether.errors import InvalidRequestError, ProviderConnectionError
from tether.events import Retry
from tether.retry import RetryPolicy
from tether.testing import RecordingSleep
from tether_testing.http import FakeResponse, FakeServer

SERVER_MESSAGE = "messages.0.content: the field 'kind' is not allowed here"


@dataclass(frozen=True)
class Api:
    """One provider API: its model string, base URL suffix, endpoint path and how its
    server reports a bad request."""

    id: str
    model: str
    suffix: str
    path: str
    error_body: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=dict)

    def plugin(self) -> Any:
        if self.id == "anthropic":
            from tether_anthropic import plugin
        elif self.id == "google":
            from tether_google import plugin
        else:
            from tether_openai import plugin
        return plugin


APIS = [
    Api(
        "anthropic",
        "anthropic/claude-haiku-4-5",
        "",
        "/v1/messages",
        {"type": "error", "error": {"type": "invalid_request_error", "message": SERVER_MESSAGE}},
    ),
    Api(
        "openai-chat",
        "openai/gpt-4.1",
        "/v1",
        "/v1/chat/completions",
        {
            "error": {
                "message": SERVER_MESSAGE,
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
        {"api": "chat"},
    ),
    Api(
        "openai-responses",
        "openai/gpt-4.1",
        "/v1",
        "/v1/responses",
        {
            "error": {
                "message": SERVER_MESSAGE,
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
        {"api": "responses"},
    ),
    Api(
        "google",
        "google/gemini-2.5-flash",
        "",
        "/v1/models/gemini-2.5-flash:streamGenerateContent",
        {"error": {"code": 400, "message": SERVER_MESSAGE, "status": "INVALID_ARGUMENT"}},
    ),
]


def agent(api: Api, base_url: str, sleep: RecordingSleep, tmp_path: Any) -> tether.Agent:
    provider = api.model.partition("/")[0]
    settings = {"base_url": base_url + api.suffix, "api_key": "test-key-0123456789", **api.settings}
    config = Config(providers={provider: ProviderConfig.model_validate(settings)})
    return tether.Agent(
        api.model,
        config=config,
        plugins=[api.plugin()],
        retry=RetryPolicy(max_attempts=3, sleep=sleep),
        cwd=tmp_path,
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(autouse=True)
def _no_keys_or_urls_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("api", APIS, ids=[a.id for a in APIS])
async def test_a_400_names_the_endpoint_and_quotes_the_server(api: Api, tmp_path: Any) -> None:
    sleep = RecordingSleep()
    with FakeServer() as server:
        server.queue(FakeResponse.json(api.error_body, status=400))
        with pytest.raises(InvalidRequestError) as caught:
            await agent(api, server.url, sleep, tmp_path).run("Hi")
        text = str(caught.value)
        assert f"POST {server.url}{api.path}" in text, text
        assert SERVER_MESSAGE in text
        assert "HTTP 400" in text or "400 INVALID_ARGUMENT" in text
        assert caught.value.status_code == 400
        assert len(server.requests) == 1 and sleep.delays == []


@pytest.mark.parametrize("api", APIS, ids=[a.id for a in APIS])
async def test_an_unreachable_server_is_retried_then_fails_naming_it(
    api: Api, tmp_path: Any
) -> None:
    sleep = RecordingSleep()
    url = f"http://127.0.0.1:{closed_port()}"
    events = []
    with pytest.raises(ProviderConnectionError) as caught:
        async for event in agent(api, url, sleep, tmp_path).stream("Hi"):
            events.append(event)
    retries = [e for e in events if isinstance(e, Retry)]
    assert [r.attempt for r in retries] == [1, 2]
    assert all(isinstance(r.error, ProviderConnectionError) for r in retries)
    assert len(sleep.delays) == 2
    assert caught.value.retryable is True
    assert url.removeprefix("http://") in str(caught.value), str(caught.value)


OVERFLOW = "prompt is too long: the input token count exceeds the maximum number of tokens"


@pytest.mark.parametrize("api", APIS, ids=[a.id for a in APIS])
async def test_a_400_for_a_too_long_prompt_names_the_endpoint_too(api: Api, tmp_path: Any) -> None:
    from tether.errors import ContextOverflowError
    from tether.messages import Message
    from tether.provider import ModelRequest

    body = json.loads(json.dumps(api.error_body).replace(SERVER_MESSAGE, OVERFLOW))
    with FakeServer() as server:
        server.queue(FakeResponse.json(body, status=400))
        provider = agent(api, server.url, RecordingSleep(), tmp_path).provider()
        request = ModelRequest(model=api.model.partition("/")[2], messages=[Message.user("Hi")])
        with pytest.raises(ContextOverflowError) as caught:
            async for _ in provider.stream(request):
                pass
        await provider.aclose()
    assert f"POST {server.url}{api.path}" in str(caught.value)
    assert OVERFLOW in str(caught.value)
