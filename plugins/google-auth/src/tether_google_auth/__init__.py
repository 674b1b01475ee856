"""Google Cloud credentials for tether's Vertex AI providers: Application Default
Credentials, project, location.

A library, not a plugin: it registers nothing. Importing it loads no google-auth; that is
imported when credentials are first loaded.

Credentials are Application Default Credentials (ADC), found by google-auth in its usual
order: the file named by ``GOOGLE_APPLICATION_CREDENTIALS`` (a service-account key, or
any ADC file), then the file ``gcloud auth application-default login`` writes, then the
metadata server of the Google Cloud machine the process runs on. The access token they
mint is short-lived; the SDK checks it before every request and refreshes it when it is
near expiry (google-auth treats a token as expired a few minutes early), so a run longer
than a token's life goes on without a failed request.

The project is ``project`` of ``[providers.vertex]``, else ``GOOGLE_CLOUD_PROJECT``, else
the project the credentials belong to; the location is ``location`` of
``[providers.vertex]``, else ``GOOGLE_CLOUD_LOCATION``, else ``CLOUD_ML_REGION``, else
``global``. No error names a token or a key: only where the credentials came from.

Both Vertex AI families use this module: tether-google for ``vertex/gemini-*`` and
tether-anthropic for ``vertex/claude-*``, so one ``[providers.vertex]`` table and one set of
credentials serve both, resolved the same way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.errors import (
    AuthenticationError,
    ConfigError,
    ProviderConnectionError,
    ProviderError,
)
from tether.install_hints import clone_install
from tether.scrub import register_secret, scrub

if TYPE_CHECKING:
    from tether.config import ProviderConfig

__all__ = [
    "DEFAULT_LOCATION",
    "LOCATION_VARIABLES",
    "PROJECT_VARIABLE",
    "VertexAccount",
    "credential_source",
    "denied_hint",
    "load_account",
    "register_tokens",
    "rejected_hint",
    "setting",
    "translate_auth_error",
]

PROVIDER = "vertex"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
PROJECT_VARIABLE = "GOOGLE_CLOUD_PROJECT"
LOCATION_VARIABLES = ("GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION")
DEFAULT_LOCATION = "global"
LOGIN = (
    "Run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS "
    "to a service-account key file"
)


@dataclass(frozen=True, slots=True)
class VertexAccount:
    """Where requests go and what signs them. ``repr`` shows no token."""

    credentials: Any
    project: str
    location: str
    source: str

    def __repr__(self) -> str:
        return f"VertexAccount(project={self.project!r}, location={self.location!r})"


def credential_source() -> str:
    """Which credentials google-auth uses, for messages (the file's path is left out:
    the scrubber treats it as a secret)."""
    if os.environ.get("GOOGLE_APPLICATION_CREDENTIALS", "").strip():
        return "the credentials file named by GOOGLE_APPLICATION_CREDENTIALS"
    return (
        "the Application Default Credentials (from `gcloud auth application-default "
        "login` or the metadata server)"
    )


def load_account(config: ProviderConfig, *, install: str = "tether-google-auth") -> VertexAccount:
    """The credentials, project and location per the module docstring; sends nothing
    unless the only credentials are a metadata server's.

    Raises ``AuthenticationError`` naming what to set when no credentials or no project
    are found, and ``ConfigError`` telling to ``pip install`` the requirement ``install``
    (the caller's distribution, with its extra) when google-auth is not installed.
    """
    try:
        import google.auth
        from google.auth import exceptions
    except ImportError as exc:
        raise ConfigError(
            f"Vertex AI needs google-auth, which is not installed: `{clone_install(install)}` "
            "(in a clone of tether)."
        ) from exc
    try:
        credentials, adc_project = google.auth.default(scopes=[SCOPE])
    except exceptions.DefaultCredentialsError as exc:
        raise AuthenticationError(
            f"No Google Cloud credentials found for Vertex AI ({_reason(exc)}). {LOGIN}.",
            provider=PROVIDER,
        ) from exc
    project = setting(config, "project", (PROJECT_VARIABLE,)) or adc_project
    if not project:
        raise AuthenticationError(
            "No Google Cloud project for Vertex AI: set `project` in [providers.vertex] of "
            f"tether.toml or the {PROJECT_VARIABLE} environment variable (the credentials "
            "name none).",
            provider=PROVIDER,
        )
    location = setting(config, "location", LOCATION_VARIABLES) or DEFAULT_LOCATION
    return VertexAccount(register_tokens(credentials), str(project), location, credential_source())


def register_tokens(credentials: Any) -> Any:
    """``credentials``, each access token of which is registered as a secret
    (:func:`tether.scrub.register_secret`) when minted, so that anything quoting one, a
    debug log included, is scrubbed. The SDKs refresh through ``credentials.refresh``."""
    refresh = credentials.refresh

    def refresh_and_register(request: Any) -> None:
        refresh(request)
        register_secret(credentials.token)

    credentials.refresh = refresh_and_register
    register_secret(credentials.token)
    return credentials


def translate_auth_error(exc: BaseException) -> ProviderError | None:
    """The tether error for a google-auth failure while refreshing a token mid-run, or
    ``None`` for any other exception (google-auth not installed included)."""
    try:
        from google.auth import exceptions
    except ImportError:
        return None

    if isinstance(exc, exceptions.TransportError):
        return ProviderConnectionError(
            f"Could not reach Google's token endpoint to refresh the access token of "
            f"{credential_source()}: {_reason(exc)}.",
            provider=PROVIDER,
        )
    if isinstance(exc, exceptions.GoogleAuthError):
        return AuthenticationError(
            f"Google refused to refresh the access token of {credential_source()}: "
            f"{_reason(exc)}. {LOGIN}.",
            provider=PROVIDER,
        )
    return None


def rejected_hint(account: VertexAccount | None) -> str:
    """What to do when Vertex AI answers 401 (the token of these credentials was refused)."""
    return f"Vertex AI rejected the access token of {credential_source()}. {LOGIN}."


def denied_hint(account: VertexAccount | None) -> str:
    """What to do when Vertex AI answers 403."""
    where = f" in project {account.project} ({account.location})" if account else ""
    return (
        f"{credential_source()[0].upper()}{credential_source()[1:]} may not use this model"
        f"{where}: enable the Vertex AI API, grant the Vertex AI User role "
        "(roles/aiplatform.user), and enable the model in Model Garden."
    )


def setting(config: ProviderConfig, key: str, variables: tuple[str, ...]) -> str | None:
    """``key`` of the provider's section, else the first of ``variables`` that is set."""
    value = config.extra.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    for variable in variables:
        found = os.environ.get(variable, "").strip()
        if found:
            return found
    return None


def _reason(exc: BaseException, limit: int = 300) -> str:
    text = scrub(str(exc).strip() or type(exc).__name__)
    return text if len(text) <= limit else text[: limit - 1] + "…"
