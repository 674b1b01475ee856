"""Throw-away PostgreSQL databases for tests: created with a unique name, dropped after."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from tether.messages import new_id

__all__ = ["BASE_DSN_ENV", "base_dsn", "temporary_database"]

BASE_DSN_ENV = "TETHER_TEST_POSTGRES"
"""Environment variable naming the server tests may create databases on."""


def base_dsn() -> str:
    """The server tests use: ``$TETHER_TEST_POSTGRES`` or the local default."""
    return os.environ.get(BASE_DSN_ENV, "postgresql://postgres@127.0.0.1:5432/test")


@contextlib.contextmanager
def temporary_database(dsn: str | None = None, *, prefix: str = "tether_test") -> Iterator[str]:
    """Create a database named ``<prefix>_<random>`` on the server of ``dsn``, yield a
    ``postgresql://`` URL for it, and drop it (closing any connection left) afterwards."""
    from urllib.parse import quote

    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    server = dsn or base_dsn()
    name = f"{prefix}_{new_id()[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(server)
    user = quote(str(params.get("user") or "postgres"))
    password = f":{quote(str(params['password']))}" if params.get("password") else ""
    host = params.get("host") or "127.0.0.1"
    port = params.get("port") or 5432
    try:
        yield f"postgresql://{user}{password}@{host}:{port}/{name}"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
