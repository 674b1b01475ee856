"""A whole ``tether run`` imports the SDK of the chosen provider and no other vendor's:
start-up time is mostly imports, and the other plugins stay installed and registered."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tether_testing.http import FakeResponse, FakeServer
from tether_testing.wire import (
    anthropic_reply,
    anthropic_text,
    chat_reply,
    gemini_part,
    gemini_reply,
)

SDKS = {"openai": "openai", "anthropic": "anthropic", "google": "google.genai"}


@dataclass(frozen=True)
class Case:
    provider: str
    model: str
    env: Callable[[str], dict[str, str]]
    reply: Callable[[], FakeResponse]


CASES = [
    Case(
        "openai",
        "gpt-4.1",
        lambda url: {"OPENAI_API_KEY": "sk-test-key", "OPENAI_BASE_URL": url + "/v1"},
        lambda: chat_reply("gpt-4.1", "Started."),
    ),
    Case(
        "anthropic",
        "claude-haiku-4-5",
        lambda url: {"ANTHROPIC_API_KEY": "sk-ant-test-key", "ANTHROPIC_BASE_URL": url},
        lambda: anthropic_reply(
            "claude-haiku-4-5", anthropic_text(0, "Started."), stop_reason="end_turn"
        ),
    ),
    Case(
        "google",
        "gemini-2.5-flash",
        lambda url: {"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": url},
        lambda: gemini_reply("gemini-2.5-flash", [gemini_part(text="Started.")]),
    ),
]


def imported_modules(stderr: str) -> set[str]:
    """Module names from ``python -X importtime`` output."""
    return {m.group(1) for m in re.finditer(r"^import time:.*\|\s+(\S+)\s*$", stderr, re.M)}


def _python(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``tmp_path`` with an empty configuration file there, its data
    below it, none of this process's provider or ``TETHER_*`` variables, and ``env``."""
    (tmp_path / "tether.toml").write_text("")
    prefixes = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "TETHER_")
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    full_env |= {
        "TETHER_CONFIG": str(tmp_path / "tether.toml"),
        "TETHER_DATA_DIR": str(tmp_path / "data"),
        **env,
    }
    return subprocess.run(
        [sys.executable, *args],
        env=full_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("case", CASES, ids=[c.provider for c in CASES])
def test_a_run_imports_only_the_chosen_providers_sdk(case: Case, tmp_path: Path) -> None:
    tether_cli = shutil.which("tether", path=os.path.dirname(sys.executable))
    assert tether_cli is not None
    with FakeServer() as server:
        server.queue(case.reply())
        model = f"{case.provider}/{case.model}"
        out = _python(
            tmp_path,
            ["-X", "importtime", tether_cli, "run", "-m", model, "--tools", "", "Hi"],
            env=case.env(server.url),
        )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "Started."
    modules = imported_modules(out.stderr)
    assert SDKS[case.provider] in modules
    others = {sdk for name, sdk in SDKS.items() if name != case.provider}
    assert others & modules == set(), f"a {case.provider} run imported {others & modules}"


#: Modules a plain ``tether run`` (default tools, cross-session memory on, run log on)
#: must not import: each serves a feature the run does not use, and start-up time is
#: mostly imports. (``sqlite3`` itself is imported after the answer, by the run log.)
NOT_IMPORTED_BY_A_RUN = (
    "tether_knowledge.knowledge_base",
    "tether_knowledge.backend",
    "tether_knowledge.chunking",
    "tether_knowledge.embedders",
    "tether_knowledge.keyword_index",
    "tether_knowledge.vector_index",
    "tether_knowledge.memory_backend",
    "tether_memory.scanner",
    "tether_memory.intent",
    "tether.sessions.sqlite",
    "tether_runlog.trace",
    "tether_runlog.html",
    "tether_cli.chat",
    "tether_cli.slash",
    "tether_knowledge.commands",
    "tether_cli.sessions",
    "tether_runlog.commands",
    "tether_cli.scaffold",
    "tether_tools.fs",  # no tools are enabled: the tools plugin loads, its tools do not
    "tether_tools.shell",
    "tether_tools.web",
    "rich",
    "markdown_it",
    "pygments",
    "numpy",
    "chromadb",
    "opentelemetry.sdk",
    "mcp",
    "bs4",
    "markdownify",
)


#: Runs ``tether ARGS`` as the console script does and writes the names in ``sys.modules``
#: at exit (after the run, from an exit handler) to the file named by the first argument.
LAUNCHER = """
import atexit, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
sys.argv[0] = "tether"
from tether_cli import main
main()
"""


def test_a_plain_run_imports_none_of_the_features_it_does_not_use(tmp_path: Path) -> None:
    listing = tmp_path / "modules.txt"
    with FakeServer() as server:
        server.queue(chat_reply("gpt-4.1", "Started."))
        env = {
            "HOME": str(tmp_path),
            "OPENAI_API_KEY": "sk-test-key",
            "OPENAI_BASE_URL": server.url + "/v1",
        }
        out = _python(
            tmp_path, ["-c", LAUNCHER, str(listing), "run", "-m", "openai/gpt-4.1", "Hi"], env=env
        )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "Started."
    modules = set(listing.read_text().split())
    assert {"tether_cli.run", "tether_tools.plugin", "openai"} <= modules  # the probe works
    assert (tmp_path / "data" / "runs.sqlite").exists()
    unwanted = {
        name
        for name in modules
        if any(name == bad or name.startswith(bad + ".") for bad in NOT_IMPORTED_BY_A_RUN)
    }
    assert unwanted == set(), f"a plain run imported {sorted(unwanted)}"
