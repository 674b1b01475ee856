"""Strategies: how an agent works through a task, each built from runs of the one loop.

- ``react`` (the default): one run of the loop — think, call tools, answer.
- ``plan-and-execute``: a run that returns a structured plan, then one run per step (each
  reporting whether it succeeded), re-planning what remains when a step fails, then a run
  for the final answer. Yields :class:`~tether.events.PlanUpdate`,
  :class:`~tether.events.StepStart` and :class:`~tether.events.StepEnd` around the runs'
  own events.
- ``reflexion``: attempts judged by a checker; after a failed attempt the model reflects
  on what went wrong, the reflection is stored and given to the next attempt
  (:class:`~tether.events.Reflection`).

Every run is a run of the same loop on the same session, so streaming, limits, retries,
compaction, sessions and the invariant hold throughout. The turn limit (``max_turns``)
covers the whole strategy; the stream ends with exactly one ``Done`` whose result adds
up every run's usage. Select one per Agent (``Agent(strategy="reflexion")`` or an
object) or in the configuration (``[strategy] name = "plan-and-execute"``); plugins add
their own through the ``register_strategies`` hook.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field

from .errors import LimitExceeded, TetherError
from .events import Done, PlanUpdate, Reflection, RunEvent, StepEnd, StepStart
from .messages import Message
from .nested_streams import nested
from .output import OutputSpec
from .result import Outcome, RunResult

if TYPE_CHECKING:
    from .agent import Agent
    from .cancel import CancelToken

__all__ = [
    "AttemptsExhausted",
    "Checker",
    "PlanAndExecute",
    "ReAct",
    "Reflexion",
    "Strategy",
    "StrategyRun",
]


class AttemptsExhausted(LimitExceeded):
    """Every attempt of a strategy was judged failed (Reflexion), or a plan kept failing."""

    limit = "attempts"


@dataclass(slots=True)
class StrategyRun:
    """One task under a strategy: runs the loop on one session and adds up the results."""

    agent: Agent
    session: Any
    cancel: CancelToken | None
    deps: Any
    results: list[RunResult] = field(default_factory=list)

    async def loop(
        self, prompt: str, *, output: OutputSpec | None = None
    ) -> AsyncGenerator[RunEvent, None]:
        """Yield a run's events except its ``Done``; its result is ``self.results[-1]``.
        ``output`` replaces the agent's own output type for this run."""
        used = sum(r.turns for r in self.results)
        limits = self.agent.limits
        left = limits.max_turns - used
        if left <= 0:
            raise AttemptsExhausted(
                f"The strategy used all {limits.max_turns} model calls of limits.max_turns."
            )
        spec: OutputSpec | Literal[False] = False if output is None else output
        loop = self.agent._loop(
            Message.user(prompt),
            self.session,
            self.cancel,
            self.deps,
            limits=limits.model_copy(update={"max_turns": left}),
            output=spec,
        )
        async with nested(loop) as events:
            async for event in events:
                if type(event) is Done:
                    self.results.append(event.result)
                else:
                    yield event

    @property
    def last(self) -> RunResult:
        return self.results[-1]

    def done(self, *, error: TetherError | None = None) -> Done:
        """One ``Done`` for the whole strategy: the last run's result (or ``error``'s
        outcome) with every run's messages, usage, cost and counts added up."""
        last = self.last
        total = RunResult(
            outcome=last.outcome if error is None else Outcome.LIMIT,
            output=last.output,
            messages=[m for r in self.results for m in r.messages],
            session_id=last.session_id,
            error=last.error if error is None else error,
            text=last.text,
            pending=last.pending,
            stop_reason=last.stop_reason,
        )
        for result in self.results:
            total.usage = total.usage + result.usage
            if result.cost is not None:
                total.cost = (total.cost or 0.0) + result.cost
            total.turns += result.turns
            total.tool_calls += result.tool_calls
            total.tool_errors += result.tool_errors
            total.retries += result.retries
            total.duration += result.duration
        return Done(total)


