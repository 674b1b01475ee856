"""Skills: instructions the model loads on demand (the Agent Skills format).

A skill is a folder holding ``SKILL.md``, whose YAML front matter names it and says when
to use it, plus any files the instructions refer to::

    .tether/skills/release-notes/
        SKILL.md
        template.md

    ---
    name: release-notes
    description: Write release notes from the changelog. Use when asked for release notes.
    tools: [fs]                # optional: tools or toolsets the skill needs
    ---
    1. Read CHANGELOG.md ...

Skills come from the project (``.tether/skills/``), the user's config directory
(``<config dir>/skills/``) and plugins (the ``register_skills`` hook). Only the index —
names and descriptions, sorted, so it is byte-stable — goes into the system prompt; the
``load_skill`` tool returns a skill's body (or one of its files) when the model asks.
Tools a loaded skill names are offered from the next model call on, appended after the
tools the run started with so the cached prompt prefix survives.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, ToolError
from .tools import Tool, ToolContext

__all__ = [
    "SKILL_FILE",
    "Skill",
    "SkillError",
    "SkillSet",
    "discover_skills",
    "parse_skill",
    "skill_dirs",
]

SKILL_FILE = "SKILL.md"
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.S)
MAX_DESCRIPTION = 1024


class SkillError(ConfigError):
    """A skill folder or ``SKILL.md`` is malformed; the message names the file."""


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: its name, when to use it, its instructions, and what it brings."""

    name: str
    description: str
    body: str
    path: Path | None = None
    """The skill's folder, when it lives on disk."""
    tools: tuple[str, ...] = ()
    """Names of tools or toolsets offered once the skill is loaded."""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def files(self) -> list[str]:
        """Other files in the skill's folder, relative, sorted."""
        if self.path is None:
            return []
        return sorted(
            p.relative_to(self.path).as_posix()
            for p in self.path.rglob("*")
            if p.is_file() and p.name != SKILL_FILE
        )


def _front_matter(file: Path, text: str) -> Any:
    """The YAML front matter ``text`` of ``file``, parsed. PyYAML is imported here only:
    the kernel runs without it until a skill is read."""
    try:
        import yaml
    except ImportError:
        raise SkillError(
            f"Reading {file} needs PyYAML, which is not installed: the skills extra "
            'brings it (pip install "tether[skills]"; the command line has it already).'
        ) from None
    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise SkillError(f"The front matter of {file} is not valid YAML: {exc}") from None


