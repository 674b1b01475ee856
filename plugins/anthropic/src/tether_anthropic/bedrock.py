"""Claude on Amazon Bedrock, through the SDK's ``AsyncAnthropicBedrock`` client.

The model string is ``bedrock/<Bedrock model id>``: a base model id
(``bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0``) or an inference profile id
(``bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0``, ``global.anthropic...``).

- region: ``region`` under ``[providers.bedrock]``, else ``AWS_REGION`` /
  ``AWS_DEFAULT_REGION``, else the region of the AWS profile;
- credentials: botocore's own chain (environment variables, ``profile`` under
  ``[providers.bedrock]`` or ``AWS_PROFILE``, SSO, web identity, the container and
  instance credential endpoints), or a Bedrock API key in ``AWS_BEARER_TOKEN_BEDROCK``.
  botocore refreshes temporary credentials by itself when they near their expiry, and
  every request is signed (SigV4) with the credentials current at that moment, so a long
  run outlives any one set of credentials.

Request shaping and stream assembly are the Anthropic provider's: the Messages API is
the same on Bedrock, only the URL, the signing and the stream framing (AWS event stream,
decoded by the SDK) differ. boto3 and botocore are imported on first use
(``uv pip install './plugins/anthropic[bedrock]'``).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tether import errors
from tether.config import ProviderConfig
from tether.provider import BaseProvider, ModelCapabilities, ModelInfo, ModelRequest, ProviderEvent
from tether.retry import parse_retry_after
from tether.scrub import register_secret, scrub

from .catalogue import DEFAULT_CAPABILITIES, MODELS
from .client import DEFAULT_TIMEOUT
from .errors import malformed_stream
from .provider import _close
from .request import build_params
from .stream import assemble

if TYPE_CHECKING:
    from anthropic import AsyncAnthropicBedrock

__all__ = [
    "BEDROCK_MODELS",
    "REGIONAL_PREMIUM",
    "BedrockProvider",
    "anthropic_model",
    "bedrock_capabilities",
]

PROVIDER = "bedrock"
LABEL = "Amazon Bedrock"
_INSTALL = "uv pip install './plugins/anthropic[bedrock]'"
_CREDENTIAL_SOURCES = (
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, an AWS profile (AWS_PROFILE or `profile` "
    "under [providers.bedrock]; `aws sso login` for SSO profiles), a role from the container "
    "or instance credential endpoint, or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK"
)

REGIONAL_PREMIUM = 1.10
"""On-demand prices of in-region and geographic (``us.``, ``eu.``, ``apac.``, ...)
endpoints relative to global ones (``global.`` inference profiles, Anthropic's list
prices), for Claude Sonnet 4.5 and every model since."""

_PROFILE_PREFIX = re.compile(r"^(?:[a-z]{2,6}(?:-[a-z]+)?\.)?anthropic\.")
_VERSION_SUFFIX = re.compile(r"-v\d+(?::\d+)?$")
_DATE_SUFFIX = re.compile(r"-\d{8}$")


def anthropic_model(model_id: str) -> str:
    """The Anthropic model a Bedrock model id names: ``us.anthropic.claude-sonnet-4-5-
    20250929-v1:0`` → ``claude-sonnet-4-5`` (ids of other shapes are returned unchanged)."""
    name = _PROFILE_PREFIX.sub("", model_id, count=1)
    name = _VERSION_SUFFIX.sub("", name)
    return _DATE_SUFFIX.sub("", name)


def _is_global(model_id: str) -> bool:
    return model_id.startswith("global.")


def bedrock_capabilities(model_id: str, base: ModelCapabilities) -> ModelCapabilities:
    """``base`` (the Anthropic catalogue entry) as billed on Bedrock for ``model_id``:
    regional and geographic endpoints carry :data:`REGIONAL_PREMIUM`."""
    if _is_global(model_id) or base.pricing is None:
        return base
    price = base.pricing

    def up(value: float | None) -> float | None:
        return None if value is None else round(value * REGIONAL_PREMIUM, 6)

    pricing = replace(
        price,
        input=up(price.input) or 0.0,
        output=up(price.output) or 0.0,
        cache_read=up(price.cache_read),
        cache_write=up(price.cache_write),
    )
    return replace(base, pricing=pricing)


_BEDROCK_IDS = {
    "claude-opus-4-5": "anthropic.claude-opus-4-5-20251101-v1:0",
    "claude-sonnet-4-5": "anthropic.claude-sonnet-4-5-20250929-v1:0",
    "claude-haiku-4-5": "anthropic.claude-haiku-4-5-20251001-v1:0",
}


def _catalogue() -> tuple[ModelInfo, ...]:
    by_id = {info.id: info for info in MODELS}
    listed: list[ModelInfo] = []
    for name, bedrock_id in _BEDROCK_IDS.items():
        info = by_id[name]
        for prefix, where in (("global.", "global"), ("us.", "US"), ("", "in-region")):
            model_id = prefix + bedrock_id
            listed.append(
                ModelInfo(
                    model_id,
                    bedrock_capabilities(model_id, info.capabilities),
                    description=f"{info.description} on Bedrock ({where})",
                )
            )
    return tuple(listed)


BEDROCK_MODELS: tuple[ModelInfo, ...] = _catalogue()
"""Bedrock ids of current Claude models, with Bedrock's prices. Every other Bedrock
Claude id (newer models, other geographic profiles such as ``eu.`` or ``apac.``) gets
the entry of the Anthropic model it names (:func:`anthropic_model`), priced by
:func:`bedrock_capabilities`."""


class BedrockProvider(BaseProvider):
    """Claude on Amazon Bedrock, streamed (``invoke-with-response-stream``).

    :param config: the ``[providers.bedrock]`` settings: ``region``, ``profile`` (an AWS
        profile name), ``base_url`` (a VPC endpoint), ``timeout``, model overrides.
    :param client: an ``AsyncAnthropicBedrock`` to use instead of building one; it is not
        closed by :meth:`aclose`.
    """

    name = PROVIDER
    models = BEDROCK_MODELS
    default_capabilities = DEFAULT_CAPABILITIES

    def __init__(
        self, config: ProviderConfig | None = None, *, client: AsyncAnthropicBedrock | None = None
    ) -> None:
        self.config = config or ProviderConfig()
        super().__init__(model_overrides=self.config.models)
        extra = self.config.extra
        self.region: str | None = extra.get("region") or None
        self.profile: str | None = extra.get("profile") or None
        self._client = client
        self._owns_client = client is None
        self._boto_session: Any = None

    def __repr__(self) -> str:
        return scrub(
            f"BedrockProvider(region={self._region_or_none()!r}, profile={self.profile!r}, "
            f"base_url={self.config.base_url!r})"
        )

    # -- catalogue ---------------------------------------------------------------------------
    def capabilities(self, model: str) -> ModelCapabilities:
        if model in self._capabilities:
            return self._capabilities[model]
        if any(info.id == model for info in self.models):
            return super().capabilities(model)
        anthropic = _anthropic_provider_capabilities(anthropic_model(model))
        caps = bedrock_capabilities(model, anthropic)
        overrides = self._overrides.get(model)
        if overrides:
            caps = caps.updated(overrides)
        self._capabilities[model] = caps
        return caps

    # -- credentials -------------------------------------------------------------------------
    def _region_or_none(self) -> str | None:
        return (
            self.region
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or None
        )

    def _resolve_region(self) -> str:
        region = self._region_or_none() or self._session().region_name
        if not region:
            raise errors.ConfigError(
                "No AWS region for Amazon Bedrock. Set region under [providers.bedrock] in "
                "tether.toml, or the AWS_REGION environment variable (or a region in your "
                "AWS profile)."
            )
        return region

    def _session(self) -> Any:
        """The boto3 session whose credential chain signs every request (created once, so
        its credentials are cached and refreshed by botocore)."""
        if self._boto_session is None:
            boto3 = _import_boto3()
            try:
                self._boto_session = boto3.Session(
                    profile_name=self.profile, region_name=self._region_or_none()
                )
            except Exception as exc:
                raise _credential_error(exc) from exc
        return self._boto_session

    def _sdk(self) -> AsyncAnthropicBedrock:
        if self._client is None:
            region = self._resolve_region()
            timeout = self.config.timeout if self.config.timeout is not None else DEFAULT_TIMEOUT
            # A Bedrock API key (read by the SDK) is a secret its variable name does not betray.
            register_secret(os.environ.get("AWS_BEARER_TOKEN_BEDROCK"))
            client_class = _signing_client(self._session(), region)
            self._client = client_class(
                aws_region=region,
                base_url=self.config.base_url,
                timeout=timeout,
                max_retries=0,
            )
        return self._client

    async def validate_auth(self) -> None:
        """Raise ``ConfigError`` naming the setting when no region is known, and
        ``AuthenticationError`` naming the credential sources when botocore finds no
        credentials (its chain may ask a credential endpoint; nothing is sent to Bedrock)."""
        import asyncio

        self._sdk()
        if os.environ.get("AWS_BEARER_TOKEN_BEDROCK"):
            return
        try:
            credentials = await asyncio.to_thread(self._session().get_credentials)
        except Exception as exc:
            raise _credential_error(exc) from exc
        if credentials is None:
            raise _no_credentials()

    # -- the provider API --------------------------------------------------------------------
    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        origin = f"{self.name}/{request.model}"
        caps = self.capabilities(request.model)
        params = build_params(replace(request, model=anthropic_model(request.model)), origin, caps)
        params["model"] = request.model
        client = self._sdk()
        try:
            events = await client.messages.create(**params, stream=True)
        except errors.TetherError:
            raise
        except Exception as exc:
            raise translate(exc) from exc
        try:
            async for event in assemble(events, origin):
                yield event
        except errors.TetherError:
            raise
        except Exception as exc:
            error = malformed_stream(exc) if isinstance(exc, ValueError | KeyError) else None
            raise (error or translate(exc)) from exc
        finally:
            await _close(events)

    async def aclose(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.close()
        if self._owns_client:
            self._client = None


def _signing_client(session: Any, region: str) -> type[AsyncAnthropicBedrock]:
    """``AsyncAnthropicBedrock`` signing each request with one consistent snapshot of the
    session's credentials (``get_frozen_credentials``, as botocore's own clients do):
    botocore refreshes them when they near expiry, and a refresh can never mix the access
    key of one set with the secret or session token of the next."""
    import asyncio

    from anthropic import AsyncAnthropicBedrock

    class SigningClient(AsyncAnthropicBedrock):
        async def _prepare_request(self, request: Any) -> None:
            if self.api_key is not None:
                request.headers["Authorization"] = f"Bearer {self.api_key}"
                return
            body = request.read()
            signed = await asyncio.to_thread(
                _sign, session, region, request.method, str(request.url), request.headers, body
            )
            request.headers.update(signed)

    return SigningClient


def _sign(
    session: Any, region: str, method: str, url: str, headers: Any, body: bytes
) -> dict[str, str]:
    """SigV4 headers for one request to the ``bedrock`` service."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    credentials = session.get_credentials()
    if credentials is None:
        raise _no_credentials()
    frozen = credentials.get_frozen_credentials()
    # botocore logs the canonical request (with the session token) at debug level: known
    # secrets are scrubbed from every record, errors and events.
    register_secret(frozen.secret_key)
    register_secret(frozen.token)
    # A proxy may drop the connection header, so it is left out of the signature.
    kept = {k: v for k, v in dict(headers).items() if k.lower() != "connection"}
    aws_request = AWSRequest(method=method.upper(), url=url, headers=kept, data=body)
    SigV4Auth(frozen, "bedrock", region).add_auth(aws_request)
    prepared = aws_request.prepare()
    return {k: v for k, v in dict(prepared.headers).items() if v is not None}


