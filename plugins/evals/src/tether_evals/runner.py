"""Running an eval: every case, ``trials`` times, a few at a time, each trial saved as it ends.

Each trial gets a fresh workspace directory holding the case's ``files`` and a fresh agent
from the caller's factory, runs the case's prompt (after its ``history``), and is scored
by every check. Its :class:`~tether_evals.results.TrialResult` is appended to the results
file as one JSON line, flushed and fsynced, before the next is counted as done; a later
:func:`run_eval` with the same results file runs only the trials missing from it, so an
interrupted eval resumes where it stopped. Runs are recorded in tether's run log by the
agent as usual (when it is configured); each trial keeps its ``run_id``. Secrets
(:func:`tether.scrub.scrub`) are replaced by ``***`` in a trial once it is scored, before
it is saved or reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import mimetypes
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from tether.scrub import scrub

from .dataset import Case, Check, Dataset
from .errors import EvalError
from .evaluators.base import EvalContext, Evaluator
from .registry import EvaluatorRegistrar, load_evaluators
from .report import EvalReport, build_report
from .results import ScoreRecord, ToolCallRecord, TrialResult

if TYPE_CHECKING:
    import tether

__all__ = ["AgentFactory", "TrialSetup", "read_results", "run_eval"]

MAX_RESULT_CHARS = 20_000
"""Characters of each tool result kept in the results file."""

_SKIPPED_EVENTS = {"text_delta", "thinking_delta", "partial_output", "tool_progress", "done"}


@dataclass(frozen=True, slots=True)
class TrialSetup:
    """What the agent factory is told about the trial it builds an agent for.

    ``seed`` is the eval's seed plus the trial number (``None`` without a seed): pass it
    to a provider that accepts one so repeated evals sample the same way. ``workspace``
    is the trial's own directory, already holding the case's files: give it to the agent
    as ``cwd``.
    """

    case: Case
    trial: int
    seed: int | None
    workspace: Path


AgentFactory = Callable[[TrialSetup], "tether.Agent | Awaitable[tether.Agent]"]


def read_results(path: str | Path) -> list[TrialResult]:
    """The trials saved in a results file. A last line cut short by a crash is ignored;
    any other line that is not a trial is an :class:`~tether_evals.errors.EvalError`."""
    path = Path(path)
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    trials = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            trials.append(TrialResult.model_validate_json(line))
        except ValidationError as exc:
            if number == len(lines):  # no newline after it: the write never finished
                break
            raise EvalError(
                f"{path}, line {number} is not a trial result ({exc.error_count()} errors). "
                "Pass another results file, or --fresh to start this one over."
            ) from exc
    return trials


def _end_cleanly(path: Path) -> None:
    """Drop a partial last line so appended lines start on a line of their own."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        with path.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


class _ResultsFile:
    """Appends one trial per line, durably (flush + fsync before returning)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            _end_cleanly(path)

    def append(self, trial: TrialResult) -> None:
        if self.path is None:
            return
        line = trial.model_dump_json() + "\n"
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


def _json_ready(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


def _prompt(case: Case, base_dir: Path | None) -> Any:
    """The user message: the prompt, text attachments appended, images attached."""
    from tether import ImageBlock, Message

    text, images = case.inputs.prompt, []
    for attachment in case.inputs.attachments:
        path = (base_dir or Path.cwd()) / attachment.path
        mime = attachment.mime_type or mimetypes.guess_type(path.name)[0] or "text/plain"
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise EvalError(
                f"Case {case.id!r}: cannot read the attachment {path}: {exc.strerror or exc}."
            ) from exc
        if mime.startswith("image/"):
            images.append(ImageBlock.from_bytes(raw, mime))
        else:
            body = raw.decode("utf-8", errors="replace")
            text += f"\n\n## Attachment: {attachment.path}\n{body}"
    return Message.user(text, *images) if images else text


def _session(case: Case) -> Any:
    from tether import InMemorySession, Message, TextBlock

    history = [Message(role=m.role, content=[TextBlock(text=m.text)]) for m in case.inputs.history]
    return InMemorySession(history)


def _write_files(case: Case, workspace: Path) -> None:
    root = workspace.resolve()
    for name, text in case.inputs.files.items():
        target = (workspace / name).resolve()
        if not target.is_relative_to(root):
            raise EvalError(
                f"Case {case.id!r}: the file {name!r} would be written outside the workspace; "
                "use a relative path without `..`."
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


async def _run_agent(agent: tether.Agent, case: Case, dataset: Dataset, trial: TrialResult) -> None:
    """Stream the case through ``agent``, filling ``trial`` with what happened."""
    from tether import Done, ToolEnd, ToolStart, event_to_dict

    calls: dict[str, ToolCallRecord] = {}
    started = time.monotonic()
    try:
        async for event in agent.stream(_prompt(case, dataset.base_dir), session=_session(case)):
            if isinstance(event, ToolStart):
                calls[event.call_id] = ToolCallRecord(
                    name=event.name, arguments=_json_ready(dict(event.arguments))
                )
                trial.tool_calls.append(calls[event.call_id])
            elif isinstance(event, ToolEnd) and event.call_id in calls:
                record = calls[event.call_id]
                record.result = event.result.text[:MAX_RESULT_CHARS]
                record.is_error = event.is_error
            elif isinstance(event, Done):
                result = event.result
                trial.run_id, trial.outcome = result.run_id, result.outcome.value
                trial.output, trial.text = _json_ready(result.output), result.text
                trial.input_tokens = result.usage.input_tokens
                trial.output_tokens = result.usage.output_tokens
                trial.cost, trial.turns = result.cost, result.turns
                if result.error is not None:
                    trial.error = f"{type(result.error).__name__}: {result.error}"
            record_event = event_to_dict(event)
            if record_event["type"] not in _SKIPPED_EVENTS:
                record_event.pop("content", None)
                trial.events.append(record_event)
    finally:
        trial.duration = time.monotonic() - started


async def _score(
    trial: TrialResult,
    case: Case,
    checks: list[tuple[Check, Evaluator]],
    context: EvalContext,
) -> None:
    for check, evaluator in checks:
        try:
            score = await evaluator.evaluate(trial, case, context)
        except Exception as exc:
            trial.scores.append(
                ScoreRecord(
                    check=check.label,
                    type=check.type,
                    value=0.0,
                    passed=False,
                    reason=f"the evaluator failed: {exc}",
                    details={"error": type(exc).__name__},
                )
            )
            continue
        trial.scores.append(
            ScoreRecord(
                check=check.label,
                type=check.type,
                value=score.value,
                passed=score.passed,
                reason=score.reason,
                details=_json_ready(score.details),
            )
        )


def _checks(
    dataset: Dataset, registry: EvaluatorRegistrar
) -> dict[str, list[tuple[Check, Evaluator]]]:
    """Every case's evaluators, built (and their settings validated) before anything runs."""
    built: dict[str, list[tuple[Check, Evaluator]]] = {}
    for case in dataset.cases:
        built[case.id] = [(check, registry.build(check)) for check in dataset.checks_for(case)]
    return built


