"""The run identity on events, cost and cache in RunResult, the cache warning, and the
local run log: what a run records, that nested runs and failures are recorded, that
secrets never reach the file, and that it can be turned off."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.config import Config
from tether.events import CacheWarning, Done, RunAborted, RunStart, TurnEnd
from tether.messages import Usage
from tether.observe import current_run
from tether.provider import ModelCapabilities, Pricing
from tether.retry import RetryPolicy
from tether.testing import Reply, ScriptedProvider, auth_failed, call, rate_limited
from tether.testing.scripted import Failure
from tether_runlog import RunNotFound, open_run_log, run_log_path
from tether_runlog.trace import build_trace

CANARY = "sk-canary-9f8e7d6c5b4a39281706"


async def no_sleep(delay: float) -> None:
    return None


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tether.tool
def bulky() -> str:
    """Return a long report."""
    return "\n".join(f"row {i}: value {i * 7919 % 10007}" for i in range(300))


def _inner_agent() -> tether.Agent:
    inner = ScriptedProvider([Reply(tool_calls=[call("add", a=10, b=20)]), Reply(text="30")])
    return tether.Agent(inner, tools=[add], config=Config())


@tether.tool
async def delegate(task: str) -> str:
    """Hand a task to a helper agent."""
    result = await _inner_agent().run(task)
    return result.output


def scenario_agent(**options: Any) -> tether.Agent:
    """Parallel tools, a retry, a nested run, and a compaction, in one run."""
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("add", a=1, b=2), call("add", a=3, b=4)]),
            rate_limited(retry_after=0.0),
            Reply(tool_calls=[call("delegate", task="add 10 and 20")]),
            Reply(tool_calls=[call("bulky")]),
            Reply(text="All done."),
        ],
        capabilities=ModelCapabilities(context_window=1200, images_in_tool_results=True),
    )
    return tether.Agent(
        provider,
        tools=[add, delegate, bulky],
        compaction="truncate",
        retry=RetryPolicy(sleep=no_sleep),
        config=options.pop("config", Config()),
        **options,
    )


@pytest.fixture
def log_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("TETHER_RUN_LOG", str(path))
    return path


# -- events and results ---------------------------------------------------------------------
async def test_a_run_starts_with_its_identity_and_runs_nest_under_the_calling_tool() -> None:
    seen: list[tuple[str, str]] = []

    def register(observers):  # type: ignore[no-untyped-def]
        def observe(event: object) -> None:
            run = current_run()
            assert run is not None
            seen.append((run.run_id, type(event).__name__))

        observers.add("recorder", observe)

    class Plugin:
        register_observers = staticmethod(tether.hookimpl(register))

    agent = scenario_agent(plugins=[Plugin()])
    events = [event async for event in agent.stream("go")]
    start = events[0]
    assert isinstance(start, RunStart)
    assert start.parent_run_id is None and start.model == "scripted/scripted-model"
    done = events[-1]
    assert isinstance(done, Done) and done.result.run_id == start.run_id
    assert done.result.ok and done.result.retries == 1


async def test_a_run_started_inside_a_tool_names_its_parent_run_and_call() -> None:
    starts: list[RunStart] = []

    @tether.tool
    async def helper() -> str:
        """Run a helper agent."""
        async for event in _inner_agent().stream("x"):
            if isinstance(event, RunStart):
                starts.append(event)
        return "ok"

    provider = ScriptedProvider(
        [Reply(tool_calls=[call("helper", id="call_h")]), Reply(text="done")]
    )
    outer = tether.Agent(provider, tools=[helper], config=Config())
    events = [e async for e in outer.stream("go")]
    outer_start = events[0]
    assert isinstance(outer_start, RunStart)
    assert len(starts) == 1
    assert starts[0].parent_run_id == outer_start.run_id
    assert starts[0].parent_call_id == "call_h"


async def test_observers_learn_that_a_run_failed_with_an_exception() -> None:
    seen: list[Any] = []

    class Plugin:
        @tether.hookimpl
        def register_observers(self, observers):  # type: ignore[no-untyped-def]
            observers.add("recorder", seen.append)

    agent = tether.Agent(ScriptedProvider([auth_failed()]), config=Config(), plugins=[Plugin()])
    with pytest.raises(tether.errors.AuthenticationError):
        await agent.run("hi")
    assert isinstance(seen[0], RunStart)
    assert isinstance(seen[-1], RunAborted)
    assert isinstance(seen[-1].error, tether.errors.AuthenticationError)


async def test_the_result_splits_cost_by_token_kind_and_gives_the_cache_hit_ratio() -> None:
    pricing = Pricing(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(
        input_tokens=10_000, output_tokens=1_000, cache_read_tokens=6_000, cache_write_tokens=2_000
    )
    provider = ScriptedProvider(
        [Reply(tool_calls=[call("add", a=1, b=2)], usage=usage), Reply(text="3", usage=usage)],
        capabilities=ModelCapabilities(pricing=pricing, prompt_caching=True),
    )
    agent = tether.Agent(provider, tools=[add], config=Config())
    result = await agent.run("a")
    split = result.cost_breakdown
    assert split is not None
    assert split.input == pytest.approx(2 * 2_000 * 3.0 / 1e6)
    assert split.output == pytest.approx(2 * 1_000 * 15.0 / 1e6)
    assert split.cache_read == pytest.approx(2 * 6_000 * 0.3 / 1e6)
    assert split.cache_write == pytest.approx(2 * 2_000 * 3.75 / 1e6)
    assert result.cost == pytest.approx(split.total)
    assert result.cache_hit_ratio == pytest.approx(0.6)

    from tether_cli.render import usage_line

    line = usage_line(result, "scripted/scripted-model")
    assert "cache hit 60%" in line
    assert f"in ${split.input:.4f}" in line and f"cache read ${split.cache_read:.4f}" in line


def _turns(n: int, usage: Usage) -> list[Any]:
    return [
        *[Reply(tool_calls=[call("add", a=i, b=1)], usage=usage) for i in range(n - 1)],
        Reply(text="done", usage=usage),
    ]


async def test_a_long_run_whose_cache_misses_warns_once() -> None:
    missing = Usage(input_tokens=5_000, output_tokens=10, cache_read_tokens=100)
    provider = ScriptedProvider(
        _turns(8, missing), capabilities=ModelCapabilities(prompt_caching=True)
    )
    agent = tether.Agent(provider, tools=[add], config=Config())
    events = [e async for e in agent.stream("go")]
    warnings = [e for e in events if isinstance(e, CacheWarning)]
    assert len(warnings) == 1
    assert warnings[0].turns == 5 and warnings[0].hit_ratio == pytest.approx(0.02)
    assert "prefix" in warnings[0].message
    turn_ends = [i for i, e in enumerate(events) if isinstance(e, TurnEnd)]
    assert events.index(warnings[0]) == turn_ends[4] + 1


async def test_no_cache_warning_when_the_cache_hits_or_the_warning_is_off() -> None:
    hitting = Usage(input_tokens=5_000, output_tokens=10, cache_read_tokens=4_500)
    missing = Usage(input_tokens=5_000, output_tokens=10)
    caching = ModelCapabilities(prompt_caching=True)
    for provider, config in (
        (ScriptedProvider(_turns(8, hitting), capabilities=caching), Config()),
        (
            ScriptedProvider(_turns(8, missing), capabilities=caching),
            Config.model_validate({"cache": {"warn_below": 0}}),
        ),
        (ScriptedProvider(_turns(8, missing)), Config()),  # no prompt caching: nothing to warn
    ):
        agent = tether.Agent(provider, tools=[add], config=config)
        events = [e async for e in agent.stream("go")]
        assert not any(isinstance(e, CacheWarning) for e in events)


# -- the run log ------------------------------------------------------------------------------
async def test_the_run_log_records_the_run_its_events_and_the_nested_run(log_path: Path) -> None:
    result = await scenario_agent().run("go")
    log = open_run_log(log_path)
    log.flush()
    row = log.get(result.run_id[:10])
    assert (row.outcome, row.turns, row.tool_calls, row.retries) == ("completed", 4, 4, 1)
    assert row.compactions == 1 and row.prompt == "go" and row.output == "All done."
    kinds = [e["type"] for e in row.events]
    assert kinds.count("model_call") == 4 and kinds.count("tool_start") == 4
    assert "retry" in kinds and "compaction" in kinds
    starts = [e for e in row.events if e["type"] == "tool_start"]
    assert [s["arguments"] for s in starts[:2]] == ['{"a": 1, "b": 2}', '{"a": 3, "b": 4}']
    (child,) = log.children(row.run_id)
    delegate_call = next(s for s in starts if s["name"] == "delegate")
    assert child.parent_call_id == delegate_call["call_id"] and child.output == "30"

    tree = build_trace(log, row)
    spans = [(depth, span.kind, span.title) for depth, span in tree.walk()]
    assert (2, "tool", "delegate") in spans
    nested_run = next(i for i, s in enumerate(spans) if s[1] == "run" and s[0] == 3)
    assert spans[nested_run + 1 :][:2] == [(4, "turn", "turn 1"), (5, "model", spans[2][2])]
    assert next(s for s in spans if s[1] == "retry")[0] == 2
    assert recent_ids(log) == [row.run_id]  # nested runs are not listed as runs of their own


def recent_ids(log: Any) -> list[str]:
    return [r.run_id for r in log.recent(10)]


async def test_a_failed_run_is_recorded_without_the_api_key(
    log_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCRIPTED_API_KEY", CANARY)

    # An auth error whose message echoes the key, as some providers' errors do.
    error = tether.errors.AuthenticationError(
        f"Incorrect API key provided: {CANARY}. Check SCRIPTED_API_KEY.", provider="scripted"
    )
    provider = ScriptedProvider([Failure(error)])
    agent = tether.Agent(provider, config=Config())
    with pytest.raises(tether.errors.AuthenticationError):
        await agent.run(f"my key is {CANARY}, use it")
    log = open_run_log(log_path)
    log.flush()
    (row,) = log.recent(5)
    assert row.outcome == "error" and row.error_type == "AuthenticationError"
    assert row.error is not None and "***" in row.error
    raw = b"".join(p.read_bytes() for p in sorted(log_path.parent.glob("runs.sqlite*")))
    assert CANARY.encode() not in raw
    assert b"sk-canary" not in raw


async def test_secrets_in_tool_arguments_and_results_are_scrubbed(log_path: Path) -> None:
    @tether.tool
    def login(password: str) -> str:
        """Log in."""
        return f"logged in with {password}"

    provider = ScriptedProvider(
        [Reply(tool_calls=[call("login", password=CANARY)]), Reply(text="ok")]
    )
    config = Config.model_validate({"providers": {"scripted": {"api_key": "configured-secret-42"}}})
    agent = tether.Agent(provider, tools=[login], config=config)
    await agent.run("log in, the config key is configured-secret-42")
    log = open_run_log(log_path)
    log.flush()
    with sqlite3.connect(log_path) as db:
        dump = "\n".join(db.iterdump())
    assert CANARY not in dump and "configured-secret-42" not in dump
    assert dump.count("***") >= 3


async def test_the_run_log_can_be_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TETHER_RUN_LOG")
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path))
    config = Config.model_validate({"observers": {"runlog": {"enabled": False}}})
    await tether.Agent(ScriptedProvider([Reply(text="hi")]), config=config).run("x")
    assert not (tmp_path / "runs.sqlite").exists()
    on = Config.model_validate({"observers": {"runlog": {"enabled": True}}})
    monkeypatch.setenv("TETHER_RUN_LOG", "off")
    await tether.Agent(ScriptedProvider([Reply(text="hi")]), config=on).run("x")
    assert not (tmp_path / "runs.sqlite").exists()
    monkeypatch.delenv("TETHER_RUN_LOG")
    result = await tether.Agent(ScriptedProvider([Reply(text="hi")]), config=on).run("x")
    log = open_run_log(tmp_path / "runs.sqlite")
    log.flush()
    assert log.get(result.run_id).output == "hi"


async def test_a_library_agent_records_nothing_unless_configured(
    sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An application's agent, with the run log installed and nothing configured, writes
    no file anywhere in a throw-away HOME (data directory included)."""
    monkeypatch.delenv("TETHER_RUN_LOG")
    monkeypatch.delenv("TETHER_DATA_DIR", raising=False)
    before = sorted(p for p in sandbox.home.rglob("*"))
    await tether.Agent(ScriptedProvider([Reply(text="hi")]), config=Config()).run("x")
    assert sorted(p for p in sandbox.home.rglob("*")) == before
    assert not list(sandbox.home.rglob("runs.sqlite"))
    monkeypatch.setenv("TETHER_RUN_LOG", "on")  # turned on: the default file, in HOME
    result = await tether.Agent(ScriptedProvider([Reply(text="hi")]), config=Config()).run("x")
    path = run_log_path(Config())
    assert path is not None and sandbox.contains(path)
    open_run_log(path).flush()
    assert open_run_log(path).get(result.run_id).output == "hi"