def _anthropic_provider_capabilities(model: str) -> ModelCapabilities:
    for info in MODELS:
        if info.id == model:
            return info.capabilities
    prefixes = [info for info in MODELS if model.startswith(info.id)]
    if prefixes:
        return max(prefixes, key=lambda info: len(info.id)).capabilities
    return DEFAULT_CAPABILITIES


def _import_boto3() -> Any:
    try:
        import boto3
    except ImportError as exc:
        raise errors.ConfigError(
            f"Claude on Amazon Bedrock needs boto3 and botocore: `{_INSTALL}`."
        ) from exc
    return boto3


# -- errors ----------------------------------------------------------------------------------
def _no_credentials() -> errors.AuthenticationError:
    return errors.AuthenticationError(
        f"No AWS credentials found for Amazon Bedrock. Provide {_CREDENTIAL_SOURCES}.",
        provider=PROVIDER,
    )


_BOTOCORE_CREDENTIAL_ERRORS = frozenset(
    {
        "NoCredentialsError",
        "PartialCredentialsError",
        "CredentialRetrievalError",
        "ProfileNotFound",
        "TokenRetrievalError",
        "SSOTokenLoadError",
        "UnauthorizedSSOTokenError",
        "InvalidConfigError",
    }
)


def _credential_error(exc: BaseException) -> errors.TetherError:
    """The error for a failure of botocore's credential chain or configuration."""
    kind = type(exc).__name__
    detail = scrub(" ".join(str(exc).split()))
    if kind == "NoRegionError":
        return errors.ConfigError(
            "No AWS region for Amazon Bedrock. Set region under [providers.bedrock] in "
            "tether.toml, or the AWS_REGION environment variable."
        )
    if kind == "NoCredentialsError" or "Could not resolve AWS credentials" in detail:
        return _no_credentials()
    return errors.AuthenticationError(
        f"Could not get AWS credentials for Amazon Bedrock ({kind}: {detail}). Check "
        f"{_CREDENTIAL_SOURCES}.",
        provider=PROVIDER,
    )


