"""What a tool's argument means to the approval rules: a path, a command line, or text.

Approval rules (:mod:`tether.approvals`) match glob patterns against a call's arguments.
Matching the raw text is easy to get around: ``docs/../src/evil.py`` starts with
``docs/``, and ``git status; touch X`` starts with ``git status``. So a tool declares
what its arguments *mean*, and the rules see that meaning instead of the spelling::

    @tether.tool(subjects={"path": PATH})
    def read_file(path: str) -> str: ...

    @tether.tool(subjects={"command": CommandSubject(split_command)})
    def run_command(command: str) -> str: ...

This is the contract between the core and tool plugins; the core imports no plugin.

- :data:`PATH`: the argument names a file. Before any rule sees it, it is joined to the
  tool's workspace root, normalised (``.``, ``..``, ``//``) and resolved (symlinks,
  dangling ones included), with :func:`resolve_path`. Rules then match the path relative
  to the root (``secrets/key.txt``) or, for absolute patterns, the absolute real path. A
  path that resolves outside the root matches no ``allow`` pattern. On a case-insensitive
  file system, paths and patterns are compared case-folded.
- :class:`CommandSubject`: the argument is a shell command line. The tool supplies
  ``split``, which turns a line into every :class:`Invocation` it could run (one per
  simple command, seen through lists, pipelines, substitutions, wrappers, ...) or raises
  :class:`~tether.errors.UnreadableCommand` for what it cannot read. The core never
  parses shell itself: the plugin that runs commands knows its shell.

A tool's first declared subject is the argument a pattern without a name
(``read_file(secrets/**)``) matches; tools that declare none keep the old behaviour (the
first text argument, raw).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PATH",
    "CommandSubject",
    "Invocation",
    "PathSubject",
    "ResolvedPath",
    "Subject",
    "case_insensitive",
    "command_matches",
    "path_matches",
    "resolve_path",
]


@dataclass(frozen=True, slots=True)
class PathSubject:
    """The argument names a file or directory in the tool's workspace (see :data:`PATH`)."""


PATH = PathSubject()
"""Declare a path argument: ``@tool(subjects={"path": PATH})``."""


@dataclass(frozen=True, slots=True)
class Invocation:
    """One program a command line runs, as the shell would run it.

    ``program`` is written as in the line (``/usr/bin/touch``, ``touch``), quotes removed;
    ``args`` likewise, with what is only known when the line runs kept as written
    (``$HOME``, ``$(date)``). ``env`` holds the ``NAME=value`` assignments it runs with
    (``FOO=1 cmd``, ``env FOO=1 cmd``); ``redirects`` the files it reads or writes
    (``>out.txt``).
    """

    program: str
    args: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    redirects: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The program without its directory: ``/usr/bin/touch`` -> ``touch``."""
        return posixpath.basename(self.program.rstrip("/")) or self.program

    @property
    def written(self) -> str:
        """The invocation as it will run: what an ``allow`` pattern must match."""
        return " ".join((*self.env, self.program, *self.args, *self.redirects))

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every name the invocation goes by (``deny`` and ``ask`` patterns match any)."""
        forms = (
            self.written,
            " ".join((self.name, *self.args, *self.redirects)),
            " ".join((self.name, *self.args)),
            " ".join((self.program, *self.args)),
        )
        return tuple(dict.fromkeys(forms))


@dataclass(frozen=True, slots=True)
class CommandSubject:
    """The argument is a command line; ``split`` reads it into :class:`Invocation` s.

    ``split(line)`` returns every invocation the line could run, in any order (an empty
    sequence for a line that runs nothing, e.g. only an assignment), and raises
    :class:`~tether.errors.UnreadableCommand` when it cannot tell. It must be pure: it is
    called before the tool runs, possibly more than once per call.
    """

    split: Callable[[str], Sequence[Invocation]]


Subject = PathSubject | CommandSubject


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    """A path argument as the rules see it.

    ``relative`` is the POSIX path below the root (``"."`` for the root itself), or
    ``None`` when the path resolves outside it; ``absolute`` is the real path.
    ``folded``: compare case-insensitively (the root's file system ignores case).
    """

    relative: str | None
    absolute: str
    folded: bool = False

    @property
    def inside(self) -> bool:
        return self.relative is not None


