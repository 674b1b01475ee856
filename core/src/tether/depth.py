"""How deeply agent runs are nested: a run inside a tool inside a run, and so on.

A tool may run another :class:`~tether.Agent` (a sub-agent), whose tools may run agents
too. Each run knows its depth: a run started outside any tool has depth 1, a run started
by a tool of a depth-1 run has depth 2, and so on. ``Agent.stream`` refuses to start a
run deeper than the agent's ``limits.max_run_depth`` (default
:data:`DEFAULT_MAX_RUN_DEPTH`) with :class:`~tether.errors.DepthExceeded`, which the
calling tool's run hands the model as an error result like any tool failure.

The depth travels in a context variable set while a tool runs, so it follows the tool
into tasks it creates and threads it runs through ``asyncio.to_thread`` or tether's own
sync-tool threads. Code that starts runs another way (a thread pool of its own, a new
event loop) can carry it with :func:`run_depth` and :func:`tool_depth`.

::

    from tether.depth import run_depth

    @tether.tool
    async def research(question: str) -> str:
        \"\"\"Ask the research agent.\"\"\"
        result = await research_agent.run(question)   # depth run_depth() + 1
        return result.output
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from .errors import DepthExceeded

__all__ = ["DEFAULT_MAX_RUN_DEPTH", "check_run_depth", "run_depth", "tool_depth"]

DEFAULT_MAX_RUN_DEPTH = 5
"""Runs nested inside tools, counting the outermost run: 5 allows four levels of sub-agents."""

_depth: ContextVar[int] = ContextVar("tether_run_depth", default=0)


def run_depth() -> int:
    """The depth of the run whose tool is executing here; 0 outside any tool."""
    return _depth.get()


def check_run_depth(limit: int = DEFAULT_MAX_RUN_DEPTH) -> int:
    """The depth a run started here would have; raises :class:`DepthExceeded` if it
    would be deeper than ``limit``."""
    depth = _depth.get() + 1
    if depth > limit:
        raise DepthExceeded(
            f"A run was started at nesting depth {depth}, deeper than the limit of {limit} "
            "(an agent run inside a tool inside a run ...). Stop delegating further and answer "
            "with what you have, or raise limits.max_run_depth if the nesting is intended.",
            depth=depth,
            max_depth=limit,
        )
    return depth


@contextlib.contextmanager
def tool_depth(depth: int) -> Iterator[None]:
    """Mark the code inside as running in a tool of a run at ``depth``."""
    token = _depth.set(depth)
    try:
        yield
    finally:
        _depth.reset(token)
