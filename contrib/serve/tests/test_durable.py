"""Durable runs behind ``tether serve`` (``[serve] durable = true``): two server
processes and one ``tether worker`` on one PostgreSQL database of the test's own."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("tether_dbos")
pytest.importorskip("tether_postgres")

from tether_postgres.testing import temporary_database

HERE = Path(__file__).parent
TETHER = Path(sys.executable).with_name("tether")
ACME = {"authorization": "Bearer acme-key"}
GLOBEX = {"authorization": "Bearer globex-key"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Cluster:
    root: Path
    servers: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def ledger(self) -> list[str]:
        path = self.root / "ledger"
        return (
            [line.split("\t")[1] for line in path.read_text().splitlines()] if path.exists() else []
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("durable_serve")
    with temporary_database(prefix="tether_serve_durable") as url:
        config = root / "tether.toml"
        config.write_text(
            "[sessions]\n"
            'store = "postgres"\n'
            f'settings = {{ dsn = "{url}" }}\n'
            "[durable]\n"
            'engine = "dbos"\n'
            f'settings = {{ database_url = "{url}", poll_interval_s = 0.05 }}\n'
            "[serve]\n"
            "durable = true\n"
            "keepalive_s = 1.0\n"
            "rate_per_minute = 6000\n"
            "rate_burst = 1000\n"
            "[serve.agents.default]\n"
            'durable_agent = "serve_durable_agents:make_agent"\n'
            "[[serve.keys]]\n"
            'tenant = "acme"\n'
            'key_env = "ACME_KEY"\n'
            "[[serve.keys]]\n"
            'tenant = "globex"\n'
            'key_env = "GLOBEX_KEY"\n'
        )
        env = dict(os.environ)
        env.update(
            TETHER_CONFIG=str(config),
            TETHER_DATA_DIR=str(root / "data"),
            SERVE_TEST_DIR=str(root),
            ACME_KEY="acme-key",
            GLOBEX_KEY="globex-key",
            PYTHONPATH=os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]),
        )
        cluster = Cluster(root)

        def start(name: str, *args: str) -> None:
            log = (root / f"{name}.log").open("ab")
            cluster.processes.append(
                subprocess.Popen([str(TETHER), *args], env=env, stdout=log, stderr=log)
            )

        try:
            start("worker", "worker", "--id", "w1")
            for index in (1, 2):
                port = _free_port()
                start(f"server{index}", "serve", "--port", str(port))
                cluster.servers.append(f"http://127.0.0.1:{port}")
            deadline = time.monotonic() + 90
            for base in cluster.servers:
                while True:
                    try:
                        if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    if time.monotonic() > deadline:
                        logs = {p.name: p.read_text()[-2000:] for p in root.glob("*.log")}
                        raise AssertionError(f"servers did not start: {logs}")
                    time.sleep(0.2)
            yield cluster
        finally:
            for process in cluster.processes:
                process.terminate()
            for process in cluster.processes:
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)


def _frames(response: httpx.Response, *, stop_after: str | None = None) -> list[dict[str, Any]]:
    """The SSE frames of ``response`` as ``{"id": int, **data}``, until the stream ends
    (or, with ``stop_after``, until a frame of that type)."""
    frames: list[dict[str, Any]] = []
    current: dict[str, str] = {}
    for line in response.iter_lines():
        if line.startswith(":"):
            continue
        if not line:
            if "data" in current:
                frames.append({"id": int(current["id"]), **json.loads(current["data"])})
                if stop_after is not None and frames[-1]["type"] == stop_after:
                    return frames
            current = {}
            continue
        key, _, value = line.partition(": ")
        current[key] = value
    return frames


def _stream(
    method: str, url: str, headers: dict[str, str], body: Any = None, **kw: Any
) -> list[dict[str, Any]]:
    with httpx.stream(method, url, headers=headers, json=body, timeout=90) as response:
        assert response.status_code == 200, response.read()
        return _frames(response, **kw)


def test_a_run_suspended_on_one_server_is_approved_through_the_other_and_completes(
    cluster: Cluster,
) -> None:
    one, two = cluster.servers
    with httpx.stream(
        "POST", f"{one}/v1/sessions/approve-1/runs", headers=ACME, json={"prompt": "alpha"},
        timeout=90,
    ) as response:  # fmt: skip
        assert response.status_code == 200
        run_id = response.headers["x-tether-run-id"]
        first = _frames(response)
    assert [f["type"] for f in first][-2:] == ["approval_request", "done"]
    assert first[-1]["outcome"] == "suspended"
    assert first[-2]["call_id"] == "call-note" and first[-2]["arguments"] == {"text": "alpha"}
    assert cluster.ledger().count("alpha") == 0  # nothing ran before the decision

    rest = _stream(
        "POST", f"{two}/v1/sessions/approve-1/approvals", ACME,
        {"decisions": {"call-note": "allow"}},
    )  # fmt: skip
    assert rest[-1]["type"] == "done" and rest[-1]["outcome"] == "completed"
    assert rest[-1]["output"] == "noted alpha"
    assert all(f["id"] > first[-1]["id"] for f in rest)
    assert cluster.ledger().count("alpha") == 1
    run = httpx.get(f"{one}/v1/runs/{run_id}", headers=ACME, timeout=30).json()
    assert run["status"] == "completed" and run["session_id"] == "approve-1"
    again = httpx.post(
        f"{one}/v1/sessions/approve-1/approvals",
        headers=ACME,
        json={"decisions": {"call-note": "allow"}},
        timeout=30,
    )
    assert again.status_code == 409 and again.json()["error"]["type"] == "nothing_pending"
    assert cluster.ledger().count("alpha") == 1


def test_last_event_id_resumes_the_stream_on_the_other_server(cluster: Cluster) -> None:
    one, two = cluster.servers
    with httpx.stream(
        "POST", f"{one}/v1/sessions/resume-1/runs", headers=ACME, json={"prompt": "beta"},
        timeout=90,
    ) as response:  # fmt: skip
        run_id = response.headers["x-tether-run-id"]
        whole = _frames(response)
    ids = sorted({f["id"] for f in whole})
    assert ids == list(range(1, len(ids) + 1))  # numbered by position, without gaps
    for cut in range(len(ids)):
        resumed = _stream(
            "GET", f"{two}/v1/runs/{run_id}/events", {**ACME, "last-event-id": str(cut)}
        )
        assert resumed == [f for f in whole if f["id"] > cut]


def test_a_client_that_disconnects_detaches_and_the_run_goes_on(cluster: Cluster) -> None:
    one, two = cluster.servers
    with httpx.stream(
        "POST", f"{one}/v1/sessions/detach-1/runs", headers=ACME, json={"prompt": "gamma"},
        timeout=90,
    ) as response:  # fmt: skip
        run_id = response.headers["x-tether-run-id"]
        next(response.iter_lines())  # one line, then hang up
    # the run reaches its approval without any client, and is still waiting for it
    suspended = _stream("GET", f"{two}/v1/runs/{run_id}/events", ACME)
    assert suspended[-1]["type"] == "done" and suspended[-1]["outcome"] == "suspended"
    assert httpx.get(f"{two}/v1/runs/{run_id}", headers=ACME).json()["status"] == "running"
    wrong = httpx.post(
        f"{one}/v1/sessions/detach-1/approvals",
        headers=ACME,
        json={"decisions": {"call-other": "allow"}},
        timeout=30,
    )
    assert wrong.status_code == 422 and "missing ['call-note']" in wrong.json()["error"]["message"]
    rest = _stream(
        "POST", f"{one}/v1/sessions/detach-1/approvals", ACME, {"decisions": {"call-note": "deny"}}
    )
    assert rest[-1]["type"] == "done" and rest[-1]["outcome"] == "completed"
    assert cluster.ledger().count("gamma") == 0  # denied: the tool never ran


def test_cancel_through_either_server_cancels_the_durable_run(cluster: Cluster) -> None:
    one, two = cluster.servers
    first = _stream("POST", f"{one}/v1/sessions/cancel-1/runs", ACME, {"prompt": "delta"})
    run_id = httpx.get(f"{two}/v1/sessions/cancel-1", headers=ACME).json()["runs"][-1]
    assert first[-1]["outcome"] == "suspended"
    cancelled = httpx.post(f"{two}/v1/runs/{run_id}/cancel", headers=ACME, timeout=30)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert httpx.get(f"{one}/v1/runs/{run_id}", headers=ACME).json()["status"] == "cancelled"
    again = _stream("POST", f"{one}/v1/sessions/cancel-1/runs", ACME, {"prompt": "theta"})
    assert again[-1]["outcome"] == "suspended"  # a cancelled run leaves the session usable


def test_another_tenant_finds_none_of_a_tenants_durable_sessions_or_runs(
    cluster: Cluster,
) -> None:
    one, two = cluster.servers
    first = _stream("POST", f"{one}/v1/sessions/private-1/runs", ACME, {"prompt": "epsilon"})
    assert first[-1]["outcome"] == "suspended"
    run_id = httpx.get(f"{one}/v1/sessions/private-1", headers=ACME).json()["runs"][-1]
    for base in (one, two):
        for method, path, body in [
            ("GET", "/v1/sessions/private-1", None),
            ("POST", "/v1/sessions/private-1/approvals", {"decisions": {"call-note": "allow"}}),
            ("GET", f"/v1/runs/{run_id}", None),
            ("GET", f"/v1/runs/{run_id}/events", None),
            ("POST", f"/v1/runs/{run_id}/cancel", None),
        ]:
            answer = httpx.request(method, base + path, headers=GLOBEX, json=body, timeout=30)
            assert answer.status_code == 404, (method, path, answer.text)
        sessions = httpx.get(f"{base}/v1/sessions", headers=GLOBEX).json()["sessions"]
        runs = httpx.get(f"{base}/v1/runs", headers=GLOBEX).json()["runs"]
        assert "private-1" not in [s["id"] for s in sessions]
        assert run_id not in [r["id"] for r in runs]
    # the same session id is a different conversation for the other tenant
    theirs = _stream("POST", f"{two}/v1/sessions/private-1/runs", GLOBEX, {"prompt": "zeta"})
    assert theirs[-2]["arguments"] == {"text": "zeta"}
    ours = httpx.get(f"{one}/v1/sessions/private-1", headers=ACME).json()
    assert ours["runs"] == [run_id]
    # acme's session is busy while its run waits for a decision, on every server
    for base in (one, two):
        busy = httpx.post(
            f"{base}/v1/sessions/private-1/runs", headers=ACME, json={"prompt": "eta"}, timeout=30
        )
        assert busy.status_code == 409 and busy.json()["error"]["type"] == "busy"
    # acme's pending call is listed for acme only
    for base in (one, two):
        listed = httpx.get(f"{base}/v1/approvals", headers=ACME, timeout=60).json()
        mine = [a for a in listed["approvals"] if a["session_id"] == "private-1"]
        assert [(a["call_id"], a["run_id"], a["arguments"]) for a in mine] == [
            ("call-note", run_id, {"text": "epsilon"})
        ]
        theirs_listed = httpx.get(f"{base}/v1/approvals", headers=GLOBEX, timeout=60).json()
        assert run_id not in [a["run_id"] for a in theirs_listed["approvals"]]
    # acme's run still waits for acme's decision, untouched by globex's requests
    assert httpx.get(f"{one}/v1/runs/{run_id}", headers=ACME).json()["status"] == "running"
    assert cluster.ledger().count("epsilon") == 0


def _agui(method: str, url: str, body: Any) -> list[dict[str, Any]]:
    with httpx.stream(method, url, headers=ACME, json=body, timeout=90) as response:
        assert response.status_code == 200, response.read()
        return [
            json.loads(line[len("data: ") :])
            for line in response.iter_lines()
            if line.startswith("data: ")
        ]


def test_ag_ui_clients_see_the_interrupt_and_the_resumed_run_across_servers(
    cluster: Cluster,
) -> None:
    one, two = cluster.servers
    first = _agui("POST", f"{one}/v1/sessions/agui-1/runs?protocol=ag-ui", {"prompt": "iota"})
    assert first[0]["type"] == "RUN_STARTED" and first[-1]["type"] == "RUN_FINISHED"
    (interrupt,) = first[-1]["outcome"]["interrupts"]
    assert interrupt["toolCallId"] == "call-note"
    rest = _agui(
        "POST",
        f"{two}/v1/sessions/agui-1/approvals?protocol=ag-ui",
        {"decisions": {"call-note": "allow"}},
    )
    kinds = [e["type"] for e in rest]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in kinds
    assert rest[-1]["outcome"]["type"] == "success"
    assert cluster.ledger().count("iota") == 1


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/questions"),
        ("POST", "/v1/sessions/any/answers"),
        ("GET", "/v1/runs/any/trace"),
        ("POST", "/v1/agents/default/ag-ui"),
        ("POST", "/v1/agents/default/ui-message-stream"),
    ],
)
def test_routes_durable_mode_lacks_say_so_and_what_to_use(
    cluster: Cluster, method: str, path: str
) -> None:
    answer = httpx.request(method, cluster.servers[0] + path, headers=ACME, json={}, timeout=30)
    assert answer.status_code == 501
    assert "durable = true" in answer.json()["error"]["message"]
    assert httpx.request(method, cluster.servers[0] + path, json={}).status_code == 401
