"""Fixtures shared by the cross-package tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.messages import new_id


@pytest.fixture
def session_store_section(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[str], dict[str, Any]]]:
    """Makes the ``[sessions]`` section for a shared store: ``"sqlite"`` (a file in
    ``tmp_path``), ``"postgres"`` (the test module's ``postgres_dsn`` fixture) or
    ``"redis"`` (a prefix of its own, whose keys are deleted after the test)."""
    prefixes: list[str] = []

    def section(name: str) -> dict[str, Any]:
        if name == "sqlite":
            return {"store": "sqlite", "settings": {"path": str(tmp_path / "sessions.sqlite3")}}
        if name == "postgres":
            return {
                "store": "postgres",
                "settings": {"dsn": request.getfixturevalue("postgres_dsn")},
            }
        prefix = f"tether-test-{new_id()[:10]}:"
        prefixes.append(prefix)
        return {"store": "redis", "settings": {"prefix": prefix}}

    yield section
    if prefixes:
        import redis

        client = redis.Redis()
        for prefix in prefixes:
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)
        client.close()
