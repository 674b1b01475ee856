"""File tools at their edges: a path naming a directory is not written as a file, and a
file made of one very long line is shown (cut), never as "empty"."""

from __future__ import annotations

from pathlib import Path

from tether.testing import call_tool
from tether_tools.fs import edit_file, read_file, write_file


async def test_a_path_with_a_trailing_slash_is_not_written_as_a_file(tmp_path: Path) -> None:
    for path in ("notes/", "notes/.", "existing/"):
        result = await call_tool(write_file, {"path": path, "content": "x"}, cwd=tmp_path)
        assert result.is_error, path
        assert "names a directory, not a file" in str(result.content)
    assert not (tmp_path / "notes").exists()
    (tmp_path / "a.txt").write_text("one\n")
    result = await call_tool(
        edit_file, {"path": "a.txt/", "old_text": "one", "new_text": "two"}, cwd=tmp_path
    )
    assert result.is_error
    assert (tmp_path / "a.txt").read_text() == "one\n"


async def test_a_six_megabyte_single_line_file_is_shown_cut_not_empty(tmp_path: Path) -> None:
    (tmp_path / "one-line.json").write_text('{"data": "' + "é" * 3_000_000 + '"}')
    result = await call_tool(read_file, {"path": "one-line.json"}, cwd=tmp_path)
    assert not result.is_error, result.content
    text = str(result.content)
    assert "empty file" not in text
    assert text.splitlines()[1].startswith('1\t{"data": "éééé')
    assert "line cut" in text
    assert "Line 1 is longer than 262144 bytes; only its start was read" in text


async def test_a_long_line_after_the_start_is_skipped_and_the_next_shown(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_bytes(b"x" * 600_000 + b"\nsecond line\n" + b"y" * 10 + b"\n")
    result = await call_tool(read_file, {"path": "f.txt", "start_line": 2}, cwd=tmp_path)
    assert not result.is_error, result.content
    assert "2\tsecond line" in str(result.content)
    assert "3\tyyyyyyyyyy" in str(result.content)
