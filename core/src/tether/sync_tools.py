"""Where sync tools run: a bounded set of daemon threads that a hung tool cannot exhaust.

A sync tool runs in a worker thread so it never blocks the event loop. Threads cannot be
killed, so a sync tool that hangs past its timeout keeps its thread. With a plain thread
pool (``asyncio.to_thread``), a few hung calls fill the pool and later, healthy calls
wait in its queue until they "time out" too; and ``asyncio.run`` (``run_sync``) waits
for every pool thread at exit, so one hung call keeps the program from returning.

:class:`SyncToolRunner` avoids both:

- at most ``max_workers`` calls run at once on behalf of callers that are still waiting;
  further calls queue;
- when a caller stops waiting (its timeout passed, or it was cancelled) while the call
  runs, the call is *abandoned*: its thread no longer counts against ``max_workers`` (a
  replacement starts if calls are queued) and exits when the call finally returns; its
  result is dropped. A queued call that is abandoned never starts;
- at most ``max_abandoned`` abandoned calls may be running at once, and this holds
  strictly: a call starts only while the abandoned calls plus the calls running now stay
  under ``max_abandoned`` (so even if every running call hung, the cap would hold). A
  call that cannot start — at submission or when a thread would pick it up — fails at
  once with :class:`~tether.errors.ToolError` saying why, rather than pile up threads;
- threads are daemons outside asyncio's default executor: nothing waits for a hung tool
  at the end of ``asyncio.run`` or of the process.

Calls run in a copy of the caller's context (``contextvars``), like ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import ToolError

__all__ = ["SyncToolRunner", "sync_tool_runner"]

_IDLE_EXIT_S = 60.0


@dataclass(slots=True, eq=False)
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    context: contextvars.Context
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    started: bool = False
    finished: bool = False
    abandoned: bool = False
    result: Any = field(default=None)
    error: BaseException | None = None


class SyncToolRunner:
    """Runs sync callables for async callers; see the module docstring for the contract."""

    def __init__(self, max_workers: int | None = None, max_abandoned: int = 64) -> None:
        self.max_workers = max_workers or min(32, (os.cpu_count() or 1) + 4)
        self.max_abandoned = max_abandoned
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0  # threads serving waiting callers (idle ones included)
        self._idle = 0
        self._queued = 0
        self._running = 0  # started, not finished, not abandoned
        self._abandoned = 0

    @property
    def abandoned(self) -> int:
        """Abandoned calls still running (hung tools)."""
        return self._abandoned

    async def run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in a worker thread; its result, or its exception.

        Cancelling the await (a timeout) abandons the call as described above.
        """
        loop = asyncio.get_running_loop()
        job = _Job(fn, args, kwargs, contextvars.copy_context(), loop, loop.create_future())
        with self._lock:
            if self._abandoned >= self.max_abandoned:
                raise self._refusal()
            self._queued += 1
            self._jobs.put(job)
            self._spawn_if_needed()
        try:
            return await job.future
        except BaseException:
            self._abandon(job)
            raise

    # -- internals ---------------------------------------------------------------------------
    def _refusal(self) -> ToolError:
        return ToolError(
            f"{self._abandoned} sync tool calls are still running after their timeout (hung), "
            f"and at most {self.max_abandoned} may be; no more sync tool calls are started "
            "until some return. Fix or stop the hanging tool."
        )

    def _spawn_if_needed(self) -> None:
        """With the lock held: start a thread if calls wait and no thread is idle."""
        if self._queued > self._idle and self._workers < self.max_workers:
            self._workers += 1
            self._idle += 1
            threading.Thread(target=self._work, name="tether-sync-tool", daemon=True).start()

    def _abandon(self, job: _Job) -> None:
        with self._lock:
            if job.finished or job.abandoned:
                return
            job.abandoned = True
            if job.started:
                self._workers -= 1
                self._running -= 1
                self._abandoned += 1
                self._spawn_if_needed()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=_IDLE_EXIT_S)
            except queue.Empty:
                with self._lock:
                    if self._queued == 0:
                        self._workers -= 1
                        self._idle -= 1
                        return
                continue
            with self._lock:
                self._queued -= 1
                if job.abandoned:
                    continue
                refused = self._abandoned + self._running >= self.max_abandoned
                if refused:
                    job.error = self._refusal()
                    job.finished = True
                else:
                    self._idle -= 1
                    self._running += 1
                    job.started = True
            if refused:
                with contextlib.suppress(RuntimeError):
                    job.loop.call_soon_threadsafe(_settle, job)
                continue
            try:
                job.result = job.context.run(job.fn, *job.args, **job.kwargs)
            except BaseException as exc:
                job.error = exc
            with self._lock:
                if job.abandoned:
                    self._abandoned -= 1
                    return  # this thread was already replaced
                job.finished = True
                self._running -= 1
                self._idle += 1
            with contextlib.suppress(RuntimeError):  # the caller's loop closed: nobody waits
                job.loop.call_soon_threadsafe(_settle, job)


def _settle(job: _Job) -> None:
    if job.future.done():
        return
    if job.error is not None:
        job.future.set_exception(job.error)
    else:
        job.future.set_result(job.result)


_runner: SyncToolRunner | None = None
_runner_lock = threading.Lock()


def sync_tool_runner() -> SyncToolRunner:
    """The process's runner for sync tools (created on first use)."""
    global _runner
    if _runner is None:
        with _runner_lock:
            if _runner is None:
                _runner = SyncToolRunner()
    return _runner
