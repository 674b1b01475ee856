"""contrib/README.md says what contrib means and lists every contrib distribution, with a
link to its README that resolves."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "contrib" / "README.md"


def contrib_distributions() -> dict[str, Path]:
    """Distribution name → folder, for every folder of contrib/ with a pyproject.toml."""
    found = {}
    for pyproject in sorted((ROOT / "contrib").glob("*/pyproject.toml")):
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
        found[name] = pyproject.parent
    return found


def test_every_contrib_distribution_is_listed_with_its_readme() -> None:
    text = README.read_text()
    distributions = contrib_distributions()
    assert distributions, "no contrib distributions found"
    for name, folder in distributions.items():
        row = re.search(
            rf"^\| \[`{re.escape(name)}`\]\(([^)]+)\) \(`contrib/{folder.name}`\) \|", text, re.M
        )
        assert row, f"{name} is not listed in contrib/README.md"
        assert (README.parent / row.group(1)).is_file(), f"{name}: broken README link"
    listed = set(re.findall(r"^\| \[`([^`]+)`\]", text, re.M))
    assert listed == set(distributions), "contrib/README.md lists a distribution that is gone"


def test_the_readme_says_what_contrib_means() -> None:
    assert "**contrib** means" in README.read_text()
