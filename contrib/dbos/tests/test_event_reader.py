"""How ``RunHandle.events`` reads a run's stream: values a re-executed step publishes
again (same sequence numbers) are dropped, deltas recorded with a model step and
published by a later step (numbered too) are not taken for a retry, and a model step
executed a second time after streaming deltas is announced with a ``retry`` event."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from tether_dbos.client import RunHandle


class _Stream:
    """Stands in for DBOS's client: replays the batches a run's stream holds."""

    def __init__(self, batches: list[list[dict[str, Any]]]) -> None:
        self.batches = batches

    async def read_stream_async(self, run_id: str, key: str, **_: Any) -> AsyncIterator[Any]:
        for batch in self.batches:
            yield [dict(value) for value in batch]


class _Runs:
    def __init__(self, batches: list[list[dict[str, Any]]]) -> None:
        self._client = _Stream(batches)


def test_the_reader_drops_copies_and_announces_real_retries() -> None:
    deferred = [
        {"type": "model_step", "step": 2, "seq": 2},
        {"type": "text_delta", "text": "quick ", "seq": 3},
        {"type": "turn_end", "seq": 4},
    ]
    batches = [
        [{"type": "run_start", "seq": 1}],
        deferred,  # published by a step that died before it was recorded...
        deferred,  # ...and again by its re-execution: dropped
        [{"type": "model_step", "step": 5}, {"type": "text_delta", "text": "slow "}],
        [{"type": "model_step", "step": 5}, {"type": "text_delta", "text": "slow again"}],
        [{"type": "done", "seq": 5}],
    ]

    async def read() -> list[dict[str, Any]]:
        return [e async for e in RunHandle(_Runs(batches), "run-1").events()]  # type: ignore[arg-type]

    events = asyncio.run(read())
    assert [e["type"] for e in events] == [
        "run_start", "text_delta", "turn_end", "text_delta", "retry", "text_delta", "done",
    ]  # fmt: skip
    assert [e.get("text") for e in events if e["type"] == "text_delta"] == [
        "quick ", "slow ", "slow again",
    ]  # fmt: skip
    assert all("seq" not in e for e in events)
