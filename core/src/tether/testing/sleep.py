"""A ``RetryPolicy.sleep`` for tests: retries run at once, and the waits are recorded."""

from __future__ import annotations

__all__ = ["RecordingSleep"]


class RecordingSleep:
    """Records each delay the retry policy asks for instead of waiting it out::

    sleep = RecordingSleep()
    agent = Agent(provider, retry=RetryPolicy(sleep=sleep))
    ...
    assert sleep.delays == [7.5]      # the server's retry-after, honoured
    """

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
