"""An eval interrupted with SIGINT keeps its finished trials; run again, it runs only the
rest (a real ``tether eval run`` subprocess)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tether_evals import read_results

DATASET = """\
name: resume
evaluators: [{type: contains}]
cases:
""" + "".join(
    f"  - {{id: c{n}, inputs: {{prompt: 'case {n}'}}, expected_output: 'answer c{n}'}}\n"
    for n in range(1, 5)
)

AGENT = '''\
import asyncio, os
from pathlib import Path

import tether
from tether.testing import Reply, ScriptedProvider, call


@tether.tool
async def wait_forever() -> str:
    """Blocks until the run is cancelled."""
    await asyncio.Event().wait()
    return "never"


def make_agent(setup):
    with Path(os.environ["CALLS_LOG"]).open("a") as log:
        log.write(setup.case.id + "\\n")
    script = [Reply(text="answer " + setup.case.id)]
    if setup.case.id == "c3" and os.environ.get("BLOCK_C3"):
        script.insert(0, Reply(tool_calls=[call("wait_forever")]))
    return tether.Agent(ScriptedProvider(script), tools=[wait_forever],
                        config=tether.Config(), entry_points=False, skills=False)
'''


def _environment(directory: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    (directory / "tether.toml").write_text("")
    return {
        **env,
        "TETHER_PLUGINS_ALLOW": "evals",
        "TETHER_CONFIG": str(directory / "tether.toml"),
        "TETHER_DATA_DIR": str(directory / "data"),
        "CALLS_LOG": str(directory / "calls.log"),
        **extra,
    }


def _wait_for(condition: object, what: str, deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while not condition():  # type: ignore[operator]
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_an_interrupted_eval_resumes_with_only_the_unfinished_cases(tmp_path: Path) -> None:
    tether_cli = shutil.which("tether", path=os.path.dirname(sys.executable))
    assert tether_cli is not None
    (tmp_path / "cases.yaml").write_text(DATASET)
    (tmp_path / "slow_agent.py").write_text(AGENT)
    results, calls = tmp_path / "results.jsonl", tmp_path / "calls.log"
    command = [
        tether_cli, "eval", "run", "cases.yaml", "--agent", "slow_agent.py:make_agent",
        "--results", str(results), "--concurrency", "1",
    ]  # fmt: skip
    first = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=_environment(tmp_path, BLOCK_C3="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(lambda: calls.exists() and "c3" in calls.read_text().split(), "case c3 to start")
        first.send_signal(signal.SIGINT)
        _, stderr = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 130, stderr
    assert "Interrupted" in stderr and "resume" in stderr
    assert [t.case_id for t in read_results(results)] == ["c1", "c2"]

    second = subprocess.run(
        command, cwd=tmp_path, env=_environment(tmp_path), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert "Resuming: 2 of 4 trials already done." in second.stdout
    assert calls.read_text().split() == ["c1", "c2", "c3", "c3", "c4"]
    saved = read_results(results)
    assert sorted(t.case_id for t in saved) == ["c1", "c2", "c3", "c4"]
    assert all(t.passed for t in saved)
