"""tether-dbos: durable tether runs on DBOS Transact.

The agent loop runs as a DBOS workflow in which every model request, every tool call and
every session write is a checkpointed step, so a worker that dies mid-run is replaced by
one that resumes from the last completed step. ``tether worker`` processes pull runs from
DBOS queues on a shared PostgreSQL database; ``tether submit`` and :class:`DurableRuns`
enqueue them and return a :class:`RunHandle`.

Importing this package does not import DBOS; its names load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import DurableRuns, RunHandle
    from .engine import start_worker, stop_worker
    from .settings import DbosSettings, ProviderLimits
    from .spec import RunSpec
    from .takeover import TakeoverError, WorkerStatus

__all__ = [
    "DbosSettings",
    "DurableRuns",
    "ProviderLimits",
    "RunHandle",
    "RunSpec",
    "TakeoverError",
    "WorkerStatus",
    "start_worker",
    "stop_worker",
]

_WHERE = {
    "DurableRuns": "client",
    "RunHandle": "client",
    "start_worker": "engine",
    "stop_worker": "engine",
    "DbosSettings": "settings",
    "ProviderLimits": "settings",
    "RunSpec": "spec",
    "TakeoverError": "takeover",
    "WorkerStatus": "takeover",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'tether_dbos' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
