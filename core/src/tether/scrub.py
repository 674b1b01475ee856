"""Keeping credentials out of everything tether shows or writes.

:func:`scrub` replaces, in any text, every secret tether knows of with ``***``:

- values passed to :func:`register_secret` (providers register the API key they
  resolve, and the secret parts of a ``base_url``: a password in ``user:pass@`` and
  values of query parameters such as ``key=``);
- the values of the process's secret environment variables: names ending in
  ``API_KEY``, ``_KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``CREDENTIALS``
  or ``_AUTH`` (values shorter than 8 characters are ignored);
- anything shaped like a known credential even if tether never saw it: OpenAI and
  Anthropic keys (``sk-...``), Google API keys (``AIza...``), GitHub, Slack and Hugging
  Face tokens, AWS access key ids, JWTs, PEM private keys, ``Bearer`` tokens,
  passwords in URLs and secret-looking query parameters.

It is applied to every :class:`~tether.errors.TetherError` message, to log records once
:func:`install_log_scrubbing` ran (``Agent`` and the CLI call it), to tool output before
the model or the session sees it, to session lines as they are written, and to the CLI's
output, ``--json`` events and ``--debug`` tracebacks (chained causes included).
Replacements never break JSON: no pattern matches a quote or a backslash.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import traceback
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = [
    "REDACTED",
    "SecretFilter",
    "format_exception",
    "install_log_scrubbing",
    "known_secrets",
    "register_secret",
    "register_url_secrets",
    "scrub",
    "secret_environment",
    "url_secrets",
]

REDACTED = "***"
MIN_SECRET_LENGTH = 8

_SECRET_NAME = re.compile(
    r"(?:API_?KEY|_KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|_AUTH)$", re.IGNORECASE
)
_SECRET_PARAMS = (
    "key|api_key|apikey|api-key|access_token|accesstoken|token|auth|secret|password|passwd"
    "|sig|signature|client_secret|x-goog-api-key"
)
# (markers, pattern): a pattern runs only on text that contains one of its markers, so
# scrubbing ordinary text costs a few substring searches, not a regex scan per pattern.
_SHAPES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (markers, re.compile(pattern))
    for markers, pattern in (
        (
            ("PRIVATE KEY-----",),
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        ),
        (("sk-",), r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),
        (("_live_", "_test_"), r"\b(?:rk|pk|sk)_(?:live|test)_[A-Za-z0-9]{16,}"),
        (("AIza",), r"\bAIza[0-9A-Za-z_\-]{30,}"),
        (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
        (("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{30,}"),
        (("glpat-",), r"\bglpat-[A-Za-z0-9_\-]{20,}"),
        (("xox",), r"\bxox[abeprs]-[A-Za-z0-9\-]{10,}"),
        (("hf_",), r"\bhf_[A-Za-z0-9]{30,}"),
        (("AKIA", "ASIA"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        (("eyJ",), r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    )
)
# Keep the prefix (group 1), replace the secret part that follows it. Markers are
# matched against the lower-cased text.
_PREFIXED: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (markers, re.compile(pattern, re.IGNORECASE))
    for markers, pattern in (
        (("bearer", "basic"), r"((?:bearer|basic)\s+)[A-Za-z0-9_\-.~+/=]{8,}"),
        (("://",), r"(://[^\s/:@\"'\\]+:)[^\s/@\"'\\]+(?=@)"),
        (
            ("key=", "token=", "auth=", "secret=", "passwd=", "password=", "sig=", "signature="),
            rf"([?&;](?:{_SECRET_PARAMS})=)[^&\s#\"'\\]+",
        ),
        (
            ("api-key", "authorization"),
            r"((?:x-api-key|api-key|x-goog-api-key|authorization)[\"']?\s*[:=]\s*[\"']?)"
            r"[^\s\"'\\,}]{8,}",
        ),
    )
)

_lock = threading.Lock()
_registered: set[str] = set()
_cache: tuple[tuple[int, object], tuple[frozenset[str], tuple[str, ...]]] = (
    (-1, None),
    (frozenset(), ()),
)


def register_secret(value: str | None) -> None:
    """Remember ``value`` as a secret: from now on :func:`scrub` removes it everywhere.

    Values shorter than 8 characters are ignored (they would redact ordinary words).
    Process-wide and never forgotten: a key that was used once stays secret.
    """
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)
            unquoted = unquote(value)
            if unquoted != value and len(unquoted) >= MIN_SECRET_LENGTH:
                _registered.add(unquoted)


def register_url_secrets(url: str | None) -> None:
    """Register the secret parts of a URL: the password (or a lone user name, which
    gateways use as a token) and the values of secret-looking query parameters."""
    for value in url_secrets(url):
        register_secret(value)


def url_secrets(url: str | None) -> list[str]:
    """The secret parts of ``url`` (see :func:`register_url_secrets`)."""
    if not url or ("@" not in url and "=" not in url):
        return []
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
        query = parse_qsl(parts.query, keep_blank_values=False)
    except ValueError:
        return []
    found = [password] if password else ([username] if username else [])
    names = set(_SECRET_PARAMS.split("|"))
    found.extend(value for name, value in query if name.lower() in names)
    return [value for value in found if len(value) >= MIN_SECRET_LENGTH]


def secret_environment(environ: Iterable[tuple[str, str]] | None = None) -> dict[str, str]:
    """The secret values of ``environ`` (default: ``os.environ``) by variable name: the
    values of secret-looking variables, and the secret parts of URLs in ``*_URL``
    variables (``OPENAI_BASE_URL=https://user:token@gateway``)."""
    items = os.environ.items() if environ is None else environ
    found: dict[str, str] = {}
    for name, value in items:
        if len(value) < MIN_SECRET_LENGTH:
            continue
        if _SECRET_NAME.search(name):
            found[name] = value
        elif name.upper().endswith("URL"):
            for index, part in enumerate(url_secrets(value)):
                found[f"{name}#{index}"] = part
    return found


def known_secrets() -> frozenset[str]:
    """Every literal value :func:`scrub` removes: registered secrets and the values of
    secret environment variables, as of now."""
    return _literals()[0]


def scrub(text: str) -> str:
    """``text`` with every known secret and credential-shaped string replaced by ``***``."""
    if len(text) < MIN_SECRET_LENGTH:  # shorter than any secret or credential shape
        return text
    for secret in _literals()[1]:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for markers, pattern in _SHAPES:
        for marker in markers:
            if marker in text:
                text = pattern.sub(REDACTED, text)
                break
    lowered = text.lower()
    for markers, pattern in _PREFIXED:
        for marker in markers:
            if marker in lowered:
                text = pattern.sub(_keep_prefix, text)
                break
    return text


def format_exception(exc: BaseException) -> str:
    """The full traceback of ``exc`` (chained causes included), scrubbed."""
    return scrub("".join(traceback.format_exception(exc)))


class SecretFilter(logging.Filter):
    """A logging filter that scrubs a record's message, arguments and traceback.

    Add it to a handler to protect records that reach it; :func:`install_log_scrubbing`
    protects every record of the process instead.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        scrub_record(record)
        return True


def scrub_record(record: logging.LogRecord) -> logging.LogRecord:
    """Scrub ``record`` in place: its message is rendered (with its arguments) and
    scrubbed, and its traceback, if any, is rendered and scrubbed."""
    if getattr(record, "_tether_scrubbed", False):
        return record
    try:
        message = record.getMessage()
    except Exception:  # a broken format string: keep what logging would show
        message = f"{record.msg!r} % {record.args!r}"
    record.msg = scrub(message)
    record.args = None
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        record.exc_text = format_exception(record.exc_info[1]).rstrip("\n")
    elif record.exc_text:
        record.exc_text = scrub(record.exc_text)
    if record.stack_info:
        record.stack_info = scrub(record.stack_info)
    record._tether_scrubbed = True
    return record


_installed = False


def install_log_scrubbing() -> None:
    """Scrub every log record created in this process from now on, whichever logger and
    handler it goes to (it wraps the log-record factory). Idempotent."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return scrub_record(previous(*args, **kwargs))

    logging.setLogRecordFactory(factory)


# -- internals ---------------------------------------------------------------------------
def _keep_prefix(match: re.Match[str]) -> str:
    prefix = next(group for group in match.groups() if group is not None)
    return prefix + REDACTED


def _environment_snapshot() -> object:
    """Something equal to the last snapshot exactly when the environment is unchanged;
    cheap (CPython keeps the raw environment in a dict that compares in C)."""
    raw = getattr(os.environ, "_data", None)
    return dict(raw) if isinstance(raw, dict) else tuple(os.environ.items())


def _literals() -> tuple[frozenset[str], tuple[str, ...]]:
    """The known secrets, as a set and longest first; recomputed only when the registry
    or the environment changed since the last call."""
    global _cache
    raw = getattr(os.environ, "_data", None)
    registered_count = len(_registered)
    (count, snapshot), cached = _cache
    if count == registered_count and (raw == snapshot if isinstance(raw, dict) else False):
        return cached
    snapshot = _environment_snapshot()
    with _lock:
        registered = frozenset(_registered)
    secrets = registered | frozenset(secret_environment().values())
    value = (secrets, tuple(sorted(secrets, key=len, reverse=True)))
    _cache = ((len(registered), snapshot), value)
    return value
