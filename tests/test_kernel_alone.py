"""The kernel installs and runs alone: ``pip install ./core`` with nothing beside it.

A fresh virtual environment made by ``uv venv`` gets tether's core only (offline, from
uv's cache, as a user with a warm cache would), plus pytest for the second check. There:

- ``import tether`` works, and a scripted run with a tool and a JSONL session completes
  and leaves its conversation on disk, without importing the command line's or the
  knowledge base's libraries (click, rich, yaml, numpy) or any product distribution;
- pytest, run on an unrelated tiny project, loads no tether plugin: the kernel registers
  no ``pytest11`` entry point (the pytest plugin is tether-testing's).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UV = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))

pytestmark = pytest.mark.skipif(not Path(UV).exists(), reason="uv is not installed")

HEAVY = ("click", "rich", "yaml", "numpy", "pytest")
PRODUCT = ("tether_cli", "tether_knowledge", "tether_memory", "tether_runlog", "tether_testing")

RUN = """
import json, sys
from pathlib import Path

import tether
from tether.sessions import JsonlSession
from tether.testing import Reply, ScriptedProvider, call


@tether.tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b


path = Path(sys.argv[1])
provider = ScriptedProvider([Reply(tool_calls=[call("add", a=2, b=3)]), Reply(text="It is 5.")])
agent = tether.Agent(provider, tools=[add], config=tether.Config())
result = agent.run_sync("What is 2 + 3?", session=JsonlSession(path))
print(json.dumps({
    "output": result.output,
    "tool_result": result.messages[2].tool_results[0].text,
    "lines": len(path.read_text().splitlines()),
    "loaded": sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2].split(","))),
}))
"""


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"{args}\n{proc.stdout}\n{proc.stderr}"
    return proc  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def kernel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh environment holding tether's core and pytest only."""
    venv = tmp_path_factory.mktemp("kernel") / "venv"
    env = _clean_env()
    _run([UV, "venv", "--quiet", "--python", sys.executable, str(venv)], env=env)
    _run(
        [UV, "pip", "install", "--quiet", "--offline", "--python", str(venv / "bin" / "python"),
         str(ROOT / "core"), "pytest>=8"],
        env=env,
    )  # fmt: skip
    return venv / "bin"


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TETHER_", "PYTEST_"))
        and k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONPATH")
    }
    return {**env, **extra}


def test_the_kernel_alone_runs_a_tool_into_a_jsonl_session(
    kernel_venv: Path, tmp_path: Path
) -> None:
    session = tmp_path / "session.jsonl"
    env = _clean_env(HOME=str(tmp_path / "home"), TETHER_DATA_DIR=str(tmp_path / "data"))
    proc = _run(
        [str(kernel_venv / "python"), "-c", RUN, str(session), ",".join(HEAVY + PRODUCT)],
        env=env,
        cwd=tmp_path,
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["output"] == "It is 5." and report["tool_result"] == "5"
    assert report["lines"] >= 4  # user, assistant (the call), tool (the result), assistant
    assert report["loaded"] == []
    # No product distribution is installed at all, and no run log was written.
    for package in PRODUCT:
        found = subprocess.run(
            [str(kernel_venv / "python"), "-c", f"import {package}"], capture_output=True, env=env
        )
        assert found.returncode != 0, f"{package} is installed with the kernel alone"
    assert not list(tmp_path.rglob("runs.sqlite"))


def test_an_old_import_path_names_the_distribution_to_install(kernel_venv: Path) -> None:
    proc = subprocess.run(
        [str(kernel_venv / "python"), "-c", "import tether.runlog"],
        capture_output=True,
        text=True,
        env=_clean_env(),
    )
    assert proc.returncode == 1
    assert "pip install tether-runlog" in proc.stderr


def test_pytest_in_the_kernel_alone_loads_no_tether_plugin(
    kernel_venv: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_tiny.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    proc = _run(
        [str(kernel_venv / "python"), "-m", "pytest", "--trace-config", "-p", "no:cacheprovider"],
        cwd=project,
        env=_clean_env(),
    )
    assert "1 passed" in proc.stdout
    registered = [line for line in proc.stdout.splitlines() if "tether" in line.lower()]
    assert registered == [], registered
    entry_points = _run(
        [str(kernel_venv / "python"), "-c",
         "from importlib.metadata import entry_points; "
         "print(sorted(e.value for e in entry_points(group='pytest11')))"],
        env=_clean_env(),
    )  # fmt: skip
    assert "tether" not in entry_points.stdout
