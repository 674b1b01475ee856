"""How the ``tether`` process starts and ends (:mod:`tether_cli.process`): it ends without
the interpreter's teardown, yet runs the exit handlers, keeps the exit status, writes the
run log, waits for a thread that is not a daemon, and turns the garbage collector back on
once the model answers. Each test runs the installed script in a real process, with a
probe plugin (``-p``) written into the test's directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tether_runlog import open_run_log

TETHER = Path(sys.executable).with_name("tether")

PROBE = """
import atexit, gc, pathlib, threading

OUT = pathlib.Path({out!r})


def _at_exit():
    (OUT / "atexit").write_text(f"gc enabled: {{gc.isenabled()}}")


atexit.register(_at_exit)


class _Teardown:
    def __del__(self, _path=OUT / "teardown"):
        _path.write_text("torn down")


_probe = _Teardown()

if {thread!r}:
    def _late():
        threading.main_thread().join(timeout=60)  # still running when the command is done
        (OUT / "thread").write_text("finished")

    threading.Thread(target=_late, daemon=False).start()
"""


@pytest.fixture(autouse=True)
def run_log_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run log in its default place, the data directory of the CLI environment."""
    monkeypatch.delenv("TETHER_RUN_LOG", raising=False)


def _run(tmp_path: Path, *args: str, thread: bool = False) -> subprocess.CompletedProcess[str]:
    out = tmp_path / "probe-out"
    out.mkdir(exist_ok=True)
    (tmp_path / "exit_probe.py").write_text(PROBE.format(out=str(out), thread=thread))
    return subprocess.run(
        [str(TETHER), "-p", "cli_fake_model", "-p", "exit_probe", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_run_skips_the_teardown_but_runs_exit_handlers_and_writes_the_run_log(
    tmp_path: Path,
) -> None:
    proc = _run(tmp_path, "run", "-m", "fake-small", "hello there")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "You said: hello there\n"
    out = tmp_path / "probe-out"
    assert (out / "atexit").read_text() == "gc enabled: True"  # and the collector is back on
    assert not (out / "teardown").exists(), "the interpreter tore its modules down"
    (row,) = open_run_log(tmp_path / "data" / "runs.sqlite").recent()
    assert row.prompt == "hello there" and row.outcome == "completed"


def test_the_exit_status_of_a_failed_run_is_kept(tmp_path: Path) -> None:
    proc = _run(tmp_path, "run", "-m", "fake-small", "refuse")
    assert proc.returncode == 1
    assert (tmp_path / "probe-out" / "atexit").exists()


def test_a_thread_that_is_not_a_daemon_is_waited_for(tmp_path: Path) -> None:
    proc = _run(tmp_path, "run", "-m", "fake-small", "hi", thread=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "probe-out" / "thread").read_text() == "finished"
    assert (tmp_path / "probe-out" / "teardown").exists()  # the usual exit, which waits


def test_an_answer_cut_by_head_is_recorded_as_a_run_whose_reader_stopped(tmp_path: Path) -> None:
    prompt = " ".join(f"word{i}" for i in range(12_000))  # far more than a pipe holds
    proc = subprocess.Popen(
        [str(TETHER), "-p", "cli_fake_model", "run", "-m", "fake-small", prompt],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    head = subprocess.run(["head", "-c", "20"], stdin=proc.stdout, capture_output=True, timeout=60)
    assert proc.stdout is not None
    proc.stdout.close()  # only head reads it: when head exits, the pipe is broken
    _, stderr = proc.communicate(timeout=120)
    assert head.stdout == b"You said: word0 word"
    assert proc.returncode == 0, stderr.decode()
    assert b"Traceback" not in stderr
    (row,) = open_run_log(tmp_path / "data" / "runs.sqlite").recent()
    assert row.outcome == "cancelled" and row.error_type is None
    assert "GeneratorExit" not in (row.error or "")
