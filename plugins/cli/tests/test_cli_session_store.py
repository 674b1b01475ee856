"""``tether chat`` keeps its sessions in the store the configuration names."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

FAKE = ["-p", "cli_fake_model"]


@pytest.fixture
def cli_config() -> str:
    return 'model = "fake/fake-small"\ntools = ["add"]\n[sessions]\nstore = "sqlite"\n'


def test_chat_resumes_a_session_kept_in_sqlite(
    tmp_path: Path, invoke: Callable[..., Result]
) -> None:
    first = invoke(*FAKE, "chat", "--session", "work", input="hello\nadd 1 2\n")
    assert first.exit_code == 0, first.stderr
    assert 'New session "work"' in first.stderr
    second = invoke(*FAKE, "chat", "--session", "work", input="history\n")
    assert second.exit_code == 0, second.stderr
    assert 'Resumed session "work" (6 messages)' in second.stderr
    assert "I was sent 7 messages." in second.stdout
    assert not (tmp_path / "data" / "sessions").exists()  # no JSONL files
    with sqlite3.connect(tmp_path / "data" / "sessions.sqlite3") as conn:
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM tether_session_messages WHERE session = 'work'"
        ).fetchone()
    assert count == 8


def test_an_unknown_store_is_reported_with_the_installed_ones(
    tmp_path: Path, invoke: Callable[..., Result]
) -> None:
    (tmp_path / "tether-test.toml").write_text(
        'model = "fake/fake-small"\n[sessions]\nstore = "postgres"\n'
    )
    result = invoke(*FAKE, "chat", "--session", "work", input="hello\n")
    assert result.exit_code != 0
    assert 'No session store named "postgres"' in result.stderr
    assert "tether-postgres" in result.stderr
