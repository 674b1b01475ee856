"""A writer killed with SIGKILL at random moments never loses an acknowledged message.

A helper process (the "spawner") imports tether once and forks one writer per round. The
writer appends user messages, assistant messages with tool calls, and (not always) their
results, and after each ``append`` returns writes the message id to a FIFO. The test reads
a random number of acknowledgements, kills the writer with SIGKILL (so the kill lands
anywhere: inside a write, between write and fsync, between messages), reads the
acknowledgements still in the FIFO, then loads the session and checks it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pytest

from tether.sessions import JsonlSession
from tether.testing import assert_invariant

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or not hasattr(os, "mkfifo"), reason="needs fork and FIFOs"
)

ROUNDS = 240
FILES = 6  # rounds are spread over a few files so each stays small

SPAWNER = textwrap.dedent(
    """
    import os, random, sys
    from tether.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
    from tether.sessions import JsonlSession

    def write(session_path, fifo, seed):
        rng = random.Random(seed)
        out = os.open(fifo, os.O_WRONLY)
        session = JsonlSession(session_path)
        def append(message):
            session.append(message)
            os.write(out, (message.id + "\\n").encode())
        n = 0
        while True:
            n += 1
            append(Message.user(f"step {n} " + "x" * rng.choice([10, 500, 8000])))
            calls = [ToolCallBlock(id=f"c{seed}-{n}-{i}", name="read", arguments={"i": i})
                     for i in range(rng.randint(1, 3))]
            append(Message(role="assistant", content=[TextBlock(text="looking"), *calls]))
            if rng.random() < 0.8:
                results = [ToolResultBlock(call_id=c.id, content="y" * rng.choice([5, 3000, 30000]))
                           for c in calls]
                append(Message.tool(results))

    for line in sys.stdin:
        session_path, fifo, seed = line.split()
        pid = os.fork()
        if pid == 0:
            try:
                write(session_path, fifo, int(seed))
            finally:
                os._exit(1)
        print(pid, flush=True)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
    """
)


def test_sigkill_never_loses_an_acknowledged_message(tmp_path: Path) -> None:
    script = tmp_path / "spawner.py"
    script.write_text(SPAWNER)
    spawner = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert spawner.stdin is not None and spawner.stdout is not None
    rng = random.Random(20260101)
    acknowledged: dict[Path, set[str]] = {}
    repaired_rounds = 0
    try:
        for round_ in range(ROUNDS):
            path = tmp_path / f"session-{round_ % FILES}.jsonl"
            fifo = tmp_path / f"acks-{round_}"
            os.mkfifo(fifo)
            spawner.stdin.write(f"{path} {fifo} {round_}\n")
            spawner.stdin.flush()
            writer = int(spawner.stdout.readline())
            acks = acknowledged.setdefault(path, set())
            with open(fifo, "rb", buffering=0) as pipe:
                reader = _lines(pipe)
                for _ in range(rng.randint(0, 8)):
                    line = next(reader, None)
                    if line is None:
                        break
                    acks.add(line)
                for _ in range(rng.randint(0, 30_000)):  # jitter: the kill lands anywhere
                    pass
                os.kill(writer, signal.SIGKILL)
                acks.update(reader)  # acknowledgements written before the kill
            assert spawner.stdout.readline().strip() == "reaped"
            fifo.unlink()

            with JsonlSession(path) as session:
                repaired_rounds += bool(session.repair_report)
                assert_invariant(session.messages)
                present = {m.id for m in session.messages}
                missing = acks - present
                assert not missing, (
                    f"round {round_}: acknowledged messages lost: {sorted(missing)[:5]}"
                )
            if round_ % 8 == 0:  # the repair was written back: nothing is left to do
                with JsonlSession(path) as again:
                    assert not again.repair_report, again.repair_report.summary()
    finally:
        spawner.stdin.close()
        spawner.wait(timeout=60)
    assert sum(len(a) for a in acknowledged.values()) > ROUNDS
    assert repaired_rounds > ROUNDS // 4  # many kills did leave something to repair


def _lines(pipe: BinaryIO) -> Iterator[str]:
    buffer = b""
    while True:
        chunk = pipe.read(65536)
        if not chunk:
            break
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        for line in complete:
            yield line.decode()
