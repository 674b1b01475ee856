"""The installed ``tether`` command in a real subprocess, as a user runs it.

:func:`run_tether` starts the ``tether`` script installed next to the running Python in
a directory of the test's own, with an empty configuration file there, its data below
it, only the named plugins loaded and none of the caller's ``TETHER_*`` settings::

    out = run_tether(tmp_path, "run", "-m", "openai/gpt-4.1", "hi", plugins="openai",
                     env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url})
    assert out.returncode == 0, out.stderr
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["run_tether"]


def run_tether(
    directory: Path,
    *args: str,
    plugins: str,
    env: Mapping[str, str],
    unset: Sequence[str] = (),
    config: str = "",
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``tether *args`` in ``directory`` and return what it printed and its exit code.

    :param plugins: the value of ``TETHER_PLUGINS_ALLOW``, e.g. ``"openai"``.
    :param env: variables set for the command, over this process's environment less
        every ``TETHER_*`` variable and every variable starting with one of ``unset``.
    :param config: the text of ``directory/tether.toml``, the command's configuration.
    :param timeout: seconds before the command is killed (``subprocess.TimeoutExpired``).
    """
    tether_cli = shutil.which("tether", path=os.path.dirname(sys.executable))
    assert tether_cli is not None, "no `tether` script next to this Python"
    directory = Path(directory)
    (directory / "tether.toml").write_text(config)
    dropped = ("TETHER_", *unset)
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(dropped)},
        "TETHER_PLUGINS_ALLOW": plugins,
        "TETHER_CONFIG": str(directory / "tether.toml"),
        "TETHER_DATA_DIR": str(directory / "data"),
        **env,
    }
    return subprocess.run(
        [tether_cli, *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=directory,
        timeout=timeout,
    )