class Strategy(Protocol):
    """What a strategy plugin's factory returns."""

    name: str

    def stream(
        self,
        agent: Agent,
        prompt: str,
        *,
        session: Any,
        cancel: CancelToken | None,
        deps: Any,
    ) -> AsyncGenerator[RunEvent, None]:
        """Work through ``prompt`` with ``agent``'s loop, yielding every event; the last
        one is exactly one ``Done``."""
        ...


class ReAct:
    """One run of the loop (what an agent does without a strategy)."""

    name = "react"

    async def stream(
        self, agent: Agent, prompt: str, *, session: Any, cancel: Any, deps: Any
    ) -> AsyncGenerator[RunEvent, None]:
        async for event in agent._loop(Message.user(prompt), session, cancel, deps):
            yield event


class Plan(BaseModel):
    """The steps that do the task, in order."""

    steps: list[str] = Field(min_length=1, description="Short, concrete instructions, in order.")


class StepReport(BaseModel):
    """How a step went."""

    done: bool = Field(description="True if the step succeeded.")
    result: str = Field(description="What was done or found, or why the step failed.")


PLAN_PROMPT = (
    "{task}\n\nFirst make a plan: the steps that will do this task, in order, each a short "
    "instruction. Do not carry them out yet."
)
STEP_PROMPT = (
    "Step {number} of {count}: {step}\nCarry out this step now (use tools as needed), then "
    "report whether it succeeded and what it produced."
)
REPLAN_PROMPT = (
    "The step {step!r} failed: {why}\nMake a new plan for the rest of the task ({task}), "
    "taking this failure into account. Do not carry it out yet."
)
FINAL_PROMPT = "All steps are done. Now give the final answer to the task: {task}"


class PlanAndExecute:
    """Plan, execute step by step, re-plan when a step fails; see the module docstring.

    :param max_steps: steps executed at most (a longer plan is cut).
    :param max_replans: new plans after failed steps before giving up.
    """

    name = "plan-and-execute"

    def __init__(self, *, max_steps: int = 10, max_replans: int = 2) -> None:
        self.max_steps = max_steps
        self.max_replans = max_replans
        self._plan = OutputSpec(Plan, name="plan")
        self._report = OutputSpec(StepReport, name="step_report")

    async def stream(
        self, agent: Agent, prompt: str, *, session: Any, cancel: Any, deps: Any
    ) -> AsyncGenerator[RunEvent, None]:
        run = StrategyRun(agent, session, cancel, deps)
        try:
            async for event in self._work(run, prompt):
                yield event
        except AttemptsExhausted as exc:
            yield run.done(error=exc)
            return
        yield run.done()

    async def _work(self, run: StrategyRun, task: str) -> AsyncGenerator[RunEvent, None]:
        async for event in run.loop(PLAN_PROMPT.format(task=task), output=self._plan):
            yield event
        if not run.last.ok:
            return
        steps: list[str] = list(run.last.output.steps)[: self.max_steps]
        yield PlanUpdate(list(steps))
        index, replans = 0, 0
        while index < len(steps):
            step = steps[index]
            yield StepStart(index, step)
            prompt = STEP_PROMPT.format(number=index + 1, count=len(steps), step=step)
            async for event in run.loop(prompt, output=self._report):
                yield event
            report = run.last
            ok = report.ok and bool(report.output.done)
            why = report.output.result if report.ok else f"it ended with {report.outcome.value}"
            yield StepEnd(index, step, ok, why)
            if ok:
                index += 1
                continue
            if not report.ok and report.outcome is not Outcome.INVALID_OUTPUT:
                return  # cancelled, a limit, a person needed: the run ends as that run did
            if replans >= self.max_replans:
                raise AttemptsExhausted(f"Step {step!r} failed after {replans} new plan(s): {why}")
            replans += 1
            async for event in run.loop(
                REPLAN_PROMPT.format(step=step, why=why, task=task), output=self._plan
            ):
                yield event
            if not run.last.ok:
                return
            steps = steps[:index] + list(run.last.output.steps)[: self.max_steps - index]
            yield PlanUpdate(steps[index:], reason=f"step {step!r} failed: {why}")
        async for event in run.loop(FINAL_PROMPT.format(task=task)):
            yield event


