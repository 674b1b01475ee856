"""tether-dbos stands on DBOS's public API only: no module of it names anything private of
dbos, and the public names it calls exist, with the keywords it passes, in the dbos
installed from the lock file (whose version the distribution's pin allows)."""

from __future__ import annotations

import ast
import inspect
import tomllib
from importlib.metadata import version
from pathlib import Path

import dbos
from dbos import DBOS, DBOSClient
from packaging.requirements import Requirement

SOURCE = Path(__file__).parents[1] / "src" / "tether_dbos"


def _private_dbos_names(path: Path) -> list[str]:
    """``dbos._x`` modules imported, and names starting with ``_`` imported from dbos or
    read from ``DBOS``/``dbos``/``DBOSClient`` (or a client attribute), in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dbos"):
            if any(part.startswith("_") for part in node.module.split(".")):
                found.append(node.module)
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("dbos._")]
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and isinstance(node.value, ast.Name)
            and node.value.id in {"DBOS", "dbos", "DBOSClient", "dbos_error"}
        ):
            found.append(f"{node.value.id}.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr"}
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in {"DBOS", "dbos", "DBOSClient", "dbos_error"}
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
        ):
            found.append(f"{node.args[0].id}.{node.args[1].value}")
    return found


def test_no_module_names_anything_private_of_dbos() -> None:
    modules = sorted(SOURCE.glob("*.py"))
    assert len(modules) > 10
    found = {path.name: names for path in modules if (names := _private_dbos_names(path))}
    assert found == {}


def test_the_scanner_catches_private_names(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from dbos._error import DBOSException\n"
        "import dbos._sys_db\n"
        "from dbos import _recovery\n"
        "DBOS._recover_pending_workflows(['w1'])\n"
        "getattr(DBOS, '_recover_pending_workflows', None)\n"
        "from dbos import error as dbos_error\n"
        "dbos_error.DBOSException\n"
    )
    assert _private_dbos_names(sample) == [
        "dbos._error",
        "dbos._sys_db",
        "dbos._recovery",
        "DBOS._recover_pending_workflows",
        "DBOS._recover_pending_workflows",
    ]


def _keywords(function: object) -> set[str]:
    return set(inspect.signature(function).parameters)  # type: ignore[arg-type]


def test_the_public_names_used_exist_in_the_locked_dbos() -> None:
    assert {"status", "executor_id", "app_version", "load_input", "load_output"} <= _keywords(
        DBOS.list_workflows
    )
    assert "queue_name" in _keywords(DBOS.resume_workflows)
    for name in ("launch", "destroy", "migrate", "register_queue", "workflow", "run_step_async",
                 "write_stream_async", "close_stream_async", "recv_async", "start_workflow_async"):  # fmt: skip
        assert callable(getattr(DBOS, name)), name
    assert {"dbos_system_schema", "system_database_url"} <= _keywords(DBOSClient)
    for name in ("enqueue_async", "read_stream_async", "retrieve_workflow_async", "send_async",
                 "cancel_workflow_async", "destroy"):  # fmt: skip
        assert callable(getattr(DBOSClient, name)), name
    assert issubclass(dbos.error.DBOSStreamTimeoutError, Exception)
    assert issubclass(dbos.error.DBOSAwaitedWorkflowCancelledError, Exception)
    assert "dbos_system_schema" in dbos.DBOSConfig.__annotations__


def test_the_locked_dbos_is_within_the_pinned_versions() -> None:
    project = tomllib.loads((SOURCE.parents[1] / "pyproject.toml").read_text())["project"]
    pin = next(Requirement(r) for r in project["dependencies"] if r.startswith("dbos"))
    assert str(pin.specifier) in ("<4,>=3.4", ">=3.4,<4")
    assert pin.specifier.contains(version("dbos"))
