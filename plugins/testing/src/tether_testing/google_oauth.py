"""A Google OAuth 2.0 token endpoint on loopback, for testing Google Cloud credentials.

:class:`FakeGoogleOAuth` answers the JWT-bearer grant that google-auth sends for a
service-account key file, with the real JSON response, so google-auth's own signing,
refresh and expiry logic runs. :meth:`FakeGoogleOAuth.write_adc` writes such a file (with
an RSA key made for the test) whose ``token_uri`` points at the fake; set
``GOOGLE_APPLICATION_CREDENTIALS`` to it::

    with FakeGoogleOAuth(expires_in=3600) as oauth:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(oauth.write_adc(tmp_path)))
        ...  # every token handed out is in oauth.tokens, in order

The fake checks each assertion's signature against the key it wrote. Tokens contain
``CANARY`` and a random part, so a test can assert that none of
:attr:`FakeGoogleOAuth.secrets` leaks into an error, an event or a log. Needs
``cryptography`` (a dependency of google-auth). :class:`GoogleAuthClock` moves the clock
google-auth reads forward, to play a run longer than a token's life in no time.
"""

from __future__ import annotations

import base64
import datetime
import json
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from .http import FakeResponse, FakeServer, RecordedRequest

__all__ = ["FakeGoogleOAuth", "GoogleAuthClock", "no_google_credentials"]


class FakeGoogleOAuth(FakeServer):
    """Hands out a new access token for every correctly signed ``POST /token`` grant.

    :param expires_in: the ``expires_in`` of each token, in seconds.
    """

    def __init__(self, *, expires_in: int = 3600) -> None:
        super().__init__(self._token)
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.expires_in = expires_in
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.client_email = "tether-test@fake-project.iam.gserviceaccount.com"
        self.tokens: list[str] = []
        self.scopes: list[str] = []
        """The ``scope`` claim of each grant."""
        self.reject = False
        """When true, the grant is refused (``invalid_grant``), as for a deleted key."""

    @property
    def token_uri(self) -> str:
        return f"{self.url}/token"

    @property
    def private_key_pem(self) -> str:
        from cryptography.hazmat.primitives import serialization

        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()

    @property
    def secrets(self) -> list[str]:
        """What must never leak: every token handed out and the body of the private key."""
        return [*self.tokens, self.private_key_pem.splitlines()[1]]

    def write_adc(self, directory: Path, *, project_id: str | None = None) -> Path:
        """A service-account key file whose ``token_uri`` is this server (with
        ``project_id`` when given, the project google-auth then reports)."""
        info = {
            "type": "service_account",
            "client_email": self.client_email,
            "client_id": "1234567890",
            "private_key_id": secrets.token_hex(20),
            "private_key": self.private_key_pem,
            "token_uri": self.token_uri,
        }
        if project_id is not None:
            info["project_id"] = project_id
        path = Path(directory) / "service-account.json"
        path.write_text(json.dumps(info))
        return path

    def use_adc(self, directory: Path, monkeypatch: Any, *, unset: Sequence[str] = ()) -> Path:
        """Make the key file of :meth:`write_adc` the application default credentials:
        ``GOOGLE_APPLICATION_CREDENTIALS`` names it, gcloud's configuration is a folder
        of ``directory`` with no login in it, and ``GOOGLE_CLOUD_PROJECT``,
        ``GOOGLE_CLOUD_LOCATION``, ``CLOUD_ML_REGION`` and the variables in ``unset`` are
        cleared. Set through ``monkeypatch`` (a ``pytest.MonkeyPatch``), so undone after
        the test."""
        path = self.write_adc(directory)
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
        for variable in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"):
            monkeypatch.delenv(variable, raising=False)
        for variable in unset:
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("CLOUDSDK_CONFIG", str(Path(directory) / "gcloud"))
        return path

    def _claims(self, assertion: str) -> dict[str, Any] | None:
        """The claims of a JWT signed by the key, or ``None`` for a bad signature."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            header, payload, signature = assertion.split(".")
            self._key.public_key().verify(
                _unb64(signature),
                f"{header}.{payload}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
            claims: dict[str, Any] = json.loads(_unb64(payload))
        except (ValueError, InvalidSignature):
            return None
        return claims

    def _token(self, request: RecordedRequest) -> FakeResponse:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if request.path != "/token" or form.get("grant_type") != JWT_BEARER:
            return FakeResponse.json({"error": "unsupported_grant_type"}, status=400)
        claims = self._claims(form.get("assertion", ""))
        if (
            self.reject
            or claims is None
            or claims.get("aud") not in (self.token_uri, GOOGLE_TOKEN_URI)
        ):
            return FakeResponse.json(
                {"error": "invalid_grant", "error_description": "Invalid JWT Signature."},
                status=400,
            )
        self.scopes.append(str(claims.get("scope", "")))
        token = f"ya29.CANARY-{len(self.tokens) + 1}-{secrets.token_hex(12)}"
        self.tokens.append(token)
        return FakeResponse.json(
            {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}
        )


class GoogleAuthClock:
    """google-auth's clock, moved forward on demand (a long run in no time). Patched
    through ``monkeypatch`` (a ``pytest.MonkeyPatch``), so it is undone after the test."""

    def __init__(self, monkeypatch: Any) -> None:
        from google.auth import _helpers

        self.offset = datetime.timedelta()
        real: Callable[[], datetime.datetime] = _helpers.utcnow
        monkeypatch.setattr(_helpers, "utcnow", lambda: real() + self.offset)

    def advance(self, seconds: float) -> None:
        self.offset += datetime.timedelta(seconds=seconds)

    def long_job(self, seconds: float = 3600) -> Any:
        """A tool ``long_job(step: int)`` each call of which lasts ``seconds`` on this clock
        and answers ``"step <step> done"``: a run that outlives a token in no time."""
        from tether.tools import tool

        def long_job(step: int) -> str:
            """A job that runs for an hour."""
            self.advance(seconds)
            return f"step {step} done"

        return tool(long_job)


def no_google_credentials(directory: Path, monkeypatch: Any) -> None:
    """As on a machine with no Google login: no ``GOOGLE_APPLICATION_CREDENTIALS``, an
    empty gcloud configuration in ``directory`` and no probe for the metadata server of
    a Google Cloud machine. Set through ``monkeypatch``, so undone after the test."""
    from google.auth.compute_engine import _metadata

    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(Path(directory) / "empty-gcloud"))
    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)


JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"
"""The audience google-auth signs for, whatever the file's ``token_uri``."""


def _unb64(value: str) -> bytes:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
