"""``tether serve``: the agents of ``[serve.agents]`` behind HTTP, with uvicorn."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from tether_cli import fail, pass_state

if TYPE_CHECKING:
    from tether_cli import CliState

__all__ = ["app_from_config", "serve"]


@click.command()
@click.option("--host", default=None, help="Interface to bind (default: [serve] host, 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default: [serve] port, 8000).")
@click.option("--workers", type=int, default=1, show_default=True, help="uvicorn worker processes.")
@click.option("--check", is_flag=True, help="Load the configuration and build the app, then exit.")
@pass_state
def serve(state: CliState, host: str | None, port: int | None, workers: int, check: bool) -> None:
    """Serve the agents of [serve.agents] over HTTP: tether events, AG-UI and the AI SDK
    UI message stream, sessions, runs, approvals, and a chat page at /."""
    import tether

    from .app import agents_from_settings, create_app
    from .settings import settings_from_table

    try:
        config = state.config()
        settings = settings_from_table(config.section("serve"))
        if host is not None:
            settings.host = host
        if port is not None:
            settings.port = port
        if not settings.agents:
            raise tether.ConfigError(
                "No agents to serve: add [serve.agents.default] with a model (and tools, "
                "permissions, output_type) to tether.toml."
            )
        if settings.durable:
            from .durable import durable_server_from_settings

            durable = durable_server_from_settings(settings, config)
            agents: dict[str, Any] = dict(durable.agents)
            app = create_app({}, settings, durable=durable)
        else:
            agents = agents_from_settings(settings, config, plugin_manager=state.plugin_manager())
            app = create_app(agents, settings)
    except tether.TetherError as error:
        fail(str(error))
    names = ", ".join(sorted(agents))
    auth = f"{len(settings.keys)} API keys" if settings.keys else "no API keys (tenant 'local')"
    click.echo(
        f"tether serve: agents {names}; {auth}; http://{settings.host}:{settings.port}/",
        err=True,
    )
    if check:
        return
    import uvicorn

    if workers == 1:
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")
        return
    if state.plugin_modules:
        fail("-p plugins cannot be given to several workers; install them as entry points.")
    if state.config_path is not None:
        os.environ["TETHER_CONFIG"] = str(state.config_path)
    uvicorn.run(
        "tether_serve.cli:app_from_config",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=workers,
        log_level="warning",
    )


def app_from_config() -> Any:
    """The app as ``tether.toml`` describes it, for ``uvicorn --factory
    tether_serve.cli:app_from_config`` (each worker process builds its own)."""
    import tether

    from .app import agents_from_settings, create_app
    from .settings import settings_from_table

    config = tether.load_config()
    settings = settings_from_table(config.section("serve"))
    if settings.durable:
        from .durable import durable_server_from_settings

        return create_app({}, settings, durable=durable_server_from_settings(settings, config))
    return create_app(agents_from_settings(settings, config), settings)
