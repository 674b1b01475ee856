"""Start-up cost of a whole ``tether run`` process, side by side with ``llm`` and
pydantic-ai's CLI when they are installed.

Each run is a fresh process answering one prompt with ``openai/gpt-4.1`` (Chat
Completions) from a loopback fake server, so what is measured is the interpreter start,
imports, configuration and plugin loading, building the client, one streamed reply and
exit. Two times per run, from just before the process is started: to the first request
the server receives, and to the process's exit. Medians (and spread) of ``--runs`` runs;
the tools take turns, so a busy machine slows them alike.

    python bench/startup_bench.py [--runs 7] [--tether PATH] [--llm PATH] [--pai PATH]

``--llm`` and ``--pai`` name the other tools' executables (install them in a separate
virtual environment: ``uv pip install llm "pydantic-ai-slim[cli,openai]"``); a tool not
given is left out of the table. ``--tether`` runs another installation of tether than
the one next to this Python (e.g. one made like a user's, ``uv pip install ./core
./plugins/openai ./plugins/tools``, without the workspace's other plugins and their
dependencies). Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tether_testing.http import FakeResponse, FakeServer, RecordedRequest
from tether_testing.wire import chat_reply

MODEL = "gpt-4.1"
PROMPT = "Say hello"


class Server:
    """The fake OpenAI API: every POST gets a streamed Chat Completions reply; the
    time of each request's arrival is kept."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self._lock = threading.Lock()
        self.fake = FakeServer(self._answer)

    def _answer(self, request: RecordedRequest) -> FakeResponse:
        with self._lock:
            self.arrivals.append(time.perf_counter())
        if request.method == "GET":
            data = [{"id": MODEL, "object": "model", "created": 0, "owned_by": "fake"}]
            return FakeResponse.json({"object": "list", "data": data})
        return chat_reply(MODEL, "Hello from the bench server")

    def first_arrival_after(self, start: float) -> float | None:
        with self._lock:
            later = [t for t in self.arrivals if t >= start]
        return min(later) - start if later else None


def commands(args: argparse.Namespace) -> dict[str, list[str]]:
    tether_cli = args.tether or shutil.which("tether", path=os.path.dirname(sys.executable))
    if tether_cli is None:
        raise SystemExit("The tether command is not installed next to this Python.")
    found = {"tether": [tether_cli, "run", "-m", f"openai/{MODEL}", PROMPT]}
    if args.llm:
        found["llm"] = [args.llm, "-m", MODEL, "--no-log", PROMPT]
    if args.pai:
        found["pydantic-ai (clai)"] = [args.pai, "-m", f"openai-chat:{MODEL}", PROMPT]
    return found


def environment(server_url: str, home: Path) -> dict[str, str]:
    """The tools' environment: the fake server's URL and key, a fresh home, and bytecode
    caches allowed (``PYTHONDONTWRITEBYTECODE`` dropped), as an installed tool has them;
    otherwise every run would compile every module it imports from source."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TETHER_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        {
            "OPENAI_API_KEY": "sk-bench-not-a-real-key",
            "OPENAI_BASE_URL": server_url + "/v1",
            "TETHER_CONFIG": str(home / "tether.toml"),
            "TETHER_DATA_DIR": str(home / "tether-data"),
            "LLM_USER_PATH": str(home / "llm"),
            "HOME": str(home),
        }
    )
    return env


def run_once(
    server: Server, command: list[str], env: dict[str, str], cwd: Path
) -> tuple[float, float]:
    start = time.perf_counter()
    out = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    end = time.perf_counter() - start
    if out.returncode != 0 or "Hello from the bench server" not in out.stdout:
        raise SystemExit(f"{command[0]} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    first = server.first_arrival_after(start)
    if first is None:
        raise SystemExit(f"{command[0]} answered without asking the server")
    return first, end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--tether", help="path of the tether executable (default: the one next to this Python)"
    )
    parser.add_argument("--llm", help="path of the llm executable")
    parser.add_argument("--pai", help="path of pydantic-ai's CLI (pai or clai)")
    args = parser.parse_args()
    tools = commands(args)
    load_before = os.getloadavg()[0]
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in tools}
    server = Server()
    with tempfile.TemporaryDirectory() as tmp, server.fake as fake:
        home = Path(tmp)
        (home / "tether.toml").write_text("")
        env = environment(fake.url, home)
        for command in tools.values():  # warm-up: bytecode caches, disk cache
            run_once(server, command, env, home)
        for _ in range(args.runs):
            for name, command in tools.items():
                timings[name].append(run_once(server, command, env, home))
    load = f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after (1-minute average)"
    report = {
        name: {
            "first_request_s": statistics.median(t[0] for t in runs),
            "exit_s": statistics.median(t[1] for t in runs),
            "exit_min_s": min(t[1] for t in runs),
            "exit_max_s": max(t[1] for t in runs),
        }
        for name, runs in timings.items()
    }
    base = report["tether"]["exit_s"]
    print(f"median of {args.runs} runs each, one prompt over loopback; load {load}")
    print(f"{'tool':<22}{'first request':>15}{'exit':>9}{'range':>16}{'vs tether':>11}")
    for name, row in report.items():
        spread = f"{row['exit_min_s']:.2f}-{row['exit_max_s']:.2f}"
        print(
            f"{name:<22}{row['first_request_s']:>14.2f}s{row['exit_s']:>8.2f}s{spread:>15}s"
            f"{row['exit_s'] / base:>10.2f}x"
        )
    print(json.dumps({"runs": args.runs, "load": load, "tools": report}))


if __name__ == "__main__":
    main()
