"""tether-redis: sessions in Redis, shared by any number of workers.

Registers the ``redis`` session store::

    [sessions]
    store = "redis"
    settings = { url_env = "TETHER_REDIS_URL", prefix = "myapp:" }
"""

from __future__ import annotations

from tether import hookimpl
from tether.registry import SessionStoreRegistrar

from .store import RedisSessionStore

__all__ = ["RedisSessionStore"]


@hookimpl
def register_session_stores(stores: SessionStoreRegistrar) -> None:
    stores.add("redis", RedisSessionStore)
