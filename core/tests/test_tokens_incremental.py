"""Estimating a growing history costs only its new messages."""

from __future__ import annotations

import pytest

from tether import tokens
from tether.messages import Message


def test_a_growing_history_is_estimated_incrementally(monkeypatch: pytest.MonkeyPatch) -> None:
    estimated: list[str] = []
    real = tokens.estimate_message

    def counting(message: Message) -> int:
        estimated.append(message.text)
        return real(message)

    monkeypatch.setattr(tokens, "estimate_message", counting)
    history = [Message.user(f"message {i}") for i in range(100)]
    full = tokens.estimate_messages(history)
    assert len(estimated) == 100

    estimated.clear()
    history.append(Message.user("one more"))
    grown = tokens.estimate_messages(history)
    assert estimated == ["one more"]
    assert grown == full + real(history[-1])

    # a history that was rewritten (compaction) is estimated anew, not from a stale total
    estimated.clear()
    rewritten = [history[0], Message.user("summary"), *history[-3:]]
    assert tokens.estimate_messages(rewritten) == sum(real(m) for m in rewritten)
    assert "summary" in estimated
