"""The tether plugin of tether-dbos: the ``tether worker``, ``tether submit`` and ``tether workers`` commands."""

from __future__ import annotations

from tether import hookimpl
from tether.registry import CommandRegistrar


@hookimpl
def register_commands(commands: CommandRegistrar) -> None:
    from .cli import submit, worker, workers

    commands.add(worker)
    commands.add(submit)
    commands.add(workers)
