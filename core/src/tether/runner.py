"""The agent loop: the one implementation behind ``stream()``, ``run()`` and ``run_sync()``.

One :class:`Run` turns one prompt into model calls and tool calls and yields
:data:`~tether.events.RunEvent` objects as things happen (see DESIGN "One turn"): append
the user message; stream the model's answer (retryable provider errors back off and are
tried again); append it; run its tool calls, append their results in declared order,
compact if needed, and call the model again; end with exactly one ``Done``. Every path
out of the loop leaves every tool call in the history answered by its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import replace
from typing import Any

from .accounts import RunAccounts
from .arguments import bound_arguments
from .cancel import CancelScope, CancelToken
from .compaction import CompactionContext
from .deadlines import check_retry_budget, guarded_provider, guarded_stream, within_deadline
from .early_dispatch import early_dispatch
from .errors import (
    ContextOverflowError,
    LimitExceeded,
    ProviderError,
    RefusalError,
    RunCancelled,
    SessionError,
    TetherError,
)
from .events import Compaction, Done, Retry, RunEvent, SessionRepaired, ToolEnd
from .guard import RunGuard
from .ledger import current_ledger
from .messages import (
    INTERRUPTED,
    Message,
    StopReason,
    ToolCallBlock,
    ToolResultBlock,
    interrupted_result,
)
from .nested_streams import nested
from .observe import ObservedToolExecutor, RunObservation, run_start
from .provider import ModelResponse, ProviderEvent, ToolCallReady
from .result import Outcome, RunResult, low_cache_warning
from .retry import RetryPolicy
from .run_features import ENDING_ERRORS, RunFeatures
from .run_settings import RunSettings
from .scrub_exceptions import scrub_exception
from .sessions import AnySession, append_message, one_run_at_a_time, replace_messages
from .sessions.waits import ending_grace
from .surrogates import SurrogateJoiner
from .tool_execution import ToolScheduler

__all__ = ["RetryPolicy", "Run", "RunSettings"]


class Run(RunAccounts):
    """One run of the loop over one session. Iterate :meth:`events` once."""

    def __init__(
        self,
        settings: RunSettings,
        session: AnySession,
        prompt: Message | None,
        *,
        cancel: CancelToken | None = None,
        deps: Any = None,
        repair_report: Any = None,
        resume: dict[str, Any] | None = None,
    ) -> None:
        self.s = settings
        self.repair_report = repair_report
        """What loading the session repaired, announced first (SessionRepaired) if set."""
        self.session = session
        self.prompt = prompt
        self.cancel = cancel or CancelToken()
        self.new_messages: list[Message] = []
        self.start = run_start(settings, session.id, prompt.text if prompt is not None else None)
        self.features = features = RunFeatures(self, resume=resume)
        self.executor = ObservedToolExecutor(
            features.tools,
            session_id=session.id,
            cancel=self.cancel,
            cwd=settings.cwd,
            env=settings.env,
            deps=deps,
            settings=settings.tool_settings,
            default_timeout=settings.limits.tool_timeout_s,
            boundary=settings.tool_boundary,
        )
        self.executor.observe(self.start.run_id, settings.observers)
        self.guard = RunGuard(settings.limits, current_ledger())
        self.executor.ledger = self.guard.ledger
        self.scope = CancelScope(self.cancel)
        self.scheduler = ToolScheduler(
            self.executor,
            parallel=settings.parallel_tools and settings.capabilities.parallel_tool_calls,
            scope=self.scope,
            guard=self.guard,
        )
        self.scheduler.early = self.early = early_dispatch(self)
        self.executor.scope = features
        self.open_accounts(settings.capabilities)
        self.reported_input: int | None = None
        self.reported_messages = 0
        self._finished = False
        self._late_ends: list[ToolEnd] = []
        """ToolEnd events not yielded when they happened (the run was being interrupted):
        calls answered as interrupted, and calls that finished just before. Yielded before Done."""

    def events(self) -> AsyncGenerator[RunEvent, None]:
        """The run's events: the loop itself, seen through the run's observers if any."""
        if not self.s.observers:
            return self._loop()
        observation = RunObservation(self.start, self.s.observers, self.guard.elapsed)
        return observation.observe(self._loop())

    # -- the loop ----------------------------------------------------------------------------
    async def _loop(self) -> AsyncGenerator[RunEvent, None]:
        with one_run_at_a_time(self.session), self.scope:
            self.guard.start(self.start.run_id)
            yield self.start
            if self.repair_report:
                yield SessionRepaired(self.repair_report)
            error: TetherError | None = None
            try:
                for calls in await self.features.start(self.prompt):
                    async with nested(self._run_tools(calls)) as resumed:
                        async for event in resumed:  # the calls of a resumed run
                            yield event
                while not self._finished:
                    try:
                        async with nested(self._turn()) as turn:
                            async for event in turn:
                                yield event
                    finally:
                        if self.early.started:  # calls started early that nobody claimed
                            await self.early.discard()
            except LimitExceeded as exc:
                outcome, error = Outcome.LIMIT, exc
            except ENDING_ERRORS as exc:
                outcome, error = self.features.outcome_of(exc), exc
            except asyncio.CancelledError:
                await self._answer_open_calls()
                task = self.scope.task
                if not (self.cancel.cancelled and task is not None and task.cancelling()):
                    raise
                task.uncancel()
                outcome, error = self._cancelled(RunCancelled(self.cancel.reason or "cancelled"))
            except RunCancelled as exc:
                await self._answer_open_calls()
                outcome, error = self._cancelled(exc)
            except BaseException as exc:
                await self._answer_open_calls()
                scrub_exception(exc)  # in place: what reaches the caller holds no secret
                raise
            else:
                outcome, error = self._ending()
            for end in self._late_ends:
                yield end
            yield Done(self._result(outcome, error))

    async def _turn(self) -> AsyncGenerator[RunEvent, None]:
        """One model call and the tool calls it asked for; sets ``_finished`` at the end."""
        self.scope.check()
        self.guard.check_deadline()
        if self.s.update_tools is not None:
            await self._update_tools(self.s.update_tools)
        async with self.guard.model_call(self.scope):  # a turn in the tree's ledger
            response: ModelResponse | None = None
            async with nested(self._call_model()) as model_events:
                async for event in model_events:
                    if type(event) is ModelResponse:
                        response = event
                    else:
                        yield event
            assert response is not None
            message = await self._record(response)
            turn_end = self.account_response(response, self.s)
            self.guard.ledger.charge(response.usage.total_tokens, turn_end.cost)
        yield turn_end
        if (warning := low_cache_warning(self.usage, self.turns, self.s.cache_warning)) is not None:
            yield warning
        if await self.features.after_response(message, self.stop_reason):
            return
        calls = message.tool_calls
        if self.stop_reason is StopReason.MAX_TOKENS or self.stop_reason is StopReason.REFUSAL:
            if calls:
                await self._answer_unrun(
                    calls, "Not run: the response was cut off before it was complete."
                )
            self._finished = True
            return
        if not calls:
            self._finished = True
            return
        error = self.guard.budget_error()
        if error is not None:
            await self._answer_unrun(calls, f"Not run: {error}")
            raise error
        if await self.features.review_calls(calls):
            return
        async with nested(self._run_tools(calls)) as tool_events:
            async for event in tool_events:
                yield event
        async with nested(self._maybe_compact(force=False)) as compactions:
            async for event in compactions:
                yield event

    async def _update_tools(
        self, update: Callable[[RunSettings], Awaitable[RunSettings | None]]
    ) -> None:
        """Offer the model the dynamic toolsets' current tools from this turn on."""
        with self.scope.interruptible():
            updated = await update(self.s)
        if updated is not None:
            self.s = updated
            self.executor.tools = self.features.rebase_tools(updated.tools)
            self.executor.settings = updated.tool_settings

    def _cancelled(self, error: RunCancelled) -> tuple[Outcome, TetherError]:
        """A run cancelled past its deadline (a caller's, shared) ended by its limit."""
        if self.guard.expired():
            return Outcome.LIMIT, self.guard.deadline_error()
        return Outcome.CANCELLED, error

    def _ending(self) -> tuple[Outcome, TetherError | None]:
        """How a run that ended without an exception ended."""
        if self.features.pending:
            return Outcome.SUSPENDED, None
        if self.stop_reason is StopReason.MAX_TOKENS:
            return Outcome.MAX_TOKENS, None
        if self.stop_reason is StopReason.REFUSAL:
            return Outcome.REFUSAL, RefusalError(
                "The model refused to answer.", provider=self.s.provider.name
            )
        return Outcome.COMPLETED, None

    # -- model calls -------------------------------------------------------------------------
    async def _call_model(self) -> AsyncGenerator[Any, None]:
        """Yield the deltas of one successful model call, then its ModelResponse."""
        attempt = 0
        overflow_compacted = False
        started = time.perf_counter()
        while True:
            attempt += 1
            request = self.features.request()
            sent, first = time.perf_counter(), None
            self.features.attempt_started()
            partial_of = self.features.partial if self.features.output is not None else None
            try:
                response: ModelResponse | None = None
                stream = guarded_stream(self.s.provider, request, self.guard)
                joiner = SurrogateJoiner()
                event: ProviderEvent | None  # None: half a surrogate pair, held back
                async with nested(stream):
                    with self.scope.interruptible():
                        async for event in stream:
                            if (event := joiner.join(event)) is None:
                                continue  # half a surrogate pair: it goes with the next delta
                            if type(event) is ModelResponse:
                                response = event
                                continue  # drain the stream so it closes here, not in a finalizer
                            if type(event) is ToolCallReady:
                                self.early.ready(event)
                                continue
                            first = first if first is not None else time.perf_counter() - sent
                            self.scope.pause()  # per delta: cheaper than `with paused()`
                            yield event
                            if partial_of is not None and (partial := partial_of(event)):
                                yield partial
                            self.scope.resume()
                        for event in joiner.flush():
                            with self.scope.paused():
                                yield event
                if response is None:
                    raise ProviderError(
                        f"The {self.s.provider.name} provider ended its stream without a response.",
                        provider=self.s.provider.name,
                    )
                self.latency, self.first_token = time.perf_counter() - started, first
                yield response
                return
            except ContextOverflowError:
                if overflow_compacted:
                    raise
                overflow_compacted = True
                compacted = False
                async with nested(self._maybe_compact(force=True)) as compactions:
                    async for compaction in compactions:
                        compacted = True
                        yield compaction
                if not compacted:
                    raise
            except ProviderError as exc:
                delay = self._retry_delay(attempt, exc, started)
                yield Retry(attempt=attempt, delay=delay, error=scrub_exception(exc))
                with self.scope.interruptible():
                    await self.s.retry.sleep(delay)

    def _retry_delay(self, attempt: int, error: ProviderError, started: float) -> float:
        """Seconds to wait before trying again after ``error``; re-raises it if it may not
        be retried (not retryable, out of attempts, cancelled, past wall time or budget)."""
        delay = self.s.retry.delay(attempt, error) if error.retryable else None
        if delay is None:
            raise error
        self.scope.check()
        self.guard.check_retry_wait(delay, error)
        check_retry_budget(error, delay, started, self.s.limits.retry_budget_s, attempt)
        self.retries += 1
        return delay

    async def _record(self, response: ModelResponse) -> Message:
        """Append the response's message (stamped with model, usage and stop reason)."""
        self.turns += 1
        message = response.message = bound_arguments(response.message)
        self.stop_reason = response.stop_reason
        meta = message.meta
        if meta.model is None:
            meta.model = self.s.model_string
        meta.usage = response.usage
        meta.stop_reason = response.stop_reason
        await self._append(message)
        self.reported_input = response.usage.input_tokens or None
        self.reported_messages = len(self.session.messages) - 1
        return message

    # -- tools ---------------------------------------------------------------------------------
    async def _run_tools(self, calls: list[ToolCallBlock]) -> AsyncGenerator[RunEvent, None]:
        results: list[ToolResultBlock | None] = [None] * len(calls)
        try:
            tool_events = self.scheduler.run(calls, results, self._late_ends)
            async with nested(tool_events):
                async for event in tool_events:
                    yield event
        except BaseException:
            await self._write_results(calls, results)
            raise
        written = await self._write_results(calls, results)
        self.features.after_tools()
        self.guard.check_loop(calls, written)

    async def _write_results(
        self, calls: list[ToolCallBlock], results: list[ToolResultBlock | None]
    ) -> list[ToolResultBlock]:
        """Append one tool message answering every call, in declared order; return it.

        Images stay in the results: an adapter whose wire format cannot carry them there
        moves them itself (:func:`~tether.messages.rehome_images`)."""
        final: list[ToolResultBlock] = []
        for call, result in zip(calls, results, strict=True):
            if result is None:
                result = interrupted_result(call.id, self._interrupt_reason())
                self._late_ends.append(ToolEnd(call.id, call.name, result, 0.0, interrupted=True))
            final.append(result)
        self.account_results(final)
        await self._append(Message.tool(final))
        return final

    def _interrupt_reason(self) -> str:
        if self.cancel.cancelled:
            return f"{INTERRUPTED} Reason: {self.cancel.reason}."
        if self.guard.expired():
            return "Interrupted: the run's wall-time limit passed before this tool call finished."
        return INTERRUPTED

    async def _answer_unrun(self, calls: list[ToolCallBlock], why: str) -> None:
        await self._append(Message.tool([interrupted_result(c.id, why) for c in calls]))

    async def _answer_open_calls(self) -> None:
        """If the last message is an assistant message with unanswered calls, answer them."""
        messages = self.session.messages
        if messages and messages[-1].role == "assistant":
            calls = messages[-1].tool_calls
            if calls:
                # When the store refuses (another writer owns the history) or cannot be
                # reached within a short grace (the run is ending), the next writer's load
                # repairs it.
                with contextlib.suppress(SessionError), ending_grace():
                    await self._answer_unrun(calls, self._interrupt_reason())

    # -- compaction --------------------------------------------------------------------------------
    async def _maybe_compact(self, *, force: bool) -> AsyncGenerator[RunEvent, None]:
        s = self.s
        messages = self.session.messages
        context = CompactionContext(
            messages=messages,
            system=s.system,
            tools=s.tool_definitions,
            provider=guarded_provider(s.provider, self.guard),
            model=s.model,
            capabilities=s.capabilities,
            session_id=self.session.id,
            reported_input_tokens=self.reported_input,
            reported_messages=self.reported_messages,
            force=force,
        )
        with self.scope.interruptible():
            async with within_deadline(self.guard):
                outcome = await s.compaction.compact(context)
        if outcome is None:
            return
        before = len(messages)
        await replace_messages(self.session, outcome.messages)
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
    async def _append(self, message: Message) -> None:
        """Write ``message`` to the session (off the event loop when the session can) and
        keep it among this run's new messages."""
        if await self.features.write(message):
            return
        await append_message(self.session, message)
        self.new_messages.append(message)

    def _result(self, outcome: Outcome, error: TetherError | None) -> RunResult:
        output = ""
        for message in reversed(self.new_messages):
            if message.role == "assistant":
                output = message.text
                break
        return self.features.finish(
            RunResult(
                outcome=outcome,
                output=output,
                messages=self.new_messages,
                session_id=self.session.id,
                duration=self.guard.elapsed(),
                error=None if error is None else scrub_exception(error),
                run_id=self.start.run_id,
                **self.totals(),
            )
        )
