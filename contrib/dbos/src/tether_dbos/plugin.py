"""The tether plugin of tether-dbos: the ``tether worker`` and ``tether submit`` commands."""

from __future__ import annotations

from tether import hookimpl
from tether.registry import CommandRegistrar


@hookimpl
def register_commands(commands: CommandRegistrar) -> None:
    from .cli import submit, worker

    commands.add(worker)
    commands.add(submit)
