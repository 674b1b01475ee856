"""The agent loop: the one implementation behind ``stream()``, ``run()`` and ``run_sync()``.

One :class:`Run` turns one prompt into model calls and tool calls and yields
:data:`~tether.events.RunEvent` objects as things happen (see DESIGN "One turn"):

1. append the user message;
2. send the history and tool definitions, yielding deltas as they stream in; retryable
   provider errors back off (with jitter, honouring ``retry_after``) and are tried again;
3. append the assistant message; on tool calls run the tools (in parallel where allowed),
   yield ``ToolStart``/``ToolEnd``, append the results in declared order, let the
   compaction strategy shorten the history, and go to 2;
4. end with exactly one ``Done`` whose result says how the run ended.

Every path out of the loop (an exception, a limit, cancellation) leaves every tool call
in the history answered by its result.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .cancel import CancelToken
from .compaction import CompactionContext, CompactionStrategy
from .errors import (
    ContextOverflowError,
    CostBudgetExceeded,
    LimitExceeded,
    LoopDetected,
    MaxTurnsExceeded,
    ProviderError,
    RefusalError,
    RunCancelled,
    TetherError,
    TokenBudgetExceeded,
    WallTimeExceeded,
)
from .events import (
    Compaction,
    Done,
    Retry,
    RunEvent,
    SessionRepaired,
    ToolEnd,
    ToolStart,
    TurnEnd,
)
from .messages import Message, StopReason, ToolCallBlock, ToolResultBlock, Usage
from .provider import (
    ModelCapabilities,
    ModelRequest,
    ModelResponse,
    Provider,
    ThinkingConfig,
    ToolDefinition,
)
from .result import Outcome, RunResult
from .retry import RetryPolicy
from .sessions import Session
from .tool_execution import INTERRUPTED, ToolExecutor, interrupted_result, rehome_images

if TYPE_CHECKING:
    from .config import LimitsConfig

__all__ = ["RetryPolicy", "Run", "RunSettings"]

_REPORTED_REPAIRS: weakref.WeakSet[Session] = weakref.WeakSet()
"""Sessions whose load-time repair has been announced with a SessionRepaired event."""


@dataclass(slots=True)
class RunSettings:
    """Everything a run needs that does not change between runs of one agent."""

    provider: Provider
    model: str
    model_string: str
    capabilities: ModelCapabilities
    system: str
    tools: dict[str, Any]
    tool_definitions: Sequence[ToolDefinition]
    tool_settings: dict[str, dict[str, Any]]
    parallel_tools: bool
    limits: LimitsConfig
    retry: RetryPolicy
    compaction: CompactionStrategy
    max_output_tokens: int | None
    temperature: float | None
    thinking: ThinkingConfig | None
    provider_settings: dict[str, Any]
    observers: Sequence[Callable[[RunEvent], None]]
    cwd: Any
    env: dict[str, str]
    refresh_system: Callable[[], str] | None = None
    """Called after a compaction for a new system prompt (e.g. a fresh memory snapshot)."""


class Run:
    """One run of the loop over one session. Iterate :meth:`events` once."""

    def __init__(
        self,
        settings: RunSettings,
        session: Session,
        prompt: Message,
        *,
        cancel: CancelToken | None = None,
        deps: Any = None,
    ) -> None:
        self.s = settings
        self.session = session
        self.prompt = prompt
        self.cancel = cancel or CancelToken()
        self.new_messages: list[Message] = []
        self.executor = ToolExecutor(
            settings.tools,
            session_id=session.id,
            cancel=self.cancel,
            cwd=settings.cwd,
            env=settings.env,
            deps=deps,
            settings=settings.tool_settings,
        )
        self.turns = 0
        self.retries = 0
        self.tool_calls = 0
        self.tool_errors = 0
        self.input_tokens = self.output_tokens = 0
        self.cache_read = self.cache_write = self.reasoning = 0
        self.cost: float | None = 0.0 if settings.capabilities.pricing is not None else None
        self.reported_input: int | None = None
        self.reported_messages = 0
        self._failing: tuple[str, str] | None = None
        self._failing_count = 0
        self._started = 0.0
        self._deadline: float | None = None
        self._task: asyncio.Task[Any] | None = None
        self._armed = False
        self._latency = 0.0
        self._late_ends: list[ToolEnd] = []
        """ToolEnd events not yielded when they happened (the run was being interrupted):
        calls answered as interrupted, and calls that finished just before. Yielded before Done."""

    # -- public ------------------------------------------------------------------------------
    async def events(self) -> AsyncIterator[RunEvent]:
        self._started = time.perf_counter()
        if self.s.limits.wall_time_s is not None:
            self._deadline = self._started + self.s.limits.wall_time_s
        self._task = asyncio.current_task()
        remove_hook = self.cancel.on_cancel(self._on_cancel)
        observers = self.s.observers
        try:
            async for event in self._loop():
                if observers:
                    for observer in observers:
                        _notify(observer, event)
                yield event
        finally:
            remove_hook()

    # -- the loop ----------------------------------------------------------------------------
    async def _loop(self) -> AsyncIterator[RunEvent]:
        s = self.s
        report = getattr(self.session, "repair_report", None)
        if report and self.session not in _REPORTED_REPAIRS:
            _REPORTED_REPAIRS.add(self.session)
            yield SessionRepaired(report)
        self._append(self.prompt)
        stop_reason: StopReason | None = None
        try:
            while True:
                self._check_cancel()
                if self.turns >= s.limits.max_turns:
                    raise MaxTurnsExceeded(
                        f"The run reached its limit of {s.limits.max_turns} model calls. "
                        "Raise limits.max_turns if the task needs more."
                    )
                self._check_deadline()
                response: ModelResponse | None = None
                async for event in self._call_model():
                    if type(event) is ModelResponse:
                        response = event
                    else:
                        yield event
                assert response is not None
                self.turns += 1
                message = response.message
                stop_reason = response.stop_reason
                meta = message.meta
                if meta.model is None:
                    meta.model = s.model_string
                meta.usage = response.usage
                meta.stop_reason = stop_reason
                self._append(message)
                self.reported_input = response.usage.input_tokens or None
                self.reported_messages = len(self.session.messages) - 1
                yield self._turn_end(response)

                calls = message.tool_calls
                if stop_reason is StopReason.MAX_TOKENS or stop_reason is StopReason.REFUSAL:
                    if calls:
                        self._answer_unrun(
                            calls, "Not run: the response was cut off before it was complete."
                        )
                    break
                if not calls:
                    break
                self._check_budgets(calls)
                async for event in self._run_tools(calls):
                    yield event
                self._check_loop(calls)
                async for event in self._maybe_compact(force=False):
                    yield event
        except LimitExceeded as exc:
            for end in self._late_ends:
                yield end
            yield Done(self._result(Outcome.LIMIT, stop_reason, exc))
            return
        except asyncio.CancelledError:
            self._answer_open_calls()
            task = self._task
            if self.cancel.cancelled and task is not None and task.cancelling():
                task.uncancel()
                for end in self._late_ends:
                    yield end
                yield Done(
                    self._result(
                        Outcome.CANCELLED,
                        stop_reason,
                        RunCancelled(self.cancel.reason or "cancelled"),
                    )
                )
                return
            raise
        except RunCancelled as exc:
            self._answer_open_calls()
            for end in self._late_ends:
                yield end
            yield Done(self._result(Outcome.CANCELLED, stop_reason, exc))
            return
        except BaseException:
            self._answer_open_calls()
            raise
        if stop_reason is StopReason.MAX_TOKENS:
            yield Done(self._result(Outcome.MAX_TOKENS, stop_reason, None))
        elif stop_reason is StopReason.REFUSAL:
            error = RefusalError("The model refused to answer.", provider=s.provider.name)
            yield Done(self._result(Outcome.REFUSAL, stop_reason, error))
        else:
            yield Done(self._result(Outcome.COMPLETED, stop_reason, None))

    # -- model calls -------------------------------------------------------------------------
    def _request(self) -> ModelRequest:
        s = self.s
        return ModelRequest(
            model=s.model,
            messages=self.session.messages,
            system=s.system,
            tools=s.tool_definitions,
            max_output_tokens=s.max_output_tokens,
            temperature=s.temperature,
            thinking=s.thinking,
            session_id=self.session.id,
            capabilities=s.capabilities,
            settings=s.provider_settings,
        )

    async def _call_model(self) -> AsyncIterator[Any]:
        """Yield the deltas of one successful model call, then its ModelResponse."""
        attempt = 0
        overflow_compacted = False
        started = time.perf_counter()
        while True:
            attempt += 1
            request = self._request()
            try:
                response: ModelResponse | None = None
                self._arm()
                async for event in self.s.provider.stream(request):
                    if type(event) is ModelResponse:
                        response = event
                        continue  # drain the stream so the generator closes here, not in a finalizer
                    self._armed = False
                    yield event
                    self._arm()
                    if self._deadline is not None:
                        self._check_deadline()
                self._armed = False
                if response is None:
                    raise ProviderError(
                        f"The {self.s.provider.name} provider ended its stream without a response.",
                        provider=self.s.provider.name,
                    )
                self._latency = time.perf_counter() - started
                yield response
                return
            except ContextOverflowError:
                self._armed = False
                if overflow_compacted:
                    raise
                overflow_compacted = True
                compacted = False
                async for compaction in self._maybe_compact(force=True):
                    compacted = True
                    yield compaction
                if not compacted:
                    raise
            except ProviderError as exc:
                self._armed = False
                if not exc.retryable:
                    raise
                delay = self.s.retry.delay(attempt, exc)
                if delay is None:
                    raise
                self.retries += 1
                self._check_cancel()
                if self._deadline is not None and time.perf_counter() + delay > self._deadline:
                    raise WallTimeExceeded(
                        f"The run's wall-time limit of {self.s.limits.wall_time_s:g} s would pass "
                        f"while waiting {delay:.1f} s to retry after: {exc}"
                    ) from exc
                yield Retry(attempt=attempt, delay=delay, error=exc)
                self._arm()
                await self.s.retry.sleep(delay)
                self._armed = False

    def _turn_end(self, response: ModelResponse) -> TurnEnd:
        usage = response.usage
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read += usage.cache_read_tokens
        self.cache_write += usage.cache_write_tokens
        self.reasoning += usage.reasoning_tokens
        cost = None
        pricing = self.s.capabilities.pricing
        if pricing is not None:
            cost = pricing.cost(usage)
            self.cost = (self.cost or 0.0) + cost
        return TurnEnd(
            model=response.model or self.s.model_string,
            stop_reason=response.stop_reason,
            usage=usage,
            latency=self._latency,
            cost=cost,
        )

    # -- tools ---------------------------------------------------------------------------------
    async def _run_tools(self, calls: list[ToolCallBlock]) -> AsyncIterator[RunEvent]:
        results: list[ToolResultBlock | None] = [None] * len(calls)
        try:
            if len(calls) == 1 and self._deadline is None:
                call = calls[0]
                yield ToolStart(call.id, call.name, call.arguments)
                started = time.perf_counter()
                self._arm()
                result = await self.executor.execute(call)
                self._armed = False
                results[0] = result
                yield ToolEnd(call.id, call.name, result, time.perf_counter() - started)
            else:
                for group in self._groups(calls):
                    async for event in self._run_group(calls, group, results):
                        yield event
        except BaseException:
            self._armed = False
            self._write_results(calls, results)
            raise
        self._write_results(calls, results)

    def _groups(self, calls: list[ToolCallBlock]) -> list[list[int]]:
        """Indices of calls that may run together, in declared order."""
        if not self.s.parallel_tools or not self.s.capabilities.parallel_tool_calls:
            return [[i] for i in range(len(calls))]
        groups: list[list[int]] = []
        current: list[int] = []
        for index, call in enumerate(calls):
            if self.executor.is_sequential(call):
                if current:
                    groups.append(current)
                    current = []
                groups.append([index])
            else:
                current.append(index)
        if current:
            groups.append(current)
        return groups

    async def _run_group(
        self, calls: list[ToolCallBlock], group: list[int], results: list[ToolResultBlock | None]
    ) -> AsyncIterator[RunEvent]:
        started: dict[asyncio.Task[ToolResultBlock], tuple[int, float]] = {}
        for index in group:
            call = calls[index]
            yield ToolStart(call.id, call.name, call.arguments)
            task = asyncio.ensure_future(self.executor.execute(call))
            started[task] = (index, time.perf_counter())
        pending: set[asyncio.Task[ToolResultBlock]] = set(started)
        try:
            while pending:
                timeout = None
                if self._deadline is not None:
                    timeout = max(self._deadline - time.perf_counter(), 0.0)
                self._arm()
                done, pending = await asyncio.wait(
                    pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                self._armed = False
                if not done:
                    raise WallTimeExceeded(
                        f"The run's wall-time limit of {self.s.limits.wall_time_s:g} s passed while tools were running."
                    )
                for task in sorted(done, key=lambda t: started[t][0]):
                    index, began = started[task]
                    result = task.result()
                    results[index] = result
                    call = calls[index]
                    yield ToolEnd(call.id, call.name, result, time.perf_counter() - began)
        finally:
            # Keep what finished before an interruption (reported before Done); cancel the rest.
            for task, (index, began) in started.items():
                if (
                    results[index] is None
                    and task.done()
                    and not task.cancelled()
                    and task.exception() is None
                ):
                    results[index] = result = task.result()
                    call = calls[index]
                    self._late_ends.append(
                        ToolEnd(call.id, call.name, result, time.perf_counter() - began)
                    )
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    def _write_results(
        self, calls: list[ToolCallBlock], results: list[ToolResultBlock | None]
    ) -> None:
        final: list[ToolResultBlock] = []
        for call, result in zip(calls, results, strict=True):
            if result is None:
                result = interrupted_result(call.id, self._interrupt_reason())
                self._late_ends.append(ToolEnd(call.id, call.name, result, 0.0, interrupted=True))
            final.append(result)
        self.tool_calls += len(final)
        for result in final:
            if result.is_error:
                self.tool_errors += 1
        followup = None
        if not self.s.capabilities.images_in_tool_results:
            final, followup = rehome_images(final)
        self._append(Message.tool(final))
        if followup is not None:
            self._append(followup)

    def _interrupt_reason(self) -> str:
        if self.cancel.cancelled:
            return f"{INTERRUPTED} Reason: {self.cancel.reason}."
        if self._deadline is not None and time.perf_counter() >= self._deadline:
            return "Interrupted: the run's wall-time limit passed before this tool call finished."
        return INTERRUPTED

    def _answer_unrun(self, calls: list[ToolCallBlock], why: str) -> None:
        self._append(Message.tool([interrupted_result(c.id, why) for c in calls]))

    def _answer_open_calls(self) -> None:
        """If the last message is an assistant message with unanswered calls, answer them."""
        messages = self.session.messages
        if messages and messages[-1].role == "assistant":
            calls = messages[-1].tool_calls
            if calls:
                self._answer_unrun(calls, self._interrupt_reason())

    # -- limits ----------------------------------------------------------------------------------
    def _check_cancel(self) -> None:
        if self.cancel.cancelled:
            raise RunCancelled(self.cancel.reason or "cancelled")

    def _check_deadline(self) -> None:
        if self._deadline is not None and time.perf_counter() >= self._deadline:
            raise WallTimeExceeded(
                f"The run reached its wall-time limit of {self.s.limits.wall_time_s:g} s. "
                "Raise limits.wall_time_s if the task needs more."
            )

    def _check_budgets(self, calls: list[ToolCallBlock]) -> None:
        limits = self.s.limits
        error: LimitExceeded | None = None
        total = self.input_tokens + self.output_tokens
        if limits.max_total_tokens is not None and total >= limits.max_total_tokens:
            error = TokenBudgetExceeded(
                f"The run used {total} tokens, reaching its budget of {limits.max_total_tokens}. "
                "Raise limits.max_total_tokens to allow more."
            )
        elif (
            limits.max_cost_usd is not None
            and self.cost is not None
            and self.cost >= limits.max_cost_usd
        ):
            error = CostBudgetExceeded(
                f"The run cost ${self.cost:.4f}, reaching its budget of ${limits.max_cost_usd:.4f}. "
                "Raise limits.max_cost_usd to allow more."
            )
        if error is not None:
            self._answer_unrun(calls, f"Not run: {error}")
            raise error

    def _check_loop(self, calls: list[ToolCallBlock]) -> None:
        last = self.session.messages[-1] if self.session.messages else None
        if last is None or last.role != "tool":
            return
        for call, result in zip(calls, last.tool_results, strict=False):
            if not result.is_error:
                self._failing, self._failing_count = None, 0
                continue
            signature = (call.name, json.dumps(call.arguments, sort_keys=True, default=str))
            if signature == self._failing:
                self._failing_count += 1
            else:
                self._failing, self._failing_count = signature, 1
            if self._failing_count >= self.s.limits.loop_threshold:
                raise LoopDetected(
                    f"The model called `{call.name}` with the same arguments {self._failing_count} times "
                    f"in a row and it failed every time (last error: {result.text[:200]!r}). "
                    "The run was stopped to avoid a loop."
                )

    # -- compaction --------------------------------------------------------------------------------
    async def _maybe_compact(self, *, force: bool) -> AsyncIterator[RunEvent]:
        s = self.s
        messages = self.session.messages
        context = CompactionContext(
            messages=messages,
            system=s.system,
            tools=s.tool_definitions,
            provider=s.provider,
            model=s.model,
            capabilities=s.capabilities,
            session_id=self.session.id,
            reported_input_tokens=self.reported_input,
            reported_messages=self.reported_messages,
            force=force,
        )
        self._arm()
        outcome = await s.compaction.compact(context)
        self._armed = False
        if outcome is None:
            return
        before = len(messages)
        self.session.replace(outcome.messages)
        if s.refresh_system is not None:
            self.s = replace(s, system=s.refresh_system())
        self.reported_input = None
        self.reported_messages = 0
        yield Compaction(
            strategy=s.compaction.name,
            tokens_before=outcome.tokens_before,
            tokens_after=outcome.tokens_after,
            messages_before=before,
            messages_after=len(outcome.messages),
        )

    # -- bookkeeping -------------------------------------------------------------------------------
    def _append(self, message: Message) -> None:
        self.session.append(message)
        self.new_messages.append(message)

    def _arm(self) -> None:
        """Allow the cancel token to interrupt the await that follows."""
        if self.cancel.reason is not None:
            raise RunCancelled(self.cancel.reason)
        self._armed = True

    def _on_cancel(self) -> None:
        if self._armed and self._task is not None and not self._task.done():
            self._task.cancel("tether: cancel token")

    def _result(
        self, outcome: Outcome, stop_reason: StopReason | None, error: TetherError | None
    ) -> RunResult:
        output = ""
        for message in reversed(self.new_messages):
            if message.role == "assistant":
                output = message.text
                break
        return RunResult(
            outcome=outcome,
            output=output,
            messages=self.new_messages,
            session_id=self.session.id,
            usage=Usage(
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
                cache_read_tokens=self.cache_read,
                cache_write_tokens=self.cache_write,
                reasoning_tokens=self.reasoning,
            ),
            cost=self.cost,
            turns=self.turns,
            tool_calls=self.tool_calls,
            tool_errors=self.tool_errors,
            retries=self.retries,
            stop_reason=stop_reason,
            duration=time.perf_counter() - self._started,
            error=error,
        )


def _notify(observer: Callable[[RunEvent], None], event: RunEvent) -> None:
    try:
        observer(event)
    except Exception:  # observers must not break runs
        import logging

        logging.getLogger("tether.observers").exception("event observer %r raised", observer)
