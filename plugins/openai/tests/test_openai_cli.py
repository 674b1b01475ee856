"""The real ``tether`` command with this plugin: no request before the run's own, and
keys checked against the API only by ``tether models --check``."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether_testing.cli import run_tether
from tether_testing.http import FakeResponse, FakeServer, RecordedRequest

KEY = "sk-test-cli-0123456789"


def chat_reply(text: str) -> FakeResponse:
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1"}
    return FakeResponse.sse(
        [
            (None, {**base, "choices": [{"index": 0, "delta": {"content": text}}]}),
            (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            (None, "[DONE]"),
        ]
    )


def compatible_server(request: RecordedRequest) -> FakeResponse:
    """A compatible server with chat completions but no ``/models`` endpoint (the 400
    some such servers give for an unknown route)."""
    if request.method == "POST" and request.path.endswith("/chat/completions"):
        return chat_reply("Hello from a compatible server")
    return FakeResponse.json({"error": {"message": f"Unknown route {request.path}"}}, status=400)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(compatible_server) as fake:
        yield fake


def cli(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_tether(tmp_path, *args, plugins="openai", env=env, unset=["OPENAI_"])


def test_tether_run_sends_no_request_before_the_runs_own(
    server: FakeServer, tmp_path: Path
) -> None:
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url + "/v1"}
    out = cli(tmp_path, "run", "-m", "openai/gpt-4.1", "--tools", "", "Say hello", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from a compatible server"
    assert [(r.method, r.path) for r in server.requests] == [("POST", "/v1/chat/completions")]


def test_models_check_asks_the_api_and_reports_a_rejected_key(tmp_path: Path) -> None:
    listing = {
        "object": "list",
        "data": [{"id": "gpt-4.1", "object": "model", "created": 1, "owned_by": "o"}],
    }
    rejected = {
        "error": {
            "message": "Incorrect API key provided.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    with FakeServer() as server:
        server.queue(FakeResponse.json(listing), FakeResponse.json(rejected, status=401))
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url + "/v1"}
        good = cli(tmp_path, "models", "--check", "openai", env=env)
        bad = cli(tmp_path, "models", "--check", "--json", "openai", env=env)
    assert good.returncode == 0, good.stderr
    assert good.stdout.strip() == "openai: key accepted"
    assert bad.returncode == 1
    report = json.loads(bad.stdout)
    assert report["openai"]["ok"] is False
    assert "OPENAI_API_KEY" in report["openai"]["error"] and KEY not in bad.stdout
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/models")] * 2
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_models_check_defaults_to_the_provider_of_the_chosen_model(tmp_path: Path) -> None:
    with FakeServer() as server:
        server.queue(FakeResponse.json({"object": "list", "data": []}))
        env = {
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": server.url + "/v1",
            "TETHER_MODEL": "openai/gpt-4.1",
        }
        out = cli(tmp_path, "models", "--check", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "openai: key accepted"
    assert len(server.requests) == 1


def test_models_lists_what_a_local_llamacpp_server_serves(tmp_path: Path) -> None:
    listing = {  # llama-server's answer to GET /v1/models
        "models": [
            {
                "name": "qwen2.5-0.5b-instruct-q4_k_m.gguf",
                "model": "qwen2.5-0.5b-instruct-q4_k_m.gguf",
                "type": "model",
                "capabilities": ["completion"],
            }
        ],
        "object": "list",
        "data": [
            {
                "id": "qwen2.5-0.5b-instruct-q4_k_m.gguf",
                "object": "model",
                "created": 1764950000,
                "owned_by": "llamacpp",
                "meta": {"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": 32768},
            }
        ],
    }
    with FakeServer() as server:
        server.queue(FakeResponse.json(listing))
        env = {"LLAMACPP_BASE_URL": server.url + "/v1"}
        done = cli(tmp_path, "models", "llamacpp", env=env)
    assert done.returncode == 0, done.stderr
    assert "qwen2.5-0.5b-instruct-q4_k_m.gguf" in done.stdout
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/models")]


def test_models_check_of_a_keyless_server_does_not_claim_a_key_was_accepted(
    tmp_path: Path,
) -> None:
    listing = {"object": "list", "data": [{"id": "qwen", "object": "model", "owned_by": "x"}]}
    with FakeServer() as server:
        server.queue(FakeResponse.json(listing))
        env = {"LLAMACPP_BASE_URL": server.url + "/v1"}
        done = cli(tmp_path, "models", "--check", "llamacpp", env=env)
    assert done.returncode == 0, done.stderr
    assert "key accepted" not in done.stdout
    assert done.stdout.strip() == "llamacpp: the server answered (it needs no key)"


def test_models_check_without_a_model_does_not_suggest_an_option_it_lacks(
    tmp_path: Path,
) -> None:
    done = cli(tmp_path, "models", "--check", env={"TETHER_MODEL": ""})
    assert done.returncode != 0
    assert "-m" not in done.stderr.replace("tether models", "")
    assert "tether models --check PROVIDER" in done.stderr
