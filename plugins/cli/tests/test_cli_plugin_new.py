"""``tether plugin new``: what it writes, and clear refusals that write nothing.

(That each kind installs and passes its own tests is shown end to end by the
cross-package ``tests/test_plugin_scaffold.py``.)"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tether_cli import CliState, cli


@pytest.fixture
def out(tmp_path: Path) -> Path:
    directory = tmp_path / "out"
    directory.mkdir()
    return directory


def _new(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["plugin", "new", *args], obj=CliState())
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("kind", "hook"),
    [
        ("tool", "register_tools"),
        ("provider", "register_providers"),
        ("kb-backend", "register_knowledge_backends"),
        ("session-store", "register_session_stores"),
    ],
)
def test_writes_a_distribution_with_its_entry_point(tmp_path: Path, kind: str, hook: str) -> None:
    code, output = _new("my-thing", "--kind", kind, "--dir", str(tmp_path))
    assert code == 0, output
    target = tmp_path / "tether-my-thing"
    assert f"Created {target}" in output and hook in output
    project = tomllib.loads((target / "pyproject.toml").read_text())["project"]
    assert project["name"] == "tether-my-thing"
    assert project["entry-points"]["tether"] == {"my-thing": "tether_my_thing"}
    assert any(d.startswith(("tether>=", "tether[kb]>=")) for d in project["dependencies"])
    module = (target / "src" / "tether_my_thing" / "__init__.py").read_text()
    assert f"def {hook}(" in module and "__" + "NAME__" not in module
    compile(module, "__init__.py", "exec")
    assert (target / "src" / "tether_my_thing" / "py.typed").exists()
    tests = (target / "tests" / "test_my_thing.py").read_text()
    compile(tests, "test_my_thing.py", "exec")
    assert "tether-my-thing" in (target / "README.md").read_text()
    if kind == "session-store":
        assert "SessionStoreContract" in tests


@pytest.mark.parametrize("name", ["Weather", "9lives", "my_tool", "a--b", "tether-x", ""])
def test_a_bad_name_is_refused_and_nothing_is_written(out: Path, name: str) -> None:
    code, output = _new(name, "--kind", "tool", "--dir", str(out))
    assert code == 1
    assert "Error:" in output and ("plugin name" in output or "tether prefix" in output)
    assert list(out.iterdir()) == []


def test_an_existing_directory_is_not_overwritten(out: Path) -> None:
    (out / "tether-weather").mkdir()
    (out / "tether-weather" / "mine.txt").write_text("keep")
    code, output = _new("weather", "--kind", "tool", "--dir", str(out))
    assert code == 1 and "exists already" in output
    assert [p.name for p in (out / "tether-weather").iterdir()] == ["mine.txt"]
    assert sorted(p.name for p in out.iterdir()) == ["tether-weather"]


def test_an_unknown_kind_is_refused(out: Path) -> None:
    code, output = _new("weather", "--kind", "embedder", "--dir", str(out))
    assert code == 2 and "tool" in output and "session-store" in output


def test_plugin_new_prints_an_install_command_that_works_in_a_uv_environment(
    invoke: Callable[..., Result], tmp_path: Path
) -> None:
    from tether.cli.plugin import editable_install_command

    result = invoke("plugin", "new", "weather", "--kind", "tool", "--dir", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    # The tests run in the uv-made environment the README creates: it has no pip.
    assert '  uv pip install -e ".[test]"' in result.stdout.splitlines()
    plain = tmp_path / "plain-venv"
    plain.mkdir()
    (plain / "pyvenv.cfg").write_text("home = /usr/bin\nversion_info = 3.12.0\n")
    assert editable_install_command(plain) == 'python -m pip install -e ".[test]"'
    made = tmp_path / "uv-venv"
    made.mkdir()
    (made / "pyvenv.cfg").write_text("home = /usr/bin\nuv = 0.5.0\n")
    assert editable_install_command(made) == 'uv pip install -e ".[test]"'
