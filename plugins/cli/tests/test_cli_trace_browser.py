"""``tether trace RUN --html`` in a real browser: headless Chromium renders the page and
takes a screenshot, and the timeline's bars are on it (the colours of model calls, tool
calls and the nested run). Skipped only when no Chromium binary is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import tether
from tether.config import Config
from tether.retry import RetryPolicy
from tether.testing import Reply, ScriptedProvider, call, rate_limited
from tether_runlog import open_run_log
from tether_runlog import plugin as runlog_plugin
from tether_testing.screenshots import read_png

CHROMIUM = next(
    (
        path
        for name in ("chromium", "chromium-browser", "google-chrome", "chrome")
        if (path := shutil.which(name))
    ),
    None,
)
WIDTH, HEIGHT = 1400, 900
COLOURS = {"model": (0x79, 0x50, 0xF2), "tool": (0x12, 0xB8, 0x86), "run": (0x4C, 0x6E, 0xF5)}


def has_colour(rows: list[bytes], colour: tuple[int, int, int]) -> bool:
    needle = bytes(colour)
    return any(needle in row and row.index(needle) % 3 == 0 for row in rows)


async def no_sleep(delay: float) -> None:
    return None


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tether.tool
async def delegate(task: str) -> str:
    """Hand a task to a helper agent."""
    inner = ScriptedProvider([Reply(tool_calls=[call("add", a=10, b=20)]), Reply(text="30")])
    return (
        await tether.Agent(inner, tools=[add], config=Config(), plugins=[runlog_plugin]).run(task)
    ).output


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary installed")
def test_the_html_trace_renders_its_timeline_in_headless_chromium(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, invoke: object
) -> None:
    monkeypatch.setenv("TETHER_RUN_LOG", str(tmp_path / "runs.sqlite"))
    provider = ScriptedProvider(
        [
            Reply(text="Adding.", tool_calls=[call("add", a=1, b=2), call("add", a="x", b=4)]),
            rate_limited(retry_after=0.0),
            Reply(tool_calls=[call("delegate", task="add 10 and 20")]),
            Reply(text="The sums are 3 and 30."),
        ]
    )
    agent = tether.Agent(
        provider,
        tools=[add, delegate],
        retry=RetryPolicy(sleep=no_sleep),
        config=Config(),
        plugins=[runlog_plugin],
    )
    result = agent.run_sync("Add 1 and 2, then ask a helper for 10 + 20.")
    open_run_log(tmp_path / "runs.sqlite").flush()
    page = tmp_path / "trace.html"
    written = invoke("trace", result.run_id[:12], "--html", str(page))  # type: ignore[operator]
    assert written.exit_code == 0, written.stderr

    shot = tmp_path / "trace.png"
    browser = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--window-size={WIDTH},{HEIGHT}",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shot.is_file(), browser.stderr[-2000:]
    width, height, rows = read_png(shot)
    assert (width, height) == (WIDTH, HEIGHT)
    for kind, colour in COLOURS.items():
        assert has_colour(rows, colour), f"no {kind} bar on the screenshot"
    assert len({row for row in rows}) > 50  # text and bars, not a blank page
