"""What ``tether run`` and ``tether chat`` need for approvals, ``--schema`` and sub-agents.

- :func:`terminal_approval`: the approval callback that asks on the terminal
  (``y`` yes, ``n`` no, ``a`` always for this session); ``None`` when there is no
  terminal to ask on, so such a run suspends instead.
- :func:`schema_output`: the structured output of ``--schema FILE.json``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .terminal_text import neutralize

if TYPE_CHECKING:
    from tether.approvals import Approval, ApprovalRequest
    from tether.output import JsonSchemaOutput

__all__ = ["AnswerAsJson", "schema_output", "suspended_message", "terminal_approval"]

_ANSWERS = {
    "y": "allow",
    "yes": "allow",
    "n": "deny",
    "no": "deny",
    "a": "always",
    "always": "always",
}


def terminal_approval() -> Any:
    """An async approval callback prompting on stderr, or ``None`` without a terminal."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def approve(request: ApprovalRequest) -> Approval:
        return await asyncio.to_thread(ask_on_terminal, request)

    return approve


def ask_on_terminal(request: ApprovalRequest) -> Approval:
    """Ask once, until the answer is y, n or a."""
    from tether.approvals import normalize_approval

    what = request.describe()
    rule = f" (rule `{request.rule}`)" if request.rule else ""
    while True:
        answer = click.prompt(
            neutralize(f"Allow {what}{rule}? [y]es / [n]o / [a]lways this session"),
            default="n",
            show_default=False,
            err=True,
        )
        choice = _ANSWERS.get(str(answer).strip().lower())
        if choice is not None:
            return normalize_approval(choice)
        click.echo("Answer y, n or a.", err=True)


def schema_output(path: Path) -> JsonSchemaOutput:
    """The structured output asked for by ``--schema``; :class:`click.BadParameter` for
    a file that is not a JSON schema."""
    from tether.errors import ConfigError
    from tether.output import JsonSchemaOutput

    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.BadParameter(
            f"{path} is not a readable JSON file: {exc}", param_hint="--schema"
        ) from None
    if not isinstance(schema, dict):
        raise click.BadParameter(f"{path} must hold a JSON schema object.", param_hint="--schema")
    try:
        return JsonSchemaOutput(schema)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--schema") from None


def suspended_message(result: Any, session_name: str | None = None) -> str:
    """What a run suspended for approval tells the user: how to decide the calls of the
    session ``session_name`` on the command line, or that a run without a session can
    only be answered on a terminal or resumed from Python."""
    calls = ", ".join(f"{p.tool} ({p.call_id})" for p in result.pending)
    opening = f"The run is waiting for approval of: {calls}. Nothing was run."
    if session_name is not None:
        from .approvals import waiting_hint

        return f"{opening} {waiting_hint(session_name)}"
    return (
        f"{opening} Answer on a terminal, run it with --session NAME to decide later with "
        "`tether approvals`, or resume it from Python with "
        "Agent.resume({call_id: True/False}, session=...)."
    )


class AnswerAsJson:
    """A renderer for ``--schema``: the streamed answer is not shown; the validated
    output is printed as one line of JSON on stdout when the run completes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def event(self, event: Any) -> None:
        from tether.events import Done, PartialOutput, TextDelta
        from tether.result import Outcome

        if isinstance(event, TextDelta | PartialOutput):
            return
        if isinstance(event, Done) and event.result.outcome is Outcome.COMPLETED:
            click.echo(neutralize(json.dumps(event.result.output, ensure_ascii=False)))
        self.inner.event(event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
