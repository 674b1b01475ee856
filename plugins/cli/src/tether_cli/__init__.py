"""The ``tether`` command line.

The commands that ship with tether are listed in :data:`BUILTIN_COMMANDS`; plugins add
more through the ``register_commands`` hook. Importing this module is cheap: it imports
click and nothing else of weight. A command's module is imported when the command runs
(or when ``--help`` needs its summary), and the plugin manager is built the first time
something asks for it (a command that needs providers or tools, or a command name that
is not built in), once per invocation.

Expected failures (any :class:`~tether.errors.TetherError`: bad configuration, a missing
provider or credentials, a provider refusing a request) end the process with exit status
1 and one clear message on stderr, without a traceback; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from tether.scrub import format_exception, install_log_scrubbing

from .process import exit_now, pause_gc, resume_gc

if TYPE_CHECKING:
    from tether.config import Config
    from tether.plugins import PluginManager

__all__ = ["CliState", "TetherCommandError", "cli", "fail", "main", "pass_state"]

F = TypeVar("F", bound=Callable[..., Any])

#: Commands that ship with tether: name -> (module, attribute). Their modules import
#: only click and the standard library at the top, so ``tether --help`` lists them (and
#: ``tether NAME`` runs them) without loading any plugin. ``kb``, ``memory`` and
#: ``sessions`` are also registered through the ``register_commands`` hook by
#: :mod:`tether.builtins`, which is how ``tether plugins`` shows them.
BUILTIN_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("tether_cli.run", "run"),
    "chat": ("tether_cli.chat", "chat"),
    "approvals": ("tether_cli.approvals", "approvals"),
    "plugins": ("tether_cli.plugins", "plugins"),
    "plugin": ("tether_cli.plugin", "plugin"),
    "models": ("tether_cli.models", "models"),
    "kb": ("tether_knowledge.commands", "kb"),
    "memory": ("tether_memory.commands", "memory"),
    "sessions": ("tether_cli.sessions", "sessions"),
    "runs": ("tether_runlog.commands", "runs"),
    "trace": ("tether_runlog.commands", "trace"),
    "stats": ("tether_runlog.commands", "stats"),
}


#: Commands that run a model: the garbage collector stays paused until it answers.
_MODEL_COMMANDS = frozenset({"run", "chat"})


class TetherCommandError(click.ClickException):
    """An expected failure: printed as one line on stderr, exit status 1."""

    def show(self, file: Any = None) -> None:
        from .terminal_text import neutralize

        click.secho(f"Error: {neutralize(self.format_message())}", file=file, err=True, fg="red")


def with_run_log_on(config: Config) -> Config:
    """``config`` with the run log turned on unless its ``[observers.runlog]`` says
    otherwise: the command line records its runs by default (``tether runs`` reads them),
    where an application's agents record nothing unless configured."""
    if "runlog" in config.observers:
        return config
    observers = {**config.observers, "runlog": {"enabled": True}}
    return config.model_copy(update={"observers": observers})


class CliState:
    """Per-invocation state shared by all commands: global options and lazy resources.

    :param config_path: ``--config``; ``None`` means the usual lookup
        (:func:`tether.config.config_path`).
    :param plugin_modules: ``-p`` module names, registered as in-process plugins.
    :param debug: show tracebacks for expected errors too.
    """

    def __init__(
        self,
        config_path: Path | None = None,
        plugin_modules: Sequence[str] = (),
        debug: bool = False,
    ) -> None:
        self.config_path = config_path
        self.plugin_modules = tuple(plugin_modules)
        self.debug = debug
        self._config: Config | None = None
        self._plugin_objects: list[object] | None = None
        self._manager: PluginManager | None = None

    def config(self) -> Config:
        """The configuration, loaded once. Raises :class:`~tether.errors.ConfigError`."""
        if self._config is None:
            from tether.config import load_config

            self._config = with_run_log_on(load_config(self.config_path))
        return self._config

    def plugin_objects(self) -> list[object]:
        """The ``-p`` modules, imported once."""
        if self._plugin_objects is None:
            from tether.errors import ConfigError

            objects: list[object] = own_plugins()
            for name in self.plugin_modules:
                try:
                    objects.append(importlib.import_module(name))
                except Exception as exc:
                    raise ConfigError(
                        f'Cannot import the plugin module "{name}" given with -p/--plugin: {exc!r}. '
                        "Pass an importable module name (as for `python -m`), e.g. -p my_package.plugin."
                    ) from exc
            self._plugin_objects = objects
        return self._plugin_objects

    def plugin_manager(self) -> PluginManager:
        """The plugin manager of this invocation: built-ins, ``-p`` modules, entry points."""
        if self._manager is None:
            from tether.errors import ConfigError
            from tether.plugins import PluginManager

            try:
                config: Config | None = self.config()
            except ConfigError:
                config = None  # reported by the commands that need it
            self._manager = PluginManager(plugins=self.plugin_objects(), config=config)
        return self._manager