def resolve_path(value: str, root: Path | str) -> ResolvedPath:
    """``value`` joined to ``root``, normalised and resolved, as :class:`ResolvedPath`.

    ``~`` is the home directory; symlinks are followed (a dangling link to where its
    target would be); nothing is created or written. A value the OS cannot take as a path
    (a NUL byte) resolves to nowhere inside the root.
    """
    real_root = os.path.realpath(root)
    folded = case_insensitive(real_root)
    if "\x00" in value:
        return ResolvedPath(None, value, folded)
    expanded = os.path.expanduser(value) if value.startswith("~") else value
    candidate = os.path.join(real_root, expanded)
    real = os.path.realpath(candidate)
    if real == real_root:
        return ResolvedPath(".", real, folded)
    prefix = real_root.rstrip(os.sep) + os.sep
    if real.startswith(prefix):
        relative = real[len(prefix) :].replace(os.sep, "/")
        return ResolvedPath(relative, real, folded)
    return ResolvedPath(None, real, folded)


@functools.lru_cache(maxsize=64)
def case_insensitive(directory: str) -> bool:
    """Whether the file system holding ``directory`` ignores case in names.

    Decided by looking up the nearest component of ``directory`` that has letters with
    its case swapped (nothing is written); ``False`` when no component has letters.
    """
    path = Path(directory)
    for part in (path, *path.parents):
        name = part.name
        if name and name.swapcase() != name:
            try:
                return os.path.samefile(part, part.with_name(name.swapcase()))
            except OSError:
                return False
    return False


def path_matches(pattern: str, path: ResolvedPath, *, allow: bool) -> bool:
    """Whether the glob ``pattern`` covers ``path``.

    A relative pattern (``docs/**``, ``./secrets/*``) is normalised and matched against
    the path relative to the workspace root; an absolute one (or ``~/...``) against the
    real path. ``*`` also matches ``/``, and ``dir/**`` covers ``dir`` itself. ``allow``
    patterns never match a path outside the root; ``deny`` and ``ask`` patterns also try
    the real path, so ``*.pem`` catches ``/etc/ssl/key.pem``.
    """
    if allow and not path.inside:
        return False
    text = os.path.expanduser(pattern) if pattern.startswith("~") else pattern
    if text.startswith("/"):
        candidates = [path.absolute]
    else:
        while text.startswith("./"):
            text = text[2:]
        text = posixpath.normpath(text) if text else "."
        candidates = [path.relative] if path.relative is not None else []
        if not allow:
            candidates.append(path.absolute)
    patterns = [text, text[:-3]] if text.endswith("/**") else [text]
    if path.folded:
        patterns = [p.casefold() for p in patterns]
        candidates = [c.casefold() for c in candidates if c is not None]
    return any(fnmatch.fnmatchcase(c, p) for c in candidates if c is not None for p in patterns)


def command_matches(pattern: str, line: str, invocation: Invocation | None, *, allow: bool) -> bool:
    """Whether the glob ``pattern`` covers ``invocation`` of the command ``line``.

    Whitespace runs count as one space (none after ``>`` or ``<``: redirections read as
    ``>out.txt``), and ``touch *`` also covers a bare ``touch``. An
    ``allow`` pattern must match the invocation as it will run
    (:attr:`Invocation.written`), and covers one that reads or writes a file through a
    redirection (``git status >~/.bashrc``) only if the pattern itself has a ``<`` or
    ``>``; ``deny`` and ``ask`` patterns match any of its :attr:`~Invocation.spellings`
    or the whole line. With no invocation (a line that could not be read, or that runs
    no program) only ``deny`` and ``ask`` patterns can match, against the whole line.
    """
    if allow and invocation is None:
        return False
    names_redirects = "<" in pattern or ">" in pattern
    if allow and invocation is not None and invocation.redirects and not names_redirects:
        return False
    glob = re.sub(r"([<>])\s+", r"\1", " ".join(pattern.split()))
    texts = [invocation.written] if invocation is not None else []
    if not allow:
        texts.extend(invocation.spellings if invocation is not None else ())
        texts.append(" ".join(line.split()))
    return any(fnmatch.fnmatchcase(t, glob) or fnmatch.fnmatchcase(t + " ", glob) for t in texts)
