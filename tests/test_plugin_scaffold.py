"""``tether plugin new`` makes plugins that work the moment they exist.

One plugin of each kind is created with the real command in a temporary directory, then
installed with tether itself (from this checkout) into a fresh virtual environment made
by ``uv venv`` — offline, from uv's cache, as a user with a warm cache would. In that
environment: each plugin's own tests pass, ``tether plugins`` lists each new component
under its kind, and each component does its job in a scripted run (a tool called by a
scripted model, the provider answering ``tether run``, the backend indexing and finding a
file through ``tether kb``, the store keeping a ``--session`` conversation across two
``tether run`` processes).
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
TETHER = Path(sys.executable).with_name("tether")
UV = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
#: The distributions beside the kernel that the plugins and the command line need.
PRODUCT = ("cli", "runlog", "memory", "knowledge", "testing")

PLUGINS = {
    "tool": "wordcount",
    "provider": "echoer",
    "kb-backend": "jsonkb",
    "session-store": "jsonstore",
}

pytestmark = pytest.mark.skipif(not Path(UV).exists(), reason="uv is not installed")


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("timeout", 300)
    proc = subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"{args}\n{proc.stdout}\n{proc.stderr}"
    return proc  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(directory of the new plugins, the fresh environment's bin directory)."""
    work = tmp_path_factory.mktemp("plugins")
    for kind, name in PLUGINS.items():
        proc = _run([str(TETHER), "plugin", "new", name, "--kind", kind, "--dir", str(work)])
        assert f"Created {work / f'tether-{name}'}" in proc.stdout
    venv = work / "venv"
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    _run([UV, "venv", "--quiet", "--python", sys.executable, str(venv)], env=env)
    python = venv / "bin" / "python"
    _run(
        [UV, "pip", "install", "--quiet", "--offline", "--python", str(python),
         str(ROOT / "core"), *(str(ROOT / "plugins" / d) for d in PRODUCT),
         *(str(work / f"tether-{n}") for n in PLUGINS.values()),
         "pytest>=8", "pytest-asyncio>=0.24"],
        env=env,
    )  # fmt: skip
    return work, venv / "bin"


def _env(tmp_path: Path, config: str = "") -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TETHER_", "PYTEST_")) and k not in ("VIRTUAL_ENV", "PYTHONPATH")
    }
    (tmp_path / "tether.toml").write_text(config, encoding="utf-8")
    env["TETHER_CONFIG"] = str(tmp_path / "tether.toml")
    env["TETHER_DATA_DIR"] = str(tmp_path / "data")
    return env


def test_each_new_plugin_passes_its_own_tests(made: tuple[Path, Path], tmp_path: Path) -> None:
    work, bin_dir = made
    counts = {}
    for name in PLUGINS.values():
        proc = _run(
            [str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=work / f"tether-{name}",
            env=_env(tmp_path),
        )
        counts[name] = proc.stdout.strip().splitlines()[-1]
    assert all(" passed" in line and "failed" not in line for line in counts.values()), counts
    # The session store ran tether's contract suite (its dozen tests), not only its own.
    assert int(counts["jsonstore"].split()[0]) >= 10, counts


def test_tether_plugins_lists_every_new_component(made: tuple[Path, Path], tmp_path: Path) -> None:
    _, bin_dir = made
    proc = _run([str(bin_dir / "tether"), "plugins", "--json"], env=_env(tmp_path))
    report = json.loads(proc.stdout)
    assert not report["errors"], report["errors"]
    found = {
        (kind, entry["name"], entry["distribution"])
        for kind, entries in report["components"].items()
        for entry in entries
    }
    assert {
        ("tool", "wordcount", "tether-wordcount"),
        ("provider", "echoer", "tether-echoer"),
        ("knowledge backend", "jsonkb", "tether-jsonkb"),
        ("session store", "jsonstore", "tether-jsonstore"),
    } <= found


def test_the_new_tool_is_called_in_a_scripted_run(made: tuple[Path, Path], tmp_path: Path) -> None:
    _, bin_dir = made
    script = """
import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call

provider = ScriptedProvider([
    Reply(tool_calls=[call("wordcount_count_words", text="three little words")]),
    Reply(text="Done."),
])
agent = tether.Agent(provider, tools=["wordcount"], config=Config())
print(agent.run_sync("Count them.").output)
print(provider.requests[1].messages[-1].tool_results[0].text)
"""
    proc = _run([str(bin_dir / "python"), "-c", script], cwd=tmp_path, env=_env(tmp_path))
    assert proc.stdout.splitlines() == ["Done.", "3 words"]


def test_the_new_provider_answers_tether_run(made: tuple[Path, Path], tmp_path: Path) -> None:
    _, bin_dir = made
    proc = _run(
        [str(bin_dir / "tether"), "run", "-m", "echoer/echo", "hello from a new provider"],
        cwd=tmp_path,
        env=_env(tmp_path, '[providers.echoer]\nprefix = "echoed: "\n'),
    )
    assert "echoed: hello from a new provider" in proc.stdout


def test_the_new_backend_indexes_and_finds_a_file(made: tuple[Path, Path], tmp_path: Path) -> None:
    _, bin_dir = made
    env = _env(tmp_path, '[knowledge]\nbackend = "jsonkb"\n')
    (tmp_path / "deploys.md").write_text("# Deploys\n\nThe deploy key rotates on Fridays.\n")
    (tmp_path / "lunch.md").write_text("Lunch is at noon.\n")
    tether = str(bin_dir / "tether")
    _run([tether, "kb", "add", "deploys.md", "lunch.md"], cwd=tmp_path, env=env)
    assert (tmp_path / "data" / "knowledge" / "jsonkb.json").is_file()
    proc = _run([tether, "kb", "search", "--json", "when does the deploy key rotate"],
                cwd=tmp_path, env=env)  # fmt: skip
    passages = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert passages and "deploys.md" in json.dumps(passages[0])


def test_the_new_store_keeps_a_session_across_processes(
    made: tuple[Path, Path], tmp_path: Path
) -> None:
    _, bin_dir = made
    env = _env(tmp_path, '[sessions]\nstore = "jsonstore"\n')
    tether = str(bin_dir / "tether")
    for prompt in ("first message", "second message"):
        _run(
            [tether, "run", "-m", "demo/echo", "--session", "notes", prompt], cwd=tmp_path, env=env
        )
    stored = json.loads((tmp_path / "data" / "jsonstore-sessions" / "notes.json").read_text())
    texts = [json.loads(line) for line in stored["lines"]]
    assert len(texts) == 4 and stored["version"] >= 4
    assert "second message" in json.dumps(texts[2])
