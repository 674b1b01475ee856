"""A test plugin (``tether -p cli_hostile_model``) whose model and tools return whatever
:data:`PAYLOAD` holds: the model reasons it, calls ``echo_text`` and ``fail_with`` with
it, and answers it; ``echo_text`` returns it and ``fail_with`` fails with it. Tests set
:data:`PAYLOAD` (for example to terminal escape sequences) before running the CLI
in-process, to see what reaches the terminal."""

from __future__ import annotations

import tether
from tether.messages import Usage
from tether.provider import ModelRequest
from tether.registry import ProviderRegistrar, ToolRegistrar
from tether.testing import Reply, ScriptedProvider, call

PAYLOAD = ""


def respond(request: ModelRequest) -> Reply:
    if request.messages[-1].role == "tool":
        return Reply(text=PAYLOAD, chunk=1_000_000)
    return Reply(
        thinking=PAYLOAD,
        text=PAYLOAD,
        chunk=1_000_000,
        tool_calls=[call("echo_text", text=PAYLOAD), call("fail_with", text=PAYLOAD)],
    )


@tether.tool
def echo_text(text: str) -> str:
    """Return the text."""
    return text


@tether.tool
def fail_with(text: str) -> str:
    """Fail with the text as the error message."""
    raise ValueError(text)


@tether.hookimpl
def register_providers(providers: ProviderRegistrar) -> None:
    providers.add(
        "hostile",
        lambda config: ScriptedProvider(
            handler=respond, usage=Usage(input_tokens=1, output_tokens=1)
        ),
        default_model="echo",
    )


@tether.hookimpl
def register_tools(tools: ToolRegistrar) -> None:
    tools.add(echo_text)
    tools.add(fail_with)
