"""How a run looks: rich on a terminal, plain in a pipe, one JSON object per event."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

from rich.console import Console

from tether.errors import RateLimitError
from tether.events import (
    Compaction,
    Done,
    Retry,
    RunEvent,
    TextDelta,
    ThinkingDelta,
    ToolEnd,
    ToolStart,
    TurnEnd,
)
from tether.messages import StopReason, ToolResultBlock, Usage
from tether.result import Outcome, RunResult
from tether_cli.render import (
    JsonRenderer,
    PlainRenderer,
    RichRenderer,
    event_to_dict,
    make_renderer,
    summarize_arguments,
)

RED = "\x1b[31m"
BOLD_RED = "\x1b[1;31m"


def result(**overrides: object) -> RunResult:
    values: dict[str, object] = {
        "outcome": Outcome.COMPLETED,
        "output": "Done.",
        "messages": [],
        "session_id": "s1",
        "usage": Usage(input_tokens=1200, output_tokens=345),
        "cost": 0.0123,
        "turns": 2,
        "tool_calls": 2,
        "tool_errors": 1,
        "duration": 1.5,
    }
    values.update(overrides)
    return RunResult(**values)  # type: ignore[arg-type]


def a_run() -> list[RunEvent]:
    return [
        ThinkingDelta("Which file?"),
        TextDelta("Let me "),
        TextDelta("look."),
        ToolStart("c1", "read_file", {"path": "README.md", "limit": 10}),
        ToolEnd("c1", "read_file", ToolResultBlock(call_id="c1", content="# tether\nmore"), 0.02),
        ToolStart("c2", "shell", {"command": "rm -rf /"}),
        ToolEnd(
            "c2",
            "shell",
            ToolResultBlock(call_id="c2", content="Refused: dangerous", is_error=True),
            0.01,
        ),
        Retry(attempt=1, delay=2.0, error=RateLimitError("Rate limited.", retry_after=2.0)),
        Compaction("summarize", 90_000, 12_000, 40, 6),
        TurnEnd(
            "acme/big",
            StopReason.END_TURN,
            Usage(input_tokens=1200, output_tokens=345),
            0.4,
            0.0123,
        ),
        TextDelta("Done."),
        Done(result()),
    ]


def rich_output(events: list[RunEvent]) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    renderer = RichRenderer(
        Console(file=out, force_terminal=True, color_system="standard", width=200, highlight=False),
        Console(file=err, force_terminal=True, color_system="standard", width=200, highlight=False),
    )
    for event in events:
        renderer.event(event)
    renderer.error("The provider rejected the key. Set ACME_API_KEY.")
    return out.getvalue(), err.getvalue()


def test_rich_shows_text_dimmed_thinking_tools_errors_in_red_and_a_usage_line() -> None:
    out, err = rich_output(a_run())
    assert "\x1b[2;3mWhich file?" in out  # thinking: dim italic
    assert "Let me look." in out  # deltas of one answer run together
    assert "read_file" in out and '(path="README.md", limit=10)' in out
    assert "✓ " in out and "# tether" in out  # the first line of the result
    assert RED in out and "Refused: dangerous" in out
    assert (
        "retrying in 2.0s (attempt 2): Rate limited. (the partial answer above is discarded)" in out
    )
    assert "90,000 → 12,000 tokens" in out
    assert (
        "acme/big · 2 turns · 2 tool calls (1 failed) · 1,200 in / 345 out tokens · $0.0123 · 1.5s"
        in out
    )
    assert BOLD_RED in err and "Error: The provider rejected the key. Set ACME_API_KEY." in err


def test_rich_starts_tool_lines_on_a_fresh_line_after_streamed_text(
    screen: Callable[[str], list[str]],
) -> None:
    out, _ = rich_output([TextDelta("Let me look."), ToolStart("c1", "grep", {"pattern": "x"})])
    assert screen(out) == ["Let me look.", '⏺ grep(pattern="x")']


def test_rich_renders_the_answer_as_markdown_block_by_block(
    screen: Callable[[str], list[str]],
) -> None:
    deltas = ["# Plan\n\nUse **uv", "** to install.\n\n- one\n", "- two\n\n```py\nx = 1\n", "```\n"]
    out, _ = rich_output([TextDelta(d) for d in deltas])
    shown = screen(out)
    assert [line.strip() for line in shown if line.strip()] == [
        "Plan",
        "Use uv to install.",
        "• one",
        "• two",
        "x = 1",
    ]
    assert "\x1b[1muv\x1b[0m" in out  # bold, not asterisks
    assert "**" not in "".join(shown) and "```" not in "".join(shown)


def test_plain_keeps_stdout_to_the_answer_and_activity_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(out, err)
    for event in a_run():
        renderer.event(event)
    renderer.finish_line()
    assert out.getvalue() == "Let me look.\nDone.\n"
    lines = err.getvalue().splitlines()
    assert lines[0] == '[tool] read_file(path="README.md", limit=10)'
    assert lines[1].startswith("[tool] read_file done in 0.02s: # tether")
    assert lines[3] == "[tool] shell failed: Refused: dangerous"
    assert lines[4].startswith("[retry] attempt 2 in 2.0s after: Rate limited.")
    assert lines[5] == "[compaction] summarize: 90,000 -> 12,000 tokens"
    assert lines[6].startswith("[usage] acme/big · 2 turns")
    assert "\x1b[" not in err.getvalue()


def test_a_tool_still_running_when_the_run_ends_is_shown_as_interrupted() -> None:
    cancelled = result(outcome=Outcome.CANCELLED, tool_calls=1, tool_errors=1)
    events: list[RunEvent] = [ToolStart("c9", "slow_search", {"q": "x"}), Done(cancelled)]
    out, err = io.StringIO(), io.StringIO()
    plain = PlainRenderer(out, err)
    for event in events:
        plain.event(event)
    assert "[tool] slow_search interrupted" in err.getvalue().splitlines()[1]
    rich_out, _ = rich_output(events)
    assert "slow_search" in rich_out and ": interrupted" in rich_out


def test_rich_moves_to_a_fresh_line_after_ctrl_c_is_echoed(
    screen: Callable[[str], list[str]],
) -> None:
    out = io.StringIO()
    renderer = RichRenderer(
        Console(file=out, force_terminal=True, width=80), Console(file=io.StringIO())
    )
    renderer.event(TextDelta("Half an ans"))
    renderer.interrupted()
    renderer.notice("Cancelled.")
    assert screen(out.getvalue()) == ["Half an ans", "Cancelled."]


def test_json_writes_one_parseable_object_per_event() -> None:
    out, err = io.StringIO(), io.StringIO()
    renderer = JsonRenderer(out, err)
    for event in a_run():
        renderer.event(event)
    renderer.error("boom")
    objects = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [o["type"] for o in objects] == [
        "thinking_delta", "text_delta", "text_delta", "tool_start", "tool_end", "tool_start", "tool_end",
        "retry", "compaction", "turn_end", "text_delta", "done", "error",
    ]  # fmt: skip
    assert objects[6] == {
        "type": "tool_end", "call_id": "c2", "name": "shell", "is_error": True,
        "interrupted": False, "duration": 0.01, "content": "Refused: dangerous",
    }  # fmt: skip
    assert objects[7]["error_type"] == "RateLimitError" and objects[7]["delay"] == 2.0
    assert objects[9]["usage"]["input_tokens"] == 1200 and objects[9]["stop_reason"] == "end_turn"
    assert objects[11]["outcome"] == "completed" and objects[11]["cost"] == 0.0123
    assert err.getvalue() == "Error: boom\n"


def test_event_to_dict_serialises_image_results_and_failed_runs() -> None:
    from tether.errors import MaxTurnsExceeded
    from tether.messages import ImageBlock, TextBlock

    block = ToolResultBlock(call_id="c", content=[TextBlock(text="chart"), ImageBlock(data="aGk=")])
    end = event_to_dict(ToolEnd("c", "plot", block, 0.1))
    assert end["content"][0] == {"type": "text", "text": "chart"}
    assert end["content"][1]["type"] == "image"
    done = event_to_dict(
        Done(result(outcome=Outcome.LIMIT, error=MaxTurnsExceeded("Too many turns.")))
    )
    assert (done["outcome"], done["error"], done["error_type"]) == (
        "limit",
        "Too many turns.",
        "MaxTurnsExceeded",
    )
    json.dumps(end), json.dumps(done)


def test_long_arguments_are_summarised_on_one_line() -> None:
    summary = summarize_arguments({"path": "a" * 100, "content": "x\n" * 500, "n": 3})
    assert len(summary) <= 80 and "\n" not in summary
    assert summary.startswith('path="aaaa') and "…" in summary
    assert summarize_arguments({}) == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_make_renderer_picks_rich_for_a_terminal_plain_for_a_pipe_and_json_when_asked() -> None:
    assert isinstance(make_renderer(stdout=_Terminal(), stderr=io.StringIO()), RichRenderer)
    assert isinstance(make_renderer(stdout=io.StringIO(), stderr=io.StringIO()), PlainRenderer)
    assert isinstance(
        make_renderer(json_mode=True, stdout=_Terminal(), stderr=io.StringIO()), JsonRenderer
    )
