"""What the run log says is what happened: the text of the attempt that answered, tool
errors of a run that ended in an exception, every token kind added up, attempts counted
per model call, ambiguous ids refused, structured-output and strategy runs recorded with
the runs written beside them, and a run whose reader stopped reading recorded as stopped,
not as an error."""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import tether
from tether.config import Config
from tether.events import TextDelta
from tether.messages import Usage
from tether.provider import ModelCapabilities
from tether.retry import RetryPolicy
from tether.testing import (
    Reply,
    ScriptedProvider,
    auth_failed,
    call,
    connection_dropped,
    rate_limited,
)
from tether_runlog import RunLog, RunNotFound, RunRow, open_run_log
from tether_runlog import store as runlog_store
from tether_runlog.trace import build_trace


async def no_sleep(delay: float) -> None:
    return None


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Invoice(BaseModel):
    customer: str
    total: float


@pytest.fixture
def log_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("TETHER_RUN_LOG", str(path))
    return path


@pytest.fixture
def one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer waits (far longer than any test) for more rows until a flush: every run
    of the test is written in one batch, in one transaction."""
    monkeypatch.setattr(runlog_store, "LINGER_S", 600.0)


def agent(provider: ScriptedProvider, **options: Any) -> tether.Agent:
    return tether.Agent(
        provider, tools=[add], retry=RetryPolicy(sleep=no_sleep), config=Config(), **options
    )


def recorded(path: Path, run_id: str) -> RunRow:
    log = open_run_log(path)
    log.flush()
    return log.get(run_id)


def model_calls(row: RunRow) -> list[dict[str, Any]]:
    return [e for e in row.events if e["type"] == "model_call"]


# -- retries and attempts -------------------------------------------------------------------
async def test_a_retried_model_call_records_only_the_text_of_the_attempt_that_answered(
    log_path: Path,
) -> None:
    broken = Reply(text="Half of an answer that broke off", chunk=5)
    provider = ScriptedProvider(
        [connection_dropped(after=broken, partial=3), Reply(text="The whole answer.")]
    )
    result = await agent(provider).run("go")
    (only,) = model_calls(recorded(log_path, result.run_id))
    assert only["text"] == "The whole answer."
    assert only["attempts"] == 2


async def test_attempts_count_each_model_call_on_its_own(log_path: Path) -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("add", a=1, b=2)]),
            rate_limited(retry_after=0.0),
            Reply(tool_calls=[call("add", a=3, b=4)]),
            Reply(tool_calls=[call("add", a=5, b=6)]),
            Reply(text="done"),
        ]
    )
    result = await agent(provider).run("go")
    row = recorded(log_path, result.run_id)
    assert [c["attempts"] for c in model_calls(row)] == [1, 2, 1, 1]
    assert row.retries == 1
    tree = build_trace(open_run_log(log_path), row)  # what `tether trace` shows
    shown = [span.details["attempts"] for _, span in tree.walk() if span.kind == "model"]
    assert shown == [1, 2, 1, 1]


# -- counts and tokens ----------------------------------------------------------------------
async def test_a_run_ending_in_an_exception_keeps_its_tool_errors(log_path: Path) -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("add", a="one", b=2), call("add", a=1, b=2)]),
            auth_failed(),
        ]
    )
    run = agent(provider)
    with pytest.raises(tether.errors.AuthenticationError):
        await run.run("go")
    log = open_run_log(log_path)
    log.flush()
    (summary,) = log.recent(1)
    assert (summary.outcome, summary.error_type) == ("error", "AuthenticationError")
    assert (summary.tool_calls, summary.tool_errors) == (2, 1)
    assert log.stats()["tool_errors"] == 1


USAGE = st.builds(
    Usage,
    input_tokens=st.integers(0, 50_000),
    output_tokens=st.integers(0, 5_000),
    cache_read_tokens=st.integers(0, 50_000),
    cache_write_tokens=st.integers(0, 50_000),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(usages=st.lists(USAGE, min_size=1, max_size=4))
def test_every_token_kind_adds_up_over_the_model_calls(usages: list[Usage]) -> None:
    replies = [Reply(tool_calls=[call("add", a=1, b=1)], usage=u) for u in usages[:-1]]
    provider = ScriptedProvider([*replies, Reply(text="done", usage=usages[-1])])
    with tempfile.TemporaryDirectory() as directory:
        log = RunLog(Path(directory) / "runs.sqlite")
        runner = agent(provider, plugins=[_RecordInto(log)])
        result = runner.run_sync("go")
        log.flush()
        row = log.get(result.run_id)
        totals = log.stats()
    for kind in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        expected = sum(getattr(u, kind) for u in usages)
        assert getattr(row, kind) == expected, kind
        assert totals[kind] == expected, kind
        assert [c[kind] for c in model_calls(row)] == [getattr(u, kind) for u in usages]


class _RecordInto:
    """A plugin recording runs into ``log`` (a run log of the test's own)."""

    def __init__(self, log: RunLog) -> None:
        self.log = log

    @tether.hookimpl
    def register_observers(self, observers: Any) -> None:
        from tether_runlog import RunRecorder

        observers.add("test-runlog", RunRecorder(self.log))


# -- ids ------------------------------------------------------------------------------------
def test_an_ambiguous_id_prefix_is_refused_and_each_full_id_still_works(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "runs.sqlite")
    log.append(RunRow(run_id="abc123-older", started=1.0, output="first"))
    log.append(RunRow(run_id="abc456-newer", started=2.0, output="second"))
    log.flush()
    with pytest.raises(RunNotFound, match=r'"abc" matches several runs .*Give more of the id'):
        log.get("abc")
    assert log.get("abc1").output == "first"
    assert log.get("abc456-newer").output == "second"


# -- structured output and strategies -------------------------------------------------------
async def test_a_structured_output_run_is_recorded_with_the_runs_of_its_batch(
    log_path: Path, one_batch: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tether_runlog")
    invoice = {"customer": "ACME", "total": 12.5}
    before = await agent(ScriptedProvider([Reply(text="plain before")])).run("one")
    structured = await agent(
        ScriptedProvider(
            [Reply(text=json.dumps(invoice))],
            capabilities=ModelCapabilities(structured_output=True),
        ),
        output_type=Invoice,
    ).run("invoice")
    after = await agent(ScriptedProvider([Reply(text="plain after")])).run("two")
    assert structured.output == Invoice(**invoice)

    assert json.loads(recorded(log_path, structured.run_id).output or "") == invoice
    assert recorded(log_path, before.run_id).output == "plain before"
    assert recorded(log_path, after.run_id).output == "plain after"
    assert caplog.records == []


async def test_every_run_of_a_plan_and_execute_strategy_is_recorded(
    log_path: Path, one_batch: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tether_runlog")
    replies = [
        Reply(text=json.dumps({"steps": ["add one and two"]})),
        Reply(tool_calls=[call("add", a=1, b=2)]),
        Reply(text=json.dumps({"done": True, "result": "3"})),
        Reply(text="The sum is 3."),
    ]
    provider = ScriptedProvider(replies, capabilities=ModelCapabilities(structured_output=True))
    plain = await agent(ScriptedProvider([Reply(text="beside it")])).run("x")
    result = await agent(provider, strategy="plan-and-execute").run("Add one and two")
    assert result.output == "The sum is 3."

    log = open_run_log(log_path)
    log.flush()
    rows = log.recent(20, top_level=False)
    outputs = [row.output for row in sorted(rows, key=lambda r: r.started)]
    assert outputs[0] == "beside it"
    assert json.loads(outputs[1] or "") == {"steps": ["add one and two"]}
    assert json.loads(outputs[2] or "") == {"done": True, "result": "3"}
    assert outputs[3] == "The sum is 3."
    assert log.stats()["tool_calls"] == 1
    assert plain.run_id in {row.run_id for row in rows}
    assert caplog.records == []


def test_a_row_that_cannot_be_written_loses_only_itself_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runlog_store, "LINGER_S", 600.0)
    caplog.set_level(logging.WARNING, logger="tether_runlog")

    def broken(row: RunRow) -> None:
        raise ValueError("cannot prepare this row")

    log = RunLog(tmp_path / "runs.sqlite")
    log.append(RunRow(run_id="run-good-1", started=1.0))
    log.append(RunRow(run_id="run-bad", started=2.0), broken)
    log.append(RunRow(run_id="run-good-2", started=3.0))
    log.flush()
    assert [row.run_id for row in log.recent(10)] == ["run-good-2", "run-good-1"]
    (warning,) = caplog.records
    assert "run-bad" in warning.getMessage() and "cannot prepare" in warning.getMessage()


# -- a reader that stops reading ------------------------------------------------------------
async def test_a_run_whose_reader_stops_reading_is_recorded_as_stopped_not_as_an_error(
    log_path: Path,
) -> None:
    provider = ScriptedProvider([Reply(text="A long answer, of which the reader wants a line.")])
    stream = agent(provider).stream("go")
    async for event in stream:
        if isinstance(event, TextDelta):
            break  # as `tether run ... | head -1` does once it has its line
    await stream.aclose()  # type: ignore[attr-defined]

    log = open_run_log(log_path)
    log.flush()
    (row,) = log.recent(1)
    assert row.outcome == "cancelled"
    assert row.error_type is None
    assert row.error is not None and "stopped reading" in row.error
    assert "GeneratorExit" not in json.dumps(row.to_dict())
    assert build_trace(log, log.get(row.run_id)).status == "interrupted"
    assert log.stats()["error_types"] == {}
