"""``tether plugin new``: start a plugin distribution that installs and passes its tests."""

from __future__ import annotations

from pathlib import Path

import click

from . import fail

__all__ = ["plugin"]

_KINDS = ("tool", "provider", "kb-backend", "session-store")
_HOOKS = {
    "tool": "register_tools",
    "provider": "register_providers",
    "kb-backend": "register_knowledge_backends",
    "session-store": "register_session_stores",
}


@click.group()
def plugin() -> None:
    """Write plugins for tether."""


@plugin.command()
@click.argument("name")
@click.option(
    "--kind",
    required=True,
    type=click.Choice(_KINDS),
    help="What the plugin provides: a tool set, a model provider, a knowledge-base "
    "backend or a session store.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where to create the distribution's directory.",
)
def new(name: str, kind: str, directory: Path) -> None:
    """Create tether-NAME/, a ready plugin distribution of one KIND.

    It holds a pyproject.toml with the entry point, a module with a working example
    component registered through its hook, tests that use tether's pytest fixtures (and,
    for session stores, the contract suite of tether.testing), and a README. It installs
    and passes its own tests as created.

    \b
    Example:
      tether plugin new weather --kind tool
      cd tether-weather && uv pip install -e ".[test]" && pytest
      (without uv: python -m pip install -e ".[test]")
    """
    from tether_cli.scaffold import PluginScaffoldError, new_plugin

    try:
        target = new_plugin(name, kind, directory)
    except PluginScaffoldError as exc:
        fail(str(exc))
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    click.echo(f"Created {target} ({kind}, registered through {_HOOKS[kind]}):")
    for file in files:
        click.echo(f"  {file}")
    click.echo("Next:")
    click.echo(f"  cd {target}")
    click.echo(f"  {editable_install_command()}")
    click.echo("  pytest")
    click.echo("  tether plugins")


def editable_install_command(prefix: Path | None = None) -> str:
    """The command that installs the new plugin, editable with its test extra, into the
    environment at ``prefix`` (default: this one). An environment uv made has no pip
    (``pip install`` would reach another Python, or none): there it is ``uv pip
    install``; elsewhere ``python -m pip install``, which always means this Python's pip."""
    import importlib.util
    import shutil
    import sys

    root = Path(sys.prefix if prefix is None else prefix)
    config = root / "pyvenv.cfg"
    made_by_uv = config.is_file() and any(
        line.split("=")[0].strip() == "uv" for line in config.read_text().splitlines()
    )
    no_pip = prefix is None and importlib.util.find_spec("pip") is None
    if (made_by_uv or no_pip) and shutil.which("uv"):
        return 'uv pip install -e ".[test]"'
    return 'python -m pip install -e ".[test]"'
