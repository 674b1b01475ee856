"""A durable step of tether (tether-dbos) against pydantic-ai's DBOS agent, side by side.

Both on the same PostgreSQL (each in a database of its own, made and dropped here), with
the same scripted model and tool: each model response calls the no-op tool ``noop``
once, until ``rounds`` results are in the history, then answers ``done``; ``2 * rounds +
1`` steps per run (``rounds + 1`` model requests, ``rounds`` tool calls). Same
guarantee: every model request and every tool call is a DBOS step, so a crash repeats
neither once recorded (pydantic-ai's tool is a ``@DBOS.step``; tether's tool calls are
steps of their own). tether also writes the conversation to its PostgreSQL session store
and publishes the run's events, which pydantic-ai's agent does not do.

Each side runs in a child process of its own (DBOS is one per process), the two taking
turns in each of ``--rounds`` rounds so that load changes hit both alike; a child makes
one warm-up run and reports the median of ``--repeats`` runs. Prints a line per round
and one JSON line: ms per step of each side per round, their medians, and the ratio
tether / pydantic-ai per round.

Run (PostgreSQL on 127.0.0.1:5432; pydantic-ai in an environment of its own, see
``bench/README.md``)::

    python bench/durable_peer_bench.py --peer-python PEER_VENV/bin/python
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
def tether_child(url: str, rounds: int, repeats: int) -> None:
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

        async def once() -> float:
            spec = {"session": f"bench-{new_id()[:8]}", "agent": "durable_bench_agent:make_agent",
                    "prompt": prompt}  # fmt: skip
            started = time.perf_counter()
            handle = await DBOS.start_workflow_async(durable_run, spec)
            result = await handle.get_result()
            assert result.output == "done" and result.tool_calls == rounds
            return time.perf_counter() - started

        async def measure() -> list[float]:
            await once()
            return [await once() for _ in range(repeats)]

        try:
            times = asyncio.run(measure())
        finally:
            stop_worker(runtime)
    print(
        json.dumps(
            {
                "framework": f"tether-dbos {version('tether-dbos')}",
                "dbos": version("dbos"),
                "seconds": statistics.median(times),
            }
        )
    )


# -- the driver -----------------------------------------------------------------------------
def _side(command: list[str], url: str, rounds: int, repeats: int) -> dict[str, Any]:
    done = subprocess.run(
        [*command, url, str(rounds), str(repeats)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    from tether_postgres.testing import temporary_database

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", required=True, help="python with pydantic-ai[dbos]")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--tool-rounds", type=int, default=10, help="tool rounds per run")
    parser.add_argument("--repeats", type=int, default=5, help="runs per side per round")
    args = parser.parse_args()
    steps = 2 * args.tool_rounds + 1
    sides = {
        "tether": [sys.executable, str(Path(__file__).resolve()), "--child"],
        "pydantic_ai": [args.peer_python, str(HERE / "durable_peer_pydantic_ai.py")],
    }
    per_step: dict[str, list[float]] = {name: [] for name in sides}
    names: dict[str, str] = {}
    for index in range(args.rounds):
        order = list(sides) if index % 2 == 0 else list(reversed(sides))
        for name in order:
            with temporary_database(prefix=f"peer_bench_{name}") as url:
                out = _side(sides[name], url, args.tool_rounds, args.repeats)
            names[name] = f"{out['framework']} (dbos {out['dbos']})"
            per_step[name].append(out["seconds"] / steps * 1e3)
        log(
            f"round {index + 1}: tether {per_step['tether'][-1]:.2f} ms/step, "
            f"pydantic-ai {per_step['pydantic_ai'][-1]:.2f} ms/step"
        )
    ratios = [t / p for t, p in zip(per_step["tether"], per_step["pydantic_ai"], strict=True)]
    print(
        json.dumps(
            {
                "steps_per_run": steps,
                "frameworks": names,
                "ms_per_step": per_step,
                "median_ms_per_step": {k: statistics.median(v) for k, v in per_step.items()},
                "ratio_tether_over_pydantic_ai": ratios,
                "median_ratio": statistics.median(ratios),
            }
        )
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        tether_child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
