"""tether-google-auth: what the two Vertex AI families share, through the real google-auth
against a loopback Google token endpoint (``FakeGoogleOAuth``), with no network."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tether.config import ProviderConfig
from tether.errors import AuthenticationError, ConfigError, ProviderConnectionError
from tether.scrub import scrub
from tether_google_auth import (
    DEFAULT_LOCATION,
    credential_source,
    denied_hint,
    load_account,
    rejected_hint,
    translate_auth_error,
)
from tether_testing import FakeGoogleOAuth
from tether_testing.google_oauth import no_google_credentials


@pytest.fixture
def google_adc(
    google_oauth: FakeGoogleOAuth, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    return google_oauth.use_adc(tmp_path, monkeypatch)


def with_adc_project(google_adc: Path, project: str) -> None:
    """The key file names ``project``, as a service-account key does."""
    info = json.loads(google_adc.read_text())
    google_adc.write_text(json.dumps({**info, "project_id": project}))


# Each source of the project and the location, from the strongest down: the config
# section, the environment, the credentials (project) or the default (location). The
# key file names the project "from-key-file"; a location given nowhere is "global".
REGION_VARIABLES = {"GOOGLE_CLOUD_LOCATION": "us-east5", "CLOUD_ML_REGION": "europe-west4"}
SOURCES = [
    ("project", {"project": "from-config"}, {"GOOGLE_CLOUD_PROJECT": "from-env"}, "from-config"),
    ("project", {}, {"GOOGLE_CLOUD_PROJECT": "from-env"}, "from-env"),
    ("project", {"project": "  "}, {"GOOGLE_CLOUD_PROJECT": "from-env"}, "from-env"),
    ("project", {}, {}, "from-key-file"),
    ("location", {"location": "asia-east1"}, REGION_VARIABLES, "asia-east1"),
    ("location", {}, REGION_VARIABLES, "us-east5"),
    ("location", {}, {"CLOUD_ML_REGION": "europe-west4"}, "europe-west4"),
    ("location", {}, {}, DEFAULT_LOCATION),
]


@pytest.mark.parametrize(("field", "section", "env", "expected"), SOURCES)
def test_project_and_location_come_from_config_then_environment_then_their_fallback(
    google_adc: Path,
    monkeypatch: pytest.MonkeyPatch,
    field: str,
    section: dict[str, str],
    env: dict[str, str],
    expected: str,
) -> None:
    with_adc_project(google_adc, "from-key-file")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert getattr(load_account(ProviderConfig(**section)), field) == expected


def test_loading_sends_nothing_and_the_repr_shows_no_token(
    google_adc: Path, google_oauth: FakeGoogleOAuth
) -> None:
    account = load_account(ProviderConfig(project="proj-1", location="us-central1"))
    assert google_oauth.requests == []
    assert repr(account) == "VertexAccount(project='proj-1', location='us-central1')"
    assert "GOOGLE_APPLICATION_CREDENTIALS" in account.source


def test_each_minted_token_is_scrubbed_from_anything_that_quotes_it(
    google_adc: Path, google_oauth: FakeGoogleOAuth
) -> None:
    from google.auth.transport.requests import Request

    account = load_account(ProviderConfig(project="p"))
    for _ in range(2):
        account.credentials.refresh(Request())
    assert len(google_oauth.tokens) == 2
    for token in google_oauth.tokens:
        assert token not in scrub(f"debug: Authorization: Bearer {token}")


def test_no_credentials_says_how_to_log_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_google_credentials(tmp_path, monkeypatch)
    with pytest.raises(AuthenticationError, match="gcloud auth application-default login") as info:
        load_account(ProviderConfig(project="p"))
    assert info.value.provider == "vertex"


def test_no_project_names_the_config_key_and_the_variable(google_adc: Path) -> None:
    with pytest.raises(AuthenticationError, match=r"\[providers\.vertex\].*GOOGLE_CLOUD_PROJECT"):
        load_account(ProviderConfig())


def test_without_google_auth_the_error_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "google.auth", None)  # as if not installed
    with pytest.raises(ConfigError, match=r"uv pip install './plugins/google\[extra\]'"):
        load_account(ProviderConfig(project="p"), install="tether-google[extra]")
    assert translate_auth_error(RuntimeError("boom")) is None


def test_a_refused_refresh_becomes_an_authentication_error_without_the_token(
    google_adc: Path, google_oauth: FakeGoogleOAuth
) -> None:
    from google.auth.transport.requests import Request

    account = load_account(ProviderConfig(project="p"))
    account.credentials.refresh(Request())
    google_oauth.reject = True
    with pytest.raises(Exception) as info:
        account.credentials.refresh(Request())
    error = translate_auth_error(info.value)
    assert isinstance(error, AuthenticationError)
    assert "Google refused to refresh" in str(error)
    assert "GOOGLE_APPLICATION_CREDENTIALS" in str(error)
    assert all(secret not in str(error) for secret in google_oauth.secrets)


def test_an_unreachable_token_endpoint_is_a_connection_error(
    google_adc: Path, google_oauth: FakeGoogleOAuth
) -> None:
    from google.auth.transport.requests import Request

    account = load_account(ProviderConfig(project="p"))
    google_oauth.close()
    with pytest.raises(Exception) as info:
        account.credentials.refresh(Request())
    error = translate_auth_error(info.value)
    assert isinstance(error, ProviderConnectionError)
    assert "token endpoint" in str(error)
    assert translate_auth_error(ValueError("not google-auth's")) is None


def test_the_hints_name_the_credentials_and_the_project(google_adc: Path) -> None:
    account = load_account(ProviderConfig(project="proj-9", location="europe-west1"))
    assert credential_source() in rejected_hint(account)
    denied = denied_hint(account)
    assert "in project proj-9 (europe-west1)" in denied
    assert "roles/aiplatform.user" in denied
    assert denied[0].isupper()
    assert " in project " not in denied_hint(None)


def test_importing_loads_no_google_auth() -> None:
    code = "import sys, tether_google_auth; print('google.auth' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "False"
