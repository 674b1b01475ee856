"""The provider: one class serving OpenAI and every OpenAI-compatible profile.

Which API a request uses is decided per model, as data: ``api = "responses" | "chat"``
in ``[providers.<name>]`` (or per model under ``[providers.<name>.models."<id>"]``),
else the Responses API for OpenAI's reasoning models and Chat Completions for everything
else. OpenAI-compatible servers default to Chat Completions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tether.config import ProviderConfig
from tether.errors import ConfigError, InvalidRequestError, TetherError
from tether.provider import (
    BaseProvider,
    ModelCapabilities,
    ModelInfo,
    ModelRequest,
    ProviderEvent,
)

from .azure import TokenProvider
from .chat.request import chat_params
from .chat.stream import ChatAssembler, completion_chunks
from .client import Connection, make_client
from .errors import translate
from .profiles import OPENAI, Profile
from .responses.request import responses_params
from .responses.stream import ResponsesAssembler

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIProvider"]

_APIS = ("responses", "chat")
_CHAT_KEYS = ("tool_choice", "stream_tool_choice")


class OpenAIProvider(BaseProvider):
    """OpenAI (or an OpenAI-compatible server, per ``profile``) behind tether's provider API.

    :param config: the ``[providers.<name>]`` section. Recognised extra keys: ``api``
        (``"responses"`` or ``"chat"``) and ``reasoning_summary`` (``"auto"``,
        ``"concise"``, ``"detailed"``, or ``""`` to not ask for summaries).
    :param profile: which API family member this is (see :mod:`tether_openai.profiles`).
    :param client: an ``AsyncOpenAI`` client to use instead of building one (tests, proxies).
    :param token_provider: Azure only: a callable returning a Microsoft Entra ID bearer
        token (or an awaitable of one), called before every request, e.g. azure-identity's
        ``get_bearer_token_provider(credential, "https://cognitiveservices.azure.com/.default")``.
    """

    def __init__(
        self,
        config: ProviderConfig | None = None,
        *,
        profile: Profile = OPENAI,
        client: AsyncOpenAI | None = None,
        token_provider: TokenProvider | None = None,
    ) -> None:
        config = config or ProviderConfig()
        overrides, self._api_by_model, self._base_model, self._chat_by_model = _split_api_overrides(
            config.models
        )
        super().__init__(model_overrides=overrides)
        self.profile = profile
        self.name = profile.name
        self.models = profile.models
        self.default_capabilities = profile.default_capabilities
        self._connection = Connection.from_config(profile, config, token_provider)
        self._api = _check_api(config.extra.get("api"), f"[providers.{profile.name}] api")
        summary = config.extra.get("reasoning_summary", "auto")
        self._summary: str | None = str(summary) if summary else None
        self._client = client

    def __repr__(self) -> str:
        return f"OpenAIProvider({self._connection!r})"

    # -- choosing the API -------------------------------------------------------------------
    def api_for(self, model: str, settings: Mapping[str, Any] | None = None) -> str:
        """``"responses"`` or ``"chat"``: per-model config, then provider config (or the
        request's settings), then the model's capabilities."""
        chosen = self._api_by_model.get(model)
        if chosen is None and settings is not None:
            chosen = _check_api(settings.get("api"), f"[providers.{self.name}] api")
        chosen = chosen or self._api
        if chosen is not None:
            return chosen
        if self.profile.openai_features and self._catalogued(model).thinking:
            return "responses"
        return "chat"

    def _catalogued(self, model: str) -> ModelCapabilities:
        """The catalogue entry of ``model`` with its configured overrides; a deployment
        mapped to a model (``model = "gpt-4.1"`` in its section) starts from that model's."""
        base_model = self._base_model.get(model)
        if base_model is None:
            return super().capabilities(model)
        caps = super().capabilities(base_model)
        overrides = self._overrides.get(model)
        return caps.updated(overrides) if overrides else caps

    def catalogue(self) -> Sequence[ModelInfo]:
        """The known models; for a keyless server (llama.cpp, Ollama, vLLM, ...) also the
        models it serves (``GET /models``, when it answers within a couple of seconds)."""
        listed = [
            replace(info, capabilities=self._catalogued(info.id))
            if info.id in self._base_model
            else info
            for info in super().catalogue()
        ]
        if self.profile.models or self.profile.key_required or self.profile.azure:
            return listed
        known = {info.id for info in listed}
        served = [
            ModelInfo(
                id=model_id,
                capabilities=self.capabilities(model_id),
                description=f"served by {self._connection.endpoint}",
            )
            for model_id in self._served_models()
            if model_id not in known
        ]
        return [*listed, *served]

    def _served_models(self) -> list[str]:
        """The ids the server lists at ``GET /models``; none if it does not answer."""
        from openai import OpenAI

        try:
            with OpenAI(
                api_key=self._connection.require_key(),
                base_url=self._connection.endpoint,
                timeout=2.0,
                max_retries=0,
            ) as client:
                return [model.id for model in client.models.list()]
        except Exception:  # not running, or no /models endpoint: nothing to add
            return []

    def capabilities(self, model: str) -> ModelCapabilities:
        caps = self._catalogued(model)
        native_images = self.api_for(model) == "responses"
        if caps.images_in_tool_results != native_images:
            caps = replace(caps, images_in_tool_results=native_images)
        return caps

    # -- the provider API ---------------------------------------------------------------------
    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        model_string = f"{self.name}/{request.model}"
        errors = self._connection.errors
        client = self._get_client()
        responses = self.api_for(request.model, request.settings) == "responses"
        tool_choice, streamed = self._tool_choice(request)
        try:
            params = (
                responses_params(
                    request,
                    model_string=model_string,
                    reasoning_summary=self._summary,
                    openai_features=self.profile.openai_features,
                )
                if responses
                else chat_params(
                    request,
                    model_string=model_string,
                    openai_features=self.profile.openai_features,
                    content_with_calls=self.profile.assistant_content_with_calls,
                    tool_choice=tool_choice,
                    stream=streamed,
                )
            )
        except ValueError as exc:
            raise InvalidRequestError(
                f"The history cannot be sent to {self.profile.label}: {exc}", provider=self.name
            ) from exc
        assembler: ChatAssembler | ResponsesAssembler
        try:
            if responses:
                assembler = ResponsesAssembler(model_string, errors)
                sdk_stream: Any = await client.responses.create(**params)
            elif not streamed:
                assembler = ChatAssembler(model_string, self.profile.label, request)
                completion = await client.chat.completions.create(**params)
                for chunk in completion_chunks(completion):
                    for event in assembler.feed(chunk):
                        yield event
                yield assembler.finish()
                return
            else:
                assembler = ChatAssembler(model_string, self.profile.label, request)
                sdk_stream = await client.chat.completions.create(**params)
            try:
                feed = assembler.feed
                async for item in sdk_stream:
                    for event in feed(item):
                        yield event
            finally:
                await sdk_stream.close()
        except TetherError:
            raise
        except Exception as exc:
            raise translate(exc, errors) from exc
        yield assembler.finish()

    def _tool_choice(self, request: ModelRequest) -> tuple[str | None, bool]:
        """The ``tool_choice`` to send (per-model config, then provider config, then the
        profile) and whether this turn may be streamed: not when tools go out with a
        ``tool_choice`` to a server that cannot stream those (``stream_tool_choice``)."""
        per_model = self._chat_by_model.get(request.model, {})
        choice = per_model.get("tool_choice", request.settings.get("tool_choice"))
        if choice is None:
            choice = self.profile.tool_choice
        streams = per_model.get(
            "stream_tool_choice",
            request.settings.get("stream_tool_choice", self.profile.streams_with_tool_choice),
        )
        choice = str(choice) if choice else None
        return choice, bool(streams) or not (choice and request.tools)

    async def validate_auth(self) -> None:
        """Raise ``AuthenticationError`` naming the variable to set if a required key is
        missing (for Azure also ``ConfigError`` naming a missing endpoint or API version).

        Sends nothing (the CLI calls this before every run, and compatible servers often
        have no ``/models`` endpoint): a key the API rejects fails the first request, at
        once and without retries. :meth:`verify_key` asks the API.
        """
        if self._connection.azure is not None:
            self._get_client()
            return
        self._connection.require_key()

    async def verify_key(self) -> None:
        """Ask the API whether the key is accepted (one ``GET /models``, for ``tether
        models --check``). Raises ``AuthenticationError`` naming the variable to set when
        it is missing or rejected."""
        client = self._get_client()
        try:
            await client.models.list()
        except Exception as exc:
            raise translate(exc, self._connection.errors) from exc

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _get_client(self) -> AsyncOpenAI:
        if self._client is None:
            self._client = make_client(self._connection)
        return self._client


def _check_api(value: object, where: str) -> str | None:
    if value is None:
        return None
    if value not in _APIS:
        raise ConfigError(f'{where} = {value!r} is not valid. Use "responses" or "chat".')
    return str(value)


def _split_api_overrides(
    models: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, str], dict[str, dict[str, Any]]]:
    """Per-model config minus the keys that are not capabilities: the per-model ``api``
    choices, the catalogue ``model`` a deployment is an instance of, and the per-model
    ``tool_choice`` / ``stream_tool_choice``."""
    overrides: dict[str, dict[str, Any]] = {}
    apis: dict[str, str] = {}
    base_models: dict[str, str] = {}
    chat: dict[str, dict[str, Any]] = {}
    for model, values in models.items():
        rest = dict(values)
        chat[model] = {k: rest.pop(k) for k in _CHAT_KEYS if k in rest}
        api = _check_api(rest.pop("api", None), f'[providers.*.models."{model}"] api')
        if api is not None:
            apis[model] = api
        base_model = rest.pop("model", None)
        if base_model is not None:
            base_models[model] = str(base_model)
        overrides[model] = rest
    return overrides, apis, base_models, chat
