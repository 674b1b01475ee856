"""The ``runlog`` plugin: registers the run log as the event observer named ``runlog``.

Denied like any plugin (``TETHER_PLUGINS_DENY=runlog``), nothing is recorded.
"""

from __future__ import annotations

from tether import hookimpl
from tether.registry import ObserverRegistrar

from . import recorder_for


@hookimpl
def register_observers(observers: ObserverRegistrar) -> None:
    observers.add("runlog", recorder_for, configure=True)
