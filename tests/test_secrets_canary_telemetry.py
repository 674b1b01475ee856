"""The canary-key test extended to telemetry: a canary API key set in the environment
and in the configuration, quoted back by a retried 500 and a final 401 of the OpenAI wire
format (through the official SDK), sent by the model as a tool argument, returned by a
tool and typed into the prompt, appears in no span (name, attribute, event, status), no
metric, no OTLP request sent to a loopback receiver, and not in the run log — with
message-content capture on, the most revealing setting."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tether
from tether import Agent
from tether.config import Config
from tether.errors import AuthenticationError
from tether_otel import OtelPlugin
from tether_otel.plugin import shutdown
from tether_runlog import open_run_log
from tether_testing.http import FakeResponse, FakeServer

MODEL = "gpt-4.1"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-canary",
        "object": "chat.completion.chunk",
        "created": 1756306542,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }


def reply(text: str = "", call: tuple[str, str, dict[str, Any]] | None = None) -> FakeResponse:
    chunks = [_chunk({"role": "assistant", "content": text})]
    if call is not None:
        call_id, name, arguments = call
        function = {"name": name, "arguments": json.dumps(arguments)}
        chunks.append(
            _chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": call_id, "type": "function", "function": function}
                    ]
                }
            )
        )
    chunks.append(_chunk({}, finish="tool_calls" if call else "stop"))
    return FakeResponse.sse([*((None, c) for c in chunks), (None, "[DONE]")])


def quoting(status: int, key: str) -> FakeResponse:
    """An error that quotes the key back, as some gateways do."""
    return FakeResponse.json(
        {
            "error": {
                "message": f"Incorrect API key provided: {key}.",
                "type": "invalid_request_error",
                "code": "invalid_api_key" if status == 401 else "server_error",
            }
        },
        status=status,
    )


@tether.tool
def echo(text: str) -> str:
    """Repeat the text."""
    return f"you said {text}"


def files_bytes(root: Path, pattern: str) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(root.glob(pattern)))


@pytest.fixture
def collector() -> Iterator[FakeServer]:
    with FakeServer(lambda r: FakeResponse(status=200, body=b"")) as server:
        yield server
    shutdown()


async def test_a_canary_key_reaches_no_span_metric_otlp_request_or_run_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector: FakeServer
) -> None:
    env_key = f"canary{uuid.uuid4().hex}"
    config_key = f"canary{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    monkeypatch.setenv("TETHER_PLUGINS_ALLOW", "openai,otel,runlog")
    monkeypatch.setenv("TETHER_RUN_LOG", str(tmp_path / "runs.sqlite"))
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    plugin = OtelPlugin(
        tracer_provider=tracer_provider, meter_provider=meter_provider, capture_content=True
    )
    with FakeServer() as model_server:
        model_server.queue(
            quoting(500, env_key),  # retried: a span event carries its message
            reply(call=("c1", "echo", {"text": env_key})),
            reply("Done."),
            quoting(401, config_key),
        )
        openai = {"base_url": model_server.url + "/v1", "api": "chat", "api_key": config_key}
        exported = {"endpoint": collector.url, "capture_content": True, "metric_interval_s": 3600}
        config = Config.model_validate(
            {"providers": {"openai": openai}, "observers": {"otel": exported}}
        )
        agent = Agent(
            f"openai/{MODEL}",
            config=config,
            tools=[echo],
            plugins=[plugin],
            retry=tether.RetryPolicy(base_delay=0.01),
        )
        result = await agent.run(f"My key is {env_key}; repeat it.")
        assert result.ok and result.retries == 1
        with pytest.raises(AuthenticationError):
            await agent.run(f"And this one: {config_key}")
        await agent.aclose()

    tracer_provider.force_flush()
    shutdown()  # flushes the exporter that [observers.otel] configured to the receiver
    finished = spans.get_finished_spans()
    assert {s.name for s in finished} >= {"invoke_agent", f"chat {MODEL}", "execute_tool echo"}
    assert any(e.name == "gen_ai.retry" for s in finished for e in s.events)
    assert any(
        s.status.description and "Incorrect API key" in s.status.description for s in finished
    )
    exported_spans = "\n".join(s.to_json() for s in finished)
    assert "***" in exported_spans  # the captured content was there, and scrubbed
    metrics = reader.get_metrics_data()
    assert metrics is not None
    received = b"".join(r.body for r in collector.requests)
    assert any(r.path == "/v1/traces" for r in collector.requests)
    log = open_run_log(tmp_path / "runs.sqlite")
    log.flush()
    rows = log.recent(10)
    assert [r.outcome for r in rows] == ["error", "completed"]
    stored = files_bytes(tmp_path, "runs.sqlite*")
    for key in (env_key, config_key):
        assert key not in exported_spans
        assert key not in metrics.to_json()
        assert key.encode() not in received
        assert key.encode() not in stored
