"""Azure OpenAI through the SDK's ``AsyncAzureOpenAI`` client, against a loopback Azure.

``FakeAzure`` answers on Azure's URL layout (``/openai/deployments/<d>/chat/completions``
and ``/openai/responses``, each with ``?api-version=``) in the real Chat Completions and
Responses SSE formats, checks the ``api-key`` header or the bearer token like Azure does
(401 with Azure's own error body otherwise) and records every request. Microsoft Entra ID
tokens come from azure-identity's real ``DefaultAzureCredential``, which finds an App
Service managed identity (``IDENTITY_ENDPOINT`` / ``IDENTITY_HEADER``) served by
``FakeTokenEndpoint`` on loopback: the same HTTP exchange as on App Service.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

import tether
from tether.config import Config, ProviderConfig
from tether.errors import AuthenticationError, ConfigError, PermissionDeniedError
from tether.events import RunEvent
from tether.result import Outcome
from tether.runner import RetryPolicy
from tether_openai import plugin
from tether_openai.profiles import AZURE
from tether_openai.provider import OpenAIProvider
from tether_testing.cli import run_tether
from tether_testing.http import FakeResponse, FakeServer, RecordedRequest
from tether_testing.wire import chat_reply, responses_reply

KEY = "0123456789abcdef0123456789abcdef"
VERSION = "2025-04-01-preview"
DEPLOYMENT = "chat-prod"
IDENTITY_HEADER = "identity-header-secret-9f8e7d"
_CHAT = re.compile(r"^/openai/deployments/(?P<deployment>[^/?]+)/chat/completions$")
_AZURE_ENV = (
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_AD_TOKEN",
    "OPENAI_API_VERSION",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_USERNAME",
    "MSI_ENDPOINT",
    "MSI_SECRET",
    "IMDS_ENDPOINT",
)


@pytest.fixture(autouse=True)
def _no_azure_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _AZURE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("IDENTITY_ENDPOINT", raising=False)
    monkeypatch.delenv("IDENTITY_HEADER", raising=False)


# -- the fake token endpoint (App Service managed identity) -------------------------------------
class FakeTokenEndpoint(FakeServer):
    """Hands out bearer tokens that live ``lifetime`` seconds, as App Service's identity
    endpoint does (``GET ?api-version=2019-08-01&resource=...`` with ``X-IDENTITY-HEADER``)."""

    def __init__(self, lifetime: float) -> None:
        super().__init__(self._issue)
        self.lifetime = lifetime
        self.expiry: dict[str, float] = {}
        self.issued: list[str] = []
        self.resources: list[str] = []
        self._numbers = itertools.count(1)
        self._issue_lock = threading.Lock()

    def _issue(self, request: RecordedRequest) -> FakeResponse:
        if request.headers.get("x-identity-header") != IDENTITY_HEADER:
            return FakeResponse.json({"error": "missing X-IDENTITY-HEADER"}, status=400)
        query = parse_qs(urlsplit(request.path).query)
        self.resources.append(query["resource"][0])
        with self._issue_lock:
            token = f"eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-{next(self._numbers)}.sig"
            now = time.time()
            self.expiry[token] = now + self.lifetime
            self.issued.append(token)
        return FakeResponse.json(
            {
                "access_token": token,
                "expires_on": str(int(now + self.lifetime)),
                "resource": query["resource"][0],
                "token_type": "Bearer",
                "client_id": "5e6c3b4a-0000-4000-8000-000000000001",
            }
        )

    def valid(self, token: str) -> bool:
        return time.time() < self.expiry.get(token, 0.0)


# -- the fake Azure OpenAI resource -----------------------------------------------------------
class FakeAzure(FakeServer):
    """An Azure OpenAI resource: checks the route, the api-version and the credential,
    then answers with the next queued reply."""

    def __init__(self, *, key: str | None = None, tokens: FakeTokenEndpoint | None = None) -> None:
        super().__init__(self._answer)
        self.key = key
        self.tokens = tokens
        self.replies: list[FakeResponse] = []
        self.bearers: list[str | None] = []

    def _answer(self, request: RecordedRequest) -> FakeResponse:
        parts = urlsplit(request.path)
        if parse_qs(parts.query).get("api-version") != [VERSION]:
            return _azure_error(404, "404", "Resource not found")
        if not (_CHAT.match(parts.path) or parts.path == "/openai/responses"):
            return _azure_error(404, "404", "Resource not found")
        denied = self._check_credential(request)
        if denied is not None:
            return denied
        if not self.replies:
            return _azure_error(500, "InternalServerError", "no reply queued")
        return self.replies.pop(0)

    def _check_credential(self, request: RecordedRequest) -> FakeResponse | None:
        authorization = request.headers.get("authorization")
        bearer = authorization.removeprefix("Bearer ") if authorization else None
        self.bearers.append(bearer)
        if self.key is not None and request.headers.get("api-key") != self.key:
            return _azure_error(
                401,
                "401",
                "Access denied due to invalid subscription key or wrong API endpoint. Make sure "
                "to provide a valid key for an active subscription and use a correct regional "
                "API endpoint for your resource.",
            )
        if self.tokens is not None and not (bearer and self.tokens.valid(bearer)):
            return _azure_error(
                401,
                "401",
                "Unauthorized. Access token is missing, invalid, audience is incorrect "
                "(https://cognitiveservices.azure.com), or have expired.",
            )
        return None

    def paths(self) -> list[str]:
        return [urlsplit(r.path).path for r in self.requests]


def _azure_error(status: int, code: str, message: str) -> FakeResponse:
    return FakeResponse.json({"error": {"code": code, "message": message}}, status=status)


def reply(
    api: str, text: str = "", call: tuple[str, str, dict[str, Any]] | None = None
) -> FakeResponse:
    if api == "responses":
        return responses_reply(DEPLOYMENT, text=text, calls=[call] if call else [])
    return chat_reply(DEPLOYMENT, text=text, calls=[call] if call else [])


@pytest.fixture
def token_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTokenEndpoint]:
    endpoint = FakeTokenEndpoint(lifetime=2.0)
    with endpoint:
        monkeypatch.setenv("IDENTITY_ENDPOINT", endpoint.url + "/msi/token")
        monkeypatch.setenv("IDENTITY_HEADER", IDENTITY_HEADER)
        yield endpoint


def azure_agent(
    server: FakeServer, tmp_path: Path, settings: dict[str, Any], **kwargs: Any
) -> tether.Agent:
    config = Config(providers={"azure": ProviderConfig.model_validate(settings)})

    async def no_sleep(delay: float) -> None:
        return None

    kwargs.setdefault("retry", RetryPolicy(sleep=no_sleep))
    return tether.Agent(
        f"azure/{DEPLOYMENT}", config=config, plugins=[plugin], cwd=tmp_path, **kwargs
    )


# -- API key ---------------------------------------------------------------------------------
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_api_key_requests_use_the_azure_url_layout_and_the_api_key_header(
    api: str, tmp_path: Path
) -> None:
    @tether.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    with FakeAzure(key=KEY) as server:
        server.replies += [
            reply(api, call=("call_1", "add", {"a": 2, "b": 3})),
            reply(api, text="2 + 3 = 5"),
        ]
        settings = {"endpoint": server.url, "api_version": VERSION, "api_key": KEY, "api": api}
        result = await azure_agent(server, tmp_path, settings, tools=[add]).run("2+3?")

    assert result.outcome is Outcome.COMPLETED, result.error
    assert result.output == "2 + 3 = 5"
    expected = (
        f"/openai/deployments/{DEPLOYMENT}/chat/completions"
        if api == "chat"
        else "/openai/responses"
    )
    assert server.paths() == [expected, expected]
    assert [r.headers.get("api-key") for r in server.requests] == [KEY, KEY]
    assert server.bearers == [None, None]
    body = server.requests[1].json()
    assert body["model"] == DEPLOYMENT
    assert "5" in json.dumps(body["messages" if api == "chat" else "input"])
    assert result.messages[-1].meta.model == f"azure/{DEPLOYMENT}"


async def test_endpoint_version_and_key_come_from_the_standard_environment_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with FakeAzure(key=KEY) as server:
        server.replies.append(reply("chat", text="hello"))
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.url)
        monkeypatch.setenv("OPENAI_API_VERSION", VERSION)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
        result = await azure_agent(server, tmp_path, {}).run("hi")

    assert result.output == "hello"
    assert server.requests[0].headers["api-key"] == KEY


# -- Microsoft Entra ID ------------------------------------------------------------------------
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_entra_token_expires_mid_run_and_the_next_request_carries_a_new_one(
    api: str, tmp_path: Path, token_endpoint: FakeTokenEndpoint
) -> None:
    """Tokens live two seconds; the tool waits until the first one has expired, so the
    second model call is only accepted with a token fetched after the expiry."""
    waited: list[float] = []

    @tether.tool
    async def wait_for_expiry() -> str:
        """Wait until the current token has expired."""
        first = token_endpoint.issued[0]
        await asyncio.sleep(max(0.0, token_endpoint.expiry[first] - time.time()) + 0.05)
        assert not token_endpoint.valid(first)
        waited.append(time.time())
        return "waited"

    with FakeAzure(tokens=token_endpoint) as server:
        server.replies += [
            reply(api, call=("call_1", "wait_for_expiry", {})),
            reply(api, text="done after the refresh"),
        ]
        settings = {"endpoint": server.url, "api_version": VERSION, "auth": "entra", "api": api}
        events: list[RunEvent] = []
        async for event in azure_agent(server, tmp_path, settings, tools=[wait_for_expiry]).stream(
            "go"
        ):
            events.append(event)

    result = events[-1].result  # type: ignore[attr-defined]
    assert result.outcome is Outcome.COMPLETED, result.error
    assert result.output == "done after the refresh"
    assert result.retries == 0
    first, second = server.bearers
    assert first is not None and second is not None and first != second
    assert token_endpoint.issued.index(second) > token_endpoint.issued.index(first)
    assert token_endpoint.expiry[first] <= waited[0]
    assert "api-key" not in server.requests[0].headers
    assert set(token_endpoint.resources) == {"https://cognitiveservices.azure.com"}


async def test_a_valid_entra_token_is_reused_across_requests(
    tmp_path: Path, token_endpoint: FakeTokenEndpoint
) -> None:
    token_endpoint.lifetime = 3600.0

    @tether.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    with FakeAzure(tokens=token_endpoint) as server:
        server.replies += [
            reply("chat", call=("call_1", "ping", {})),
            reply("chat", call=("call_2", "ping", {})),
            reply("chat", text="pong twice"),
        ]
        settings = {"endpoint": server.url, "api_version": VERSION, "auth": "entra"}
        result = await azure_agent(server, tmp_path, settings, tools=[ping]).run("ping twice")

    assert result.output == "pong twice"
    assert len(token_endpoint.issued) == 1
    assert server.bearers == token_endpoint.issued * 3


async def test_a_token_provider_given_in_code_is_called_before_every_request(
    tmp_path: Path,
) -> None:
    calls: list[int] = []

    async def token_provider() -> str:
        calls.append(len(calls))
        return f"code-token-{len(calls)}"

    with FakeAzure() as server:
        server.replies += [reply("chat", call=("c", "noop", {})), reply("chat", text="ok")]

        @tether.tool
        def noop() -> str:
            """Do nothing."""
            return ""

        config = ProviderConfig.model_validate({"endpoint": server.url, "api_version": VERSION})
        provider = OpenAIProvider(config, profile=AZURE, token_provider=token_provider)
        provider.default_model = DEPLOYMENT  # type: ignore[attr-defined]
        agent = tether.Agent(provider, tools=[noop], cwd=tmp_path)
        result = await agent.run("go")

    assert result.output == "ok"
    assert server.bearers == ["code-token-1", "code-token-2"]


# -- errors ------------------------------------------------------------------------------------
async def test_missing_endpoint_version_and_credential_name_what_to_set() -> None:
    def provider(**settings: Any) -> OpenAIProvider:
        return OpenAIProvider(ProviderConfig.model_validate(settings), profile=AZURE)

    with pytest.raises(ConfigError, match="AZURE_OPENAI_ENDPOINT") as endpoint:
        await provider().validate_auth()
    assert "endpoint under [providers.azure]" in str(endpoint.value)
    with pytest.raises(ConfigError, match="OPENAI_API_VERSION"):
        await provider(endpoint="https://res.openai.azure.com").validate_auth()
    with pytest.raises(AuthenticationError, match="AZURE_OPENAI_API_KEY") as key:
        await provider(endpoint="https://res.openai.azure.com", api_version=VERSION).validate_auth()
    assert 'auth = "entra"' in str(key.value)
    with pytest.raises(ConfigError, match="auth"):
        provider(auth="password")


async def test_a_rejected_key_names_the_key_variable_and_never_shows_the_key(
    tmp_path: Path,
) -> None:
    events: list[RunEvent] = []
    with FakeAzure(key="the-right-key-000000000000000000") as server:
        settings = {"endpoint": server.url, "api_version": VERSION, "api_key": KEY}
        with pytest.raises(AuthenticationError) as raised:
            async for event in azure_agent(server, tmp_path, settings).stream("hi"):
                events.append(event)

    message = str(raised.value)
    assert "rejected the API key" in message and "HTTP 401" in message
    assert "Set AZURE_OPENAI_API_KEY to one of the resource's keys" in message
    assert len(server.requests) == 1  # not retried
    assert KEY not in message
    assert all(KEY not in repr(event) for event in events)


async def test_a_rejected_entra_token_says_the_token_was_rejected(
    tmp_path: Path, token_endpoint: FakeTokenEndpoint
) -> None:
    events: list[RunEvent] = []
    with FakeAzure(key="keys-only-here") as server:
        settings = {"endpoint": server.url, "api_version": VERSION, "auth": "entra"}
        with pytest.raises(AuthenticationError) as raised:
            async for event in azure_agent(server, tmp_path, settings).stream("hi"):
                events.append(event)

    error = raised.value
    assert "Azure OpenAI rejected the Microsoft Entra ID token (HTTP 401" in str(error)
    assert "API key" not in str(error) and "token_scope" in str(error)
    token = token_endpoint.issued[0]
    assert all(token not in repr(event) for event in events)
    assert token not in str(error)


async def test_a_forbidden_entra_identity_is_told_which_role_it_needs(
    tmp_path: Path, token_endpoint: FakeTokenEndpoint
) -> None:
    def forbidden(request: RecordedRequest) -> FakeResponse:
        return _azure_error(
            403, "PermissionDenied", "Principal does not have access to API/Operation."
        )

    with FakeServer(forbidden) as server:
        settings = {"endpoint": server.url, "api_version": VERSION, "auth": "entra"}
        with pytest.raises(PermissionDeniedError) as raised:
            await azure_agent(server, tmp_path, settings).run("hi")

    assert "Cognitive Services OpenAI User" in str(raised.value)


async def test_a_failing_token_endpoint_is_an_authentication_error_naming_entra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(request: RecordedRequest) -> FakeResponse:
        return FakeResponse.json({"error": "identity not found"}, status=400)

    with FakeServer(broken) as identity, FakeAzure() as server:
        monkeypatch.setenv("IDENTITY_ENDPOINT", identity.url + "/msi/token")
        monkeypatch.setenv("IDENTITY_HEADER", IDENTITY_HEADER)
        settings = {"endpoint": server.url, "api_version": VERSION, "auth": "entra"}
        with pytest.raises(AuthenticationError) as raised:
            await azure_agent(server, tmp_path, settings).run("hi")

    message = str(raised.value)
    assert "Could not get a Microsoft Entra ID token" in message
    assert "ManagedIdentityCredential" in message and "az login" in message
    assert IDENTITY_HEADER not in message
    assert server.requests == []


def test_deployments_take_the_capabilities_and_prices_of_their_model() -> None:
    config = ProviderConfig.model_validate(
        {
            "models": {
                "prod": {"model": "gpt-5-mini"},
                "eu-4o": {"model": "gpt-4o", "pricing": {"input": 2.75, "output": 11.0}},
            }
        }
    )
    provider = OpenAIProvider(config, profile=AZURE)
    prod = provider.capabilities("prod")
    assert prod.thinking and prod.context_window == 400_000
    assert provider.api_for("prod") == "responses"
    assert prod.pricing is not None and prod.pricing.input == 0.25
    eu = provider.capabilities("eu-4o")
    assert eu.pricing is not None and (eu.pricing.input, eu.pricing.output) == (2.75, 11.0)
    assert eu.context_window == 128_000
    assert provider.capabilities("gpt-4.1-prod").context_window == 1_047_576
    listed = {info.id: info.capabilities for info in provider.catalogue()}
    assert listed["prod"] == prod


def test_building_the_azure_provider_imports_neither_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from tether.config import ProviderConfig\n"
        "from tether_openai.provider import OpenAIProvider\n"
        "from tether_openai.profiles import AZURE\n"
        "OpenAIProvider(ProviderConfig.model_validate({'auth': 'entra'}), profile=AZURE)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'azure')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_azure_is_registered_with_its_settings() -> None:
    from tether.plugins import PluginManager
    from tether.resolve import parse_model_string

    providers = PluginManager(plugins=[plugin], entry_points=False).providers
    ref = parse_model_string("azure/gpt-4o-eu", providers)
    assert (ref.provider, ref.model) == ("azure", "gpt-4o-eu")
    settings = providers.registration("azure").options["settings"]
    assert {"endpoint", "api_version", "auth", "token_scope", "api"} <= set(settings)
    assert providers.registration("azure").options["key_variables"] == ("AZURE_OPENAI_API_KEY",)


@pytest.mark.parametrize("auth", ["key", "entra"])
async def test_no_key_or_token_reaches_a_log_record_even_at_debug_level(
    auth: str, tmp_path: Path, token_endpoint: FakeTokenEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    with FakeAzure(
        key=KEY if auth == "key" else None, tokens=token_endpoint if auth == "entra" else None
    ) as server:
        server.replies.append(reply("chat", text="Hi."))
        settings: dict[str, Any] = {"endpoint": server.url, "api_version": VERSION}
        settings.update({"api_key": KEY} if auth == "key" else {"auth": "entra"})
        assert (await azure_agent(server, tmp_path, settings).run("hi")).output == "Hi."

    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert "chat/completions" in logged  # the loggers did run
    secrets = [KEY] if auth == "key" else token_endpoint.issued
    assert secrets and not [s for s in secrets if s in logged]


# -- the tether command ----------------------------------------------------------------------
def _cli(tmp_path: Path, *args: str, env: dict[str, str], config: str = "") -> Any:
    unset = ["OPENAI_", "AZURE_", "IDENTITY_"]
    return run_tether(tmp_path, *args, plugins="openai", env=env, unset=unset, config=config)


def test_tether_run_with_entra_id_from_the_environment(
    tmp_path: Path, token_endpoint: FakeTokenEndpoint
) -> None:
    with FakeAzure(tokens=token_endpoint) as server:
        server.replies.append(reply("chat", text="Hello from Azure"))
        env = {
            "AZURE_OPENAI_ENDPOINT": server.url,
            "OPENAI_API_VERSION": VERSION,
            "IDENTITY_ENDPOINT": token_endpoint.url + "/msi/token",
            "IDENTITY_HEADER": IDENTITY_HEADER,
        }
        entra = '[providers.azure]\nauth = "entra"\n'
        out = _cli(
            tmp_path, "run", "-m", f"azure/{DEPLOYMENT}", "--tools", "", "hi", env=env, config=entra
        )
        missing = _cli(tmp_path, "run", "-m", f"azure/{DEPLOYMENT}", "--tools", "", "hi", env={})

    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from Azure"
    assert server.bearers == token_endpoint.issued[-1:]
    assert missing.returncode != 0
    assert "AZURE_OPENAI_ENDPOINT" in missing.stderr


async def test_closing_the_provider_closes_the_credential_it_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from azure.identity import DefaultAzureCredential

    closed: list[object] = []
    original = DefaultAzureCredential.close

    def close(self: Any) -> None:
        closed.append(self)
        original(self)

    monkeypatch.setattr(DefaultAzureCredential, "close", close)
    config = {"endpoint": "https://res.openai.azure.com", "api_version": VERSION, "auth": "entra"}
    provider = OpenAIProvider(ProviderConfig.model_validate(config), profile=AZURE)
    await provider.validate_auth()
    assert closed == []
    await provider.aclose()
    assert len(closed) == 1