async def run_eval(
    dataset: Dataset,
    agent: AgentFactory,
    *,
    trials: int = 1,
    concurrency: int = 4,
    seed: int | None = None,
    results: str | Path | None = None,
    models: Mapping[str, Any] | None = None,
    evaluators: EvaluatorRegistrar | None = None,
    plugins: Iterable[object] = (),
    trial_timeout: float = 600.0,
    on_trial: Callable[[TrialResult], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
) -> EvalReport:
    """Run every case of ``dataset`` ``trials`` times and score each trial.

    :param agent: ``agent(setup) -> tether.Agent`` (or an awaitable of one), called once
        per trial with its :class:`TrialSetup`.
    :param concurrency: trials running at once.
    :param seed: the base seed handed to the factory (trial ``i`` gets ``seed + i``).
    :param results: the JSONL file trials are appended to; trials already in it are not
        run again (resume). ``None`` keeps results in memory only.
    :param models: models a check names (``judge``'s ``model``): a name maps to a model
        string or a :class:`tether.Provider` instance.
    :param evaluators: the evaluator registry (default: :func:`load_evaluators` with
        ``plugins``).
    :param trial_timeout: seconds one trial may take; a trial past it is recorded as an error.
    :param on_trial: called with each trial as it is saved (progress display).
    :param on_start: called once with (trials already done, trials in all).
    """
    if trials < 1 or concurrency < 1:
        raise EvalError(f"trials and concurrency must be at least 1 (got {trials}, {concurrency}).")
    registry = evaluators or load_evaluators(plugins)
    checks = _checks(dataset, registry)
    path = Path(results) if results is not None else None
    done = read_results(path) if path is not None else []
    finished = {(t.case_id, t.trial) for t in done}
    todo = [
        (case, n) for n in range(trials) for case in dataset.cases if (case.id, n) not in finished
    ]
    if on_start is not None:
        on_start(len(dataset.cases) * trials - len(todo), len(dataset.cases) * trials)
    sink = _ResultsFile(path)
    context = EvalContext(models=dict(models or {}), seed=seed)
    gate = asyncio.Semaphore(concurrency)
    fresh: list[TrialResult] = []

    async def one(case: Case, number: int) -> None:
        async with gate:
            trial_seed = None if seed is None else seed + number
            trial = TrialResult(case_id=case.id, trial=number, seed=trial_seed)
            with tempfile.TemporaryDirectory(prefix="tether-eval-") as workspace:
                setup = TrialSetup(case, number, trial_seed, Path(workspace))
                try:
                    _write_files(case, setup.workspace)
                    async with asyncio.timeout(trial_timeout):
                        built = agent(setup)
                        instance = await built if inspect.isawaitable(built) else built
                        await _run_agent(instance, case, dataset, trial)
                except TimeoutError:
                    trial.error = f"TimeoutError: the trial took longer than {trial_timeout:g} s"
                except Exception as exc:
                    trial.error = f"{type(exc).__name__}: {exc}"
                await _score(trial, case, checks[case.id], context)
            trial = TrialResult.model_validate_json(scrub(trial.model_dump_json()))
            sink.append(trial)
            fresh.append(trial)
            if on_trial is not None:
                on_trial(trial)

    tasks = [asyncio.ensure_future(one(case, n)) for case, n in todo]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(*tasks, return_exceptions=True)
    settings = {"trials": trials, "concurrency": concurrency, "seed": seed}
    return build_report(dataset, [*done, *fresh], settings=settings)
