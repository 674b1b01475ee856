"""``tether runs``, ``tether trace RUN`` and ``tether stats``: the local run log.

Every run is recorded in ``runs.sqlite`` in the data directory (see
:mod:`tether_runlog`); these commands read it. Nothing here imports more than click at
module import time.
"""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tether_cli import fail, pass_state
from tether_cli.terminal_text import echo, neutralize

if TYPE_CHECKING:
    from tether_cli import CliState
    from tether_runlog import RunLog, RunRow
    from tether_runlog.trace import Span

__all__ = ["runs", "stats", "trace"]


def _log(state: CliState) -> RunLog:
    from tether_runlog import open_run_log, run_log_path

    path = run_log_path(state.config())
    if path is None:
        fail(
            "The run log is turned off (TETHER_RUN_LOG=off or [observers.runlog] enabled = "
            "false), so there are no runs to show."
        )
    log = open_run_log(path)
    log.flush()  # runs of this process (a plugin command, a test) are written first
    return log


def _when(started: float) -> str:
    return datetime.datetime.fromtimestamp(started).strftime("%Y-%m-%d %H:%M:%S")


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    if value < 0.01:
        return f"{value * 1000:.1f}ms"
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:.1f}s"


def _cost(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _one_line(text: str | None, limit: int) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@click.command()
@click.option("-n", "--limit", default=20, show_default=True, help="How many runs to list.")
@click.option("--all", "include_nested", is_flag=True, help="Include runs started by tools.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run.")
@pass_state
def runs(state: CliState, limit: int, include_nested: bool, as_json: bool) -> None:
    """List recent runs from the local run log, newest first."""
    from tether_runlog import RunNotFound

    log = _log(state)
    try:
        rows = log.recent(limit, top_level=not include_nested)
    except RunNotFound as exc:
        echo(str(exc))
        return
    if as_json:
        for row in rows:
            echo(json.dumps({k: v for k, v in row.to_dict().items() if k != "events"}))
        return
    if not rows:
        echo(f"No runs recorded in {log.path} yet.")
        return
    width = max(len(row.model or "?") for row in rows)
    for row in rows:
        tools = f"{row.tool_calls}" + (f"({row.tool_errors}✗)" if row.tool_errors else "")
        echo(
            f"{row.run_id[:12]}  {_when(row.started)[5:16]}  {row.model or '?':<{width}}  "
            f"{row.outcome or '?':<10} {row.turns:>3} turns {tools:>6} tools "
            f"{row.input_tokens + row.output_tokens:>9,} tok {_cost(row.cost):>9} "
            f"{_seconds(row.duration):>7}  {_one_line(row.prompt, 40)}"
        )


@click.command()
@click.argument("run_id", metavar="RUN")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    is_flag=False,
    flag_value=Path("-"),
    default=None,
    help="Write a self-contained HTML page with a timeline (to PATH, or trace-RUN.html).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the trace tree as JSON.")
@pass_state
def trace(state: CliState, run_id: str, html_path: Path | None, as_json: bool) -> None:
    """Show run RUN (an id or a prefix of one, from `tether runs`) as a tree: turns, model
    calls with latency and tokens, tool calls with arguments and outcomes, retries,
    compactions and the runs started by tools."""
    from tether_runlog.trace import build_trace

    log = _log(state)
    row = log.get(run_id)
    tree = build_trace(log, row)
    if html_path is not None:
        from tether_runlog.html import render_html

        target = Path(f"trace-{row.run_id[:12]}.html") if str(html_path) == "-" else html_path
        try:
            target.write_text(render_html(row, tree), encoding="utf-8")
        except OSError as exc:
            fail(f"Cannot write {target}: {exc}. Choose another path with --html PATH.")
        echo(f"Wrote {target}")
        return
    if as_json:
        echo(json.dumps(_as_dict(tree), indent=2, default=str))
        return
    _print_tree(row, tree)


def _as_dict(span: Span) -> dict[str, Any]:
    return {
        "kind": span.kind,
        "title": span.title,
        "start": span.start,
        "duration": span.duration,
        "status": span.status,
        "details": span.details,
        "children": [_as_dict(child) for child in span.children],
    }


def _safe(text: str) -> str:
    """``text`` as it came from the log, neutralized and escaped for rich markup."""
    from rich.markup import escape

    return escape(neutralize(text))


_MARK = {"ok": "[green]✓[/green]", "error": "[red]✗[/red]", "interrupted": "[yellow]⊘[/yellow]"}


