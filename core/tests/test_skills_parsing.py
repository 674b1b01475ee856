"""Skills on disk: parsing SKILL.md, discovery order, bad skills, the index and load_skill."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

import tether
from tether.cancel import CancelToken
from tether.plugins import PluginManager
from tether.skills import Skill, SkillError, SkillSet, discover_skills, parse_skill
from tether.tools import ToolContext


def write_skill(
    root: Path, name: str, description: str, body: str = "Do it.", extra: str = ""
) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n", encoding="utf-8"
    )
    return folder


def test_front_matter_body_tools_and_files(tmp_path: Path) -> None:
    folder = write_skill(
        tmp_path, "release-notes", "Write release notes.", extra="tools: [fs, shell]\n"
    )
    (folder / "template.md").write_text("## Added\n", encoding="utf-8")
    skill = parse_skill(folder)
    assert (skill.name, skill.description, skill.body) == (
        "release-notes",
        "Write release notes.",
        "Do it.",
    )
    assert skill.tools == ("fs", "shell")
    assert skill.files() == ["template.md"]
    assert parse_skill(folder / "SKILL.md") == skill


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter", "has no front matter"),
        ("---\nname: Bad Name\ndescription: x\n---\n", "'name' must be"),
        ("---\nname: ok\n---\nbody", "'description' is required"),
        ("---\nname: ok\ndescription: [unclosed\n---\n", "not valid YAML"),
        ("---\nname: ok\ndescription: d\ntools: 3\n---\n", "'tools' must be a list"),
    ],
)
def test_malformed_skills_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    with pytest.raises(SkillError, match=message):
        parse_skill(folder)


def test_project_skills_replace_user_skills_and_bad_ones_are_reported(tmp_path: Path) -> None:
    user, project = tmp_path / "user", tmp_path / "project"
    write_skill(user, "deploy", "User deploy.")
    write_skill(user, "lint", "Lint things.")
    write_skill(project, "deploy", "Project deploy.")
    (project / "broken").mkdir()
    (project / "broken" / "SKILL.md").write_text("oops", encoding="utf-8")
    errors: list[SkillError] = []
    skills = discover_skills([user, project, tmp_path / "missing"], on_error=errors.append)
    assert {s.name: s.description for s in skills} == {
        "deploy": "Project deploy.",
        "lint": "Lint things.",
    }
    assert len(errors) == 1 and "broken" in str(errors[0])


def test_index_is_sorted_and_byte_stable() -> None:
    a = Skill("zeta", "Last.", "z")
    b = Skill("alpha", "First.", "a")
    index = SkillSet([a, b]).index()
    assert index == SkillSet([b, a]).index()
    assert index.index("- alpha: First.") < index.index("- zeta: Last.")
    assert SkillSet().index() == ""


def _ctx(tmp_path: Path, scope: object = None) -> ToolContext:
    return ToolContext("c1", "load_skill", "s", "k", tmp_path, CancelToken(), scope=scope)


def test_load_skill_returns_the_body_a_file_and_activates_tools(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "notes", "Notes.", body="Step one.", extra="tools: fs\n")
    (folder / "template.md").write_text("TEMPLATE", encoding="utf-8")
    activated: list[tuple[str, ...]] = []

    def add_tools(names: tuple[str, ...]) -> list[str]:
        activated.append(tuple(names))
        return list(names)

    tool = SkillSet([parse_skill(folder)]).load_tool()
    scope = SimpleNamespace(add_tools=add_tools)

    async def call(**arguments: object) -> object:
        return await tool.call(tool.validate(arguments), _ctx(tmp_path, scope))

    text = asyncio.run(call(name="notes"))
    assert (
        "Step one." in text
        and "template.md" in text
        and "Tools now available for this skill: fs" in text
    )
    assert activated == [("fs",)]
    assert asyncio.run(call(name="notes", file="template.md")) == "TEMPLATE"
    with pytest.raises(tether.errors.ToolError, match="has no file"):
        asyncio.run(call(name="notes", file="../../etc/passwd"))
    with pytest.raises(tether.errors.ToolError, match="Available skills: notes"):
        asyncio.run(call(name="other"))


def test_plugins_register_skills_through_the_hook(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "from-plugin", "Registered by a plugin.")

    @tether.hookimpl
    def register_skills(skills):  # type: ignore[no-untyped-def]
        skills.add(folder)

    manager = PluginManager(plugins=[SimpleNamespace(register_skills=register_skills)])
    assert manager.skills.get("from-plugin").description == "Registered by a plugin."
