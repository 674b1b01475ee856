"""Entry point: adds ``tether serve`` to the command line."""

from __future__ import annotations

import tether
from tether import CommandRegistrar


@tether.hookimpl
def register_commands(commands: CommandRegistrar) -> None:
    from .cli import serve

    commands.add(serve)
