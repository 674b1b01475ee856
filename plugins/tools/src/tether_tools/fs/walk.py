"""Walking a workspace tree the way ``git`` sees it: ``.git`` and ``.gitignore``-d paths
are skipped, directory symlinks are not followed, nothing outside the root is visited."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .workspace import Workspace

__all__ = ["IgnoreRules", "compile_glob", "walk_files"]


@dataclass(slots=True)
class IgnoreRules:
    """The ``.gitignore`` files met so far, each applying below its own directory."""

    workspace: Workspace
    _specs: dict[Path, Any] = field(default_factory=dict)

    def load(self, directory: Path) -> None:
        """Read ``directory/.gitignore`` if there is one (once)."""
        if directory in self._specs:
            return
        spec = None
        ignore_file = directory / ".gitignore"
        if ignore_file.is_file() and not ignore_file.is_symlink():
            import pathspec

            try:
                lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = []
            spec = pathspec.GitIgnoreSpec.from_lines(lines)
        self._specs[directory] = spec

    def load_ancestors(self, directory: Path) -> None:
        """Load the ``.gitignore`` files from the workspace root down to ``directory``."""
        chain = [directory, *directory.parents]
        for folder in reversed(chain):
            if self.workspace.contains(folder):
                self.load(folder)

    def ignored(self, path: Path, is_dir: bool) -> bool:
        if path.name == ".git":
            return True
        ignored = False
        for folder in [*reversed(path.parents)]:
            spec = self._specs.get(folder)
            if spec is None:
                continue
            relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            result = spec.check_file(relative).include
            if result is not None:
                ignored = result
        return ignored


def walk_files(
    workspace: Workspace, base: Path, *, respect_gitignore: bool = True
) -> Iterator[Path]:
    """Every regular file below ``base`` (sorted, depth-first), minus ignored paths."""
    rules = IgnoreRules(workspace)
    if respect_gitignore:
        rules.load_ancestors(base)
    for directory, dirnames, filenames in os.walk(base, followlinks=False):
        current = Path(directory)
        if respect_gitignore:
            rules.load(current)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d != ".git" and not (respect_gitignore and rules.ignored(current / d, True))
        )
        for name in sorted(filenames):
            path = current / name
            if respect_gitignore and rules.ignored(path, False):
                continue
            if path.is_symlink():
                real = Path(os.path.realpath(path))
                if not workspace.contains(real) or not real.is_file():
                    continue
            elif not path.is_file():
                continue
            yield path


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex for a path glob: ``**/`` spans folders, ``*``, ``?`` and ``[...]`` stay
    inside one path segment."""
    parts: list[str] = []
    segments = pattern.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:.*/)?")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(parts), re.DOTALL)


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := segment.find("]", i + 2)) != -1:
            body = segment[i + 1 : end]
            negate = body.startswith(("!", "^"))
            body = re.sub(r"([\\\]^])", r"\\\1", body[1:] if negate else body)
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)