def parse_skill(source: str | os.PathLike[str], *, text: str | None = None) -> Skill:
    """Parse a skill folder (or its ``SKILL.md``); ``text`` parses given content instead.

    Raises :class:`SkillError` for a missing file, missing or malformed front matter, an
    invalid name (lowercase letters, digits and single hyphens, at most 64 characters), or
    a missing or over-long description.
    """
    path = Path(source)
    folder = path.parent if path.name == SKILL_FILE else path
    file = folder / SKILL_FILE
    if text is None:
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SkillError(f"{folder} has no {SKILL_FILE}; a skill folder needs one.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SkillError(f"Cannot read {file}: {exc}.") from None
    match = _FRONT_MATTER.match(text.lstrip("\ufeff"))
    if match is None:
        raise SkillError(
            f"{file} has no front matter. Start it with '---', then 'name:' and "
            "'description:' lines, then '---'."
        )
    front = _front_matter(file, match.group(1))
    if not isinstance(front, dict):
        raise SkillError(f"The front matter of {file} must be a mapping of keys to values.")
    name = front.get("name")
    if not isinstance(name, str) or not name or len(name) > 64 or not _NAME.match(name):
        raise SkillError(
            f"{file}: 'name' must be 1-64 lowercase letters, digits and hyphens "
            f"(like 'release-notes'), got {name!r}."
        )
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(
            f"{file}: 'description' is required: say what the skill does and when to use it."
        )
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(
            f"{file}: 'description' has {len(description)} characters; the limit is {MAX_DESCRIPTION}."
        )
    tools = _tool_names(front.get("tools", front.get("allowed-tools")), file)
    extra = {
        k: v for k, v in front.items() if k not in ("name", "description", "tools", "allowed-tools")
    }
    return Skill(
        name=name,
        description=description,
        body=match.group(2).strip(),
        path=folder if (folder / SKILL_FILE).is_file() else None,
        tools=tools,
        metadata=extra,
    )


def _tool_names(value: Any, file: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(part for part in re.split(r"[,\s]+", value) if part)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise SkillError(f"{file}: 'tools' must be a list of tool or toolset names, got {value!r}.")


def skill_dirs(cwd: Path) -> list[Path]:
    """Where skills are looked for, lowest precedence first: the user's config directory,
    then the project (``.tether/skills`` in ``cwd``). A project skill replaces a user skill
    of the same name."""
    import platformdirs

    return [Path(platformdirs.user_config_dir("tether")) / "skills", cwd / ".tether" / "skills"]


def discover_skills(
    directories: Iterable[Path], on_error: Callable[[SkillError], None] | None = None
) -> list[Skill]:
    """Every skill in the subfolders of ``directories`` (missing directories are skipped).

    A malformed skill is reported to ``on_error`` (raised when it is ``None``); the others
    still load. A later directory's skill replaces an earlier one of the same name.
    """
    found: dict[str, Skill] = {}
    for directory in directories:
        if not directory.is_dir():
            continue
        for folder in sorted(p for p in directory.iterdir() if p.is_dir()):
            if not (folder / SKILL_FILE).is_file():
                continue
            try:
                skill = parse_skill(folder)
            except SkillError as exc:
                if on_error is None:
                    raise
                on_error(exc)
                continue
            found[skill.name] = skill
    return list(found.values())


class SkillSet:
    """The skills one agent offers: the index for the system prompt and ``load_skill``."""

    def __init__(self, skills: Iterable[Skill] = ()) -> None:
        self._skills: dict[str, Skill] = {}
        for skill in skills:
            self._skills[skill.name] = skill

    def __iter__(self) -> Iterator[Skill]:
        return iter(sorted(self._skills.values(), key=lambda s: s.name))

    def __len__(self) -> int:
        return len(self._skills)

    def __contains__(self, name: object) -> bool:
        return name in self._skills

    def get(self, name: str) -> Skill:
        skill = self._skills.get(name)
        if skill is None:
            available = ", ".join(sorted(self._skills)) or "(none)"
            raise ToolError(f"There is no skill named `{name}`. Available skills: {available}.")
        return skill

    def index(self) -> str:
        """The system-prompt section listing every skill; identical for identical skills."""
        if not self._skills:
            return ""
        lines = [
            "## Skills",
            "Skills hold instructions for specific tasks. When a task matches a skill's "
            "description, call `load_skill` with its name and follow what it says.",
        ]
        lines += [f"- {skill.name}: {skill.description}" for skill in self]
        return "\n".join(lines)

    def load_tool(self) -> Tool:
        """The ``load_skill`` tool. When a loaded skill names tools, they are added to the
        calling run (``ToolContext.scope.add_tools``) for its next model calls."""
        skills = self

        def load_skill(name: str, ctx: ToolContext, file: str | None = None) -> str:
            """Load a skill's instructions (or one of its files) by name.

            Args:
                name: The skill's name, as listed under Skills.
                file: A file of the skill to read instead of its instructions, e.g. "template.md".
            """
            skill = skills.get(name)
            if file is not None:
                return _read_skill_file(skill, file)
            parts = [f"# Skill: {skill.name}", skill.body]
            files = skill.files()
            if files:
                parts.append(
                    "Files of this skill (read one with load_skill(name, file=...)): "
                    + ", ".join(files)
                )
            add_tools = getattr(ctx.scope, "add_tools", None)
            if skill.tools and add_tools is not None:
                added = add_tools(skill.tools)
                if added:
                    parts.append(f"Tools now available for this skill: {', '.join(added)}.")
            return "\n\n".join(parts)

        return Tool(load_skill, sequential=True)


def _read_skill_file(skill: Skill, file: str) -> str:
    if skill.path is None:
        raise ToolError(f"Skill `{skill.name}` has no files.")
    root = skill.path.resolve()
    target = (root / file).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        raise ToolError(
            f"Skill `{skill.name}` has no file {file!r}. Its files: {', '.join(skill.files()) or '(none)'}."
        )
    return target.read_text(encoding="utf-8", errors="replace")
