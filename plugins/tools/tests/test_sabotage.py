"""Sabotage: with a guard switched off, the suite fails loudly and harms nothing.

A child pytest runs the tests that depend on the guards again, with the guards disabled
by a small plugin: the shell command policy allows everything, the SSRF guard calls every
address public, and the workspace confinement contains every path (each group of tests
depends on one guard only, so one run serves all three). That run must fail
(the tests that depend on the guard catch the regression), while everything it does
stays inside temporary directories: the sentinel in the (fake) home directory survives,
every connection that would have left loopback was refused by the sandbox (and logged),
and the source tree is unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tether_testing.sandbox import Sandbox

HERE = Path(__file__).parent
E2E = HERE.parents[2] / "tests" / "test_tools_e2e.py"

SABOTAGE = textwrap.dedent(
    '''
    """Switch off one guard of tether-tools for this pytest run (a throw-away run)."""
    import os

    GUARDS = os.environ["TETHER_SABOTAGE"].split(",")


    def pytest_configure(config):
        for guard in GUARDS:
            if guard == "shell-policy":
                from tether_tools.shell import policy

                policy.CommandPolicy.check = lambda self, command: policy.Decision(True, "")
            elif guard == "ssrf":
                from tether_tools.web import addresses, fetch

                addresses.classify = lambda address: None
                fetch.classify = lambda address: None
            elif guard == "confinement":
                from tether_tools.fs import workspace

                workspace.Workspace.contains = lambda self, real: True
            else:
                raise ValueError(guard)
    '''
)


def _tree_state(root: Path) -> str:
    """What git sees changed in the source tree ("" when it is not a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", str(root)],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout if out.returncode == 0 else ""


def run_sabotaged(sandbox: Sandbox, guard: str, targets: list[str]) -> tuple[int, str, list[str]]:
    """Run pytest on ``targets`` with ``guard`` off; return its exit code, output and the
    connections the sandbox refused."""
    plugin_dir = sandbox.root / "sabotage"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / "tether_sabotage.py").write_text(SABOTAGE)
    network_log = sandbox.root / "network.log"
    env = {
        **os.environ,
        "TETHER_SABOTAGE": guard,
        "TETHER_SANDBOX_NETWORK_LOG": str(network_log),
        "PYTHONPATH": os.pathsep.join([str(plugin_dir), os.environ.get("PYTHONPATH", "")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tether_sabotage",
            "-p",
            "no:cacheprovider",
            f"--basetemp={sandbox.root / 'basetemp'}",
            "-q",
            "-rfE",
            "--tb=line",
            *targets,
        ],
        cwd=sandbox.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    refused = network_log.read_text().splitlines() if network_log.exists() else []
    return process.returncode, process.stdout + process.stderr, refused


def failed(output: str) -> set[str]:
    return {
        line.split("::", 1)[1].split(" ", 1)[0].split("[", 1)[0]
        for line in output.splitlines()
        if line.startswith("FAILED ") or line.startswith("ERROR ")
        if "::" in line
    }


SHELL = [
    f"{HERE / 'test_tools_shell_policy.py'}::test_blocked",
    f"{HERE / 'test_tools_shell_run.py'}::test_blocked_command_runs_nothing",
    *([f"{E2E}::test_agent_gets_the_policy_reason_and_nothing_runs"] if E2E.exists() else []),
]
SSRF = [
    f"{HERE / 'test_tools_web_fetch.py'}::test_metadata_service_url_is_refused_before_any_connection",
    f"{HERE / 'test_tools_web_fetch.py'}::test_redirects_are_followed_and_each_hop_is_checked",
    f"{HERE / 'test_tools_web_fetch.py'}::test_non_public_addresses_are_classified",
]
CONFINEMENT = [str(HERE / "test_tools_fs_confinement.py")]


@pytest.fixture(scope="module")
def sabotaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Sandbox, int, str, list[str]]:
    """One throw-away run of the guard-dependent tests with all three guards off (each
    group of tests depends on one guard only), in its own sandbox."""
    monkeypatch = pytest.MonkeyPatch()
    try:
        from tether_testing.sandbox import enter_sandbox

        sandbox = enter_sandbox(monkeypatch, tmp_path_factory.mktemp("sabotage"))
        root = HERE.parents[2]
        before = _tree_state(root)
        code, output, refused = run_sabotaged(
            sandbox, "shell-policy,ssrf,confinement", [*SHELL, *SSRF, *CONFINEMENT]
        )
        assert _tree_state(root) == before, "the sabotaged run changed files in the source tree"
    finally:
        monkeypatch.undo()
    return sandbox, code, output, refused


def test_the_sabotaged_run_fails_loudly_and_the_home_survives(
    sabotaged: tuple[Sandbox, int, str, list[str]],
) -> None:
    sandbox, code, output, _ = sabotaged
    assert code == 1, output
    assert sandbox.sentinel.read_text().startswith("If this file is gone")


def test_without_the_shell_policy_the_destructive_tests_fail(
    sabotaged: tuple[Sandbox, int, str, list[str]],
) -> None:
    _, _, output, _ = sabotaged
    names = failed(output)
    assert {"test_blocked", "test_blocked_command_runs_nothing"} <= names, output
    if E2E.exists():
        assert "test_agent_gets_the_policy_reason_and_nothing_runs" in names, output
    # `rm -rf ~` really ran, but inside the OS sandbox, whose home is a private empty
    # directory: the inner tests' (fake) homes all survived, so no sandbox fixture
    # reported a deletion.
    assert "deleted" not in output, output


def test_without_the_ssrf_guard_the_fetch_tests_fail_and_nothing_leaves_loopback(
    sabotaged: tuple[Sandbox, int, str, list[str]],
) -> None:
    _, _, output, refused = sabotaged
    assert {
        "test_metadata_service_url_is_refused_before_any_connection",
        "test_redirects_are_followed_and_each_hop_is_checked",
        "test_non_public_addresses_are_classified",
    } <= failed(output), output
    # The fetches really tried the metadata service, and the sandbox stopped every one.
    assert "address 169.254.169.254" in refused, refused
    assert all(not line.startswith("address 127.") for line in refused), refused


def test_without_path_confinement_the_escape_tests_fail(
    sabotaged: tuple[Sandbox, int, str, list[str]],
) -> None:
    _, _, output, _ = sabotaged
    assert {
        "test_read_refuses_traversal",
        "test_absolute_path_outside_is_refused",
        "test_symlink_to_outside_file_is_refused_for_read_and_write",
    } <= failed(output), output
