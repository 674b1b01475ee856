"""The documentation's code runs.

- Every ```` ```python ```` block (without a title) of the pages in :data:`RUNNABLE_PAGES`
  (the README, getting started, concepts, configuration, the knowledge base, the plugin
  tutorial) is
  executed, page by page, in one namespace per page, like a reader pasting them in
  order; top-level ``await`` is allowed. Python blocks of every other page under
  ``docs/`` must at least compile, and ``tether.toml`` blocks of every page must be a
  valid configuration.
- Blocks with ``title="path"`` are files of the plugin tutorial
  (``docs/writing-a-tool-plugin.md``): they are written out, the distribution is built and
  installed, its own tests are run with pytest, ``tether plugins`` must find it and a
  scripted model must be able to call its tools by the toolset's name.
- Relative links between the pages point at files that exist.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import linecache
import re
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
TUTORIAL = DOCS / "writing-a-tool-plugin.md"
TETHER = Path(sys.executable).with_name("tether")

_FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`]*)$")
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')
_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    language: str
    title: str | None
    code: str
    line: int


def code_blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, in order."""
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None or not match.group("info").strip():
            index += 1
            continue
        info = match.group("info").strip()
        language = info.split()[0]
        title = _TITLE.search(info)
        start = index + 1
        end = start
        while not lines[end].strip().startswith("```"):
            end += 1
        code = (
            "\n".join(line.removeprefix(match.group("indent")) for line in lines[start:end]) + "\n"
        )
        blocks.append(Block(language, title.group("title") if title else None, code, start))
        index = end + 1
    return blocks


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "empty-tether.toml"
    config.write_text("")
    monkeypatch.setenv("TETHER_CONFIG", str(config))
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("TETHER_MODEL", raising=False)


RUNNABLE_PAGES = [
    ROOT / "README.md",
    DOCS / "getting-started.md",
    DOCS / "concepts.md",
    DOCS / "configuration.md",
    DOCS / "structured-output.md",
    DOCS / "approvals.md",
    DOCS / "sub-agents.md",
    DOCS / "skills.md",
    DOCS / "escalation.md",
    DOCS / "answer-limits.md",
    DOCS / "knowledge-base.md",
    DOCS / "strategies.md",
    DOCS / "memory.md",
    TUTORIAL,
]
"""Pages whose examples promise to run as written (other pages may show fragments)."""


def _snippets(page: Path) -> list[tuple[str, str]]:
    """(filename for tracebacks, code) of the page's untitled Python blocks."""
    found = []
    for block in code_blocks(page):
        if block.language == "python" and block.title is None:
            filename = f"{page.name}, block at line {block.line}"
            # Registered so that a failure's traceback shows the documentation's lines.
            linecache.cache[filename] = (
                len(block.code),
                None,
                block.code.splitlines(True),
                filename,
            )
            found.append((filename, block.code))
    return found


