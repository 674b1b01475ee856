"""Showing a run's events: rich on a terminal, plain text in a pipe, JSON for programs.

Three renderers share one small interface (:class:`Renderer`):

- :class:`RichRenderer` (stdout is a terminal): the answer streams as it arrives,
  rendered as Markdown (headings, emphasis, lists, code), reasoning is dimmed, each tool call is shown with its name and a summary of its
  arguments, and its end with a check mark or, in red, the error; retries and
  compactions are noted; a dim line with turns, tool calls, tokens, cost and time ends
  the run. Errors go to stderr in red.
- :class:`PlainRenderer` (stdout is not a terminal): only the answer goes to stdout,
  as written, so ``tether run ... > answer.txt`` captures exactly it. Tool activity,
  retries and the usage line go to stderr as ``[tool] ...`` style lines.
- :class:`JsonRenderer` (``--json``): one JSON object per event per line on stdout, as
  built by :func:`tether.events.event_to_dict`, flushed as it happens.

All three pass every string that came from a model, a tool or a session through
:func:`tether_cli.terminal_text.neutralize` before writing it: escape sequences are
shown, never obeyed (JSON stays valid and means the same).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from tether.events import (
    CacheWarning,
    Compaction,
    Done,
    Nested,
    Retry,
    RunEvent,
    RunStart,
    TextDelta,
    ThinkingDelta,
    ToolEnd,
    ToolProgress,
    ToolStart,
    TurnEnd,
    event_to_dict,
)
from tether.scrub import scrub

from .terminal_text import neutralize

if TYPE_CHECKING:
    from rich.console import Console

    from tether.messages import ToolResultBlock
    from tether.result import RunResult

__all__ = [
    "JsonRenderer",
    "PlainRenderer",
    "Renderer",
    "RichRenderer",
    "event_to_dict",
    "make_renderer",
    "summarize_arguments",
    "usage_line",
]


class Renderer(Protocol):
    """Receives every event of a run, in order, plus the command's own messages."""

    def event(self, event: RunEvent) -> None:
        """Show one event as it happens."""
        ...

    def notice(self, message: str) -> None:
        """Show an informational line (e.g. "resumed session x")."""
        ...

    def error(self, message: str) -> None:
        """Show an error (the command decides the exit status)."""
        ...

    def finish_line(self) -> None:
        """End a partly written line of streamed text, if any."""
        ...

    def interrupted(self) -> None:
        """The user pressed Ctrl-C (a terminal has echoed ``^C`` on the current line)."""
        ...


