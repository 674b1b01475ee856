"""The environment a command runs with: built explicitly, never by mutating ``os.environ``.

Variables whose names look like secrets (``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
``*PASSWORD*``, ``AWS_*``, ...) are not inherited from the harness process unless a
``env_allow`` glob names them. Variables the application passes (``Agent(env=...)``) and
the ``env`` table of the shell settings are passed as given: someone chose them.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping, Sequence

__all__ = ["SECRET_PATTERNS", "child_environment", "is_secret_name"]

SECRET_PATTERNS: tuple[str, ...] = (
    "*KEY*",
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*CREDENTIAL*",
    "*PRIVATE*",
    "*_PASS",
    "*_PAT",
    "*COOKIE*",
    "*SESSION_ID*",
    "*DATABASE_URL*",
    "*_DSN",
    "AWS_*",
    "AZURE_*",
    "GOOGLE_APPLICATION_*",
    "GCP_*",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "KUBECONFIG",
    "VAULT_*",
)
_MINIMAL = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TMPDIR",
    "TZ",
)


def is_secret_name(name: str, extra: Sequence[str] = ()) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p.upper()) for p in (*SECRET_PATTERNS, *extra))


def child_environment(
    *,
    inherit: bool,
    allow: Sequence[str],
    deny: Sequence[str],
    configured: Mapping[str, str],
    explicit: Mapping[str, str],
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The child's variables.

    :param inherit: start from the harness process's environment (minus secrets); when
        False only a minimal set (``PATH``, ``HOME``, locale, ...) is inherited.
    :param allow: globs of secret-looking names that may be inherited anyway.
    :param deny: more globs of names never inherited (they win over ``allow``).
    :param configured: the ``env`` table of the shell settings.
    :param explicit: the variables the application passed to the agent.
    :param base: the environment to inherit from; ``os.environ`` by default (only read).
    """
    source = os.environ if base is None else base
    env: dict[str, str] = {}
    for name, value in source.items():
        if not inherit and name not in _MINIMAL:
            continue
        if any(fnmatch.fnmatchcase(name.upper(), p.upper()) for p in deny):
            continue
        if is_secret_name(name) and not any(
            fnmatch.fnmatchcase(name.upper(), p.upper()) for p in allow
        ):
            continue
        env[name] = value
    env.update(configured)
    env.update(explicit)
    return env