def _compile(code: str, filename: str) -> types.CodeType:
    return compile(code, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_snippets_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snippets = _snippets(page)
    assert snippets, f"{page.name} promises runnable examples but has no python block"
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    for filename, code in snippets:
        compiled = _compile(code, filename)
        if compiled.co_flags & inspect.CO_COROUTINE:
            asyncio.run(eval(compiled, namespace))
        else:
            exec(compiled, namespace)


_NOT_RUNNABLE = re.compile(r"^\s*<!-- not runnable: (?P<reason>\S.*\S) -->\s*$")
_SHELL_LANGUAGES = {"console", "bash", "sh", "shell", "pycon"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_runs_or_says_why_not(page: Path) -> None:
    """A Python or console block either runs in the tests (an untitled Python block of a
    runnable page, a file of the tutorial, the README's first commands) or is marked, on the line before its fence,
    with ``<!-- not runnable: REASON -->``."""
    text = page.read_text(encoding="utf-8")
    lines = text.splitlines()
    # The README's console blocks before "Use it from Python" run in test_readme_commands.
    readme_commands_end = (
        text[: text.index("## Use it from Python")].count("\n") if page.name == "README.md" else 0
    )
    unmarked = []
    for block in code_blocks(page):
        if block.language != "python" and block.language not in _SHELL_LANGUAGES:
            continue
        runs = (
            block.language == "python" and (page in RUNNABLE_PAGES or block.title is not None)
        ) or (block.language == "console" and block.line < readme_commands_end)
        marked = block.line >= 2 and _NOT_RUNNABLE.match(lines[block.line - 2]) is not None
        if not runs and not marked:
            unmarked.append(f"line {block.line} ({block.language})")
    assert not unmarked, f"{page.name}: examples neither run nor marked not runnable: {unmarked}"


OTHER_PAGES = [p for p in PAGES if p not in RUNNABLE_PAGES and _snippets(p)]


@pytest.mark.parametrize("page", OTHER_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_snippets_of_other_pages_compile(page: Path) -> None:
    for filename, code in _snippets(page):
        _compile(code, filename)


# -- configuration ------------------------------------------------------------------------------
def _config_models() -> list[tuple[str, type]]:
    from tether.config import (
        CompactionConfig,
        Config,
        DurableConfig,
        LimitsConfig,
        MemoryConfig,
        OutputConfig,
        PermissionsConfig,
        ProviderConfig,
        SessionsConfig,
        StrategyConfig,
    )

    return [
        ("", Config),
        ("limits.", LimitsConfig),
        ("compaction.", CompactionConfig),
        ("memory.", MemoryConfig),
        ("sessions.", SessionsConfig),
        ("durable.", DurableConfig),
        ("permissions.", PermissionsConfig),
        ("output.", OutputConfig),
        ("strategy.", StrategyConfig),
        ("providers.<name>.", ProviderConfig),
    ]


def test_every_configuration_key_is_documented() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [
        prefix + name
        for prefix, model in _config_models()
        for name, field in model.model_fields.items()  # type: ignore[attr-defined]
        if not field.exclude and f"`{name}`" not in text
    ]
    assert not missing, f"configuration.md does not document: {missing}"


def test_every_environment_variable_is_documented() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    sources = [ROOT / "core" / "src" / "tether" / name for name in ("config.py", "plugins.py")]
    variables = {
        v for src in sources for v in re.findall(r"TETHER_[A-Z_]+", src.read_text(encoding="utf-8"))
    }
    assert variables and all(f"`{v}`" in text for v in variables), variables


TOML_PAGES = [
    p for p in PAGES if any(b.language == "toml" and b.title is None for b in code_blocks(p))
]


@pytest.mark.parametrize("page", TOML_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_tether_toml_snippets_are_valid(page: Path) -> None:
    import tomllib

    from tether.config import parse_config

    for block in code_blocks(page):
        if block.language == "toml" and block.title is None:
            parse_config(
                tomllib.loads(block.code), source=Path(f"{page.name}, block at line {block.line}")
            )


# -- the plugin tutorial --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tutorial_install(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The tutorial's distribution written out from the page and installed into a target
    directory (as pip would into site-packages). Returns (project dir, site dir)."""
    project = tmp_path_factory.mktemp("tether-notes")
    files = [b for b in code_blocks(TUTORIAL) if b.title is not None]
    assert {b.title for b in files} == {
        "pyproject.toml",
        "src/tether_notes/__init__.py",
        "tests/test_notes.py",
    }
    for block in files:
        path = project / block.title  # type: ignore[operator]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.code, encoding="utf-8")
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "uv", "pip", "install", "--quiet", "--offline", "--no-deps",
         "--no-build-isolation", "--python", sys.executable, "--target", str(site), str(project)],
        check=True,
    )  # fmt: skip
    return project, site


def _env(site: Path, tmp_path: Path) -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(site)
    env.pop("TETHER_DISABLE_PLUGIN_AUTOLOAD", None)
    return env


def test_the_tutorial_plugin_passes_its_own_tests(
    tutorial_install: tuple[Path, Path], tmp_path: Path
) -> None:
    project, site = tutorial_install
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        env=_env(site, tmp_path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 passed" in proc.stdout


def test_tether_plugins_finds_the_tutorial_plugin(
    tutorial_install: tuple[Path, Path], tmp_path: Path
) -> None:
    _, site = tutorial_install
    proc = subprocess.run(
        [str(TETHER), "plugins", "--json"],
        env=_env(site, tmp_path),
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(proc.stdout)
    plugin = next(p for p in report["plugins"] if p["name"] == "notes")
    assert (plugin["distribution"], plugin["version"], plugin["hooks"]) == (
        "tether-notes",
        "0.1.0",
        ["register_tools"],
    )
    toolset = next(t for t in report["components"]["tool"] if t["name"] == "notes")
    assert toolset["details"] == "add_note, search_notes"


def test_a_model_uses_the_installed_tutorial_tools_by_name(
    tutorial_install: tuple[Path, Path], tmp_path: Path
) -> None:
    _, site = tutorial_install
    script = """
import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call

provider = ScriptedProvider([
    Reply(tool_calls=[call("add_note", text="Lunch is at noon")]),
    Reply(tool_calls=[call("search_notes", query="lunch")]),
    Reply(text="Found it."),
])
agent = tether.Agent(provider, tools=["notes"], config=Config())
result = agent.run_sync("Remember lunch, then look it up.")
print(result.output)
print(provider.requests[2].messages[-1].tool_results[0].text)
"""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=_env(site, tmp_path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["Found it.", "Lunch is at noon"]
    assert (tmp_path / "NOTES.md").read_text() == "- Lunch is at noon\n"


#: Pages the site's build generates from the code (docs_site/hooks.py); the strict build
#: checks links to them.
GENERATED_PAGES = {DOCS / "reference" / name for name in ("cli.md", "configuration.md", "hooks.md")}


# -- links --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_existing_files(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for match in _LINK.finditer(text):
        target = match.group("target")
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists() or path in GENERATED_PAGES, (
            f"{page.name} links to {target}, which does not exist"
        )