def pass_state(fn: F) -> F:
    """Decorator: pass the invocation's :class:`CliState` as the first argument."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(_state(click.get_current_context()), *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _state(ctx: click.Context) -> CliState:
    root = ctx.find_root()
    state = root.obj
    if not isinstance(state, CliState):
        state = root.obj = CliState()
    return state


def fail(message: str) -> NoReturn:
    """End the command with ``message`` on stderr and exit status 1 (for command modules)."""
    raise TetherCommandError(message)


class _WarningHandler(logging.Handler):
    """Writes tether's warnings to the current ``sys.stderr`` as ``warning: ...``, each
    distinct message once per invocation (the CLI and an agent may both load plugins)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: set[str] = set()
        self.quiet_plugin_warnings = False

    def emit(self, record: logging.LogRecord) -> None:
        if (
            self.quiet_plugin_warnings
            and record.name == "tether.plugins"
            and record.levelno < logging.ERROR
        ):
            return
        message = record.getMessage()
        if message in self.seen:
            return
        self.seen.add(message)
        label = "warning" if record.levelno >= logging.WARNING else record.levelname.lower()
        sys.stderr.write(f"{label}: {_neutralize(message)}\n")


_HANDLER = _WarningHandler()


def _setup_logging(debug: bool = False) -> None:
    logger = logging.getLogger("tether")
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
        logger.propagate = False
    logger.setLevel(logging.DEBUG if debug else logging.WARNING)


def quiet_plugin_warnings() -> None:
    """Stop printing plugin load warnings (for commands that report them themselves)."""
    _HANDLER.quiet_plugin_warnings = True


def _neutralize(text: str) -> str:
    from .terminal_text import neutralize

    return neutralize(text)


#: The distributions beside the command line whose commands it lists: package -> what
#: to ``pip install`` for it.
COMMAND_DISTRIBUTIONS = {
    "tether_knowledge": 'uv pip install "./core[kb]"',
    "tether_memory": "uv pip install ./plugins/memory",
    "tether_runlog": "uv pip install ./plugins/runlog",
}

#: The plugins of those distributions (name, module) that the command line registers
#: itself when entry points are not loaded (``TETHER_DISABLE_PLUGIN_AUTOLOAD``), as it
#: does its own commands; a name in ``TETHER_PLUGINS_DENY`` is still left out.
OWN_PLUGINS = (("runlog", "tether_runlog.plugin"), ("knowledge", "tether_knowledge.plugin"))


def own_plugins() -> list[object]:
    """The plugin modules of :data:`OWN_PLUGINS` to register explicitly: none when entry
    points load (they come from there), and none that is denied or not installed."""
    if not os.environ.get("TETHER_DISABLE_PLUGIN_AUTOLOAD"):
        return []
    deny = {n.strip() for n in os.environ.get("TETHER_PLUGINS_DENY", "").split(",")}
    found: list[object] = []
    for name, module in OWN_PLUGINS:
        if name in deny:
            continue
        try:
            found.append(importlib.import_module(module))
        except ImportError:
            continue  # not installed: its commands say what to install
    return found


def _builtin(name: str) -> click.Command:
    module, attribute = BUILTIN_COMMANDS[name]
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        package = module.split(".")[0]
        if (exc.name or "").split(".")[0] != package or package not in COMMAND_DISTRIBUTIONS:
            raise
        raise TetherCommandError(
            f"`tether {name}` comes with the {package.replace('_', '-')} distribution, "
            f"which is not installed. Install it: {COMMAND_DISTRIBUTIONS[package]} (in a clone of tether)"
        ) from None
    command: click.Command = getattr(loaded, attribute)
    return command


def _scrubbing_excepthook(
    kind: type[BaseException], exc: BaseException, tb: types.TracebackType | None
) -> None:
    """Unexpected errors still print a traceback, without secrets."""
    sys.stderr.write(_neutralize(format_exception(exc.with_traceback(tb))))


def _summary(name: str, limit: int) -> str:
    """The one-line help of a built-in command, or what to install for it."""
    try:
        return _builtin(name).get_short_help_str(limit=limit)
    except TetherCommandError as exc:
        return exc.format_message()[: max(limit, 10)]


