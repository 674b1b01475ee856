"""The optional behaviours of a run, kept beside the loop rather than inside it.

:class:`RunFeatures` is consulted by :class:`~tether.runner.Run` at a few fixed points —
building a request, each text delta, after each response, before and after running a
response's tools, and at the end — and holds the state of:

- structured output (:mod:`tether.output`): the schema or final-answer tool to send,
  partial values while streaming, validation with retries;
- approvals (:mod:`tether.approvals`): the policy's verdict on each call, the approval
  callback, and suspending the run when nobody can answer;
- escalation: a tool that raised :class:`~tether.errors.NeedsHuman` ends the run;
- max-tokens continuation: an answer cut off by the output limit is continued, with a
  raised limit, up to a configured number of times;
- the tool list per turn: tools a loaded skill names are appended for later turns;
- the run as tools see it (:class:`~tether.scope.RunScope`): budget left, charging a
  sub-agent's usage, and its events, nested in this run's stream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .approvals import Approval, Gate, SessionGrants, pending_of, waiting_message
from .errors import NeedsHuman, OutputValidationError, TetherError
from .events import PartialOutput, RunEvent, TextDelta
from .messages import Message, StopReason, TextBlock, ToolCallBlock
from .output import OutputRun
from .provider import ModelRequest, OutputSchema, ToolDefinition
from .result import Outcome, PendingCall, RunResult
from .scope import Budget
from .sessions import replace_messages

if TYPE_CHECKING:
    from .runner import Run

__all__ = ["CONTINUE_PROMPT", "ENDING_ERRORS", "RunFeatures"]

ENDING_ERRORS = (NeedsHuman, OutputValidationError)
"""Errors that end a run with their own outcome (see :meth:`RunFeatures.outcome_of`)."""

CONTINUE_PROMPT = (
    "Your previous answer was cut off by the output-token limit. Continue exactly where it "
    "stopped, without repeating anything and without any preamble."
)


class RunFeatures:
    """State and decisions of one run's optional behaviours; see the module docstring."""

    def __init__(self, run: Run, *, resume: Mapping[str, Approval] | None = None) -> None:
        s = run.s
        self.run = run
        self.resume = resume
        self.output = (
            OutputRun(s.output, native=s.capabilities.structured_output)
            if s.output is not None
            else None
        )
        self.value: Any = None
        self.tools: dict[str, Any] = dict(s.tools)
        self.definitions: tuple[ToolDefinition, ...] = tuple(s.tool_definitions)
        self.added: dict[str, Any] = {}
        """Tools added during the run (by a loaded skill), kept after the agent's own."""
        self.orders = {name: _order(tool) for name, tool in self.tools.items()}
        self.gate: Gate | None = None
        if s.policy is not None and s.policy.rules:
            self.gate = Gate(
                s.policy,
                callback=s.approval,
                grants=s.grants if s.grants is not None else SessionGrants(),
                session_id=run.session.id,
                toolsets=s.toolsets,
                orders=self.orders,
                tools=self.tools,
                cwd=s.cwd,
                settings=s.tool_settings,
            )
        self.pending: list[PendingCall] = []
        self.continuations = 0
        self.max_output_tokens = s.max_output_tokens
        self.carry: list[str] = []
        """Text of responses cut off at max_tokens and continued."""
        self.placeholder = False
        """The session ends in a suspended run's placeholder results, to be replaced."""

    # -- requests -----------------------------------------------------------------------------
    def request(self) -> ModelRequest:
        """The request of the run's next model call."""
        run, s = self.run, self.run.s
        return ModelRequest(
            model=s.model,
            messages=run.session.messages,
            system=s.system,
            tools=self.tool_definitions(),
            max_output_tokens=self.max_output_tokens,
            temperature=s.temperature,
            thinking=s.thinking,
            session_id=run.session.id,
            capabilities=s.capabilities,
            settings=s.provider_settings,
            stop_sequences=s.stop_sequences,
            output_schema=self.output_schema(),
        )

    def tool_definitions(self) -> Sequence[ToolDefinition]:
        if self.output is None:
            return self.definitions
        return self.output.tools(self.definitions)

    def output_schema(self) -> OutputSchema | None:
        return self.output.schema() if self.output is not None else None

    def attempt_started(self) -> None:
        self.run.early.attempt()
        if self.output is not None:
            self.output.started()

    def partial(self, event: object) -> PartialOutput | None:
        """The structured output so far, after a text delta (native output only)."""
        if self.output is None or type(event) is not TextDelta:
            return None
        value = self.output.delta(event.text)
        return PartialOutput(value) if value is not None else None

    # -- after a response -----------------------------------------------------------------------
    async def after_response(self, message: Message, stop_reason: StopReason | None) -> bool:
        """Handle continuation and structured output; ``True`` when the turn is settled
        (the run is finished, or a follow-up message was appended for the next call)."""
        run = self.run
        calls = message.tool_calls
        if stop_reason is StopReason.MAX_TOKENS:
            if calls or self.continuations >= run.s.max_tokens_continuations:
                return False
            self.continuations += 1
            self.carry.append(message.text)
            limit = run.s.continuation_max_output_tokens or run.s.capabilities.max_output_tokens
            self.max_output_tokens = max(self.max_output_tokens or 0, limit)
            run.stop_reason = None
            await run._append(Message.user(CONTINUE_PROMPT))
            return True
        if self.output is None or stop_reason is StopReason.REFUSAL:
            return False
        if self.carry and not calls:
            text = "".join(self.carry) + message.text
            message = Message(role="assistant", content=[TextBlock(text=text)])
        step = self.output.review(message)
        if step is None:
            return False
        if step.results is not None:
            await run._write_results(calls, list(step.results))
        if step.followup is not None:
            await run._append(step.followup)
        if step.error is not None:
            raise step.error
        if step.finished:
            self.value = step.value
            run._finished = True
        return True

    # -- approvals ----------------------------------------------------------------------------------
    async def review_calls(self, calls: list[ToolCallBlock]) -> bool:
        """Apply the approval policy to ``calls``; ``True`` when the run suspends (the
        calls are answered with placeholders and listed as pending)."""
        if self.gate is None:
            return False
        review = await self.gate.review(calls)
        if review.pending:
            await self.suspend(calls, review.pending)
            return True
        self.run.executor.decided.update(review.denied)
        return False

    async def suspend(self, calls: Sequence[ToolCallBlock], pending: list[PendingCall]) -> None:
        self.pending = pending
        await self.run._append(waiting_message(calls, pending))
        self.run._finished = True

    async def start(self, prompt: Message | None) -> list[list[ToolCallBlock]]:
        """Begin the run: append ``prompt``, or (resuming, no prompt) return the
        suspended calls to run first."""
        if prompt is not None:
            await self.run._append(prompt)
            return []
        return [await self.resumed_calls()]

    async def resumed_calls(self) -> list[ToolCallBlock]:
        """On resume: the suspended calls, decided (denied ones pre-answered); raises if
        the session has nothing to resume or a waiting call has no decision."""
        found = pending_of(self.run.session.messages)
        if found is None:
            raise TetherError(
                "There is nothing to resume: the session does not end with tool calls waiting "
                "for approval. Start a new run with a prompt instead."
            )
        calls, waiting = found
        decisions = dict(self.resume or {})
        missing = [c for c in waiting if c not in decisions]
        if missing:
            raise TetherError(
                f"No decision for the waiting call(s) {', '.join(missing)}. Pass "
                "decisions={call_id: True/False, ...} covering every pending call."
            )
        if self.gate is not None:
            review = await self.gate.review(calls, decisions)
            self.run.executor.decided.update(review.denied)
        else:
            for call in calls:
                decision = decisions.get(call.id)
                if decision is not None and not decision.allow:
                    self.run.executor.decided[call.id] = _denied(call, decision)
        self.placeholder = True
        return calls

    async def write(self, message: Message) -> bool:
        """Write a tool message over a suspended run's placeholder; ``False`` if none."""
        if not self.placeholder or message.role != "tool":
            return False
        self.placeholder = False
        session = self.run.session
        await replace_messages(session, [*session.messages[:-1], message])
        self.run.new_messages.append(message)
        return True

    # -- after tools -----------------------------------------------------------------------------
    def after_tools(self) -> None:
        escalation = self.run.executor.escalation
        if escalation is not None:
            raise escalation

    # -- the end ---------------------------------------------------------------------------------
    @staticmethod
    def outcome_of(error: TetherError) -> Outcome:
        if isinstance(error, NeedsHuman):
            return Outcome.NEEDS_HUMAN
        if isinstance(error, OutputValidationError):
            return Outcome.INVALID_OUTPUT
        raise error

    def finish(self, result: RunResult) -> RunResult:
        text = "".join(self.carry) + result.output if self.carry else result.output
        result.text = text
        result.pending = list(self.pending)
        if self.output is not None:
            result.output = self.value if result.outcome is Outcome.COMPLETED else None
        else:
            result.output = text
        return result

    # -- the run as tools see it (RunScope) --------------------------------------------------------
    @property
    def session_id(self) -> str:
        return self.run.session.id

    def remaining(self) -> Budget:
        """What the run has left: the least of its own and every run's above it."""
        run = self.run
        calls, tokens, cost = run.guard.ledger.remaining()
        return Budget(
            turns=calls,
            tokens=tokens,
            cost_usd=cost,
            wall_time_s=run.guard.remaining(),
        )

    def charge(self, result: RunResult) -> None:
        """Add a nested run's totals to this run's result. A run that joined this run's
        tree was charged to its ledger as it went; another run's usage is charged now."""
        run = self.run
        run.turns += result.turns
        run.usage = run.usage + result.usage
        if result.cost is not None and run.cost is not None:
            run.cost += result.cost
        ledger = run.guard.ledger
        if result.run_id not in ledger.members:
            ledger.charge(
                result.usage.input_tokens + result.usage.output_tokens, result.cost, result.turns
            )

    def emit(self, event: RunEvent) -> None:
        self.run.executor.progress.put_nowait(event)

    def rebase_tools(self, tools: Mapping[str, Any]) -> dict[str, Any]:
        """The agent's tool list changed (a dynamic toolset): its new tools, then the
        tools added during the run. Returns the mapping tool calls run against."""
        self.tools.clear()
        self.tools.update(tools)
        definitions = [t.definition for t in tools.values()]
        for name, tool in self.added.items():
            if name not in self.tools:
                self.tools[name] = tool
                definitions.append(tool.definition)
        self.definitions = tuple(definitions)
        self.orders.clear()
        self.orders.update({name: _order(tool) for name, tool in self.tools.items()})
        return self.tools

    def add_tools(self, names: Sequence[str]) -> list[str]:
        """Offer the tools (or toolsets) ``names`` from the next model call on, appended
        after the current ones; returns the names of the tools newly added."""
        resolve = self.run.s.resolve_tools
        if resolve is None:
            return []
        added = []
        for name, tool in resolve(names).items():
            if name in self.tools:
                continue
            self.tools[name] = self.added[name] = tool
            self.orders[name] = _order(tool)
            self.definitions = (*self.definitions, tool.definition)
            added.append(name)
        return added


def _order(tool: Any) -> list[str]:
    """A tool's parameter names in declared order (approval patterns match the first text one)."""
    return list(getattr(tool, "parameters", {}).get("properties", {}))


def _denied(call: ToolCallBlock, decision: Approval) -> Any:
    from .approvals import _denial

    why = f" Reason: {decision.reason}" if decision.reason else ""
    return _denial(call, f"Denied by the user.{why}")
