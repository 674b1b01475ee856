"""Claude on Amazon Bedrock through the SDK's ``AsyncAnthropicBedrock``, against loopback.

``FakeBedrock`` is a Bedrock runtime endpoint: it answers
``POST /model/<id>/invoke-with-response-stream`` with an AWS event stream
(``application/vnd.amazon.eventstream``: prelude, typed headers, CRC32s, each ``chunk``
event's payload ``{"bytes": <base64 of one Messages API event>}``) encoded here from the
format's definition, so botocore's decoder is what parses it. It verifies every request's
SigV4 signature against the secret of the access key it names and rejects unknown or
expired keys as AWS does. Credentials come from botocore's real chain, through the
container credential provider (``AWS_CONTAINER_CREDENTIALS_FULL_URI`` on loopback),
served by ``FakeCredentialEndpoint`` with an ``Expiration`` on each set.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import itertools
import json
import re
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

import tether
import tether_anthropic.plugin
from tether.config import Config, ProviderConfig
from tether.errors import (
    AuthenticationError,
    ConfigError,
    PermissionDeniedError,
)
from tether.events import Retry, RunEvent
from tether.messages import Message
from tether.provider import ModelRequest, ThinkingConfig
from tether.result import Outcome
from tether.runner import RetryPolicy
from tether_anthropic.bedrock import BedrockProvider, anthropic_model
from tether_testing.cli import run_tether
from tether_testing.http import FakeResponse, FakeServer, RecordedRequest

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
REGION = "us-west-2"
CONTAINER_TOKEN = "container-auth-token-4b1d"
_AWS_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "ANTHROPIC_BEDROCK_BASE_URL",
)


@pytest.fixture(autouse=True)
def _no_aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No credentials, profiles or instance metadata from this machine."""
    for name in _AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield


# -- the AWS event stream encoding ------------------------------------------------------------
def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    # name length, name, value type 7 (string), value length, value
    return (
        struct.pack("!B", len(raw_name))
        + raw_name
        + b"\x07"
        + struct.pack("!H", len(raw_value))
        + raw_value
    )


