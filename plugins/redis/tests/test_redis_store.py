"""The session-store contract against the real Redis server, under a key prefix of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import redis.asyncio

from tether.errors import ConfigError, SessionError
from tether.messages import new_id
from tether_redis import RedisSessionStore
from tether_testing import SessionStoreContract

URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(scope="module")
def prefix() -> Iterator[str]:
    prefix = f"tether-test-{new_id()[:10]}:"
    yield prefix
    client = redis.Redis.from_url(URL)
    leftover = list(client.scan_iter(match=f"{prefix}*"))
    if leftover:
        client.delete(*leftover)
    client.close()
    assert leftover == [], "the tests left keys behind"


class TestRedisStore(SessionStoreContract):
    exclusive_open = True  # the writer lease

    @pytest.fixture
    def store_factory(self, prefix: str) -> Callable[[], RedisSessionStore]:
        return lambda: RedisSessionStore(URL, prefix=prefix)

    async def store_raw_line(self, store: Any, name: str, line: str) -> bool:
        client = redis.asyncio.Redis.from_url(URL)
        await client.rpush(store.io.keys(name)[1], line)
        await client.aclose()
        return True


def test_the_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_REDIS", "redis://127.0.0.1:6379/3")
    store = RedisSessionStore(url_env="MY_REDIS")
    assert store.io._url == "redis://127.0.0.1:6379/3"  # type: ignore[attr-defined]


def test_a_prefix_with_glob_characters_is_refused() -> None:
    with pytest.raises(ConfigError, match="prefix"):
        RedisSessionStore(URL, prefix="a*b")


def test_an_unreachable_server_is_a_session_error_without_the_password() -> None:
    async def main() -> None:
        store = RedisSessionStore("redis://:hunter2@127.0.0.1:1/0")
        try:
            with pytest.raises(SessionError) as caught:
                await store.open("x")
            assert "hunter2" not in str(caught.value)
        finally:
            await store.aclose()

    asyncio.run(main())
