"""The one exception tree. Everything tether or a plugin raises on purpose is a
:class:`TetherError`; vendor SDK exceptions are translated at the plugin boundary with
``raise ... from``.

Messages say what happened, what was expected and what to do about it.

::

    TetherError
    ├── ConfigError
    │   └── UnknownComponentError      (.kind, .name, .installed, .near)
    │       └── UnknownProviderError
    ├── PluginError
    │   ├── PluginLoadError
    │   └── DuplicateComponentError
    ├── ProviderError                  (.retryable, .provider, .status_code)
    │   ├── RateLimitError             (.retry_after)          retryable
    │   ├── OverloadedError                                    retryable
    │   ├── ServerError                                        retryable
    │   ├── ProviderConnectionError                            retryable
    │   │   └── ProviderTimeoutError                           retryable
    │   ├── RetryBudgetExceeded        (.__cause__: the last error)
    │   ├── AuthenticationError
    │   ├── PermissionDeniedError
    │   ├── InvalidRequestError
    │   │   └── ContextOverflowError
    │   └── RefusalError
    ├── ToolError
    │   ├── ToolTimeoutError
    │   ├── UnknownToolError
    │   ├── InvalidToolArguments
    │   └── ToolDenied
    ├── NeedsHuman                     (.user_message)
    ├── OutputValidationError          (.errors)
    ├── InvalidImageError
    ├── SessionError
    │   ├── SessionLockedError
    │   ├── SessionConflictError
    │   ├── SessionBusyError
    │   └── SessionTimeoutError        (.store, .operation, .waited)
    │       └── SessionDeadlineExceeded   (also a WallTimeExceeded)
    ├── KnowledgeBackendError          (was MemoryBackendError, still importable: deprecated)
    ├── CrossSessionMemoryError
    │   └── MemoryWriteRejected
    ├── CompactionError
    ├── LimitExceeded                  (.limit)
    │   ├── MaxTurnsExceeded
    │   ├── TokenBudgetExceeded
    │   ├── CostBudgetExceeded
    │   ├── WallTimeExceeded
    │   ├── LoopDetected
    │   └── DepthExceeded          (.depth, .max_depth)
    └── RunCancelled
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthenticationError",
    "CompactionError",
    "ConfigError",
    "ContextOverflowError",
    "CostBudgetExceeded",
    "CrossSessionMemoryError",
    "DepthExceeded",
    "DuplicateComponentError",
    "InvalidImageError",
    "InvalidRequestError",
    "InvalidToolArguments",
    "KnowledgeBackendError",
    "LimitExceeded",
    "LoopDetected",
    "MaxTurnsExceeded",
    "MemoryWriteRejected",
    "NeedsHuman",
    "OutputValidationError",
    "OverloadedError",
    "PermissionDeniedError",
    "PluginError",
    "PluginLoadError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeoutError",
    "RateLimitError",
    "RefusalError",
    "RetryBudgetExceeded",
    "RunCancelled",
    "ServerError",
    "SessionBusyError",
    "SessionConflictError",
    "SessionDeadlineExceeded",
    "SessionError",
    "SessionLockedError",
    "SessionTimeoutError",
    "TetherError",
    "TokenBudgetExceeded",
    "ToolDenied",
    "ToolError",
    "ToolTimeoutError",
    "UnknownComponentError",
    "UnknownProviderError",
    "UnknownToolError",
    "UnreadableCommand",
    "WallTimeExceeded",
    "endpoint_of",
    "error_class_for_status",
    "error_for_status",
]


class TetherError(Exception):
    """Root of every error tether raises on purpose.

    Text arguments are scrubbed of secrets (:func:`tether.scrub.scrub`) when the error is
    created, so an API key quoted back by a provider never reaches a message. Every tether
    error survives ``pickle`` with its attributes (``retry_after``, ``provider``, ...), so
    a durable engine can record it as a step's outcome and raise it again when the step is
    replayed in another process.
    """

    def __init__(self, *args: object) -> None:
        from .scrub import scrub

        super().__init__(*(scrub(a) if isinstance(a, str) else a for a in args))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_error, (type(self), self.args, dict(self.__dict__)))


# -- configuration and plugins --------------------------------------------------------
class ConfigError(TetherError):
    """The configuration (file, environment or arguments) is invalid or incomplete."""


class UnknownComponentError(ConfigError, KeyError):
    """A name that no installed plugin registers as a component of ``kind`` (a provider,
    tool, session store, knowledge-base backend, embedder, ...).

    Built by :meth:`tether.registry.Registrar.unknown`, which fills ``near`` with the
    registered names that look like ``name`` and ``installed`` with all of them. It is
    also a :class:`KeyError`, so code that looked names up in a plain dict keeps working.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        name: str,
        installed: list[str],
        near: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name
        self.installed = installed
        self.near = near or []

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownProviderError(UnknownComponentError):
    """A model string names a provider that no installed plugin registers."""

    def __init__(
        self,
        message: str,
        *,
        name: str,
        installed: list[str],
        near: list[str] | None = None,
        kind: str = "provider",
    ) -> None:
        super().__init__(message, kind=kind, name=name, installed=installed, near=near)


