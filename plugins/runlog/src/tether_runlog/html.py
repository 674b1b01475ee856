"""A recorded run as one self-contained HTML page: a timeline of its spans.

No scripts, fonts or images are loaded from anywhere: the page is one file that can be
mailed or attached to a bug report. Each span is a row: its name (indented by depth) on
the left, a bar placed on a shared time axis on the right, and its details (arguments,
results, tokens, errors) in a ``<details>`` element under the name. Every string from
the log is HTML-escaped.
"""

from __future__ import annotations

import datetime
import html
import json

from .store import RunRow
from .trace import Span

__all__ = ["render_html"]

_COLOURS = {
    "run": "#4c6ef5",
    "turn": "#adb5bd",
    "model": "#7950f2",
    "tool": "#12b886",
    "retry": "#f59f00",
    "compaction": "#868e96",
    "cache_warning": "#f59f00",
}

_CSS = """
body { font: 14px/1.4 system-ui, -apple-system, Segoe UI, sans-serif; margin: 24px; color: #212529; }
h1 { font-size: 20px; margin: 0 0 4px; }
.meta { color: #495057; margin-bottom: 16px; }
.summary { display: flex; flex-wrap: wrap; gap: 8px 24px; margin-bottom: 16px; }
.summary div { background: #f1f3f5; border-radius: 6px; padding: 6px 10px; }
.summary b { display: block; font-size: 12px; color: #868e96; font-weight: 600; }
.axis, .row { display: grid; grid-template-columns: 420px 1fr; align-items: start; }
.axis { color: #868e96; font-size: 12px; border-bottom: 1px solid #dee2e6; }
.ticks { position: relative; height: 18px; }
.ticks span { position: absolute; transform: translateX(-50%); white-space: nowrap; }
.row { border-bottom: 1px solid #f1f3f5; padding: 3px 0; }
.name { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.name summary { cursor: pointer; list-style: none; }
.name pre { white-space: pre-wrap; word-break: break-word; background: #f8f9fa;
            font-size: 12px; padding: 6px; margin: 4px 0; max-height: 240px; overflow: auto; }
.lane { position: relative; height: 20px; }
.bar { position: absolute; top: 3px; height: 14px; border-radius: 3px; min-width: 2px; }
.mark { position: absolute; top: 1px; width: 0; height: 0; border-left: 7px solid transparent;
        border-right: 7px solid transparent; border-top: 12px solid; transform: translateX(-7px); }
.dur { position: absolute; top: 1px; font-size: 11px; color: #495057; white-space: nowrap; }
.error { color: #c92a2a; } .interrupted { color: #e8590c; }
.status-error .bar { outline: 2px solid #c92a2a; }
"""


def _fmt_seconds(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s"


def _details(span: Span) -> str:
    shown = {k: v for k, v in span.details.items() if v not in (None, "", [])}
    if not shown:
        return ""
    lines = [
        f"{key}: {value if isinstance(value, str) else json.dumps(value, default=str)}"
        for key, value in shown.items()
    ]
    return f"<pre>{html.escape(chr(10).join(lines))}</pre>"


_SCALE = 88.0
"""Share of the lane (in %) the time axis uses; the rest keeps duration labels readable."""


def _row(depth: int, span: Span, total: float) -> str:
    left = _SCALE * span.start / total
    width = _SCALE * span.duration / total
    colour = _COLOURS.get(span.kind, "#495057")
    status = "" if span.status == "ok" else f' <span class="{span.status}">({span.status})</span>'
    name = (
        f'<details><summary style="padding-left:{depth * 16}px">'
        f"{html.escape(span.title)}{status}</summary>{_details(span)}</details>"
    )
    if span.duration > 0:
        lane = (
            f'<div class="bar" style="left:{left:.3f}%;width:{width:.3f}%;background:{colour}"'
            f' title="{html.escape(span.title)}"></div>'
            f'<div class="dur" style="left:calc({left + width:.3f}% + 4px)">'
            f"{_fmt_seconds(span.duration)}</div>"
        )
    else:
        lane = (
            f'<div class="mark" style="left:{left:.3f}%;border-top-color:{colour}"'
            f' title="{html.escape(span.title)}"></div>'
        )
    return (
        f'<div class="row status-{span.status} kind-{span.kind}"><div class="name">{name}</div>'
        f'<div class="lane">{lane}</div></div>'
    )


def _summary(row: RunRow) -> str:
    items = [
        ("outcome", row.outcome or "?"),
        ("model", row.model or "?"),
        ("turns", str(row.turns)),
        ("tool calls", f"{row.tool_calls} ({row.tool_errors} failed)"),
        ("tokens in / out", f"{row.input_tokens:,} / {row.output_tokens:,}"),
    ]
    ratio = row.cache_hit_ratio
    if ratio is not None:
        items.append(("cache hit ratio", f"{ratio:.0%}"))
    if row.cost is not None:
        items.append(("cost", f"${row.cost:.4f}"))
    items.append(("time", _fmt_seconds(row.duration or 0.0)))
    if row.retries:
        items.append(("retries", str(row.retries)))
    if row.error:
        items.append(("error", f"{row.error_type}: {row.error}"))
    return "".join(
        f"<div><b>{html.escape(label)}</b>{html.escape(value)}</div>" for label, value in items
    )


def render_html(row: RunRow, trace: Span) -> str:
    """The page for ``row`` whose trace tree is ``trace`` (:func:`~tether_runlog.trace.build_trace`)."""
    spans = trace.walk()
    total = max(max(span.end for _, span in spans), 1e-6)
    ticks = "".join(
        f'<span style="left:{_SCALE * i / 4:.1f}%">{_fmt_seconds(total * i / 4)}</span>'
        for i in range(5)
    )
    started = datetime.datetime.fromtimestamp(row.started).isoformat(sep=" ", timespec="seconds")
    rows = "\n".join(_row(depth, span, total) for depth, span in spans)
    prompt = html.escape(row.prompt or "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tether trace {html.escape(row.run_id)}</title>
<style>{_CSS}</style></head>
<body>
<h1>Run {html.escape(row.run_id)}</h1>
<div class="meta">started {html.escape(started)} · session {html.escape(row.session_id or "?")}</div>
<div class="meta">prompt: {prompt}</div>
<div class="summary">{_summary(row)}</div>
<div class="axis"><div>span</div><div class="ticks">{ticks}</div></div>
{rows}
</body></html>
"""
