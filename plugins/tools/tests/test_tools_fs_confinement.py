"""Every escape from the workspace is refused with a clear error, and nothing is read or
written outside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.testing import call_tool
from tether_tools.fs import edit_file, glob, grep, list_dir, read_file, write_file


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``tmp_path/root`` (the workspace), ``tmp_path/root-evil`` (a sibling whose name
    starts with the root's) and ``tmp_path/outside/secret.txt``."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "docs").mkdir()
    evil = tmp_path / "root-evil"
    evil.mkdir()
    (evil / "loot.txt").write_text("sibling secret\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    return root, evil, outside


def _text(result: object) -> str:
    content = result.content
    assert isinstance(content, str)
    return content


ESCAPES = [
    ("../outside/secret.txt", "climbs out of the workspace"),
    ("src/../../outside/secret.txt", "climbs out of the workspace"),
    ("../root-evil/loot.txt", "climbs out of the workspace"),
]


@pytest.mark.parametrize(("path", "why"), ESCAPES)
async def test_read_refuses_traversal(layout: tuple[Path, Path, Path], path: str, why: str) -> None:
    root, _, _ = layout
    result = await call_tool(read_file, {"path": path}, cwd=root)
    assert result.is_error
    assert why in _text(result)
    assert "secret" not in _text(result).replace("secret.txt", "")


async def test_absolute_path_outside_is_refused(layout: tuple[Path, Path, Path]) -> None:
    root, _, outside = layout
    result = await call_tool(read_file, {"path": str(outside / "secret.txt")}, cwd=root)
    assert result.is_error
    assert "absolute path outside the workspace" in _text(result)
    assert "top secret" not in _text(result)


async def test_sibling_directory_sharing_the_root_prefix_is_outside(
    layout: tuple[Path, Path, Path],
) -> None:
    root, evil, _ = layout
    result = await call_tool(
        write_file, {"path": str(evil / "loot.txt"), "content": "pwned"}, cwd=root
    )
    assert result.is_error
    assert "outside the workspace" in _text(result)
    assert (evil / "loot.txt").read_text() == "sibling secret\n"


async def test_absolute_path_inside_the_root_is_fine(layout: tuple[Path, Path, Path]) -> None:
    root, _, _ = layout
    result = await call_tool(read_file, {"path": str(root / "src" / "app.py")}, cwd=root)
    assert not result.is_error
    assert "print('hi')" in _text(result)


async def test_benign_dotdot_that_stays_inside_is_allowed(layout: tuple[Path, Path, Path]) -> None:
    root, _, _ = layout
    result = await call_tool(read_file, {"path": "docs/../src/app.py"}, cwd=root)
    assert not result.is_error
    assert "1\tprint('hi')" in _text(result)


async def test_symlink_to_outside_file_is_refused_for_read_and_write(
    layout: tuple[Path, Path, Path],
) -> None:
    root, _, outside = layout
    (root / "link.txt").symlink_to(outside / "secret.txt")
    read = await call_tool(read_file, {"path": "link.txt"}, cwd=root)
    write = await call_tool(write_file, {"path": "link.txt", "content": "pwned"}, cwd=root)
    edit = await call_tool(
        edit_file, {"path": "link.txt", "old_text": "top", "new_text": "pwned"}, cwd=root
    )
    for result in (read, write, edit):
        assert result.is_error
        assert "symbolic link that points outside the workspace" in _text(result)
    assert "top secret" not in _text(read)
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert (root / "link.txt").is_symlink()


async def test_symlinked_directory_to_outside_is_refused(layout: tuple[Path, Path, Path]) -> None:
    root, _, outside = layout
    (root / "escape").symlink_to(outside, target_is_directory=True)
    result = await call_tool(write_file, {"path": "escape/new.txt", "content": "x"}, cwd=root)
    assert result.is_error
    assert "symbolic link" in _text(result)
    assert not (outside / "new.txt").exists()
    listing = await call_tool(list_dir, {"path": "escape"}, cwd=root)
    assert listing.is_error
    assert "secret.txt" not in _text(listing)


async def test_dangling_symlink_pointing_outside_cannot_create_a_file(
    layout: tuple[Path, Path, Path],
) -> None:
    root, _, outside = layout
    target = outside / "created-by-agent.txt"
    (root / "dangling").symlink_to(target)
    result = await call_tool(write_file, {"path": "dangling", "content": "pwned"}, cwd=root)
    assert result.is_error
    assert "points outside the workspace" in _text(result)
    assert not target.exists()


async def test_symlink_inside_the_workspace_is_followed(layout: tuple[Path, Path, Path]) -> None:
    root, _, _ = layout
    (root / "alias.py").symlink_to(root / "src" / "app.py")
    result = await call_tool(read_file, {"path": "alias.py"}, cwd=root)
    assert not result.is_error
    assert "print('hi')" in _text(result)


async def test_proc_and_devices_are_refused_even_under_a_root_that_contains_them(
    tmp_path: Path,
) -> None:
    for path in ("/proc/self/environ", "/dev/zero", "/sys/kernel"):
        result = await call_tool(read_file, {"path": path}, cwd="/")
        assert result.is_error, path
        assert "system pseudo-file or device" in _text(result)


async def test_fifo_inside_the_workspace_is_refused(layout: tuple[Path, Path, Path]) -> None:
    root, _, _ = layout
    os.mkfifo(root / "pipe")
    result = await call_tool(read_file, {"path": "pipe"}, cwd=root)
    assert result.is_error
    assert "device, FIFO or socket" in _text(result)


async def test_home_directory_paths_are_refused(layout: tuple[Path, Path, Path]) -> None:
    root, _, _ = layout
    result = await call_tool(read_file, {"path": "~/.ssh/id_rsa"}, cwd=root)
    assert result.is_error
    assert "home directory" in _text(result)


async def test_configured_root_confines_below_the_working_directory(
    layout: tuple[Path, Path, Path],
) -> None:
    root, _, _ = layout
    result = await call_tool(
        read_file, {"path": "../src/app.py"}, cwd=root, settings={"root": "docs"}
    )
    assert result.is_error
    assert "climbs out" in _text(result)


async def test_glob_refuses_escaping_patterns_and_skips_links_outside(
    layout: tuple[Path, Path, Path],
) -> None:
    root, _, outside = layout
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    refused = await call_tool(glob, {"pattern": "../outside/*"}, cwd=root)
    assert refused.is_error
    assert "may not contain `..`" in _text(refused)
    everything = await call_tool(glob, {"pattern": "**/*"}, cwd=root)
    assert "secret" not in _text(everything)
    assert "src/app.py" in _text(everything)


async def test_grep_does_not_read_through_links_outside(layout: tuple[Path, Path, Path]) -> None:
    root, _, outside = layout
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    result = await call_tool(grep, {"pattern": "top secret"}, cwd=root)
    assert not result.is_error
    assert _text(result).startswith("No matches")
