"""Running one command: its own process group, no stdin, a timeout that kills the whole
group, and output kept within a cap (head and tail) while it streams."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CappedOutput", "CommandResult", "run_process", "until_process_gone"]

KILL_GRACE_SECONDS = 2.0


class CappedOutput:
    """Keeps the first ``head`` and the last ``tail`` bytes of a stream, counting the rest,
    so a flood of output costs bounded memory."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit * 2 // 3
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_limit > 0:
            self.tail += data
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def omitted(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if not self.omitted:
            return head + self.tail.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        marker = f"\n\n[... {self.omitted} bytes of output omitted; showing the first {len(self.head)} and the last {len(self.tail)} bytes ...]\n\n"
        return head + marker + tail


@dataclass(slots=True)
class CommandResult:
    exit_code: int | None
    output: CappedOutput
    timed_out: bool


async def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,  # noqa: ASYNC109 - the kill deadline of the child, not of this await
    output_limit: int,
    pass_fds: tuple[int, ...] = (),
) -> CommandResult:
    """Run ``argv`` and collect its combined stdout/stderr.

    The child starts a new session (so it and everything it spawns share a process group
    that is not the harness's), reads from ``/dev/null``, and is killed with its whole
    group when ``timeout`` passes, when the caller is cancelled, or once the command
    itself has exited (background jobs do not outlive the command). Killing is SIGTERM,
    then SIGKILL once the group has closed its output or a short grace period is over.
    ``pass_fds`` are inherited by the child (as in :mod:`subprocess`).
    """
    loop = asyncio.get_running_loop()
    read_end, write_end = os.pipe()
    # Shielded: asyncio's own clean-up for a spawn cancelled half-way kills only the
    # leader, leaving the children it already started running. We kill the whole group.
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=write_end,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    )
    try:
        try:
            process = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            if not spawn.cancelled() and (spawned := await _settled(spawn)) is not None:
                await _kill_group(spawned, loop.create_future())
            raise
    except BaseException:
        os.close(read_end)
        raise
    finally:
        # Our copy of the write end must go, or the pipe never reports end-of-file.
        os.close(write_end)
    output = CappedOutput(output_limit)
    closed: asyncio.Future[None] = loop.create_future()
    os.set_blocking(read_end, False)

    def on_readable() -> None:
        try:
            data = os.read(read_end, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            output.feed(data)
            return
        loop.remove_reader(read_end)
        if not closed.done():
            closed.set_result(None)

    loop.add_reader(read_end, on_readable)
    timed_out = False
    try:
        try:
            async with asyncio.timeout(timeout):
                await process.wait()
        except TimeoutError:
            timed_out = True
        await _kill_group(process, closed)
    finally:
        if process.returncode is None or _group_alive(process.pid):
            await _kill_group(process, closed)
        loop.remove_reader(read_end)
        _drain(read_end, output)  # what the group wrote before it died, not yet read
        os.close(read_end)
    return CommandResult(None if timed_out else process.returncode, output, timed_out)


def _drain(read_end: int, output: CappedOutput) -> None:
    """Read whatever is still buffered in the (non-blocking) pipe."""
    while True:
        try:
            data = os.read(read_end, 65536)
        except OSError:  # BlockingIOError included: nothing more is buffered
            return
        if not data:
            return
        output.feed(data)


async def _settled(
    spawn: asyncio.Future[asyncio.subprocess.Process],
) -> asyncio.subprocess.Process | None:
    """The process a shielded spawn produced, or None if starting it failed."""
    try:
        return await spawn
    except Exception:
        return None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _kill_group(process: asyncio.subprocess.Process, closed: asyncio.Future[None]) -> None:
    """SIGTERM the process group; once its members have let go of the output pipe (or the
    grace period is over) SIGKILL whatever is left, and reap the leader. Safe to call
    when the group is already gone."""
    pgid = process.pid
    if _group_alive(pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(KILL_GRACE_SECONDS):
                await asyncio.shield(closed)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    if process.returncode is None:
        await process.wait()
    await _until_group_dead(pgid)


async def until_process_gone(pid: int, limit: float = 2.0) -> None:
    """Return once process ``pid`` no longer runs (gone, or a zombie), or after ``limit``
    seconds. On Linux only (it reads /proc); elsewhere it returns at once."""
    deadline = asyncio.get_running_loop().time() + limit
    while _is_running(pid) and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110 - /proc offers nothing to wait on
        await asyncio.sleep(0.005)


def _is_running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


async def _until_group_dead(pgid: int, limit: float = 2.0) -> None:
    """Return once no member of the group is still running (zombies count as dead).

    A signal is delivered asynchronously: right after ``killpg`` a member may still be
    on its way out. Waiting here means a caller that regains control can rely on the
    command's processes being gone. Bounded by ``limit`` seconds.
    """
    deadline = asyncio.get_running_loop().time() + limit
    while _running_members(pgid) and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110 - /proc offers nothing to wait on
        await asyncio.sleep(0.01)


def _running_members(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is running. Reads /proc on Linux; elsewhere
    asks the kernel with signal 0 (which also counts zombies)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return _group_alive(pgid)
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False
