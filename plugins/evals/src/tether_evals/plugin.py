"""The ``evals`` entry point: adds ``tether eval`` to the command line. (The built-in
evaluators register through :mod:`tether_evals.builtin_evaluators`.)"""

from __future__ import annotations

from tether import CommandRegistrar, hookimpl


@hookimpl
def register_commands(commands: CommandRegistrar) -> None:
    from .cli import eval_group

    commands.add(eval_group)
