"""What the file tools show and change, as the model sees it."""

from __future__ import annotations

import os
from pathlib import Path

from tether.testing import call_tool
from tether_tools.fs import edit_file, glob, grep, list_dir, read_file, write_file


def _text(result: object) -> str:
    content = result.content
    assert isinstance(content, str)
    return content


# -- read_file -----------------------------------------------------------------------
async def test_read_file_numbers_lines_and_reads_a_range(tmp_path: Path) -> None:
    (tmp_path / "poem.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    result = await call_tool(
        read_file, {"path": "poem.txt", "start_line": 3, "end_line": 5}, cwd=tmp_path
    )
    lines = _text(result).splitlines()
    assert lines[0] == "poem.txt · lines 3-5 of 10 · utf-8"
    assert lines[1:] == ["3\tline 3", "4\tline 4", "5\tline 5"]


async def test_read_file_caps_lines_and_says_how_to_continue(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"{n}\n" for n in range(1, 101)))
    result = await call_tool(
        read_file, {"path": "long.txt"}, cwd=tmp_path, settings={"max_lines": 10}
    )
    text = _text(result)
    assert "10\t10" in text and "11\t11" not in text
    assert "Continue with start_line=11" in text


async def test_read_file_on_a_file_over_the_size_cap_reads_a_slice(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("".join(f"entry {n:05d}\n" for n in range(20000)))
    result = await call_tool(
        read_file,
        {"path": "big.log", "start_line": 15001, "end_line": 15002},
        cwd=tmp_path,
        settings={"max_read_bytes": 4096},
    )
    assert not result.is_error
    assert _text(result).splitlines()[1:] == ["15001\tentry 15000", "15002\tentry 15001"]


async def test_read_file_refuses_binary_and_names_what_it_is(tmp_path: Path) -> None:
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    result = await call_tool(read_file, {"path": "logo.png"}, cwd=tmp_path)
    assert result.is_error
    assert "a PNG image" in _text(result)


async def test_read_file_detects_and_accepts_encodings(tmp_path: Path) -> None:
    (tmp_path / "utf16.txt").write_text("héllo wörld\n", encoding="utf-16")
    (tmp_path / "latin.txt").write_bytes("café crème brûlée, à la française\n".encode("latin-1"))
    utf16 = await call_tool(read_file, {"path": "utf16.txt"}, cwd=tmp_path)
    assert "héllo wörld" in _text(utf16)
    explicit = await call_tool(
        read_file, {"path": "latin.txt", "encoding": "latin-1"}, cwd=tmp_path
    )
    assert "café crème brûlée" in _text(explicit)
    wrong = await call_tool(
        read_file, {"path": "latin.txt", "encoding": "no-such-codec"}, cwd=tmp_path
    )
    assert wrong.is_error and "Unknown encoding" in _text(wrong)


async def test_read_file_missing_and_directory(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    missing = await call_tool(read_file, {"path": "nope.txt"}, cwd=tmp_path)
    assert missing.is_error and "nope.txt does not exist" in _text(missing)
    folder = await call_tool(read_file, {"path": "pkg"}, cwd=tmp_path)
    assert folder.is_error and "is a directory" in _text(folder)


# -- write_file ------------------------------------------------------------------------
async def test_write_file_creates_parents_and_replaces_atomically(tmp_path: Path) -> None:
    created = await call_tool(
        write_file, {"path": "a/b/new.txt", "content": "one\ntwo\n"}, cwd=tmp_path
    )
    assert _text(created) == "Created a/b/new.txt (8 bytes, 2 lines)."
    (tmp_path / "a/b/new.txt").chmod(0o600)
    replaced = await call_tool(
        write_file, {"path": "a/b/new.txt", "content": "three"}, cwd=tmp_path
    )
    assert _text(replaced).startswith("Replaced a/b/new.txt")
    assert (tmp_path / "a/b/new.txt").read_text() == "three"
    assert (tmp_path / "a/b/new.txt").stat().st_mode & 0o777 == 0o600
    assert sorted(os.listdir(tmp_path / "a/b")) == ["new.txt"]  # no temporary file left behind


async def test_write_file_refuses_content_over_the_limit(tmp_path: Path) -> None:
    result = await call_tool(
        write_file,
        {"path": "huge.txt", "content": "x" * 2000},
        cwd=tmp_path,
        settings={"max_write_bytes": 1000},
    )
    assert result.is_error and "more than the 1000-byte limit" in _text(result)
    assert not (tmp_path / "huge.txt").exists()


# -- edit_file -------------------------------------------------------------------------
SOURCE = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


async def test_edit_file_replaces_exactly_one_match(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    result = await call_tool(
        edit_file,
        {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"},
        cwd=tmp_path,
    )
    assert _text(result) == "Edited calc.py: 1 replacement starting at line 2."
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


async def test_edit_file_with_several_matches_lists_them_and_changes_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "calc.py").write_text(SOURCE)
    result = await call_tool(
        edit_file,
        {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"},
        cwd=tmp_path,
    )
    assert result.is_error
    assert "occurs 2 times in calc.py (at lines 2, 6)" in _text(result)
    assert (tmp_path / "calc.py").read_text() == SOURCE
    everywhere = await call_tool(
        edit_file,
        {"path": "calc.py", "old_text": "a - b", "new_text": "b - a", "replace_all": True},
        cwd=tmp_path,
    )
    assert "2 replacements" in _text(everywhere)
    assert (tmp_path / "calc.py").read_text().count("b - a") == 2


async def test_edit_file_without_a_match_shows_the_nearest_passage(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(SOURCE)
    result = await call_tool(
        edit_file,
        {"path": "calc.py", "old_text": "def ad(a, b):", "new_text": "def plus(a, b):"},
        cwd=tmp_path,
    )
    text = _text(result)
    assert result.is_error
    assert "old_text was not found in calc.py; the file is unchanged." in text
    assert "line 1:\n1\tdef add(a, b):" in text
    assert (tmp_path / "calc.py").read_text() == SOURCE


async def test_edit_file_points_out_whitespace_differences(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(SOURCE)
    result = await call_tool(
        edit_file,
        {"path": "calc.py", "old_text": "def add(a, b):\n  return a - b", "new_text": "x"},
        cwd=tmp_path,
    )
    assert "matches if whitespace is ignored" in _text(result)


async def test_edit_file_keeps_windows_line_endings(tmp_path: Path) -> None:
    (tmp_path / "win.txt").write_bytes(b"alpha\r\nbeta\r\n")
    result = await call_tool(
        edit_file,
        {"path": "win.txt", "old_text": "alpha\nbeta", "new_text": "alpha\ngamma"},
        cwd=tmp_path,
    )
    assert not result.is_error
    assert (tmp_path / "win.txt").read_bytes() == b"alpha\r\ngamma\r\n"


# -- list_dir, glob, grep -----------------------------------------------------------------
def _project(tmp_path: Path) -> Path:
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "core.py").write_text("def load_config():\n    return {}\n")
    (tmp_path / "src" / "main.py").write_text("from pkg.core import load_config\nload_config()\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "gen.py").write_text("def load_config(): pass\n")
    (tmp_path / "debug.log").write_text("load_config failed\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("load_config = true\n")
    (tmp_path / "README.md").write_text("# demo\n")
    return tmp_path


async def test_list_dir_shows_folders_files_and_links(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "latest").symlink_to("src")
    text = _text(await call_tool(list_dir, {}, cwd=tmp_path))
    lines = text.splitlines()
    assert lines[0] == "./ · 3 folders, 4 files"
    assert lines[1:4] == [".git/", "build/", "src/"]
    assert "README.md  7 B" in lines
    assert "latest -> src" in lines


async def test_glob_matches_across_folders_and_respects_gitignore(tmp_path: Path) -> None:
    _project(tmp_path)
    text = _text(await call_tool(glob, {"pattern": "**/*.py"}, cwd=tmp_path))
    assert text.splitlines() == ["src/main.py", "src/pkg/core.py"]
    direct = _text(await call_tool(glob, {"pattern": "*.py", "path": "src"}, cwd=tmp_path))
    assert direct.splitlines() == ["src/main.py"]


async def test_grep_finds_lines_and_skips_ignored_files(tmp_path: Path) -> None:
    _project(tmp_path)
    text = _text(await call_tool(grep, {"pattern": r"def load_\w+"}, cwd=tmp_path))
    assert text.splitlines() == ["src/pkg/core.py:1: def load_config():"]
    filtered = _text(
        await call_tool(grep, {"pattern": "load_config", "glob": "main.py"}, cwd=tmp_path)
    )
    assert filtered.splitlines() == [
        "src/main.py:1: from pkg.core import load_config",
        "src/main.py:2: load_config()",
    ]


async def test_grep_caps_output_and_reports_bad_patterns(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 1000)
    capped = _text(
        await call_tool(grep, {"pattern": "hit"}, cwd=tmp_path, settings={"max_matches": 5})
    )
    assert len(capped.splitlines()) == 6
    assert "995 more matches not shown" in capped
    bad = await call_tool(grep, {"pattern": "def (broken"}, cwd=tmp_path)
    assert bad.is_error and "Invalid regular expression" in _text(bad)
