"""The mutation-testing tool (``tools/mutants.py``): which modules a change selects, how
results become a kill rate, and that it refuses to run unconfined without being told."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tether_mutants_tool", ROOT / "tools/mutants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


mutants = _load()
SETTINGS, MODULES = mutants.load_table()


def test_every_listed_module_exists_and_is_named_after_its_file() -> None:
    assert MODULES, "mutation.toml lists no module"
    for m in MODULES:
        assert (ROOT / m.repo_path).is_file(), m.repo_path
        dotted = m.path.removeprefix("src/").removesuffix(".py").replace("/", ".")
        assert dotted == m.name
    assert any(m.sample for m in MODULES), "CI needs a sample for changes touching no module"


def test_a_change_to_a_listed_file_selects_that_module_only() -> None:
    guard = next(m for m in MODULES if m.name == "tether.guard")
    chosen = mutants.select_changed(MODULES, ["README.md", guard.repo_path, "docs/index.md"])
    assert chosen == [guard]


def test_a_change_touching_no_listed_module_selects_the_sample() -> None:
    chosen = mutants.select_changed(MODULES, ["README.md", "core/src/tether/agent.py"])
    assert chosen == [m for m in MODULES if m.sample]
    assert mutants.select_changed(MODULES, []) == chosen


@given(st.lists(st.sampled_from(range(len(MODULES))), unique=True, min_size=1))
def test_changed_selection_is_exactly_the_touched_modules(indexes: list[int]) -> None:
    touched = [MODULES[i] for i in indexes]
    noise = ["README.md", "core/src/tether/agent.py", "bench/README.md"]
    chosen = mutants.select_changed(MODULES, [*noise, *(m.repo_path for m in touched)])
    assert set(chosen) == set(touched)


def test_unknown_or_ambiguous_module_names_are_refused_with_the_list() -> None:
    with pytest.raises(mutants.MutantsError, match=r"'nope' is not in mutation.toml.*tether"):
        mutants.pick(MODULES, ["nope"])
    assert [m.name for m in mutants.pick(MODULES, ["depth"])] == ["tether.depth"]


def test_equivalent_mutants_leave_the_rate_and_survivors_are_listed() -> None:
    results = mutants.parse_results(
        "    tether.depth.x_a__mutmut_1: killed\n"
        "    tether.depth.x_a__mutmut_2: survived\n"
        "    tether.depth.x_b__mutmut_1: timeout\n"
        "    tether.depth.x_b__mutmut_2: no tests\n"
        "    tether.depth.x_b__mutmut_3: survived\n"
        "    tether.deadlines.x_c__mutmut_1: survived\n"
    )
    depth = [m for m in MODULES if m.name == "tether.depth"]
    found = mutants.tally(results, depth, {"tether.depth.x_b__mutmut_3": "same value"})
    t = found["tether.depth"]
    assert t.total == 5 and t.equivalent == 1
    assert t.rate == pytest.approx(50.0)  # killed + timeout over the 4 non-equivalent
    assert t.survivors == [
        "tether.depth.x_a__mutmut_2: survived",
        "tether.depth.x_b__mutmut_2: no tests",
    ]
    assert mutants.failures([t], {"tether.depth": 90.0}) == [
        "tether.depth: kill rate 50.0% is below 90%"
    ]
    assert mutants.failures([t], {"tether.depth": 50.0}) == []
    assert mutants.failures([t], {}) == []


def test_a_module_is_held_to_its_floor_where_it_has_one() -> None:
    low = mutants.Module("a.low", "core", "src/a/low.py", floor=40.0)
    plain = mutants.Module("a.plain", "core", "src/a/plain.py")
    assert mutants.thresholds_for([low, plain], 90.0, floors=True) == {
        "a.low": 40.0,
        "a.plain": 90.0,
    }
    assert mutants.thresholds_for([low, plain], 90.0, floors=False) == {
        "a.low": 90.0,
        "a.plain": 90.0,
    }
    assert mutants.thresholds_for([low, plain], None, floors=True) == {"a.low": 40.0}


def test_without_bubblewrap_the_run_is_refused_unless_no_sandbox_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap here
    assert mutants.main(["tether.depth", "--report", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert "bubblewrap" in err and "--no-sandbox" in err
    assert not (tmp_path / "r.md").exists()


def test_the_sandbox_has_no_network_a_fresh_home_and_a_read_only_root(tmp_path: Path) -> None:
    command = mutants.sandbox_command(["true"], tmp_path, tmp_path / "ws", sandbox=True)
    assert command[:5] == ["bwrap", "--ro-bind", "/", "/", "--dev"]
    assert "--unshare-net" in command and "--clearenv" in command
    assert command[command.index("HOME") + 1] == str(tmp_path / "home")
    assert ["--bind", str(tmp_path), str(tmp_path)] == command[
        command.index("--bind") : command.index("--bind") + 3
    ]


def test_mutmut_is_pointed_at_the_modules_and_told_each_test_to_leave_out() -> None:
    chosen = mutants.pick(MODULES, ["tether.guard", "tether.depth"])
    settings = mutants.Settings(deselect={"core": ("tests/test_a.py::test_b",)})
    lines = mutants.mutmut_config(chosen, settings).splitlines()
    assert "    src/tether/guard.py" in lines and "    src/tether/depth.py" in lines
    i = lines.index("    --deselect")  # one argument per line: mutmut splits lists there
    assert lines[i + 1] == "    tests/test_a.py::test_b"
    assert "    src/tether/approvals.py" not in lines


def test_unconfined_runs_still_get_an_emptied_environment_and_a_fresh_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_SECRET", "sk-canary")
    command = mutants.sandbox_command(["true"], tmp_path, tmp_path / "ws", sandbox=False)
    assert command[:2] == ["env", "-i"] and command[-1] == "true"
    assert f"HOME={tmp_path / 'home'}" in command
    assert not any("sk-canary" in part for part in command)
