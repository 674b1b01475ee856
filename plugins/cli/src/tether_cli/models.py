"""``tether models``: every installed provider's model catalogue.

Listing needs no credentials: providers are expected to construct without a key and
check it only in ``validate_auth()``. A provider whose factory fails anyway (a missing
key, a missing SDK) is reported with its error and the others are still listed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click

from . import CliState, pass_state
from .terminal_text import echo

if TYPE_CHECKING:
    from tether.provider import ModelInfo, Provider

__all__ = ["catalogue_report", "format_catalogue", "models"]

_CAPABILITY_LABELS = (
    ("vision", "vision"),
    ("thinking", "thinking"),
    ("prompt_caching", "caching"),
    ("parallel_tool_calls", "parallel tools"),
    ("images_in_tool_results", "images in tool results"),
)


def _model_entry(info: ModelInfo) -> dict[str, Any]:
    caps = info.capabilities
    return {
        "id": info.id,
        "aliases": list(info.aliases),
        "description": info.description,
        "context_window": caps.context_window,
        "max_output_tokens": caps.max_output_tokens,
        "pricing": asdict(caps.pricing) if caps.pricing is not None else None,
        "capabilities": {field: getattr(caps, field) for field, _ in _CAPABILITY_LABELS},
    }


def catalogue_report(state: CliState, names: Sequence[str] = ()) -> dict[str, Any]:
    """Every provider's catalogue (or only those in ``names``), as plain data.

    Raises :class:`~tether.errors.UnknownProviderError` for a name no plugin registers.
    """
    from tether.resolve import unknown_provider

    registrar = state.plugin_manager().providers
    config = state.config()
    for name in names:
        if name not in registrar:
            raise unknown_provider(registrar, name)
    selected = list(names) or registrar.names()
    entries: list[dict[str, Any]] = []
    built: list[Provider] = []
    for name in selected:
        registration = registrar.registration(name)
        entry: dict[str, Any] = {
            "name": name,
            "distribution": registration.source.distribution,
            "models": [],
            "error": None,
        }
        try:
            provider = registrar.get(name)(config.provider(name))
            built.append(provider)
            entry["models"] = [_model_entry(info) for info in provider.catalogue()]
        except Exception as exc:  # one broken provider must not hide the others
            entry["error"] = f"{type(exc).__name__}: {exc}"
        entries.append(entry)
    if built:
        asyncio.run(_close(built))
    return {"providers": entries, "aliases": dict(config.aliases)}


async def _close(providers: list[Provider]) -> None:
    for provider in providers:
        try:
            await provider.aclose()
        except Exception:  # closing is best effort; listing already succeeded
            continue


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def format_catalogue(report: dict[str, Any]) -> str:
    """The human-readable form of :func:`catalogue_report`."""
    if all(p["distribution"] == "tether" for p in report["providers"]):
        hint = (
            "No provider plugin is installed (only the built-in demo model). Install one, e.g. "
            "`uv pip install ./plugins/anthropic` in a clone of tether (or ./plugins/openai, "
            "./plugins/google; `uv sync --all-packages` installs them all)."
        )
        if not report["providers"]:
            return hint
    else:
        hint = ""
    lines: list[str] = []
    for provider in report["providers"]:
        if lines:
            lines.append("")
        source = provider["distribution"]
        lines.append(
            f"{provider['name']} {source if source.startswith('(') else f'(from {source})'}"
        )
        if provider["error"]:
            lines.append(f"  cannot list models: {provider['error']}")
            continue
        if not provider["models"]:
            lines.append("  (no catalogue; any model id the provider accepts can be used)")
            continue
        rows = [["MODEL", "CONTEXT", "MAX OUTPUT", "$/M IN", "$/M OUT", "CAPABILITIES"]]
        for model in provider["models"]:
            pricing = model["pricing"] or {}
            label = f"{provider['name']}/{model['id']}"
            if model["aliases"]:
                label += f" ({', '.join(model['aliases'])})"
            rows.append(
                [
                    label,
                    f"{model['context_window']:,}",
                    f"{model['max_output_tokens']:,}",
                    _money(pricing.get("input")),
                    _money(pricing.get("output")),
                    ", ".join(
                        text for key, text in _CAPABILITY_LABELS if model["capabilities"][key]
                    )
                    or "-",
                ]
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            cells = [
                cell.rjust(width) if 0 < i < 5 else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append(("  " + "  ".join(cells)).rstrip())
    if hint:
        lines += ["", hint]
    if report["aliases"]:
        lines += ["", "Aliases from the configuration"]
        lines += [f"  {alias} -> {target}" for alias, target in sorted(report["aliases"].items())]
    return "\n".join(lines)


class _ModelsGroup(click.Group):
    """``tether models [PROVIDER]...`` lists; ``tether models default [NAME]`` shows or
    sets the default model. Anything that is not a sub-command goes to the listing."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands:
            return "list", self.commands["list"], args
        return super().resolve_command(ctx, args)