class TetherGroup(click.Group):
    """The root group: built-in commands imported on demand, plugin commands from hooks,
    and :class:`~tether.errors.TetherError` turned into a clean message."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        _HANDLER.seen.clear()
        _HANDLER.quiet_plugin_warnings = False
        install_log_scrubbing()
        sys.excepthook = _scrubbing_excepthook
        _setup_logging()
        return super().main(*args, **kwargs)

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(BUILTIN_COMMANDS) | set(self.commands)
        names.update(self._plugin_commands(ctx))
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in _MODEL_COMMANDS:
            resume_gc()
        if cmd_name in BUILTIN_COMMANDS:
            return _builtin(cmd_name)
        return self._plugin_commands(ctx).get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands that ship with tether. Commands from other plugins are not
        listed: finding them means loading every plugin, and ``tether --help`` must stay
        fast. ``tether plugins`` lists them; each runs as ``tether NAME``."""
        rows = [(name, _summary(name, formatter.width - 6)) for name in BUILTIN_COMMANDS]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))
        formatter.write_paragraph()
        formatter.write_text(
            "Plugins can add more commands: `tether plugins` lists them (under Commands), "
            "and `tether NAME --help` describes one."
        )

    def _plugin_commands(self, ctx: click.Context) -> dict[str, click.Command]:
        """Commands registered through ``register_commands`` (built lazily, cached)."""
        cache = ctx.meta.get("tether.plugin_commands")
        if cache is None:
            cache = {}
            try:
                registrar = _state(ctx).plugin_manager().commands
            except Exception as exc:  # a broken -p module must not hide the built-in commands
                ctx.meta["tether.plugin_command_error"] = exc
            else:
                for registration in registrar:
                    if isinstance(registration.component, click.Command):
                        cache[registration.name] = registration.component
            ctx.meta["tether.plugin_commands"] = cache
        return dict(cache)

    def invoke(self, ctx: click.Context) -> Any:
        from tether.errors import TetherError

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader went away (`tether run ... | head`): what it wanted was written.
            _drop_closed_outputs()
            ctx.exit(0)
        except TetherError as exc:
            if _state(ctx).debug:
                sys.stderr.write(_neutralize(format_exception(exc)))
            raise TetherCommandError(str(exc)) from exc


def _drop_closed_outputs() -> None:
    """Point stdout/stderr whose reader has gone at /dev/null, so the buffered rest (and
    the interpreter's flush at exit) neither fails nor prints a traceback."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
                os.close(devnull)
            except (OSError, ValueError):
                continue


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Store global options on the state as soon as they are parsed (they are eager, so
    ``--help`` already sees ``-p`` plugins and the config file)."""
    state = _state(ctx)
    if param.name == "config" and value is not None:
        state.config_path = Path(value)
    elif param.name == "plugin" and value:
        state.plugin_modules = tuple(value)
    elif param.name == "debug":
        state.debug = bool(value)
        if value:
            _setup_logging(debug=True)
    return value


def _version() -> str:
    from tether import __version__

    return __version__


@click.group(cls=TetherGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    is_eager=True,
    expose_value=False,
    callback=_remember,
    help="Configuration file to use instead of ./tether.toml or the user config dir "
    "(same as TETHER_CONFIG).",
)
@click.option(
    "-p",
    "--plugin",
    multiple=True,
    metavar="MODULE",
    is_eager=True,
    expose_value=False,
    callback=_remember,
    help="Register an importable module as an in-process plugin (repeatable).",
)
@click.option(
    "--debug",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_remember,
    help="Show tracebacks for errors.",
)
@click.version_option(_version(), "--version", prog_name="tether", message="%(prog)s %(version)s")
def cli() -> None:
    """tether: run agents, inspect plugins and models.

    \b
    Examples:
      tether run -m anthropic/claude-sonnet-4-5 "What changed in CHANGELOG.md?"
      tether chat --session refactor
      tether plugins
    """


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``tether``).

    Without ``argv`` (the program's own command line) the process ends as soon as the
    command is done, skipping the interpreter's teardown (:mod:`tether_cli.process`);
    with ``argv`` it raises :class:`SystemExit` as click does."""
    if argv is not None:
        cli.main(args=list(argv), prog_name="tether", obj=CliState())
        return
    pause_gc()
    try:
        cli.main(prog_name="tether", obj=CliState())
    except SystemExit as exc:
        exit_now(exc.code)
        raise
