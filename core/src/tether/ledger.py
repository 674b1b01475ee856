"""Limits over a tree of runs: one :class:`Ledger` per run, charged for the whole tree.

A run's limits bound everything the run causes. Every run keeps a ledger node holding
its own limits, linked to the node of the run that started it (a sub-agent's parent,
or the run whose tool called ``agent.run()``). A model call anywhere in the tree is
admitted only if every node from its run up to the outermost one has room for it, and
its usage is charged to all of them, so parallel children draw from one shared
remaining budget instead of each receiving a copy of it.

- **Model calls** (``limits.max_turns`` per node, and ``limits.max_tree_model_calls`` —
  200 by default — of the outermost run for the whole tree, a backstop against agents
  that keep delegating) are reserved when a call starts: the count never passes the
  limit.
- **Tokens and cost** (``limits.max_total_tokens``, ``limits.max_cost_usd``) are charged
  when a response arrives. A call starts only while every node's charges are below its
  budget, and while a node with a token or cost budget has a call in flight anywhere
  in its subtree, other calls of that subtree wait for it to end (their tools and
  sub-agents still run in parallel; only their model calls take turns). So at most one
  call can be in flight when a budget is reached, and the exact bound is: a node's
  total stays below ``budget + u``, where ``u`` is the usage (tokens or dollars) of the
  single model call that reached the budget — ``budget - 1 + u`` tokens at most.
  Usage reported outside a model call (:meth:`charge` through ``RunScope.charge`` of a
  result from elsewhere) is added as it comes and may pass the budget by its own size.
- **Wall time**: a node's deadline is the earlier of its own (``limits.wall_time_s`` from
  its start) and its parent's, so a child never outlives its parent's deadline.

Checks and updates take no await between reading and writing a node, and hold a lock,
so they are atomic with respect to the event loop (and to runs in other threads).
Runs started inside a tool join the tree through a context variable set while the tool
runs (:func:`in_ledger`), which follows the tool into tasks and threads it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

from .errors import CostBudgetExceeded, LimitExceeded, MaxTurnsExceeded, TokenBudgetExceeded

if TYPE_CHECKING:
    from .config import LimitsConfig

__all__ = ["Ledger", "current_ledger", "in_ledger"]

_current: ContextVar[Ledger | None] = ContextVar("tether_ledger", default=None)
_lock = threading.Lock()


def current_ledger() -> Ledger | None:
    """The ledger of the run whose tool is executing here; ``None`` outside any tool."""
    return _current.get()


@contextlib.contextmanager
def in_ledger(ledger: Ledger) -> Iterator[None]:
    """Mark the code inside as running in a tool of the run that owns ``ledger``: runs
    started here join its tree."""
    token = _current.set(ledger)
    try:
        yield
    finally:
        _current.reset(token)


class Ledger:
    """What one run and the runs below it have used, against the run's limits.

    Create it when the run is built, :meth:`start` it when the run starts; then every
    model call is :meth:`begin_call` ... :meth:`end_call`, and its usage is
    :meth:`charge` d in between.
    """

    __slots__ = (
        "_chain",
        "_waiters",
        "calls",
        "cost",
        "deadline",
        "deadline_limit",
        "in_flight",
        "limits",
        "max_calls",
        "members",
        "parent",
        "tokens",
    )

    def __init__(self, limits: LimitsConfig, parent: Ledger | None = None) -> None:
        self.limits = limits
        self.parent = parent
        self.max_calls = limits.max_turns
        if parent is None and limits.max_tree_model_calls is not None:
            self.max_calls = min(self.max_calls, limits.max_tree_model_calls)
        self.calls = 0
        """Model calls started in this subtree (reserved when they start)."""
        self.tokens = 0
        """Input and output tokens charged to this subtree."""
        self.cost = 0.0
        """Dollars charged to this subtree (calls of models with known pricing)."""
        self.in_flight = 0
        """Model calls of this subtree running now."""
        self.deadline: float | None = None
        """``time.perf_counter()`` value of the earliest deadline on the way to the root."""
        self.deadline_limit: tuple[float, int] | None = None
        """The ``wall_time_s`` behind :attr:`deadline` and how many levels up it was set."""
        self.members: set[str] = set()
        """Run ids of the runs that joined this subtree (their usage is charged live)."""
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        above = parent.chain() if parent is not None else ()
        self._chain: tuple[tuple[int, Ledger], ...] = (
            (0, self),
            *((level + 1, node) for level, node in above),
        )

    # -- the tree ------------------------------------------------------------------------------
    def chain(self) -> tuple[tuple[int, Ledger], ...]:
        """This node and its ancestors, with how many levels up each is (a node's parent
        never changes: kept from its construction, walked several times per model call)."""
        return self._chain

    def start(self, run_id: str = "") -> None:
        """Start the wall clock: the deadline is the earlier of this run's own and its
        parent's; ``run_id`` is recorded as a member of every node above."""
        wall = self.limits.wall_time_s
        if wall is not None:
            self.deadline = time.perf_counter() + wall
            self.deadline_limit = (wall, 0)
        parent = self.parent
        if parent is not None:
            if parent.deadline is not None and (
                self.deadline is None or parent.deadline <= self.deadline
            ):
                self.deadline = parent.deadline
                assert parent.deadline_limit is not None
                self.deadline_limit = (parent.deadline_limit[0], parent.deadline_limit[1] + 1)
            if run_id:
                with _lock:
                    for _, node in parent.chain():
                        node.members.add(run_id)

    # -- model calls ---------------------------------------------------------------------------
    def try_begin_call(self) -> bool:
        """:meth:`begin_call` without waiting: ``False`` (nothing reserved) when it would
        wait. The common case, no budgeted call in flight above, needs no timer."""
        with _lock:
            error = self._refusal()
            if error is not None:
                raise error
            if any(n.in_flight and _budgeted(n.limits) for _, n in self._chain):
                return False
            for _, node in self._chain:
                node.calls += 1
                node.in_flight += 1
            return True

    async def begin_call(self) -> None:
        """Reserve a model call in every node up to the root, waiting while a node with
        a token or cost budget has another call in flight; raise the
        :class:`~tether.errors.LimitExceeded` of the first node out of room.

        The wait has no deadline of its own: bound it by the run's (the runner does)."""
        while True:
            loop = asyncio.get_running_loop()
            with _lock:
                error = self._refusal()
                if error is not None:
                    raise error
                blocker = next(
                    (n for _, n in self.chain() if n.in_flight and _budgeted(n.limits)), None
                )
                if blocker is None:
                    for _, node in self.chain():
                        node.calls += 1
                        node.in_flight += 1
                    return
                waiter: asyncio.Future[None] = loop.create_future()
                blocker._waiters.append((loop, waiter))
            try:
                await waiter
            finally:
                with _lock, contextlib.suppress(ValueError):
                    blocker._waiters.remove((loop, waiter))

    def end_call(self) -> None:
        """A call reserved by :meth:`begin_call` ended (however it ended)."""
        woken: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        with _lock:
            for _, node in self.chain():
                node.in_flight -= 1
                woken.extend(node._waiters)
                node._waiters.clear()
        for loop, waiter in woken:
            loop.call_soon_threadsafe(_wake, waiter)

    def charge(self, tokens: int, cost: float | None, calls: int = 0) -> None:
        """Add usage (and ``calls`` model calls made elsewhere) to this node and every
        node above it."""
        with _lock:
            for _, node in self.chain():
                node.calls += calls
                node.tokens += tokens
                if cost is not None:
                    node.cost += cost

    # -- checks --------------------------------------------------------------------------------
    def budget_error(self) -> LimitExceeded | None:
        """The token or cost budget, of this run or one above it, that is used up."""
        with _lock:
            return self._budget_error()

    def remaining(self) -> tuple[int, int | None, float | None]:
        """Model calls, tokens and dollars left before the first limit on the way up
        (never negative; ``None``: no limit)."""
        calls: list[int] = []
        tokens: list[int] = []
        cost: list[float] = []
        with _lock:
            for _, node in self.chain():
                calls.append(node.max_calls - node.calls)
                limits = node.limits
                if limits.max_total_tokens is not None:
                    tokens.append(limits.max_total_tokens - node.tokens)
                if limits.max_cost_usd is not None:
                    cost.append(limits.max_cost_usd - node.cost)
        return (
            max(min(calls), 0),
            max(min(tokens), 0) if tokens else None,
            max(min(cost), 0.0) if cost else None,
        )

    def _refusal(self) -> LimitExceeded | None:
        for level, node in self.chain():
            if node.calls >= node.max_calls:
                return _calls_error(node, level)
        return self._budget_error()

    def _budget_error(self) -> LimitExceeded | None:
        for level, node in self.chain():
            limits = node.limits
            if limits.max_total_tokens is not None and node.tokens >= limits.max_total_tokens:
                return TokenBudgetExceeded(
                    f"{_who(level)} used {node.tokens} tokens, reaching the budget of "
                    f"{limits.max_total_tokens}{_where(level)}. Raise limits.max_total_tokens"
                    f"{_there(level)} to allow more."
                )
            if limits.max_cost_usd is not None and node.cost >= limits.max_cost_usd:
                return CostBudgetExceeded(
                    f"{_who(level)} cost ${node.cost:.4f}, reaching the budget of "
                    f"${limits.max_cost_usd:.4f}{_where(level)}. Raise limits.max_cost_usd"
                    f"{_there(level)} to allow more."
                )
        return None


def _budgeted(limits: LimitsConfig) -> bool:
    return limits.max_total_tokens is not None or limits.max_cost_usd is not None


def _calls_error(node: Ledger, level: int) -> MaxTurnsExceeded:
    limits = node.limits
    if node.max_calls < limits.max_turns:
        return MaxTurnsExceeded(
            f"The runs of this tree (the outermost run and every sub-agent below it) made "
            f"{node.calls} model calls, reaching limits.max_tree_model_calls = "
            f"{node.max_calls}. Raise it on the outermost run if the task needs more."
        )
    return MaxTurnsExceeded(
        f"{_who(level)} reached the limit of {limits.max_turns} model calls{_where(level)}. "
        f"Raise limits.max_turns{_there(level)} if the task needs more."
    )


def _who(level: int) -> str:
    if level == 0:
        return "The run (its sub-agents included)"
    return "This run's tree (the runs above it and all their sub-agents)"


def _where(level: int) -> str:
    if level == 0:
        return ""
    ups = "the run that started this one" if level == 1 else f"the run {level} levels up"
    return f" set on {ups}"


def _there(level: int) -> str:
    return "" if level == 0 else " there"


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
