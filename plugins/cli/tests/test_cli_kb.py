"""``tether kb``: documents are keyed by their absolute resolved path, so where you stand
(or how you spell the path) never changes which document a file is."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

pytest.importorskip("tether_sqlite")  # a persistent backend: each command is a new process

Invoke = Callable[..., Result]
SQLITE = ("-p", "tether_sqlite")


@pytest.fixture
def cli_config() -> str:
    return '[knowledge]\nbackend = "sqlite"\n'


@pytest.fixture
def invoke(invoke: Invoke) -> Invoke:
    """``tether -p tether_sqlite ...`` (plugins are not loaded from entry points here)."""
    return lambda *args, **kwargs: invoke(*SQLITE, *args, **kwargs)


@pytest.fixture
def project(cli_environment: Path) -> Path:
    docs = cli_environment / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "guides" / "retries.md").write_text("Backoff is exponential.\nCapped at 30 s.\n")
    (docs / "setup.md").write_text("Install with uv.\n")
    return cli_environment


def documents(invoke: Invoke) -> list[str]:
    listed = invoke("kb", "list", "--json")
    assert listed.exit_code == 0, listed.stderr
    return [json.loads(line)["doc"] for line in listed.stdout.splitlines()]


def test_the_same_file_added_from_two_directories_is_indexed_once(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = invoke("kb", "add", "docs")
    assert first.exit_code == 0, first.stderr
    assert "2 added" in first.stdout

    monkeypatch.chdir(project / "docs" / "guides")
    again = invoke("kb", "add", "retries.md", "../setup.md", "../../docs/guides/retries.md")
    assert again.exit_code == 0, again.stderr
    assert "Indexed 2 files: 0 added, 0 updated, 2 unchanged" in again.stdout

    retries = (project / "docs" / "guides" / "retries.md").resolve().as_posix()
    setup = (project / "docs" / "setup.md").resolve().as_posix()
    assert sorted(documents(invoke)) == sorted([retries, setup])

    link = project / "alias"
    os.symlink(project / "docs", link)
    monkeypatch.chdir(project)
    through_link = invoke("kb", "add", "alias/setup.md")
    assert "1 unchanged" in through_link.stdout
    assert len(documents(invoke)) == 2


def test_list_and_search_show_paths_relative_to_the_kb_root(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke("kb", "add", "docs")
    monkeypatch.chdir(project / "docs")  # somewhere else: the display does not change
    listed = invoke("kb", "list")
    assert "docs/guides/retries.md\t1 chunks" in listed.stdout
    assert "docs/setup.md\t1 chunks" in listed.stdout
    found = invoke("kb", "search", "capped backoff")
    assert "[1] docs/guides/retries.md:1-2" in found.stdout


@pytest.mark.parametrize(
    ("where", "spelling"),
    [
        (".", "docs/setup.md"),  # as `kb list` shows it
        ("docs", "setup.md"),  # relative to where you stand
        ("docs/guides", "../setup.md"),
        ("docs/guides", "absolute"),
    ],
)
def test_kb_rm_works_with_any_spelling_of_the_path(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch, where: str, spelling: str
) -> None:
    invoke("kb", "add", "docs")
    monkeypatch.chdir(project / where)
    if spelling == "absolute":
        spelling = str(project / "docs" / "setup.md")
    removed = invoke("kb", "rm", spelling)
    assert removed.exit_code == 0, removed.stderr
    assert [Path(doc).name for doc in documents(invoke)] == ["retries.md"]