async def test_denying_the_runlog_plugin_turns_the_run_log_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_RUN_LOG", str(tmp_path / "runs.sqlite"))
    monkeypatch.setenv("TETHER_PLUGINS_DENY", "runlog")
    agent = tether.Agent(ScriptedProvider([Reply(text="hi")]), config=Config())
    await agent.run("x")
    assert "runlog" not in [p.name for p in agent.plugins.plugins]
    assert not (tmp_path / "runs.sqlite").exists()
    monkeypatch.delenv("TETHER_PLUGINS_DENY")
    result = await tether.Agent(ScriptedProvider([Reply(text="hi")]), config=Config()).run("x")
    open_run_log(tmp_path / "runs.sqlite").flush()
    assert open_run_log(tmp_path / "runs.sqlite").get(result.run_id).output == "hi"


def test_an_unknown_run_id_is_a_clear_error(log_path: Path) -> None:
    with pytest.raises(RunNotFound, match="no run log"):
        open_run_log(log_path).get("abc")
    tether.Agent(ScriptedProvider([Reply(text="hi")]), config=Config()).run_sync("x")
    open_run_log(log_path).flush()
    with pytest.raises(RunNotFound, match='No run with id "zzz"'):
        open_run_log(log_path).get("zzz")


def test_stats_give_tool_error_rates(log_path: Path) -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("add", a=1, b=2), call("add", a="x", b=2)]),
            Reply(text="done"),
        ]
    )
    tether.Agent(provider, tools=[add], config=Config()).run_sync("go")
    log = open_run_log(log_path)
    log.flush()
    totals = log.stats()
    assert totals["runs"] == 1 and totals["tool_calls"] == 2 and totals["tool_errors"] == 1
    assert totals["tools"] == [
        {
            "name": "add",
            "calls": 2,
            "errors": 1,
            "error_rate": 0.5,
            "interrupted": 0,
            "mean_duration": pytest.approx(totals["tools"][0]["mean_duration"]),
        }
    ]


def test_flush_writes_at_once_without_waiting_out_the_linger(
    log_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from tether_runlog import store

    monkeypatch.setattr(store, "LINGER_S", 600.0)  # a flush must not wait for this
    result = tether.Agent(ScriptedProvider([Reply(text="hi")]), config=Config()).run_sync("x")
    flusher = threading.Thread(target=open_run_log(log_path).flush, daemon=True)
    flusher.start()
    flusher.join(timeout=30)
    assert not flusher.is_alive(), "flush waited out the writer's linger"
    assert open_run_log(log_path).get(result.run_id).output == "hi"