_REJECTED_CREDENTIALS = frozenset(
    {
        "unrecognizedclientexception",
        "invalidsignatureexception",
        "expiredtokenexception",
        "incompletesignatureexception",
        "incompletesignature",
        "missingauthenticationtokenexception",
        "missingauthenticationtoken",
        "invalidclienttokenid",
        "signaturedoesnotmatch",
    }
)
_STATUS_OF_TYPE = {
    "accessdeniedexception": 403,
    "throttlingexception": 429,
    "servicequotaexceededexception": 429,
    "modelnotreadyexception": 503,
    "serviceunavailableexception": 503,
    "internalserverexception": 500,
    "modelstreamerrorexception": 500,
    "modeltimeoutexception": 504,
    "modelerrorexception": 500,
    "validationexception": 400,
    "resourcenotfoundexception": 404,
}
_OVERFLOW = ("prompt is too long", "input is too long", "too many input tokens", "context window")


def translate(exc: BaseException) -> errors.ProviderError | errors.TetherError:
    """The tether error for an exception of the SDK, botocore or the transport."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        return _from_status(exc)
    if isinstance(exc, anthropic.APITimeoutError):
        return errors.ProviderTimeoutError(
            "Amazon Bedrock did not answer in time. Raise `timeout` under "
            "[providers.bedrock] if long responses need more.",
            provider=PROVIDER,
        )
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc
        if _is_credential_failure(cause):
            return _credential_error(cause)
        at = errors.endpoint_of(exc)
        return errors.ProviderConnectionError(
            f"Could not connect to Amazon Bedrock{f' ({at})' if at else ''}: "
            f"{_describe(cause)}. Check the network, the region and `base_url`.",
            provider=PROVIDER,
        )
    if _is_credential_failure(exc):
        return _credential_error(exc)
    import httpx2

    if isinstance(exc, httpx2.TimeoutException):
        return errors.ProviderTimeoutError(
            f"The Amazon Bedrock stream stalled: {_describe(exc)}.", provider=PROVIDER
        )
    if isinstance(exc, httpx2.TransportError | httpx2.StreamError):
        return errors.ProviderConnectionError(
            f"The connection to Amazon Bedrock dropped mid-stream: {_describe(exc)}.",
            provider=PROVIDER,
        )
    return errors.ProviderError(
        f"Amazon Bedrock request failed: {_describe(exc)}", provider=PROVIDER
    )


def _is_credential_failure(exc: BaseException) -> bool:
    kind = type(exc).__name__
    if kind in _BOTOCORE_CREDENTIAL_ERRORS or kind == "NoRegionError":
        return True
    return isinstance(exc, RuntimeError) and "AWS credentials" in str(exc)


def _from_status(exc: Any) -> errors.ProviderError:
    status: int = exc.status_code
    headers = exc.response.headers if exc.response is not None else {}
    kind = _error_type(exc, headers)
    detail = scrub(_error_message(exc.body) or getattr(exc, "message", "") or str(exc))
    where = f"HTTP {status}" if status != 200 else "in the stream"
    label = f"{where}, {kind}" if kind else where
    at = errors.endpoint_of(exc.response)
    lowered = (kind or "").lower()
    if lowered in _REJECTED_CREDENTIALS or status == 401:
        return errors.AuthenticationError(
            f"Amazon Bedrock rejected the AWS credentials ({label}){f' at {at}' if at else ''}: "
            f"{detail.rstrip('.')}. {_rejected_hint(lowered)}",
            provider=PROVIDER,
            status_code=status,
        )
    effective = _STATUS_OF_TYPE.get(lowered, status if status != 200 else 500)
    if effective == 400 and any(marker in detail.lower() for marker in _OVERFLOW):
        return errors.ContextOverflowError(
            f"The prompt does not fit the model's context window ({label}): {detail}",
            provider=PROVIDER,
            status_code=status,
        )
    error = errors.error_for_status(
        effective,
        detail,
        provider=PROVIDER,
        label=LABEL,
        where=label,
        endpoint=at,
        retry_after=parse_retry_after(headers),
        hints={
            errors.AuthenticationError: _rejected_hint(lowered),
            errors.PermissionDeniedError: "The AWS identity was accepted but may not invoke "
            "this model: it needs bedrock:InvokeModelWithResponseStream on the model (and, for "
            "an inference profile, on the profile and the models it routes to), and access to "
            "the model must be enabled for the account in this region.",
            errors.InvalidRequestError: "Check the model id and the region: `aws bedrock "
            "list-inference-profiles` lists the ids this region serves."
            if effective == 404
            else "",
        },
    )
    error.status_code = status
    return error


def _rejected_hint(kind: str) -> str:
    if kind == "expiredtokenexception":
        return (
            "The temporary credentials (session token) have expired: refresh them "
            "(`aws sso login`, or the tool that issued them)."
        )
    if os.environ.get("AWS_BEARER_TOKEN_BEDROCK"):
        return "Check the Bedrock API key in AWS_BEARER_TOKEN_BEDROCK."
    return (
        "Check the access key and secret key botocore found (AWS_ACCESS_KEY_ID / "
        "AWS_SECRET_ACCESS_KEY, or the AWS profile) and the clock of this machine."
    )


def _error_type(exc: Any, headers: Mapping[str, str]) -> str | None:
    raw = headers.get("x-amzn-errortype") if headers else None
    if raw:
        return str(raw).split(":", 1)[0]
    kind = getattr(exc, "type", None)
    if kind:
        return str(kind)
    body = exc.body
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("type"), str):
            return str(error["type"])
        for key in ("__type", "type"):
            if isinstance(body.get(key), str):
                return str(body[key]).rsplit("#", 1)[-1]
    return None


def _error_message(body: object) -> str | None:
    if not isinstance(body, Mapping):
        return None
    error = body.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    for key in ("message", "Message"):
        if isinstance(body.get(key), str):
            return str(body[key])
    return None


def _describe(exc: BaseException) -> str:
    text = scrub(" ".join(str(exc).split()))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
