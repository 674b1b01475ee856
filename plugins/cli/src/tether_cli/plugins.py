"""``tether plugins``: what loaded, from which distribution, what it registered, what failed."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import click

from . import CliState, pass_state, quiet_plugin_warnings
from .terminal_text import echo

if TYPE_CHECKING:
    from tether.plugins import PluginManager
    from tether.registry import Registration

__all__ = ["plugin_report", "plugins"]


def _details(kind: str, registration: Registration[Any]) -> str:
    component = registration.component
    if kind == "tool":
        names = ", ".join(tool.name for tool in component)
        problem = getattr(component, "problem", None)
        return f"unavailable: {problem}" if problem else names
    if kind == "provider":
        prefixes = registration.options.get("prefixes") or ()
        parts = [f"prefixes: {', '.join(prefixes)}"] if prefixes else []
        if registration.options.get("description"):
            parts.append(str(registration.options["description"]))
        return "; ".join(parts)
    return ""


def plugin_report(manager: PluginManager) -> dict[str, Any]:
    """Everything ``tether plugins`` shows, as plain data (the ``--json`` output).

    Fills every registry first, so errors raised by ``register_*`` hooks are included.
    """
    registrars = manager.all_registrars()
    components: dict[str, list[dict[str, str]]] = {}
    conflicts: list[dict[str, Any]] = []
    for registrar in registrars:
        entries = [
            {
                "name": reg.name,
                "distribution": reg.source.distribution,
                "plugin": reg.source.plugin,
                "details": _details(registrar.kind, reg),
            }
            for reg in sorted(registrar, key=lambda r: r.name)
        ]
        if entries:
            components[registrar.kind] = entries
        conflicts.extend(
            {
                "kind": conflict.kind,
                "name": conflict.name,
                "distributions": list(conflict.distributions),
                "message": str(conflict),
            }
            for conflict in registrar.conflicts
        )
    return {
        "plugins": [
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "module": info.module,
                "hooks": list(info.hooks),
                "error": info.error,
            }
            for info in manager.plugins
        ],
        "components": components,
        "conflicts": conflicts,
        "errors": [
            {"plugin": error.plugin, "distribution": error.distribution, "message": str(error)}
            for error in manager.errors
        ],
    }


def _start_dynamic_toolsets(manager: PluginManager) -> None:
    """Start every dynamic toolset once (an MCP server, say) so the report shows its
    tools, or why it has none; then stop them again."""
    toolsets = [reg.component for reg in manager.tools if reg.component.dynamic]
    if not toolsets:
        return

    async def check() -> None:
        try:
            for toolset in toolsets:
                await toolset.refresh()
        finally:
            for toolset in toolsets:
                await toolset.aclose()

    asyncio.run(check())


def _plural(kind: str) -> str:
    return kind[:-1] + "ies" if kind.endswith("y") else kind + "s"


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (
            indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def format_report(report: dict[str, Any]) -> str:
    """The human-readable form of :func:`plugin_report`."""
    lines = ["Plugins"]
    rows = [["NAME", "DISTRIBUTION", "VERSION", "HOOKS"]]
    for info in report["plugins"]:
        hooks = ", ".join(h.removeprefix("register_") for h in info["hooks"]) or "-"
        rows.append([info["name"], info["distribution"], info["version"] or "-", hooks])
    lines += _table(rows)
    for kind, entries in report["components"].items():
        lines += ["", _plural(kind).capitalize()]
        lines += _table([[e["name"], f"from {e['distribution']}", e["details"]] for e in entries])
    if report["conflicts"]:
        lines += ["", f"Conflicts ({len(report['conflicts'])})"]
        lines += [f"  {c['message']}" for c in report["conflicts"]]
    if report["errors"]:
        lines += ["", f"Load errors ({len(report['errors'])})"]
        lines += [f"  {e['message']}" for e in report["errors"]]
    return "\n".join(lines)


@click.command("plugins")
@click.option("--json", "json_mode", is_flag=True, help="Print the report as one JSON object.")
@pass_state
def plugins(state: CliState, json_mode: bool) -> None:
    """List plugins, what they register, and load errors.

    Shows each plugin's distribution, version and hooks, the components of every kind
    (providers, tools, commands, ...) with the distribution that registered them. A plugin that failed to import or whose hook raised is listed with its error; the
    others are unaffected. Two plugins registering the same name are listed as a conflict
    naming both distributions.
    """
    quiet_plugin_warnings()  # the report lists load errors itself
    manager = state.plugin_manager()
    _start_dynamic_toolsets(manager)
    report = plugin_report(manager)
    if json_mode:
        echo(json.dumps(report, indent=2))
    else:
        echo(format_report(report))
