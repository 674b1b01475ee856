"""Development tasks for the tether workspace. ``nox -l`` lists them.

``tests``
    Every test of the workspace (core, each plugin and contrib package, and the
    cross-package ``tests/``) in one pytest run, in the workspace environment that
    ``uv sync --all-packages --all-extras`` made. This is what CI runs (``.ci/run``).
``tests-<package>``
    One distribution's tests in a fresh environment holding only it, the core with its
    ``test`` extra, and the workspace distributions they require (the CLI, the test kit,
    ...): proves the package installs and passes on its own.
``lint``, ``typecheck``
    ruff (check and format) and ``mypy --strict`` over every ``src/`` directory.
``docs``
    Builds the documentation site (MkDocs, ``mkdocs.yml``) into ``site/`` with warnings as
    errors, then runs the documentation's code (``tests/test_docs_examples.py``).
``mutants``
    Mutation testing (mutmut, inside bubblewrap) of the modules ``mutation.toml`` lists;
    ``nox -s mutants -- MODULE...`` for some of them, ``-- --changed BASE`` for those
    changed since a git base, ``-- --help`` for the rest (``tools/mutants.py``).
``bench``
    Runs the benchmarks under ``bench/`` (those that need a data set, ``*_eval.py``,
    only when named: ``nox -s bench -- bench/scifact_eval.py DATA_DIR``).

Sessions that use the workspace environment run with whatever python is first on PATH,
so start them through uv: ``uv run --no-sync nox -s tests``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests", "lint", "typecheck"]


def members() -> list[Path]:
    """Workspace members, as the root pyproject declares them: core, plugins/*, contrib/*."""
    candidates = [
        ROOT / "core",
        *sorted((ROOT / "plugins").glob("*")),
        *sorted((ROOT / "contrib").glob("*")),
    ]
    return [path for path in candidates if (path / "pyproject.toml").is_file()]


def _distribution(member: Path, test: bool = False) -> tuple[str, list[str]]:
    """The member's distribution name and its requirements (with its ``test`` extra's)."""
    project = tomllib.loads((member / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = list(project.get("dependencies", []))
    if test:
        required += project.get("optional-dependencies", {}).get("test", [])
    return project["name"], required


def _optional(member: Path) -> dict[str, list[str]]:
    project = tomllib.loads((member / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(project.get("optional-dependencies", {}))


def workspace_requirements(member: Path) -> list[Path]:
    """The other workspace members ``member`` (with core and their test extras) needs,
    found through their requirements: installed from the workspace, never an index."""
    by_name = {_distribution(m)[0]: m for m in members()}
    wanted: list[Path] = []
    todo = [(member, True), (ROOT / "core", True)]
    while todo:
        current, test = todo.pop()
        for requirement in _distribution(current, test)[1]:
            name = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()
            names = [name]
            extras = re.search(r"\[([^\]]*)\]", requirement)
            if name == "tether" and extras:  # tether[kb]: the distributions of core's extras
                optional = _optional(ROOT / "core")
                for extra in extras.group(1).split(","):
                    names += optional.get(extra.strip(), [])
            for found in (by_name.get(n) for n in names):
                if found is not None and found not in (member, ROOT / "core", *wanted):
                    wanted.append(found)
                    todo.append((found, False))
    return wanted


def test_paths() -> list[str]:
    paths = [str(m.relative_to(ROOT) / "tests") for m in members() if (m / "tests").is_dir()]
    return [*paths, "tests"]


def source_dirs() -> list[str]:
    return [str(m.relative_to(ROOT) / "src") for m in members() if (m / "src").is_dir()]


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """Every test, in the synced workspace environment (the CI test command)."""
    session.run("python", "-m", "pytest", *test_paths(), *session.posargs)


def _member_session(member: Path) -> None:
    relative = member.relative_to(ROOT)

    @nox.session(name=f"tests-{member.name}")
    def member_tests(session: nox.Session) -> None:
        requirements = ["-e", "./core[test]"]
        if member.name != "core":
            requirements += ["-e", f"./{relative}[test]"]
        for needed in workspace_requirements(member):
            requirements += ["-e", f"./{needed.relative_to(ROOT)}"]
        session.install(*requirements, "pytest>=8", "pytest-asyncio>=0.24")
        session.run("python", "-m", "pytest", str(relative / "tests"), *session.posargs)

    member_tests.__doc__ = f"The tests of {relative} alone, in a fresh environment."


for _member in members():
    if (_member / "tests").is_dir():
        _member_session(_member)


@nox.session(venv_backend="none")
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole workspace."""
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(venv_backend="none")
def typecheck(session: nox.Session) -> None:
    """mypy --strict (configured in the root pyproject) over every src/ directory."""
    session.run("python", "-m", "mypy", *source_dirs())


@nox.session(venv_backend="none")
def docs(session: nox.Session) -> None:
    """Build the site with warnings as errors; run the code of the README and docs/."""
    session.run("mkdocs", "build", "--strict", env={"NO_MKDOCS_2_WARNING": "1"})
    session.run("python", "-m", "pytest", "tests/test_docs_examples.py", *session.posargs)


@nox.session(venv_backend="none")
def bench(session: nox.Session) -> None:
    """Run the benchmarks; each prints one JSON line of results."""
    if session.posargs:
        session.run("python", *session.posargs)
        return
    for script in sorted((ROOT / "bench").glob("*.py")):
        if not script.name.endswith("_eval.py"):
            session.run("python", str(script.relative_to(ROOT)))


@nox.session(venv_backend="none")
def mutants(session: nox.Session) -> None:
    """Mutation testing of the guarantee modules in mutation.toml (see tools/mutants.py)."""
    session.run("python", str(ROOT / "tools" / "mutants.py"), *session.posargs)
