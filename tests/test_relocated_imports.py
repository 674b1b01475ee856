"""The old import paths of the parts that left the kernel keep working through tether 0.x:
the very same modules and classes (no second copy), with a DeprecationWarning that names
the new path."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

OLD_TO_NEW = [
    ("tether.cli", "tether_cli"),
    ("tether.cli.run", "tether_cli.run"),
    ("tether.cli.kb", "tether_knowledge.commands"),
    ("tether.cli.runlog", "tether_runlog.commands"),
    ("tether.scaffold", "tether_cli.scaffold"),
    ("tether.knowledge", "tether_knowledge"),
    ("tether.knowledge.chunking", "tether_knowledge.chunking"),
    ("tether.memory", "tether_memory"),
    ("tether.memory.scanner", "tether_memory.scanner"),
    ("tether.runlog", "tether_runlog"),
    ("tether.runlog.store", "tether_runlog.store"),
    ("tether.testing.wire", "tether_testing.wire"),
    ("tether.testing.pytest_plugin", "tether_testing.pytest_plugin"),
]


@pytest.mark.parametrize(("old", "new"), OLD_TO_NEW)
def test_an_old_path_is_the_new_module_with_a_deprecation_warning(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated: it is {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__ is not None and module.__spec__.name == new


def test_classes_imported_through_old_and_new_paths_are_one() -> None:
    sys.modules.pop("tether.runlog.store", None)
    with pytest.warns(DeprecationWarning):
        from tether.runlog.store import RunLog as Old
    from tether_runlog.store import RunLog

    assert Old is RunLog


def test_the_heavy_test_kit_names_of_tether_testing_forward_with_a_warning() -> None:
    import tether.testing
    import tether_testing

    with pytest.warns(DeprecationWarning, match="import it from tether_testing"):
        server = tether.testing.FakeServer
    assert server is tether_testing.FakeServer
    with pytest.raises(AttributeError):
        tether.testing.NoSuchThing  # noqa: B018


def test_a_missing_distribution_is_named_in_the_import_error() -> None:
    code = (
        "import sys\nsys.modules['tether_memory'] = None\n"
        "try:\n    import tether.memory\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "tether-memory" in out.stdout and "pip install tether-memory" in out.stdout
