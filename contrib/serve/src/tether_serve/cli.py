"""``tether serve``: the agents of ``[serve.agents]`` behind HTTP, with uvicorn."""

from __future__ import annotations

import click

__all__ = ["serve"]


@click.command()
@click.option(
    "--host", default=None, help="Interface to bind (default 127.0.0.1, from [serve] host)."
)
@click.option("--port", type=int, default=None, help="Port (default 8000, from [serve] port).")
@click.option("--workers", type=int, default=1, show_default=True, help="uvicorn worker processes.")
@click.option(
    "--check",
    is_flag=True,
    help="Load the configuration and build the app, then exit without serving.",
)
def serve(host: str | None, port: int | None, workers: int, check: bool) -> None:
    """Serve the agents of [serve.agents] over HTTP: tether events, AG-UI and the AI SDK
    UI message stream, sessions, runs, approvals, and a chat page at /."""
    import tether

    from .app import agents_from_settings, create_app
    from .settings import settings_from_table

    try:
        config = tether.load_config()
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
        app = create_app(agents_from_settings(settings, config), settings)
    except tether.ConfigError as error:
        raise click.ClickException(str(error)) from None
    names = ", ".join(sorted(app.state.server.agents))
    auth = f"{len(settings.keys)} API keys" if settings.keys else "no API keys (tenant 'local')"
    click.echo(f"tether serve: agents {names}; {auth}; http://{settings.host}:{settings.port}/")
    if check:
        return
    import uvicorn

    if workers > 1:
        click.echo(
            "Several workers each hold their own sessions and runs in memory: put them behind "
            "a proxy with sticky sessions, or run one worker per process group.",
            err=True,
        )
    uvicorn.run(
        app, host=settings.host, port=settings.port, workers=None if workers == 1 else workers
    )
