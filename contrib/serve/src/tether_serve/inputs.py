"""What a request asks for, read from each protocol's request body: a prompt, or the
decisions on the calls a suspended run waits for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tether import InvalidRequestError

__all__ = ["Ask", "ask_from_agui", "ask_from_tether", "ask_from_ui_messages", "decision_of"]


@dataclass(slots=True)
class Ask:
    """Either ``prompt`` (a new turn) or ``decisions`` (answers to pending calls)."""

    prompt: str | None = None
    decisions: dict[str, Any] = field(default_factory=dict)


def bad(message: str) -> InvalidRequestError:
    return InvalidRequestError(message)


def decision_of(value: Any) -> bool | str:
    """A decision as tether takes it: ``True``/``False`` or ``"allow"``/``"deny"``/``"always"``
    (also ``{"approved": bool, "always": bool}``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("allow", "deny", "always"):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("approved"), bool):
        if value["approved"] and value.get("always") is True:
            return "always"
        return bool(value["approved"])
    raise bad(
        f'A decision must be true/false, "allow", "deny" or "always", or '
        f'{{"approved": true}}; got {value!r}.'
    )


def ask_from_tether(body: Any) -> Ask:
    """``{"prompt": "..."}`` or ``{"decisions": {"call_1": "allow"}}``."""
    if not isinstance(body, Mapping):
        raise bad('The body must be a JSON object: {"prompt": "..."}.')
    if "decisions" in body:
        decisions = body["decisions"]
        if not isinstance(decisions, Mapping) or not decisions:
            raise bad('"decisions" must map call ids to decisions: {"call_1": "allow"}.')
        return Ask(decisions={str(k): decision_of(v) for k, v in decisions.items()})
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise bad('The body needs a non-empty "prompt" string.')
    return Ask(prompt=prompt)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


def ask_from_agui(messages: list[Any], resume: list[Any] | None) -> Ask:
    """AG-UI ``RunAgentInput``: answers to interrupts in ``resume`` (an approval: ``status``
    resolved with a decision ``payload``, or cancelled: denied; a question: ``payload``
    ``{"answer": "..."}``, the next prompt), else the last user message."""
    if resume:
        decisions: dict[str, Any] = {}
        for entry in resume:
            if entry.interrupt_id.endswith("-question"):  # a person's answer to NeedsHuman
                answer = (
                    entry.payload.get("answer")
                    if isinstance(entry.payload, Mapping)
                    else entry.payload
                )
                if entry.status == "resolved" and isinstance(answer, str) and answer.strip():
                    return Ask(prompt=answer)
                raise bad('Answer a needs_human interrupt with payload {"answer": "..."}.')
            if entry.status == "cancelled":
                decisions[entry.interrupt_id] = False
            else:
                decisions[entry.interrupt_id] = decision_of(entry.payload)
        return Ask(decisions=decisions)
    for message in reversed(messages):
        if getattr(message, "role", None) == "user":
            text = _text(getattr(message, "content", ""))
            if text.strip():
                return Ask(prompt=text)
            break
    raise bad('The AG-UI input has no user message to answer (messages[].role = "user").')


def ask_from_ui_messages(body: Any) -> Ask:
    """The AI SDK chat request (``{"id", "messages": [UIMessage...]}``): approval
    responses on the last assistant message's tool parts, else the last user message."""
    if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
        raise bad('The body must be an AI SDK chat request: {"id": ..., "messages": [...]}.')
    messages = body["messages"]
    if messages and isinstance(messages[-1], Mapping) and messages[-1].get("role") == "assistant":
        decisions = {}
        for part in messages[-1].get("parts", []):
            approval = part.get("approval") if isinstance(part, Mapping) else None
            if isinstance(approval, Mapping) and isinstance(approval.get("approved"), bool):
                decisions[str(approval.get("id"))] = approval["approved"]
        if decisions:
            return Ask(decisions=decisions)
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            text = _text(message.get("parts", []))
            if text.strip():
                return Ask(prompt=text)
            break
    raise bad("The chat request has no user message with text to answer.")
