"""A whole ``tether run`` imports the SDK of the chosen provider and no other vendor's:
start-up time is mostly imports, and the other plugins stay installed and registered."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tether.testing.http import FakeResponse, FakeServer
from tether.testing.wire import (
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


@pytest.mark.parametrize("case", CASES, ids=[c.provider for c in CASES])
def test_a_run_imports_only_the_chosen_providers_sdk(case: Case, tmp_path: Path) -> None:
    import subprocess

    tether_cli = shutil.which("tether", path=os.path.dirname(sys.executable))
    assert tether_cli is not None
    (tmp_path / "tether.toml").write_text("")
    prefixes = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "TETHER_")
    with FakeServer() as server:
        server.queue(case.reply())
        env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
        env |= {
            "TETHER_CONFIG": str(tmp_path / "tether.toml"),
            "TETHER_DATA_DIR": str(tmp_path / "data"),
            **case.env(server.url),
        }
        out = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                tether_cli,
                "run",
                "-m",
                f"{case.provider}/{case.model}",
                "--tools",
                "",
                "Hi",
            ],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "Started."
    modules = imported_modules(out.stderr)
    assert SDKS[case.provider] in modules
    others = {sdk for name, sdk in SDKS.items() if name != case.provider}
    assert others & modules == set(), f"a {case.provider} run imported {others & modules}"