class Verdict(BaseModel):
    """A judgement of an answer."""

    ok: bool = Field(description="True if the answer fully and correctly does the task.")
    feedback: str = Field(description="What is wrong or missing (empty if ok).")


CheckResult = bool | str | tuple[bool, str]
Checker = Callable[[RunResult], CheckResult | Awaitable[CheckResult]]
"""Judges an attempt: ``True``/``False``, a ``(ok, feedback)`` pair, or a string (the
feedback of a failed attempt; an empty string passes)."""

JUDGE_PROMPT = (
    "Judge the answer you just gave to the task: {task}\nIs it complete and correct? If not, "
    "say precisely what is wrong or missing."
)
REFLECT_PROMPT = (
    "Your attempt was judged wrong: {feedback}\nReflect in two or three sentences: what went "
    "wrong, and what will you do differently in the next attempt?"
)
RETRY_PROMPT = "{task}\n\nLessons from earlier attempts (apply them):\n{lessons}"


class Reflexion:
    """Attempt, judge, reflect, attempt again with the reflections; see the module docstring.

    :param checker: judges each attempt's result (sync or async); without one the model
        judges its own answer (a structured verdict).
    :param max_attempts: attempts before the run ends with outcome ``limit``
        (:class:`AttemptsExhausted`).
    """

    name = "reflexion"

    def __init__(self, checker: Checker | None = None, *, max_attempts: int = 3) -> None:
        self.checker = checker
        self.max_attempts = max_attempts
        self._verdict = OutputSpec(Verdict, name="verdict")

    async def stream(
        self, agent: Agent, prompt: str, *, session: Any, cancel: Any, deps: Any
    ) -> AsyncGenerator[RunEvent, None]:
        run = StrategyRun(agent, session, cancel, deps)
        try:
            async for event in self._attempts(run, prompt):
                yield event
        except AttemptsExhausted as exc:
            yield run.done(error=exc)
            return
        yield run.done()

    async def _attempts(self, run: StrategyRun, task: str) -> AsyncGenerator[RunEvent, None]:
        lessons: list[str] = []
        for attempt in range(1, self.max_attempts + 1):
            text = (
                task
                if not lessons
                else RETRY_PROMPT.format(
                    task=task, lessons="\n".join(f"- {lesson}" for lesson in lessons)
                )
            )
            async for event in run.loop(text):
                yield event
            answer = run.last
            if not answer.ok:
                return
            ok, feedback = False, ""
            async for event in self._judge(run, task, answer):
                if isinstance(event, tuple):
                    ok, feedback = event
                else:
                    yield event
            run.results.remove(answer)
            run.results.append(answer)  # the strategy ends with this attempt's answer
            if ok:
                return
            if attempt == self.max_attempts:
                break
            async for event in run.loop(REFLECT_PROMPT.format(feedback=feedback)):
                yield event
            lessons.append(run.last.text.strip())
            yield Reflection(attempt, feedback, lessons[-1])
        raise AttemptsExhausted(
            f"All {self.max_attempts} attempts were judged wrong. Last feedback: {feedback}"
        )

    async def _judge(
        self, run: StrategyRun, task: str, answer: RunResult
    ) -> AsyncGenerator[Any, None]:
        if self.checker is not None:
            value = self.checker(answer)
            if inspect.isawaitable(value):
                value = await value
            yield _verdict(value)
            return
        async for event in run.loop(JUDGE_PROMPT.format(task=task), output=self._verdict):
            yield event
        verdict = run.last
        if not verdict.ok:
            yield (False, f"the answer could not be judged ({verdict.outcome.value})")
            return
        yield (bool(verdict.output.ok), str(verdict.output.feedback))


def _verdict(value: Any) -> tuple[bool, str]:
    if isinstance(value, tuple):
        return bool(value[0]), str(value[1])
    if isinstance(value, str):
        return (not value.strip()), value
    return bool(value), "" if value else "the checker rejected the answer"
