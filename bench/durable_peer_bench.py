"""A durable step of tether (tether-dbos) against pydantic-ai's DBOS agent, side by side.

Both on the same PostgreSQL (each in a database of its own, made and dropped here), with
the same scripted model and tool: each model response calls the no-op tool ``noop``
once, until ``rounds`` results are in the history, then answers ``done``; ``2 * rounds +
1`` steps per run (``rounds + 1`` model requests, ``rounds`` tool calls). Same
guarantee: every model request and every tool call is a DBOS step, so a crash repeats
neither once recorded (pydantic-ai's tool is a ``@DBOS.step``; tether's tool calls are
steps of their own). tether also writes the conversation to its PostgreSQL session store
and publishes the run's events, which pydantic-ai's agent does not do.

Each side runs in a child process of its own (DBOS is one per process), both alive
throughout; after ``--warmup`` runs each they make ``--runs`` runs each, one at a time
and taking turns (so load changes on a shared machine hit both alike). Each run is timed
in its child: wall time and CPU time of the whole process (DBOS works from threads).
Prints a summary on stderr and one JSON line: per step, the median wall time (and its
interquartile range) and median CPU time of each side, and the ratios tether /
pydantic-ai of those medians.

Run (PostgreSQL on 127.0.0.1:5432; pydantic-ai in an environment of its own, see
``bench/README.md``)::

    python bench/durable_peer_bench.py --peer-python PEER_VENV/bin/python

``--baseline-path`` adds a third side: tether with another version's sources first on
its path, so a change is measured against what it replaces under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- tether's side (a child process) --------------------------------------------------------
def tether_child(url: str, rounds: int) -> None:
    """Serve runs of tether's durable agent, one per ``run`` line on stdin (the protocol of
    ``durable_peer_pydantic_ai.py``)."""
    from importlib.metadata import version

    from dbos import DBOS
    from durable_bench import write_config

    from tether.config import load_config
    from tether.messages import Message, new_id
    from tether_dbos import start_worker, stop_worker
    from tether_dbos.workflow import durable_run

    with tempfile.TemporaryDirectory() as root:
        config = load_config(write_config(Path(root), url, poll=0.2))
        runtime = start_worker(config, executor_id="peer-bench")
        prompt = Message.user(f"rounds {rounds}").to_json()

        async def serve() -> None:
            print(json.dumps({"framework": f"tether-dbos {version('tether-dbos')}",
                              "dbos": version("dbos")}), flush=True)  # fmt: skip
            for line in sys.stdin:
                if line.strip() != "run":
                    break
                spec = {"session": f"bench-{new_id()[:8]}", "prompt": prompt,
                        "agent": "durable_bench_agent:make_agent"}  # fmt: skip
                wall, cpu = time.perf_counter(), time.process_time()
                handle = await DBOS.start_workflow_async(durable_run, spec)
                result = await handle.get_result()
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                assert result.output == "done" and result.tool_calls == rounds
                print(json.dumps({"wall": wall, "cpu": cpu}), flush=True)

        try:
            asyncio.run(serve())
        finally:
            stop_worker(runtime)


# -- the driver -----------------------------------------------------------------------------
class Side:
    """One framework's child process, serving runs on request."""

    def __init__(self, command: list[str], url: str, rounds: int, path: str | None = None) -> None:
        env = dict(os.environ)
        if path:  # these source directories before the installed ones
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [*command, url, str(rounds)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        first = self._read()
        self.name, self._last_dbos = first["framework"], first["dbos"]

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"a benchmark child exited ({self.process.wait(timeout=30)})")
        self._last: dict[str, Any] = json.loads(line)
        return self._last

    def run(self) -> dict[str, float]:
        assert self.process.stdin is not None
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def main() -> None:
    from tether_postgres.testing import temporary_database

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", required=True, help="python with pydantic-ai[dbos]")
    parser.add_argument("--runs", type=int, default=60, help="measured runs per side")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured runs per side first")
    parser.add_argument("--tool-rounds", type=int, default=10, help="tool rounds per run")
    parser.add_argument(
        "--baseline-path",
        help="also run tether with these source directories (os.pathsep-separated, e.g. "
        "an export of an earlier commit's contrib/dbos/src and plugins/postgres/src) "
        "first on its path: before and after in the same run",
    )
    args = parser.parse_args()
    steps = 2 * args.tool_rounds + 1
    commands = {
        "tether": [sys.executable, str(Path(__file__).resolve()), "--child"],
        "pydantic_ai": [args.peer_python, str(HERE / "durable_peer_pydantic_ai.py")],
    }
    if args.baseline_path:
        commands["tether_baseline"] = commands["tether"]
    with contextlib.ExitStack() as stack:
        sides: dict[str, Side] = {}
        for key, command in commands.items():
            url = stack.enter_context(temporary_database(prefix=f"peer_bench_{key}"))
            path = args.baseline_path if key == "tether_baseline" else None
            sides[key] = Side(command, url, args.tool_rounds, path)
            stack.callback(sides[key].close)
        for _ in range(args.warmup):
            for side in sides.values():
                side.run()
        wall: dict[str, list[float]] = {key: [] for key in sides}
        cpu: dict[str, list[float]] = {key: [] for key in sides}
        for index in range(args.runs):  # one run each in turn, so load changes hit both
            order = list(sides) if index % 2 == 0 else list(reversed(sides))
            for key in order:
                out = sides[key].run()
                wall[key].append(out["wall"] / steps * 1e3)
                cpu[key].append(out["cpu"] / steps * 1e3)
        names = {key: f"{side.name} (dbos {side._last_dbos})" for key, side in sides.items()}
        if "tether_baseline" in names:
            names["tether_baseline"] += ", baseline sources"

    def median(values: list[float]) -> float:
        return statistics.median(values)

    def quartiles(values: list[float]) -> list[float]:
        q = statistics.quantiles(values, n=4)
        return [q[0], q[2]]

    result: dict[str, Any] = {
        "steps_per_run": steps,
        "runs_per_side": args.runs,
        "frameworks": names,
        "wall_ms_per_step_median": {k: median(v) for k, v in wall.items()},
        "wall_ms_per_step_iqr": {k: quartiles(v) for k, v in wall.items()},
        "cpu_ms_per_step_median": {k: median(v) for k, v in cpu.items()},
    }
    for key in sides:
        if key != "pydantic_ai":
            suffix = key.removeprefix("tether")
            result[f"ratio_wall{suffix}_over_pydantic_ai"] = median(wall[key]) / median(
                wall["pydantic_ai"]
            )
            result[f"ratio_cpu{suffix}_over_pydantic_ai"] = median(cpu[key]) / median(
                cpu["pydantic_ai"]
            )
    for key in sides:
        log(
            f"{names[key]}: {median(wall[key]):.2f} ms/step wall "
            f"(IQR {quartiles(wall[key])[0]:.2f}-{quartiles(wall[key])[1]:.2f}), "
            f"{median(cpu[key]):.2f} ms/step CPU"
            + (
                ""
                if key == "pydantic_ai"
                else f"; x{median(wall[key]) / median(wall['pydantic_ai']):.2f} wall, "
                f"x{median(cpu[key]) / median(cpu['pydantic_ai']):.2f} CPU of pydantic-ai's"
            )
        )
    print(json.dumps(result))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        tether_child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