def make_renderer(
    *, json_mode: bool = False, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> Renderer:
    """The renderer for this output: JSON if asked, rich on a terminal, plain otherwise."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    if json_mode:
        return JsonRenderer(out, err)
    if _isatty(out):
        from rich.console import Console

        return RichRenderer(
            Console(file=out, highlight=False), Console(file=err, stderr=True, highlight=False)
        )
    return PlainRenderer(out, err)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# -- shared formatting --------------------------------------------------------------------
def summarize_arguments(arguments: dict[str, Any], limit: int = 80) -> str:
    """``city="Lisbon", days=2``: every argument as JSON, long values and the whole
    summary shortened with an ellipsis so a tool line stays on one line."""
    parts = []
    for key, value in arguments.items():
        text = json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > 40:
            text = text[:39] + "…"
        parts.append(f"{key}={text}")
    summary = neutralize(", ".join(parts))
    return summary if len(summary) <= limit else summary[: limit - 1] + "…"


def nested_line(event: Nested) -> str | None:
    """An indented line for a sub-agent event worth showing (tool calls and the end)."""
    line = _nested_line(event)
    return None if line is None else neutralize(line)


def _nested_line(event: Nested) -> str | None:
    from tether.events import Done, ToolEnd, ToolStart

    indent = "  " * event.depth + "│ "
    inner = event.event
    if isinstance(inner, ToolStart):
        return f"{indent}{event.agent} → {inner.name}({summarize_arguments(inner.arguments)})"
    if isinstance(inner, ToolEnd):
        state = "interrupted" if inner.interrupted else ("failed" if inner.is_error else "done")
        return f"{indent}{event.agent} ← {inner.name} {state}"
    if isinstance(inner, Done):
        return f"{indent}{event.agent} finished: {inner.result.outcome.value}"
    return None


def _result_text(result: ToolResultBlock) -> str:
    content = result.content
    if isinstance(content, str):
        return content
    pieces = []
    for block in content:
        text = getattr(block, "text", None)
        pieces.append(text if isinstance(text, str) else f"[{block.type}]")
    return " ".join(pieces)


def _first_line(text: str, limit: int = 100) -> str:
    line = neutralize(text.strip().splitlines()[0] if text.strip() else "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def usage_line(result: RunResult, model: str | None) -> str:
    """One line summing up a run: model, turns, tool calls, tokens, cost, time."""
    parts = [neutralize(model)] if model else []
    parts.append(_count(result.turns, "turn"))
    if result.tool_calls:
        calls = _count(result.tool_calls, "tool call")
        parts.append(f"{calls} ({result.tool_errors} failed)" if result.tool_errors else calls)
    if result.retries:
        parts.append(_count(result.retries, "retry", "retries"))
    usage = result.usage
    parts.append(f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens")
    ratio = result.cache_hit_ratio
    if ratio is not None and (usage.cache_read_tokens or usage.cache_write_tokens):
        parts.append(f"cache hit {ratio:.0%}")
    if result.cost is not None:
        parts.append(f"${result.cost:.4f}{_cost_detail(result)}")
    parts.append(f"{result.duration:.1f}s")
    return " · ".join(parts)


def _cost_detail(result: RunResult) -> str:
    """`` (in $a, out $b, cache read $c, cache write $d)``, the parts that are not zero."""
    split = result.cost_breakdown
    if split is None:
        return ""
    named = [
        ("in", split.input),
        ("out", split.output),
        ("cache read", split.cache_read),
        ("cache write", split.cache_write),
    ]
    shown = [f"{name} ${value:.4f}" for name, value in named if value]
    return f" ({', '.join(shown)})" if shown else ""


def _count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


# -- JSON -------------------------------------------------------------------------------
class JsonRenderer:
    """One JSON object per line on ``out`` for every event; notices and errors are
    objects of type ``notice`` and ``error`` (errors are also written to ``err``)."""

    def __init__(self, out: TextIO, err: TextIO | None = None) -> None:
        self.out = out
        self.err = err

    def _write(self, obj: dict[str, Any]) -> None:
        self.out.write(neutralize(scrub(json.dumps(obj, ensure_ascii=False, default=str))) + "\n")
        self.out.flush()

    def event(self, event: RunEvent) -> None:
        self._write(event_to_dict(event))

    def notice(self, message: str) -> None:
        self._write({"type": "notice", "message": message})

    def error(self, message: str) -> None:
        self._write({"type": "error", "message": message})
        if self.err is not None:
            self.err.write(f"Error: {neutralize(scrub(message))}\n")
            self.err.flush()

    def finish_line(self) -> None:
        return None

    def interrupted(self) -> None:
        return None


# -- plain text -----------------------------------------------------------------------------
class PlainRenderer:
    """The answer on ``out`` (neutralized); everything else as tagged lines on ``err``."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self._open_line = False
        self._model: str | None = None
        self._running: dict[str, str] = {}

    def _line(self, text: str) -> None:
        self.finish_line()
        self.err.write(neutralize(text) + "\n")
        self.err.flush()

    def event(self, event: RunEvent) -> None:
        if isinstance(event, TextDelta):
            if event.text:
                self.out.write(neutralize(event.text))
                self.out.flush()
                self._open_line = not event.text.endswith("\n")
        elif isinstance(event, ToolStart):
            self._running[event.call_id] = event.name
            self._line(f"[tool] {event.name}({summarize_arguments(event.arguments)})")
        elif isinstance(event, ToolProgress):
            done = f"{event.progress:g}" + (f"/{event.total:g}" if event.total else "")
            note = f" {event.message}" if event.message else ""
            self._line(f"[tool] {event.name} {done}{note}")
        elif isinstance(event, ToolEnd):
            self._running.pop(event.call_id, None)
            text = _first_line(_result_text(event.result))
            if event.interrupted:
                self._line(f"[tool] {event.name} interrupted")
            elif event.is_error:
                self._line(f"[tool] {event.name} failed: {text}")
            else:
                self._line(f"[tool] {event.name} done in {event.duration:.2f}s: {text}")
        elif isinstance(event, Retry):
            self._line(
                f"[retry] attempt {event.attempt + 1} in {event.delay:.1f}s after: {event.error} "
                "(text streamed by the failed attempt is discarded)"
            )
        elif isinstance(event, Compaction):
            self._line(
                f"[compaction] {event.strategy}: {event.tokens_before:,} -> {event.tokens_after:,} tokens"
            )
        elif isinstance(event, TurnEnd | RunStart):
            self._model = event.model
        elif isinstance(event, CacheWarning):
            self._line(f"[warning] {event.message}")
        elif isinstance(event, Nested):
            if (line := nested_line(event)) is not None:
                self._line(line)
        elif isinstance(event, Done):
            for name in self._running.values():
                self._line(f"[tool] {name} interrupted")
            self._running.clear()
            self._line(f"[usage] {usage_line(event.result, self._model)}")

    def notice(self, message: str) -> None:
        self._line(message)

    def error(self, message: str) -> None:
        self._line(f"Error: {message}")

    def finish_line(self) -> None:
        if self._open_line:
            self.out.write("\n")
            self.out.flush()
            self._open_line = False

    def interrupted(self) -> None:
        self.finish_line()


# -- rich ------------------------------------------------------------------------------------
def split_finished_blocks(text: str) -> tuple[str, str]:
    """``(finished, rest)``: the Markdown blocks of ``text`` that a blank line outside a
    code fence has closed, and the block still being written."""
    boundary = 0
    in_fence = False
    position = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        position += len(line)
        if not stripped and not in_fence and line.endswith("\n"):
            boundary = position
    return text[:boundary], text[boundary:]


class MarkdownStream:
    """Streams Markdown to a terminal: each block (paragraph, list, code fence, ...) is
    shown rendered while it is written, redrawn as it grows, and left in place once a
    blank line closes it. Only the open block is redrawn, so long answers never scroll
    a redraw off the screen."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.buffer = ""
        self._live: Any = None

    @property
    def active(self) -> bool:
        return bool(self.buffer) or self._live is not None

    def feed(self, text: str) -> None:
        self.buffer += neutralize(text)
        finished, rest = split_finished_blocks(self.buffer)
        if finished.strip():
            self._show(finished, final=True)
        if finished:
            self.buffer = rest
        if self.buffer.strip():
            self._show(self.buffer, final=False)

    def close(self) -> None:
        """Leave the open block rendered as it is and stop redrawing."""
        if self.buffer.strip():
            self._show(self.buffer, final=True)
        elif self._live is not None:
            self._live.stop()
            self._live = None
        self.buffer = ""

    def _show(self, text: str, *, final: bool) -> None:
        from rich.live import Live
        from rich.markdown import Markdown

        if self._live is None:
            self._live = Live(
                console=self.console,
                auto_refresh=False,
                transient=False,
                vertical_overflow="visible",
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        # Links show their address: a link's text must not hide where it leads.
        self._live.update(Markdown(text.strip("\n"), hyperlinks=False), refresh=True)
        if final:
            self._live.stop()
            self._live = None


class RichRenderer:
    """Colourful, streaming output for a terminal (see the module docstring)."""

    def __init__(self, console: Console, error_console: Console) -> None:
        self.console = console
        self.error_console = error_console
        self._open_line = False
        self._in_thinking = False
        self._streamed_text = False
        self._model: str | None = None
        self._running: dict[str, str] = {}
        self._markdown = MarkdownStream(console)

    def _stream(self, text: str, style: str | None = None) -> None:
        if text:
            self.console.out(neutralize(text), end="", style=style, highlight=False)
            self._open_line = not text.endswith("\n")

    def _line(self, text: Any) -> None:
        """Print ``text``: a string is neutralized here; a :class:`rich.text.Text` must
        be assembled from neutralized pieces."""
        self.finish_line()
        if isinstance(text, str):
            text = neutralize(text)
        self.console.print(text, highlight=False, soft_wrap=True)

    def event(self, event: RunEvent) -> None:
        from rich.text import Text

        if isinstance(event, TextDelta):
            if self._in_thinking:
                self.finish_line()
                self._in_thinking = False
            self._markdown.feed(event.text)
            self._streamed_text = self._streamed_text or bool(event.text)
        elif isinstance(event, ThinkingDelta):
            self._in_thinking = True
            self._stream(event.text, style="dim italic")
        elif isinstance(event, ToolStart):
            self._in_thinking = False
            self._running[event.call_id] = neutralize(event.name)
            self._line(
                Text.assemble(
                    ("⏺ ", "cyan"),
                    (neutralize(event.name), "bold cyan"),
                    (f"({summarize_arguments(event.arguments)})", "cyan"),
                )
            )
        elif isinstance(event, ToolEnd):
            self._tool_end(event)
        elif isinstance(event, Retry):
            discarded = " (the partial answer above is discarded)" if self._streamed_text else ""
            self._line(
                Text(
                    f"↻ retrying in {event.delay:.1f}s (attempt {event.attempt + 1}): "
                    f"{neutralize(str(event.error))}{discarded}",
                    style="yellow",
                )
            )
            self._streamed_text = False
        elif isinstance(event, Compaction):
            self._line(
                Text(
                    f"⋯ history compacted ({neutralize(event.strategy)}): "
                    f"{event.tokens_before:,} → {event.tokens_after:,} tokens",
                    style="dim",
                )
            )
        elif isinstance(event, RunStart):
            self._model = event.model
        elif isinstance(event, TurnEnd):
            self._model = event.model
            self._streamed_text = False
        elif isinstance(event, CacheWarning):
            self._line(Text(f"⚠ {neutralize(event.message)}", style="yellow"))
        elif isinstance(event, Nested):
            if (line := nested_line(event)) is not None:
                self._line(Text(line, style="dim"))
        elif isinstance(event, Done):
            for name in self._running.values():
                self._line(
                    Text.assemble(("  ✗ ", "bold red"), (name, "red"), (": interrupted", "red"))
                )
            self._running.clear()
            self._line(Text(usage_line(event.result, self._model), style="dim"))

    def _tool_end(self, event: ToolEnd) -> None:
        from rich.text import Text

        self._running.pop(event.call_id, None)
        text = _first_line(_result_text(event.result))
        name = neutralize(event.name)
        if event.interrupted:
            line = Text.assemble(("  ✗ ", "bold red"), (name, "red"), (": interrupted", "red"))
        elif event.is_error:
            line = Text.assemble(("  ✗ ", "bold red"), (name, "red"), (f": {text}", "red"))
        else:
            line = Text.assemble(
                ("  ✓ ", "green"),
                (name, "green"),
                (f" {event.duration:.2f}s ", "dim"),
                (text, "dim"),
            )
        self._line(line)

    def notice(self, message: str) -> None:
        from rich.text import Text

        self._line(Text(neutralize(message), style="dim"))

    def error(self, message: str) -> None:
        from rich.text import Text

        self.finish_line()
        self.error_console.print(
            Text(f"Error: {neutralize(message)}", style="bold red"), highlight=False
        )

    def finish_line(self) -> None:
        self._markdown.close()
        if self._open_line:
            self.console.out("")
            self._open_line = False

    def interrupted(self) -> None:
        # While a run streams, "^C" is not echoed (tether.cli.ctrl_c_echo), so the open
        # block is closed where rich left the cursor; at a prompt the terminal echoed it
        # and the next line starts fresh.
        if self._markdown.active:
            self._markdown.close()
        else:
            self.console.out("")
        self._open_line = False
