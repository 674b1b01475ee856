"""Secret scrubbing: registered keys, secret environment variables (values and the secret
parts of URLs), known credential shapes; JSON stays valid; log records and tracebacks
are scrubbed; errors never carry a key."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from tether.errors import AuthenticationError
from tether.scrub import (
    SecretFilter,
    format_exception,
    register_secret,
    register_url_secrets,
    scrub,
    secret_environment,
)


def secret() -> str:
    return f"s3cr3t{uuid.uuid4().hex}"


@pytest.mark.parametrize(
    "credential",
    [
        "sk-ant-api03-" + "A1b2" * 12,
        "sk-proj-" + "Zz9_" * 10,
        "AIzaSy" + "B" * 33,
        "ghp_" + "a1" * 18,
        "github_pat_" + "11AB" * 10,
        "xoxb-1234567890-abcdefghij",
        "hf_" + "Q" * 34,
        "AKIAIOSFODNN7EXAMPLE",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----",
    ],
)
def test_known_credential_shapes_are_scrubbed(credential: str) -> None:
    assert scrub(f"found {credential} here") == "found *** here"


def test_prefixes_are_kept_and_the_secret_part_removed() -> None:
    text = (
        "Authorization: Bearer abcdefgh12345678 x-api-key: qwertyuiop123 "
        "https://user:hunter2hunter2@host/v1?api_key=abc12345&page=2"
    )
    assert scrub(text) == (
        "Authorization: Bearer *** x-api-key: *** https://user:***@host/v1?api_key=***&page=2"
    )


def test_registered_and_environment_secrets_are_scrubbed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mine, env_value, url_token = secret(), secret(), secret()
    register_secret(mine)
    register_secret("short")  # too short to be told from ordinary words: ignored
    monkeypatch.setenv("ACME_API_KEY", env_value)
    monkeypatch.setenv("ACME_BASE_URL", f"https://gw:{url_token}@gateway.example/v1")
    found = secret_environment()
    assert found["ACME_API_KEY"] == env_value and url_token in found.values()
    text = f"{mine} {env_value} {url_token} short"
    assert scrub(text) == "*** *** *** short"


def test_url_secrets_can_be_registered_before_they_are_seen() -> None:
    token = secret()
    register_url_secrets(f"https://gateway.example/v1?key={token}&region=eu")
    assert scrub(f"the token {token} leaked") == "the token *** leaked"


def test_scrubbed_json_stays_valid() -> None:
    key = secret()
    register_secret(key)
    line = json.dumps(
        {
            "text": f'key={key} "quoted" Bearer abcdefghijkl',
            "url": "https://a:b12345678@h/?token=x1",
        }
    )
    decoded = json.loads(scrub(line))
    assert key not in json.dumps(decoded) and decoded["url"] == "https://a:***@h/?token=***"


def test_errors_and_their_tracebacks_hide_keys() -> None:
    key = secret()
    register_secret(key)
    try:
        try:
            raise ValueError(f"upstream said: bad key {key}")
        except ValueError as cause:
            raise AuthenticationError(f"Rejected {key}.", provider="acme") from cause
    except AuthenticationError as exc:
        assert str(exc) == "Rejected ***."
        rendered = format_exception(exc)
    assert "ValueError: upstream said: bad key ***" in rendered and key not in rendered


def test_the_log_filter_scrubs_messages_arguments_and_tracebacks() -> None:
    key = secret()
    register_secret(key)
    record = logging.LogRecord("acme", logging.ERROR, __file__, 1, "key %s failed", (key,), None)
    try:
        raise RuntimeError(key)
    except RuntimeError as exc:
        record.exc_info = (type(exc), exc, exc.__traceback__)
    SecretFilter().filter(record)
    formatted = logging.Formatter().format(record)
    assert "key *** failed" in formatted and "RuntimeError: ***" in formatted
    assert key not in formatted
