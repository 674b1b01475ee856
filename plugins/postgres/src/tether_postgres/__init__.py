"""tether-postgres: sessions in PostgreSQL, shared by any number of workers.

Registers the ``postgres`` session store::

    [sessions]
    store = "postgres"
    settings = { dsn_env = "TETHER_POSTGRES_DSN" }   # or dsn = "postgresql://..."
"""

from __future__ import annotations

from tether import hookimpl
from tether.registry import SessionStoreRegistrar

from .store import PostgresSessionStore

__all__ = ["PostgresSessionStore"]


@hookimpl
def register_session_stores(stores: SessionStoreRegistrar) -> None:
    stores.add("postgres", PostgresSessionStore)