def event_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: prelude (total length, headers length, prelude CRC32),
    headers, payload, message CRC32."""
    encoded = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack("!II", total, len(encoded))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack("!I", zlib.crc32(message))


def chunk_event(event: dict[str, Any]) -> bytes:
    data = base64.b64encode(json.dumps(event).encode()).decode()
    payload = json.dumps({"bytes": data, "p": "abcdefghijklmnopqrstuvwxyzABCDEF"[: len(data) % 32]})
    return event_message(
        {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
        payload.encode(),
    )


def exception_event(kind: str, message: str) -> bytes:
    return event_message(
        {
            ":exception-type": kind,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps({"message": message}).encode(),
    )


def bedrock_stream(events: list[tuple[str | None, Any]], *, then: bytes = b"") -> FakeResponse:
    """A 200 event stream carrying Messages API ``events``; frames are cut across HTTP
    chunks at odd offsets so the decoder reassembles them."""
    frames = [chunk_event(data) for _, data in events]
    if events and events[-1][1].get("type") == "message_stop":
        frames[-1] = chunk_event(
            {
                **events[-1][1],
                "amazon-bedrock-invocationMetrics": {
                    "inputTokenCount": 12,
                    "outputTokenCount": 7,
                    "invocationLatency": 812,
                    "firstByteLatency": 301,
                },
            }
        )
    body = b"".join(frames) + then
    pieces = [body[i : i + 97] for i in range(0, len(body), 97)]
    return FakeResponse(
        status=200,
        headers={
            "content-type": "application/vnd.amazon.eventstream",
            "x-amzn-requestid": "5d3b1f0e-1c1a-4a57-9d7e-0f6a1b2c3d4e",
            "x-amzn-bedrock-content-type": "application/json",
        },
        chunks=pieces,
    )


def aws_error(status: int, kind: str, message: str) -> FakeResponse:
    return FakeResponse(
        status=status,
        headers={
            "content-type": "application/json",
            "x-amzn-errortype": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "x-amzn-requestid": "0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d",
        },
        body=json.dumps({"message": message}).encode(),
    )


# -- the fake container credential endpoint -----------------------------------------------------
class FakeCredentialEndpoint(FakeServer):
    """Temporary credentials that live ``lifetime`` seconds, in the ECS/EKS container
    credential format, for requests carrying the container authorization token."""

    def __init__(self, lifetime: float) -> None:
        super().__init__(self._issue)
        self.lifetime = lifetime
        self.keys: dict[str, dict[str, Any]] = {}
        self.issued: list[str] = []
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def _issue(self, request: RecordedRequest) -> FakeResponse:
        if request.headers.get("authorization") != CONTAINER_TOKEN:
            return FakeResponse.json({"message": "unauthorized"}, status=401)
        with self._lock:
            number = next(self._numbers)
            access_key = f"ASIAFAKE{number:012d}"
            now = time.time()
            self.keys[access_key] = {
                "secret": f"fake/secret+{number:04d}/abcdefghijklmnopqrstuvwxyz0123",
                "token": f"IQoJb3JpZ2luX2VjEFAKE{number:04d}sessiontoken==",
                "expires": now + self.lifetime,
            }
            self.issued.append(access_key)
        key = self.keys[access_key]
        expiration = datetime.fromtimestamp(int(key["expires"]), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return FakeResponse.json(
            {
                "AccessKeyId": access_key,
                "SecretAccessKey": key["secret"],
                "Token": key["token"],
                "Expiration": expiration,
                "RoleArn": "arn:aws:iam::123456789012:role/agent-task",
            }
        )

    def secrets(self) -> list[str]:
        return [v for key in self.keys.values() for v in (key["secret"], key["token"])]


# -- the fake Bedrock runtime ---------------------------------------------------------------------
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[^,]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)
_INVOKE = re.compile(r"^/model/(?P<model>[^/]+)/invoke-with-response-stream$")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


class FakeBedrock(FakeServer):
    """Bedrock runtime: checks the route and the SigV4 signature, then streams the next
    queued reply. ``signers`` records the access key id of every accepted request."""

    def __init__(self, credentials: FakeCredentialEndpoint | None) -> None:
        super().__init__(self._answer)
        self.credentials = credentials
        self.replies: list[FakeResponse] = []
        self.signers: list[str] = []
        self.models: list[str] = []

    def _answer(self, request: RecordedRequest) -> FakeResponse:
        path = urlsplit(request.path).path
        route = _INVOKE.match(path)
        if request.method != "POST" or route is None:
            return aws_error(404, "UnknownOperationException", "Unknown operation")
        self.models.append(route["model"])
        denied = self._verify(request, path)
        if denied is not None:
            return denied
        if not self.replies:
            return aws_error(500, "InternalServerException", "no reply queued")
        return self.replies.pop(0)

    def _verify(self, request: RecordedRequest, path: str) -> FakeResponse | None:
        match = _AUTH.match(request.headers.get("authorization", ""))
        if match is None:
            return aws_error(
                403, "MissingAuthenticationTokenException", "Missing Authentication Token"
            )
        key = self.credentials.keys.get(match["key"]) if self.credentials else None
        if key is None:
            return aws_error(
                403,
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            )
        if (match["region"], match["service"]) != (REGION, "bedrock"):
            return aws_error(
                403, "InvalidSignatureException", "Credential should be scoped to a valid region."
            )
        if time.time() >= key["expires"]:
            return aws_error(
                403,
                "ExpiredTokenException",
                "The security token included in the request is expired",
            )
        if request.headers.get("x-amz-security-token") != key["token"]:
            return aws_error(
                403,
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            )
        if not hmac.compare_digest(
            self._signature(request, path, match, key["secret"]), match["signature"]
        ):
            return aws_error(
                403,
                "InvalidSignatureException",
                "The request signature we calculated does not match the signature you provided.",
            )
        self.signers.append(match["key"])
        return None

    @staticmethod
    def _signature(request: RecordedRequest, path: str, match: re.Match[str], secret: str) -> str:
        signed = match["signed"].split(";")
        headers = "".join(f"{name}:{' '.join(request.headers[name].split())}\n" for name in signed)
        canonical = "\n".join(
            [
                request.method,
                quote(path, safe="/~"),
                "",
                headers,
                match["signed"],
                hashlib.sha256(request.body).hexdigest(),
            ]
        )
        scope = f"{match['date']}/{match['region']}/{match['service']}/aws4_request"
        to_sign = "\n".join(
            [
                "AWS4-HMAC-SHA256",
                request.headers["x-amz-date"],
                scope,
                hashlib.sha256(canonical.encode()).hexdigest(),
            ]
        )
        key = _hmac(f"AWS4{secret}".encode(), match["date"])
        for part in (match["region"], match["service"], "aws4_request"):
            key = _hmac(key, part)
        return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


# -- fixtures -----------------------------------------------------------------------------------
def _credentials(
    monkeypatch: pytest.MonkeyPatch, lifetime: float
) -> Iterator[FakeCredentialEndpoint]:
    endpoint = FakeCredentialEndpoint(lifetime)
    with endpoint:
        monkeypatch.setenv(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI", endpoint.url + "/v2/credentials/task"
        )
        monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", CONTAINER_TOKEN)
        yield endpoint


@pytest.fixture
def short_lived(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCredentialEndpoint]:
    yield from _credentials(monkeypatch, lifetime=2.0)


@pytest.fixture
def long_lived(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCredentialEndpoint]:
    yield from _credentials(monkeypatch, lifetime=3600.0)


def bedrock_agent(server: FakeServer, tmp_path: Path, **kwargs: Any) -> tether.Agent:
    settings = {"base_url": server.url, "region": REGION, **kwargs.pop("settings", {})}
    config = Config(providers={"bedrock": ProviderConfig.model_validate(settings)})

    async def no_sleep(delay: float) -> None:
        return None

    kwargs.setdefault("retry", RetryPolicy(sleep=no_sleep))
    return tether.Agent(
        f"bedrock/{kwargs.pop('model', MODEL)}",
        config=config,
        plugins=[tether_anthropic.plugin],
        cwd=tmp_path,
        **kwargs,
    )


# -- runs ---------------------------------------------------------------------------------------
async def test_credentials_expire_mid_run_and_the_next_request_is_signed_with_new_ones(
    tmp_path: Path, short_lived: FakeCredentialEndpoint, wire: SimpleNamespace
) -> None:
    """Credentials live two seconds; the tool waits until the first set has expired, so
    the second model call is only accepted when signed with credentials fetched after."""
    waited: list[float] = []

    @tether.tool
    async def wait_for_expiry() -> str:
        """Wait until the current AWS credentials have expired."""
        first = bedrock.signers[0]
        await asyncio.sleep(max(0.0, short_lived.keys[first]["expires"] - time.time()) + 0.05)
        waited.append(time.time())
        return "waited"

    with FakeBedrock(short_lived) as bedrock:
        bedrock.replies += [
            bedrock_stream(
                wire.reply(
                    wire.text_block(0, ["Waiting."]),
                    wire.tool_block(1, "toolu_01", "wait_for_expiry", ["{", "}"]),
                    stop_reason="tool_use",
                )
            ),
            bedrock_stream(wire.reply(wire.text_block(0, ["Done ", "after the refresh."]))),
        ]
        events: list[RunEvent] = []
        async for event in bedrock_agent(bedrock, tmp_path, tools=[wait_for_expiry]).stream("go"):
            events.append(event)

    result = events[-1].result  # type: ignore[attr-defined]
    assert result.outcome is Outcome.COMPLETED, result.error
    assert result.output == "Done after the refresh."
    assert result.retries == 0 and not any(isinstance(e, Retry) for e in events)
    first, second = bedrock.signers
    assert first != second
    assert short_lived.keys[first]["expires"] <= waited[0]
    assert short_lived.issued.index(second) > short_lived.issued.index(first)
    assert bedrock.models == [MODEL, MODEL]
    assert result.messages[-1].meta.model == f"bedrock/{MODEL}"
    for secret in short_lived.secrets():
        assert all(secret not in repr(event) for event in events)


async def test_valid_credentials_are_reused_and_the_body_is_the_bedrock_messages_body(
    tmp_path: Path, long_lived: FakeCredentialEndpoint, wire: SimpleNamespace
) -> None:
    @tether.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    with FakeBedrock(long_lived) as bedrock:
        bedrock.replies += [
            bedrock_stream(
                wire.reply(wire.tool_block(0, f"toolu_{n}", "ping", ["{}"]), stop_reason="tool_use")
            )
            for n in range(2)
        ]
        bedrock.replies.append(bedrock_stream(wire.reply(wire.text_block(0, ["pong twice"]))))
        result = await bedrock_agent(bedrock, tmp_path, tools=[ping], system="Be brief.").run(
            "ping twice"
        )

    assert result.output == "pong twice"
    assert long_lived.issued == bedrock.signers[:1] and bedrock.signers == long_lived.issued * 3
    body = bedrock.requests[2].json()
    assert body["anthropic_version"]
    assert "model" not in body and "stream" not in body
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert body["system"][0]["text"] == "Be brief."
    assert result.usage.input_tokens > 0


async def test_a_throttling_exception_mid_stream_is_retried(
    tmp_path: Path, long_lived: FakeCredentialEndpoint, wire: SimpleNamespace
) -> None:
    events = wire.reply(wire.text_block(0, ["partial"]))
    with FakeBedrock(long_lived) as bedrock:
        bedrock.replies += [
            bedrock_stream(
                events[:3],
                then=exception_event("throttlingException", "Too many tokens, please wait."),
            ),
            bedrock_stream(wire.reply(wire.text_block(0, ["whole answer"]))),
        ]
        result = await bedrock_agent(bedrock, tmp_path).run("hi")

    assert result.output == "whole answer"
    assert result.retries == 1


# -- errors -------------------------------------------------------------------------------------
async def test_no_region_and_no_credentials_name_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="AWS_REGION") as no_region:
        await BedrockProvider(ProviderConfig()).validate_auth()
    assert "region under [providers.bedrock]" in str(no_region.value)

    provider = BedrockProvider(ProviderConfig.model_validate({"region": REGION}))
    with pytest.raises(AuthenticationError, match="No AWS credentials") as missing:
        await provider.validate_auth()
    assert "AWS_ACCESS_KEY_ID" in str(missing.value) and "AWS_PROFILE" in str(missing.value)

    with (
        FakeBedrock(None) as bedrock,
        pytest.raises(AuthenticationError, match="No AWS credentials"),
    ):
        await bedrock_agent(bedrock, tmp_path).run("hi")
    assert bedrock.requests == []


async def test_a_failing_credential_endpoint_is_an_authentication_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(request: RecordedRequest) -> FakeResponse:
        return FakeResponse.json({"message": "role not assumable"}, status=500)

    with FakeServer(broken) as endpoint, FakeBedrock(None) as bedrock:
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", endpoint.url + "/creds")
        monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", CONTAINER_TOKEN)
        with pytest.raises(AuthenticationError, match="Could not get AWS credentials") as raised:
            await bedrock_agent(bedrock, tmp_path).run("hi")
    assert "CredentialRetrievalError" in str(raised.value)
    assert CONTAINER_TOKEN not in str(raised.value)
    assert bedrock.requests == []


async def test_rejected_credentials_are_an_authentication_error_without_secrets(
    tmp_path: Path, long_lived: FakeCredentialEndpoint
) -> None:
    unknown = FakeCredentialEndpoint(3600.0)  # Bedrock knows none of these keys
    with FakeBedrock(unknown) as bedrock:
        events: list[RunEvent] = []
        with pytest.raises(AuthenticationError) as raised:
            async for event in bedrock_agent(bedrock, tmp_path).stream("hi"):
                events.append(event)

    message = str(raised.value)
    assert "Amazon Bedrock rejected the AWS credentials" in message
    assert "UnrecognizedClientException" in message and "AWS_ACCESS_KEY_ID" in message
    assert len(bedrock.requests) == 1  # not retried
    for secret in long_lived.secrets():
        assert secret not in message and all(secret not in repr(e) for e in events)
    assert long_lived.issued[0] not in message


async def test_expired_credentials_say_so(
    tmp_path: Path, long_lived: FakeCredentialEndpoint
) -> None:
    def expired(request: RecordedRequest) -> FakeResponse:
        return aws_error(
            403, "ExpiredTokenException", "The security token included in the request is expired"
        )

    with FakeServer(expired) as bedrock, pytest.raises(AuthenticationError) as raised:
        await bedrock_agent(bedrock, tmp_path).run("hi")
    assert "have expired" in str(raised.value)


async def test_access_denied_names_the_iam_permission(
    tmp_path: Path, long_lived: FakeCredentialEndpoint
) -> None:
    def denied(request: RecordedRequest) -> FakeResponse:
        return aws_error(
            403,
            "AccessDeniedException",
            "You don't have access to the model with the specified model ID.",
        )

    with FakeServer(denied) as bedrock, pytest.raises(PermissionDeniedError) as raised:
        await bedrock_agent(bedrock, tmp_path).run("hi")
    assert "bedrock:InvokeModelWithResponseStream" in str(raised.value)


# -- catalogue ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bedrock_id", "model"),
    [
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("global.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("eu.anthropic.claude-opus-4-6-v1", "claude-opus-4-6"),
        ("apac.anthropic.claude-sonnet-4-6", "claude-sonnet-4-6"),
        ("us-gov.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
    ],
)
def test_bedrock_ids_name_their_anthropic_model(bedrock_id: str, model: str) -> None:
    assert anthropic_model(bedrock_id) == model


def test_capabilities_and_prices_per_endpoint_kind() -> None:
    from tether_anthropic.catalogue import MODELS

    sonnet = next(m for m in MODELS if m.id == "claude-sonnet-4-5").capabilities
    provider = BedrockProvider(ProviderConfig())
    global_ = provider.capabilities("global.anthropic.claude-sonnet-4-5-20250929-v1:0")
    regional = provider.capabilities(MODEL)
    assert global_.pricing == sonnet.pricing
    assert regional.pricing is not None and sonnet.pricing is not None
    assert regional.pricing.input == pytest.approx(sonnet.pricing.input * 1.1)
    assert regional.pricing.cache_write == pytest.approx((sonnet.pricing.cache_write or 0) * 1.1)
    assert regional.context_window == sonnet.context_window
    unlisted = provider.capabilities("eu.anthropic.claude-opus-4-6-v1")
    opus = next(m for m in MODELS if m.id == "claude-opus-4-6").capabilities
    assert unlisted.context_window == opus.context_window
    assert unlisted.pricing is not None and opus.pricing is not None
    assert unlisted.pricing.output == pytest.approx(opus.pricing.output * 1.1)
    assert MODEL in {info.id for info in provider.catalogue()}


async def test_thinking_follows_the_anthropic_model_behind_the_bedrock_id(
    tmp_path: Path, long_lived: FakeCredentialEndpoint, wire: SimpleNamespace
) -> None:
    with FakeBedrock(long_lived) as bedrock:
        bedrock.replies.append(bedrock_stream(wire.reply(wire.text_block(0, ["ok"]))))
        provider = BedrockProvider(
            ProviderConfig.model_validate({"base_url": bedrock.url, "region": REGION})
        )
        request = ModelRequest(
            model=MODEL,
            messages=[Message.user("think")],
            capabilities=provider.capabilities(MODEL),
            thinking=ThinkingConfig(budget_tokens=2048),
        )
        await provider.complete(request)
        await provider.aclose()

    body = bedrock.requests[0].json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}  # Sonnet 4.5: extended


def test_bedrock_is_registered_and_building_it_imports_no_sdk() -> None:
    import subprocess
    import sys

    from tether.plugins import PluginManager

    providers = PluginManager(plugins=[tether_anthropic.plugin], entry_points=False).providers
    settings = providers.registration("bedrock").options["settings"]
    assert {"region", "profile", "prompt_caching"} <= set(settings)
    code = (
        "import sys\n"
        "from tether.config import ProviderConfig\n"
        "from tether_anthropic.plugin import make_bedrock_provider\n"
        "p = make_bedrock_provider(ProviderConfig.model_validate({'region': 'us-east-1'}))\n"
        "p.capabilities('us.anthropic.claude-sonnet-4-5-20250929-v1:0')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'boto3', 'botocore')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_no_credential_reaches_a_log_record_even_at_debug_level(
    tmp_path: Path,
    short_lived: FakeCredentialEndpoint,
    wire: SimpleNamespace,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    with FakeBedrock(short_lived) as bedrock:
        bedrock.replies.append(bedrock_stream(wire.reply(wire.text_block(0, ["Hi."]))))
        assert (await bedrock_agent(bedrock, tmp_path).run("hi")).output == "Hi."

    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert "invoke-with-response-stream" in logged  # the loggers did run
    assert short_lived.secrets() and not [s for s in short_lived.secrets() if s in logged]


# -- the tether command ---------------------------------------------------------------------------
def _cli(tmp_path: Path, *args: str, env: dict[str, str]) -> Any:
    return run_tether(tmp_path, *args, plugins="anthropic", env=env, unset=["ANTHROPIC_"])


def test_tether_run_with_container_credentials_from_the_environment(
    tmp_path: Path, long_lived: FakeCredentialEndpoint, wire: SimpleNamespace
) -> None:
    with FakeBedrock(long_lived) as bedrock:
        bedrock.replies.append(
            bedrock_stream(wire.reply(wire.text_block(0, ["Hello from Bedrock"])))
        )
        env = {"AWS_REGION": REGION, "ANTHROPIC_BEDROCK_BASE_URL": bedrock.url}
        out = _cli(tmp_path, "run", "-m", f"bedrock/{MODEL}", "--tools", "", "hi", env=env)
        no_region = _cli(
            tmp_path,
            "run",
            "-m",
            f"bedrock/{MODEL}",
            "--tools",
            "",
            "hi",
            env={"AWS_REGION": "", "ANTHROPIC_BEDROCK_BASE_URL": bedrock.url},
        )

    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from Bedrock"
    assert bedrock.signers == long_lived.issued
    assert no_region.returncode != 0 and "AWS_REGION" in no_region.stderr


@pytest.mark.parametrize(
    ("response", "error", "says"),
    [
        (
            aws_error(400, "ValidationException", "Input is too long for requested model."),
            "ContextOverflowError",
            "context window",
        ),
        (
            aws_error(404, "ResourceNotFoundException", "Could not resolve the foundation model."),
            "InvalidRequestError",
            "list-inference-profiles",
        ),
        (
            aws_error(429, "ThrottlingException", "Too many requests, please wait."),
            "RateLimitError",
            "ThrottlingException",
        ),
        (
            aws_error(
                503, "ServiceUnavailableException", "Bedrock is unable to process your request."
            ),
            "OverloadedError",
            "ServiceUnavailableException",
        ),
    ],
)
async def test_bedrock_http_errors_map_to_tether_errors(
    response: FakeResponse, error: str, says: str, long_lived: FakeCredentialEndpoint
) -> None:
    from tether import errors

    with FakeServer() as bedrock:
        bedrock.queue(response)
        provider = BedrockProvider(
            ProviderConfig.model_validate({"base_url": bedrock.url, "region": REGION})
        )
        request = ModelRequest(
            model=MODEL, messages=[Message.user("hi")], capabilities=provider.capabilities(MODEL)
        )
        with pytest.raises(getattr(errors, error)) as raised:
            await provider.complete(request)
        await provider.aclose()
    assert type(raised.value).__name__ == error
    assert says in str(raised.value)


async def test_a_bedrock_api_key_is_sent_as_a_bearer_token_and_named_when_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: SimpleNamespace
) -> None:
    api_key = "ABSKQmVkcm9ja0FQSUtleS1mYWtlLWtleS0wMTIz"
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", api_key)
    with FakeServer() as bedrock:
        bedrock.queue(
            bedrock_stream(wire.reply(wire.text_block(0, ["keyed"]))),
            aws_error(
                403,
                "UnrecognizedClientException",
                "Invalid API Key format: Must start with pre-defined prefix",
            ),
        )
        agent = bedrock_agent(bedrock, tmp_path)
        assert (await agent.run("hi")).output == "keyed"
        with pytest.raises(AuthenticationError) as raised:
            await agent.run("again")

    assert bedrock.requests[0].headers["authorization"] == f"Bearer {api_key}"
    assert "x-amz-date" not in bedrock.requests[0].headers
    assert "AWS_BEARER_TOKEN_BEDROCK" in str(raised.value) and api_key not in str(raised.value)
    from tether.scrub import scrub

    assert api_key not in scrub(f"a log line with {api_key}")


async def test_an_unknown_aws_profile_is_named() -> None:
    config = ProviderConfig.model_validate({"region": REGION, "profile": "no-such-profile"})
    with pytest.raises(AuthenticationError, match="no-such-profile") as raised:
        await BedrockProvider(config).validate_auth()
    assert "ProfileNotFound" in str(raised.value)
