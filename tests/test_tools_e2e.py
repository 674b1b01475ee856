"""An agent run end to end through the runner, with the tools of tether-tools loaded from
their entry point by name: read a file, run a tiny project's tests (they fail), fix the
bug with an edit, run the tests again (they pass), fetch a page from a local server."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import tether
from tether.config import Config
from tether.messages import Message, ToolResultBlock
from tether.testing import Reply, ScriptedProvider, assert_invariant, call

# The shell, file and web tools run for real here, hostile commands included.
pytestmark = pytest.mark.usefixtures("sandbox")

CHANGELOG = b"""<html><head><title>Changelog</title></head><body>
<h1>calc 1.1</h1><ul><li>add() adds again</li></ul><script>track()</script></body></html>"""


@pytest.fixture
def changelog_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = (200, CHANGELOG) if self.path == "/changelog" else (404, b"missing")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text(
        'def add(a, b):\n    """Sum of a and b."""\n    return a - b\n'
    )
    (tmp_path / "test_calc.py").write_text(
        "import unittest\n\nfrom calc import add\n\n\n"
        "class AddTest(unittest.TestCase):\n"
        "    def test_add(self):\n"
        "        self.assertEqual(add(2, 3), 5)\n"
    )
    return tmp_path


def _results(messages: list[Message]) -> list[ToolResultBlock]:
    return [r for m in messages for r in m.tool_results]


async def test_agent_reads_edits_tests_and_fetches(project: Path, changelog_server: str) -> None:
    run_tests = f"{sys.executable} -m unittest -v test_calc"
    provider = ScriptedProvider(
        [
            Reply(text="Let me look.", tool_calls=[call("read_file", path="calc.py")]),
            Reply(tool_calls=[call("run_command", command=run_tests)]),
            Reply(
                tool_calls=[
                    call(
                        "edit_file",
                        path="calc.py",
                        old_text="return a - b",
                        new_text="return a + b",
                    )
                ]
            ),
            Reply(tool_calls=[call("run_command", command=run_tests)]),
            Reply(tool_calls=[call("web_fetch", url=f"{changelog_server}/changelog")]),
            Reply(text="Fixed add(); the tests pass and the changelog agrees."),
        ]
    )
    config = Config(
        tools=["fs", "shell", "web"],
        tool_settings={
            "web": {"allow_private_hosts": ["127.0.0.1"]},
            # The sandbox shows commands only the system and the workspace; this test runs
            # the harness's own interpreter, so it is shown too (read-only).
            "shell": {
                "timeout": 120,
                "read_only_paths": [sys.prefix, sys.base_prefix],
                # An edit within the second of the first run, of the same size, would
                # otherwise leave a stale calc.pyc looking fresh.
                "env": {"PYTHONDONTWRITEBYTECODE": "1"},
            },
        },
    )
    agent = tether.Agent(provider, config=config, cwd=project)
    assert [t.name for t in agent.tools()] == [
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "glob",
        "grep",
        "run_command",
        "web_fetch",
        "web_search",
    ]

    result = await agent.run("add() is broken; fix it and check the changelog.")

    assert result.ok, result.error
    assert result.output == "Fixed add(); the tests pass and the changelog agrees."
    assert (result.tool_calls, result.tool_errors) == (5, 0)
    assert_invariant(result.messages)
    read, failing, edit, passing, fetched = (r.content for r in _results(result.messages))
    assert isinstance(read, str) and "3\t    return a - b" in read
    assert (
        isinstance(failing, str)
        and failing.startswith("Exit code: 1\n")
        and "FAILED (failures=1)" in failing
    )
    assert edit == "Edited calc.py: 1 replacement starting at line 3."
    assert isinstance(passing, str) and passing.startswith("Exit code: 0\n") and "OK" in passing
    assert isinstance(fetched, str)
    assert fetched.startswith(
        f"URL: {changelog_server}/changelog\nContent-Type: text/html\nTitle: Changelog\n\n"
    )
    assert "# calc 1.1" in fetched and "- add() adds again" in fetched and "track()" not in fetched
    assert (
        project / "calc.py"
    ).read_text() == 'def add(a, b):\n    """Sum of a and b."""\n    return a + b\n'
    # the model saw every tool result before its next turn
    last_request = provider.requests[-1]
    assert _results(last_request.messages)[-1].content == fetched


async def test_agent_gets_the_policy_reason_and_nothing_runs(project: Path) -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("run_command", command="touch marker && sh -c 'rm -rf ~'")]),
            Reply(text="I will not do that."),
        ]
    )
    agent = tether.Agent(provider, config=Config(tools=["shell"]), cwd=project)
    result = await agent.run("clean up everything")
    (blocked,) = _results(result.messages)
    assert blocked.is_error
    assert blocked.content == (
        "Blocked by the command policy; nothing was run. "
        "`rm -rf ~` is blocked: it recursively deletes a home directory (`~`)."
    )
    assert not (project / "marker").exists()
    assert result.tool_errors == 1