class PluginError(TetherError):
    """A plugin misbehaved while being loaded or registering components."""


class PluginLoadError(PluginError):
    """One entry point failed to import or to register; the others are unaffected."""

    def __init__(self, message: str, *, plugin: str, distribution: str | None) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.distribution = distribution


class DuplicateComponentError(PluginError):
    """Two plugins registered a component of the same kind under the same name."""

    def __init__(self, kind: str, name: str, first: str, second: str) -> None:
        super().__init__(
            f'Two plugins register a {kind} named "{name}": {first} and {second}. '
            f"Uninstall one of them, or block one with TETHER_PLUGINS_DENY."
        )
        self.kind = kind
        self.name = name
        self.distributions = (first, second)


# -- providers ------------------------------------------------------------------------
class ProviderError(TetherError):
    """A model provider failed. ``retryable`` tells the runner whether to try again."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status_code: int | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code
        if retryable is not None:
            self.retryable = retryable


class RateLimitError(ProviderError):
    """Too many requests. ``retry_after`` is the provider's hint in seconds, if it sent one."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        provider: str | None = None,
        status_code: int | None = 429,
    ) -> None:
        super().__init__(message, provider=provider, status_code=status_code)
        self.retry_after = retry_after


class OverloadedError(ProviderError):
    """The provider is temporarily overloaded (e.g. HTTP 529, or an overload event mid-stream)."""

    retryable = True


class ServerError(ProviderError):
    """The provider answered with a 5xx error."""

    retryable = True


class ProviderConnectionError(ProviderError):
    """The connection failed or dropped, possibly in the middle of a streamed response."""

    retryable = True


class ProviderTimeoutError(ProviderConnectionError):
    """The provider did not answer in time."""


class RetryBudgetExceeded(ProviderError):
    """Retrying a model call would pass its total retry budget (``limits.retry_budget_s``);
    the last provider error is the ``__cause__``. Not retryable."""


class AuthenticationError(ProviderError):
    """The credentials are missing or were rejected. Not retryable: fix the key."""


class PermissionDeniedError(ProviderError):
    """The credentials are valid but may not use this model or feature."""


class InvalidRequestError(ProviderError):
    """The provider rejected the request as malformed. Not retryable."""


class ContextOverflowError(InvalidRequestError):
    """The prompt is longer than the model's context window. The runner compacts and retries once."""


class RefusalError(ProviderError):
    """The model (or the provider's safety system) refused to answer."""


# -- tools ----------------------------------------------------------------------------
class ToolError(TetherError):
    """Raise from a tool to hand the model an error result with exactly this message.

    Any other exception a tool raises is reported to the model too, with its type name;
    ``ToolError`` is for errors whose text is written for the model to act on.
    """


class ToolTimeoutError(ToolError):
    """A tool ran longer than its timeout and was cancelled."""


class UnknownToolError(ToolError):
    """A tool name was not found among the agent's tools."""


class InvalidToolArguments(ToolError):
    """A tool call's arguments were refused before schema validation (see
    :mod:`tether.arguments`); the message says what was wrong, for the model."""


class ToolDenied(ToolError):
    """A tool call was refused by the approval policy or by the person asked."""


class UnreadableCommand(ToolError):
    """A command line a tool's splitter cannot read with certainty (see
    :class:`tether.subjects.CommandSubject`): approval rules never allow it; the message
    says what could not be read."""


