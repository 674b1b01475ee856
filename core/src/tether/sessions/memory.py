"""A session kept in memory only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..messages import Message, new_id

__all__ = ["InMemorySession"]


class InMemorySession:
    """History in a list: for tests, scripts and short-lived agents.

    Lost when the process ends; use ``JsonlSession`` for anything that must survive.
    """

    def __init__(self, messages: Iterable[Message] = (), *, id: str | None = None) -> None:
        self.id = id or new_id()
        self._messages: list[Message] = list(messages)

    @property
    def messages(self) -> Sequence[Message]:
        return self._messages

    def append(self, message: Message) -> None:
        self._messages.append(message)

    def replace(self, messages: Sequence[Message]) -> None:
        self._messages = list(messages)

    def close(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"<InMemorySession {self.id} ({len(self._messages)} messages)>"