@click.group(
    "models",
    cls=_ModelsGroup,
    invoke_without_command=True,
    context_settings={"ignore_unknown_options": True},
)
@click.pass_context
def models(ctx: click.Context) -> None:
    """List the models every installed provider knows, or choose the default one.

    \b
      tether models [PROVIDER]... [--json]   the catalogues (all, or these providers)
      tether models default [NAME]           show or set the default model
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_models)


@models.command("list")
@click.argument("providers", nargs=-1, metavar="[PROVIDER]...")
@click.option("--json", "json_mode", is_flag=True, help="Print the catalogues as one JSON object.")
@click.option(
    "--check",
    is_flag=True,
    help="Ask each PROVIDER's API whether the key works (default: the provider of the "
    "default model) instead of listing models. Exits 1 if any key fails.",
)
@pass_state
def list_models(
    state: CliState, providers: tuple[str, ...] = (), json_mode: bool = False, check: bool = False
) -> None:
    """List the models every installed provider knows.

    With PROVIDER names, only those providers' models. Shows each model's context window, maximum output tokens, price in dollars per
    million tokens and capabilities. Use a model as "provider/model" with `tether run -m`.
    With --check, sends one request per provider to check its key (`tether run` never does).
    """
    if check:
        _check(state, providers, json_mode)
        return
    report = catalogue_report(state, providers)
    echo(json.dumps(report, indent=2) if json_mode else format_catalogue(report))


def _check(state: CliState, providers: tuple[str, ...], json_mode: bool) -> None:
    from tether.errors import ConfigError

    from .key_check import check_keys, checked_providers

    try:
        names = checked_providers(state, providers)
    except ConfigError as exc:
        if providers:
            raise
        raise ConfigError(
            "No model is chosen, so there is no provider to check by default. Name the "
            "providers (`tether models --check PROVIDER`), or choose a model with "
            "`tether models default NAME` or TETHER_MODEL."
        ) from exc
    results = check_keys(state, names)
    registrar = state.plugin_manager().providers
    if json_mode:
        echo(json.dumps({r.provider: {"ok": r.ok, "error": r.error} for r in results}))
    else:
        for result in results:
            keyless = not registrar.registration(result.provider).options.get("key_variables")
            if result.ok and keyless:  # a local server: there was no key to accept
                echo(f"{result.provider}: the server answered (it needs no key)")
            else:
                echo(result.line())
    if not all(r.ok for r in results):
        click.get_current_context().exit(1)


@models.command("default")
@click.argument("name", required=False)
@pass_state
def default(state: CliState, name: str | None) -> None:
    """Show the default model, or set it to NAME in the configuration file.

    NAME is a model as -m takes it ("provider/model", a bare name or an alias). It is
    written as `model` in the configuration file in use (--config, TETHER_CONFIG,
    ./tether.toml, else the user config directory). -m and TETHER_MODEL still win over it.
    """
    import os

    from tether.resolve import parse_model_string

    from .config_file import set_top_level_string, writable_config_path
    from .model_choice import choose_model

    config = state.config()
    providers = state.plugin_manager().providers
    if name is None:
        choice = choose_model(None, config, providers)
        echo(f"{choice.model}\t(from {choice.source})")
        return
    ref = parse_model_string(name, providers, config.aliases)
    path = writable_config_path(state.config_path)
    set_top_level_string(path, "model", name)
    echo(f"Default model: {name} ({ref}), saved in {path}.")
    if os.environ.get("TETHER_MODEL"):
        echo(f"Note: TETHER_MODEL={os.environ['TETHER_MODEL']} is set and wins over it.", err=True)