class NeedsHuman(TetherError):
    """Raise from a tool when only a person can unblock the run (an expired credential,
    a missing permission, a decision the model must not take).

    The run ends at once with outcome ``needs_human``; ``user_message`` (the exception's
    text unless given) is meant for the user, not the model. The call still gets an
    ``is_error`` result in the history, so the session stays valid and resumable.
    """

    def __init__(self, message: str, *, user_message: str | None = None) -> None:
        super().__init__(message)
        self.user_message = user_message or message


class OutputValidationError(TetherError):
    """The model's answer did not match the run's ``output_type`` (after the allowed
    retries, when it ends a run). ``errors`` lists each problem."""

    def __init__(self, message: str, *, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = list(errors or [])


class InvalidImageError(TetherError, ValueError):
    """An image cannot enter a session: not base64, not a PNG, JPEG, GIF or WebP image by
    its bytes, or over the size cap (see :mod:`tether.images`)."""


# -- sessions, memory, compaction ---------------------------------------------------------
class SessionError(TetherError):
    """A session could not be read or written."""


class SessionLockedError(SessionError):
    """Another process has the session open for writing."""


class SessionConflictError(SessionError):
    """Another writer changed the session since this one loaded it; nothing was written.

    Stores shared by many workers check a version on every write (optimistic
    concurrency): the write that finds the version moved loses, so two workers never
    interleave one conversation. Reopen the session to see the other writer's messages.
    ``expected`` is the version this writer had, ``actual`` the one it found (``None``
    when the store does not say).
    """

    def __init__(
        self,
        message: str,
        *,
        session: str = "",
        expected: int | None = None,
        actual: int | None = None,
    ) -> None:
        super().__init__(message)
        self.session = session
        self.expected = expected
        self.actual = actual


class SessionBusyError(SessionError):
    """Another run is using this session object right now; runs on one session take turns."""


class SessionTimeoutError(SessionError):
    """A session store did not answer within the time it was given (its own timeout, or
    what was left of the run's wall time); whatever it was doing was abandoned.

    ``store`` names the store (``"postgres"``), ``operation`` what waited (``"append"``,
    ``"connect"``, ...), ``waited`` the seconds it was given.
    """

    def __init__(
        self, message: str, *, store: str = "", operation: str = "", waited: float = 0.0
    ) -> None:
        super().__init__(message)
        self.store = store
        self.operation = operation
        self.waited = waited


class KnowledgeBackendError(TetherError):
    """The knowledge base failed: its backend, its embedder, or what they were given.

    Its old name, ``MemoryBackendError``, still imports (with a ``DeprecationWarning``)
    until tether 1.0."""


class CrossSessionMemoryError(TetherError):
    """Cross-session memory (the user profile and project facts) could not be read or
    written; the old version of the file is kept."""


class MemoryWriteRejected(CrossSessionMemoryError):
    """A write to cross-session memory was refused; the message says why and what to do."""


class CompactionError(TetherError):
    """The history could not be compacted enough to fit the model's context window."""


# -- limits and cancellation --------------------------------------------------------------
class LimitExceeded(TetherError):
    """A run limit ended the run. ``limit`` names it (``max_turns``, ``wall_time``, ...)."""

    limit: str = "limit"


class MaxTurnsExceeded(LimitExceeded):
    limit = "max_turns"


class TokenBudgetExceeded(LimitExceeded):
    limit = "token_budget"


class CostBudgetExceeded(LimitExceeded):
    limit = "cost_budget"


class WallTimeExceeded(LimitExceeded):
    limit = "wall_time"


class SessionDeadlineExceeded(SessionTimeoutError, WallTimeExceeded):
    """A session store was still waiting when the run's wall-time limit passed: a
    :class:`SessionTimeoutError` that ends the run like any :class:`WallTimeExceeded`."""

    limit = "wall_time"


class LoopDetected(LimitExceeded):
    """The model repeated the same failing tool call too many times."""

    limit = "loop"


class DepthExceeded(LimitExceeded):
    """Agents calling agents (a run inside a tool inside a run ...) nested deeper than
    allowed; see :mod:`tether.depth`. ``depth`` is the refused run's depth."""

    limit = "depth"

    def __init__(
        self, message: str, *, depth: int | None = None, max_depth: int | None = None
    ) -> None:
        super().__init__(message)
        self.depth = depth
        self.max_depth = max_depth


class RunCancelled(TetherError):
    """The run was cancelled through its :class:`~tether.CancelToken`."""


def _rebuild_error(
    cls: type[TetherError], args: tuple[Any, ...], state: dict[str, Any]
) -> TetherError:
    """Unpickle a :class:`TetherError` without calling its ``__init__`` (whose keyword
    arguments the pickled ``args`` do not carry)."""
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


# -- HTTP status → provider error ---------------------------------------------------------
_BY_STATUS: dict[int, type[ProviderError]] = {
    401: AuthenticationError,
    402: PermissionDeniedError,
    403: PermissionDeniedError,
    404: InvalidRequestError,
    408: ProviderTimeoutError,
    413: InvalidRequestError,
    429: RateLimitError,
    503: OverloadedError,
    504: ProviderTimeoutError,
    529: OverloadedError,
}

_WHAT: dict[type[ProviderError], str] = {
    AuthenticationError: "rejected the API key",
    PermissionDeniedError: "refused this request",
    InvalidRequestError: "rejected the request",
    ProviderTimeoutError: "timed out",
    RateLimitError: "rate limit reached",
    OverloadedError: "is overloaded",
    ServerError: "failed",
}


def error_class_for_status(status: int) -> type[ProviderError]:
    """The error class for an HTTP error ``status`` from a model API: 401 authentication,
    402/403 permission, 408/504 timeout, 429 rate limit, 503/529 overloaded, other 5xx
    server error (these four retryable), anything else an invalid request."""
    found = _BY_STATUS.get(status)
    if found is not None:
        return found
    return ServerError if status >= 500 else InvalidRequestError


def error_for_status(
    status: int,
    detail: str,
    *,
    provider: str,
    label: str | None = None,
    where: str | None = None,
    retry_after: float | None = None,
    hints: dict[type[ProviderError], str] | None = None,
    endpoint: str | None = None,
) -> ProviderError:
    """The :class:`ProviderError` for an HTTP error ``status`` (the one ladder every
    provider plugin shares; vendor quirks such as error types inside a ``200`` stream are
    mapped to a status by the plugin first).

    The message reads ``<label> <what happened> (<where>): <detail>. <hint>``: ``label``
    names the API (default: ``provider``), ``where`` defaults to ``HTTP <status>``,
    ``detail`` is the API's own message, and ``hints`` gives per error class what the
    user can do (which key variable to check, which command lists the models).
    ``retry_after`` (seconds) is kept on a :class:`RateLimitError`. ``endpoint`` (from
    :func:`endpoint_of`) names the request that failed: ``... (HTTP 400) at POST
    https://host/v1/messages: <detail>``, so a failure behind a proxy or a compatible
    server says which URL answered.
    """
    kind = error_class_for_status(status)
    at = f" at {endpoint}" if endpoint else ""
    message = f"{label or provider} {_WHAT[kind]} ({where or f'HTTP {status}'}){at}: {detail}"
    hint = (hints or {}).get(kind)
    if hint:
        message = f"{message.rstrip('.')}. {hint}"
    if kind is RateLimitError:
        return RateLimitError(
            message, retry_after=retry_after, provider=provider, status_code=status
        )
    return kind(message, provider=provider, status_code=status)


def endpoint_of(response: object) -> str | None:
    """``"POST https://host/v1/messages"`` for an HTTP response (or request) of httpx,
    httpx2 or aiohttp, found by duck typing; ``None`` when it does not say.

    The query string and any user name or password in the URL are left out: they are
    where credentials travel (``?key=...``), and the path is what names the endpoint.
    """
    from urllib.parse import urlsplit, urlunsplit

    try:
        request = getattr(response, "request", None)
        source = request if getattr(request, "url", None) is not None else response
        method, url = getattr(source, "method", None), getattr(source, "url", None)
    except RuntimeError:  # an httpx response built without its request
        return None
    if not isinstance(method, str) or url is None:
        return None
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return f"{method} {urlunsplit((parts.scheme, netloc, parts.path, '', ''))}"


_RENAMED = {"MemoryBackendError": "KnowledgeBackendError"}


def __getattr__(name: str) -> Any:
    from .renamed import renamed

    return renamed(__name__, name, _RENAMED)