def _label(span: Span) -> str:
    d = span.details
    if span.kind == "run":
        parts = [
            f"[bold]{_safe(span.title)}[/bold]",
            _safe(str(d.get("outcome"))),
            f"{d.get('turns')} turns",
            f"{d.get('tool_calls')} tool calls ({d.get('tool_errors')} failed)",
            f"{d.get('input_tokens'):,} in / {d.get('output_tokens'):,} out",
        ]
        if d.get("cache_hit_ratio") is not None and d.get("cache_read_tokens"):
            parts.append(f"cache hit {d['cache_hit_ratio']:.0%}")
        if d.get("cost") is not None:
            parts.append(_cost(d["cost"]))
        parts.append(_seconds(span.duration))
        label = " · ".join(parts)
        if d.get("error"):
            label += f"\n[red]{_safe(_one_line(d['error'], 200))}[/red]"
        return label
    if span.kind == "turn":
        return f"[bold]{_safe(span.title)}[/bold]"
    if span.kind == "model":
        parts = [
            f"[magenta]{_safe(span.title)}[/magenta]",
            _seconds(d.get("latency")),
        ]
        if d.get("time_to_first_token") is not None:
            parts.append(f"first token {_seconds(d['time_to_first_token'])}")
        parts.append(f"{d.get('input_tokens', 0):,} in / {d.get('output_tokens', 0):,} out")
        if d.get("cache_read_tokens"):
            parts.append(f"{d['cache_read_tokens']:,} cached")
        if d.get("cost") is not None:
            parts.append(_cost(d["cost"]))
        parts.append(_safe(str(d.get("stop_reason"))))
        label = " · ".join(parts)
        if d.get("text"):
            label += f"\n[dim]{_safe(_one_line(d['text'], 120))}[/dim]"
        return label
    if span.kind == "tool":
        mark = _MARK.get(span.status, "…")
        label = (
            f"{mark} [cyan]{_safe(span.title)}[/cyan]"
            f"({_safe(_one_line(d.get('arguments'), 100))}) {_seconds(d.get('duration'))}"
        )
        if d.get("result"):
            style = "red" if span.status != "ok" else "dim"
            label += f"\n[{style}]→ {_safe(_one_line(d['result'], 120))}[/{style}]"
        return label
    if span.kind == "retry":
        return f"[yellow]↻ {_safe(span.title)}[/yellow] [dim]{_safe(_one_line(d.get('error'), 120))}[/dim]"
    if span.kind == "cache_warning":
        return f"[yellow]⚠ {_safe(_one_line(d.get('message'), 160))}[/yellow]"
    return f"[dim]⋯ {_safe(span.title)}[/dim]"


def _print_tree(row: RunRow, root: Span) -> None:
    from rich.console import Console
    from rich.tree import Tree

    def add(node: Tree, span: Span) -> None:
        for child in span.children:
            add(node.add(_label(child)), child)

    tree = Tree(_label(root))
    if row.prompt:
        tree.add(f"[dim]prompt:[/dim] {_safe(_one_line(row.prompt, 160))}")
    add(tree, root)
    Console(highlight=False).print(tree)


@click.command()
@click.option("--days", type=float, default=None, help="Only runs of the last DAYS days.")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@pass_state
def stats(state: CliState, days: float | None, as_json: bool) -> None:
    """Totals over recorded runs (outcomes, tokens, cost, cache hit ratio) and each
    tool's calls, errors and error rate."""
    from tether_runlog import RunNotFound

    since = time.time() - days * 86400 if days is not None else None
    try:
        totals = _log(state).stats(since)
    except RunNotFound as exc:
        echo(str(exc))
        return
    if as_json:
        echo(json.dumps(totals, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    outcomes = _safe(", ".join(f"{n} {name}" for name, n in totals["outcomes"].items()) or "none")
    console.print(f"[bold]{totals['runs']} runs[/bold] ({outcomes})")
    ratio = totals["cache_hit_ratio"]
    console.print(
        f"{totals['turns']} model calls · {totals['tool_calls']} tool calls "
        f"({totals['tool_errors']} failed, {totals['tool_error_rate']:.1%}) · "
        f"{totals['retries']} retries · {totals['compactions']} compactions"
    )
    console.print(
        f"{totals['input_tokens']:,} in / {totals['output_tokens']:,} out tokens · "
        f"cache hit {'-' if ratio is None else f'{ratio:.0%}'} · cost {_cost(totals['cost'])} · "
        f"{_seconds(totals['duration'])} in runs"
    )
    if totals["error_types"]:
        errors = ", ".join(f"{name} × {n}" for name, n in totals["error_types"].items())
        console.print(f"[red]errors:[/red] {_safe(errors)}")
    if totals["tools"]:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for column in ("tool", "calls", "errors", "error rate", "interrupted", "mean time"):
            table.add_column(column, justify="left" if column == "tool" else "right")
        for tool in totals["tools"]:
            rate = f"{tool['error_rate']:.1%}"
            table.add_row(
                _safe(tool["name"]),
                str(tool["calls"]),
                str(tool["errors"]),
                f"[red]{rate}[/red]" if tool["errors"] else rate,
                str(tool["interrupted"]),
                _seconds(tool["mean_duration"]),
            )
        console.print(table)
