"""Session load+repair and append latency.

Run: ``python bench/sessions_bench.py``. Prints one JSON line:

- ``load``: for sessions of 10k and 100k realistic messages (user prompts, assistant
  messages with tool calls, tool results of a few hundred bytes to a few KB), seconds to
  open a ``JsonlSession`` (read, parse into messages, repair, take the lock) next to
  seconds for plain ``json.loads`` of the same lines, and the ratio (goal: <= 2);
- ``append``: median and 99th-percentile latency of ``append`` with ``durable=True``
  (flush + fsync) and ``durable=False``.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from tether.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from tether.sessions import JsonlSession


def history(count: int) -> list[Message]:
    messages: list[Message] = []
    n = 0
    while len(messages) < count:
        n += 1
        messages.append(Message.user(f"Please look at module {n} and fix the failing test in it."))
        call = ToolCallBlock(
            id=f"call_{n}", name="read_file", arguments={"path": f"src/pkg/module_{n}.py"}
        )
        messages.append(
            Message(role="assistant", content=[TextBlock(text="Let me read it."), call])
        )
        body = "\n".join(
            f"def f{i}(x):\n    return x * {i}  # line {i} of module {n}" for i in range(n % 40 + 5)
        )
        messages.append(Message.tool([ToolResultBlock(call_id=call.id, content=body)]))
        messages.append(
            Message(
                role="assistant",
                content=[
                    TextBlock(text=f"Module {n} is fixed: the off-by-one in f{n % 7} is gone.")
                ],
            )
        )
    return messages[:count]


def best(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def bench_load(directory: Path, count: int) -> dict[str, float]:
    path = directory / f"s{count}.jsonl"
    with JsonlSession(path, durable=False) as session:
        session.replace(history(count))
    lines = path.read_bytes().splitlines()

    def plain() -> None:
        for line in lines:
            json.loads(line)

    def load() -> None:
        with JsonlSession(path) as loaded:
            assert len(loaded.messages) == count and not loaded.repair_report

    repeat = 5 if count <= 10_000 else 2
    ours, theirs = best(load, repeat), best(plain, repeat)
    return {
        "messages": count,
        "mb": round(path.stat().st_size / 1e6, 1),
        "jsonl_session_s": round(ours, 3),
        "json_loads_s": round(theirs, 3),
        "ratio": round(ours / theirs, 2),
    }


def bench_append(directory: Path, durable: bool, count: int) -> dict[str, float]:
    message = history(3)[2]
    latencies = []
    with JsonlSession(directory / f"append-{durable}.jsonl", durable=durable) as session:
        for _ in range(count):
            start = time.perf_counter()
            session.append(message.model_copy())
            latencies.append(time.perf_counter() - start)
    latencies.sort()
    return {
        "durable": durable,
        "median_us": round(statistics.median(latencies) * 1e6, 1),
        "p99_us": round(latencies[int(0.99 * len(latencies))] * 1e6, 1),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        result = {
            "bench": "sessions",
            "load": [bench_load(directory, 10_000), bench_load(directory, 100_000)],
            "append": [bench_append(directory, True, 300), bench_append(directory, False, 3_000)],
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
