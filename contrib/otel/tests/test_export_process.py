"""``OtlpBatchSpanProcessor(..., export_process=True)`` (what ``[observers.otel]`` builds)
encodes and sends spans from a child process: the spans reach the receiver from there,
with the exporter's headers handed over the pipe and never put on the child's command
line or in its environment; the child outlives a Ctrl-C but not its parent (it sends what
it holds first); a child that dies or cannot start leaves the thread to export, with a
warning; a flush never waits past its deadline; a forked process starts its own."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call
from tether.testing.http import FakeResponse, FakeServer
from tether_otel import OtelPlugin
from tether_otel.batch import OtlpBatchSpanProcessor
from tether_otel.otlp import OTLPSpanExporter

CANARY = "Bearer canary-7f3c9e1d-export-process"


@pytest.fixture
def receiver() -> Iterator[FakeServer]:
    with FakeServer(lambda r: FakeResponse(status=200, body=b"")) as server:
        yield server


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def span_names(receiver: FakeServer) -> list[str]:
    names = []
    for request in receiver.requests:
        message = ExportTraceServiceRequest()
        message.ParseFromString(request.body)
        for resource_spans in message.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                names.extend(span.name for span in scope_spans.spans)
    return sorted(names)


def traced(
    receiver: FakeServer, **exporter_options: object
) -> tuple[TracerProvider, OtlpBatchSpanProcessor]:
    provider = TracerProvider(resource=Resource.create({"service.name": "billing"}))
    exporter = OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces", timeout=5, **exporter_options)  # type: ignore[arg-type]
    processor = OtlpBatchSpanProcessor(exporter, export_process=True, schedule_delay_millis=60_000)
    provider.add_span_processor(processor)
    return provider, processor


async def run_agent(provider: TracerProvider) -> None:
    script = ScriptedProvider([Reply(tool_calls=[call("add", a=2, b=3)]), Reply(text="5")])
    agent = tether.Agent(
        script, tools=[add], config=Config(), plugins=[OtelPlugin(tracer_provider=provider)]
    )
    assert (await agent.run("add 2 and 3")).ok


RUN_SPANS = ["chat scripted-model", "chat scripted-model", "execute_tool add", "invoke_agent"]


def process_file(pid: int, name: str) -> bytes:
    with open(f"/proc/{pid}/{name}", "rb") as file:
        return file.read()


def wait_until(condition: object, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


async def test_spans_are_encoded_and_sent_by_the_export_process(receiver: FakeServer) -> None:
    provider, processor = traced(receiver)
    exported_here: list[object] = []
    processor.exporter.export = exported_here.append  # type: ignore[method-assign]
    await run_agent(provider)
    assert provider.force_flush()
    assert span_names(receiver) == RUN_SPANS
    assert exported_here == []  # not one request from this process
    assert processor._process is not None and processor._process.pid != os.getpid()
    provider.shutdown()


async def test_headers_reach_the_receiver_but_not_the_childs_command_line_or_environment(
    receiver: FakeServer,
) -> None:
    provider, processor = traced(receiver, headers={"authorization": CANARY})
    await run_agent(provider)
    assert provider.force_flush()
    assert {r.headers["authorization"] for r in receiver.requests} == {CANARY}
    assert processor._process is not None
    assert b"canary" not in process_file(processor._process.pid, "cmdline")
    assert b"canary" not in process_file(processor._process.pid, "environ")
    provider.shutdown()


async def test_shutdown_sends_what_is_waiting_and_the_export_process_exits(
    receiver: FakeServer,
) -> None:
    provider, processor = traced(receiver)
    await run_agent(provider)
    processor.send_waiting()
    assert processor._process is not None
    child = processor._process._process
    provider.shutdown()
    assert child.poll() == 0  # exited, and cleanly
    assert span_names(receiver) == RUN_SPANS


async def test_a_killed_export_process_leaves_the_thread_to_export_with_a_warning(
    receiver: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    provider, processor = traced(receiver)
    await run_agent(provider)
    assert provider.force_flush()
    assert processor._process is not None
    child = processor._process._process
    child.kill()
    child.wait(timeout=10)
    with caplog.at_level(logging.WARNING, logger="tether_otel.batch"):
        await run_agent(provider)
        provider.force_flush()
    assert "exporting spans from this process from now on" in caplog.text
    assert processor.export_process is False and processor._process is None
    assert span_names(receiver) == sorted(RUN_SPANS * 2)  # the second run's spans too
    provider.shutdown()


async def test_an_export_process_that_cannot_start_leaves_the_thread_to_export(
    receiver: FakeServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    provider, _ = traced(receiver)
    with caplog.at_level(logging.WARNING, logger="tether_otel.batch"):
        await run_agent(provider)
        assert provider.force_flush()
    assert "did not start" in caplog.text
    assert span_names(receiver) == RUN_SPANS
    provider.shutdown()


async def test_force_flush_gives_up_at_its_deadline_when_the_export_process_hangs(
    receiver: FakeServer,
) -> None:
    provider, processor = traced(receiver)
    await run_agent(provider)
    assert provider.force_flush()  # the process is up
    assert processor._process is not None
    pid = processor._process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        await run_agent(provider)
        started = time.monotonic()
        assert processor.force_flush(timeout_millis=300) is False
        assert time.monotonic() - started < 5
    finally:
        os.kill(pid, signal.SIGCONT)
    assert processor.force_flush(timeout_millis=20_000)  # it catches up once it runs
    assert span_names(receiver) == sorted(RUN_SPANS * 2)
    provider.shutdown()


async def test_the_export_process_keeps_working_after_a_ctrl_c(receiver: FakeServer) -> None:
    provider, processor = traced(receiver)
    await run_agent(provider)
    assert provider.force_flush()
    assert processor._process is not None
    os.kill(processor._process.pid, signal.SIGINT)  # a Ctrl-C reaches the process group
    await run_agent(provider)
    assert provider.force_flush()
    assert processor.export_process is True
    assert span_names(receiver) == sorted(RUN_SPANS * 2)
    provider.shutdown()


def test_the_export_process_sends_what_it_holds_when_the_application_is_killed(
    receiver: FakeServer,
) -> None:
    script = textwrap.dedent(
        f"""
        import os, signal
        from opentelemetry.sdk.trace import TracerProvider
        from tether_otel.batch import OtlpBatchSpanProcessor
        from tether_otel.otlp import OTLPSpanExporter

        provider = TracerProvider()
        exporter = OTLPSpanExporter(endpoint="{receiver.url}/v1/traces", timeout=5)
        processor = OtlpBatchSpanProcessor(exporter, export_process=True)
        provider.add_span_processor(processor)
        provider.get_tracer("app").start_span("last words").end()
        processor.send_waiting()  # written to the export process, not yet sent by it
        os.kill(os.getpid(), signal.SIGKILL)  # no shutdown, no atexit
        """
    )
    application = subprocess.run([sys.executable, "-c", script], timeout=60)
    assert application.returncode == -signal.SIGKILL
    wait_until(lambda: span_names(receiver) == ["last words"])


async def test_a_value_marshal_cannot_carry_is_encoded_in_this_process(
    receiver: FakeServer,
) -> None:
    class Label(str):
        """A str subclass: the encoder takes it, marshal does not."""

    provider, processor = traced(receiver)
    processor.append(
        Resource.create({}),
        None,
        (1, 0, False, "odd", 1, None, 2, 10, 20, {"label": Label("x")}, (), None),
    )
    assert processor.force_flush()
    assert span_names(receiver) == ["odd"]
    assert processor.export_process is True  # the rest still goes to the export process
    provider.shutdown()


def test_a_forked_process_starts_its_own_export_process(receiver: FakeServer) -> None:
    provider, processor = traced(receiver)
    provider.get_tracer("app").start_span("parent's").end()
    assert processor.force_flush()
    assert processor._process is not None
    parents = processor._process.pid
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running anything else
        try:
            provider.get_tracer("app").start_span("child's").end()
            ok = processor.force_flush(timeout_millis=20_000)
            mine = processor._process.pid if processor._process is not None else 0
            os.write(write, f"{int(ok)} {int(mine not in (0, parents))}".encode())
            provider.shutdown()
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as reading:
        assert reading.read() == "1 1"  # flushed, through an export process of its own
    assert processor._process is not None and processor._process.pid == parents
    provider.get_tracer("app").start_span("parent's again").end()
    assert processor.force_flush()
    assert span_names(receiver) == ["child's", "parent's", "parent's again"]
    provider.shutdown()


def test_export_process_needs_an_exporter_it_can_make_again(receiver: FakeServer) -> None:
    import requests

    exporter = OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces", session=requests.Session())
    with pytest.raises(TypeError, match="without a session"):
        OtlpBatchSpanProcessor(exporter, export_process=True)
    OtlpBatchSpanProcessor(exporter).shutdown()  # exported from the thread: fine


def test_a_stuck_export_process_is_given_up_and_flushes_keep_their_deadlines(
    receiver: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    provider, processor = traced(receiver)
    processor.write_timeout_s = 1.0  # the export thread's patience with a full pipe
    assert processor._process is not None
    stuck = processor._process._process
    os.kill(stuck.pid, signal.SIGSTOP)  # takes nothing more once its pipe is full
    try:
        resource = Resource.create({})
        with caplog.at_level(logging.WARNING, logger="tether_otel.batch"):
            for n in range(2000):  # 4 MB (each padding its own string): over what the pipe holds
                padding = f"{n:04d}" + "x" * 2000
                record = (1, 0, False, "bulk", 1, None, n + 1, 10, 20, {"pad": padding}, (), None)
                processor.append(resource, None, record)
            # the export thread is writing (and will block once the pipe is full) with
            # the export lock held: a flush cannot start within its own deadline
            wait_until(lambda: len(processor._queue) < 2000)
            started = time.monotonic()
            assert processor.force_flush(timeout_millis=300) is False
            assert time.monotonic() - started < 5  # its own deadline, not the pipe's
            wait_until(lambda: processor.export_process is False)
        assert "of" in caplog.text and "bytes in time" in caplog.text
        assert "exporting spans from this process from now on" in caplog.text
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(stuck.pid, signal.SIGCONT)
    stuck.wait(timeout=10)  # its input closed, then killed
    provider.get_tracer("app").start_span("after").end()
    assert processor.force_flush(timeout_millis=20_000)
    assert "after" in span_names(receiver)  # exported from the thread now
    provider.shutdown()
