"""``demo/echo``: a built-in model that needs no key, for a first run and for demos.

It shows the harness working before any provider is set up: the answer streams word by
word, tools named in the prompt are called, their results come back, and a usage line
ends the run. It calls no service and understands nothing.

How it answers the last message:

- a user message naming enabled tools (``read_file``, ``add``, ...) calls each of them
  once. Arguments come from ``key=value`` pairs in the prompt (values are read as JSON
  when they parse, else as text: ``add a=2 b=3``, ``read_file path=README.md``); a
  required text argument without a pair takes the prompt's first quoted string, if any.
  Arguments that are still missing are left out, so the harness's own validation error
  reaches the model, as it would with a real one;
- other user messages are echoed: ``Echo: <prompt>``;
- tool results are summed up, one line per call: ``read_file returned: <first line>``.

Configuration (``[providers.demo]``): ``delay``, seconds to wait before each streamed
word (default 0), to watch streaming and try Ctrl-C.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

from .config import ProviderConfig
from .errors import ConfigError
from .events import TextDelta
from .messages import Message, StopReason, TextBlock, ToolCallBlock, Usage
from .provider import (
    BaseProvider,
    ModelCapabilities,
    ModelInfo,
    ModelRequest,
    ModelResponse,
    Pricing,
    ProviderEvent,
    ToolDefinition,
)
from .tokens import estimate_messages, estimate_tokens

__all__ = ["DEMO_MODEL", "DemoProvider", "make_demo_provider"]

DEMO_MODEL = "demo/echo"
"""The demo model's full name, as given to ``-m``."""

SETTINGS: Mapping[str, Any] = {"delay": float}
"""The keys ``[providers.demo]`` accepts besides the common ones, with their types."""

_CAPABILITIES = ModelCapabilities(
    context_window=32_000,
    max_output_tokens=4_096,
    pricing=Pricing(input=0.0, output=0.0),
    parallel_tool_calls=True,
)
_PAIR = re.compile(r"""(\w+)=("(?:[^"\\]|\\.)*"|'[^']*'|\S+)""")
_QUOTED = re.compile(r""""([^"]*)"|'([^']*)'""")


class DemoProvider(BaseProvider):
    """The ``demo`` provider; see the module docstring. Needs no key, sends nothing."""

    name = "demo"
    default_model = "echo"
    models = (
        ModelInfo(
            "echo",
            _CAPABILITIES,
            description="Echoes the prompt and calls the tools it names; needs no key.",
        ),
    )
    default_capabilities = _CAPABILITIES

    def __init__(self, *, delay: float = 0.0) -> None:
        super().__init__()
        self.delay = delay

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        text, calls = _answer(request)
        for word in re.findall(r"\S+\s*|\s+", text):
            if self.delay:
                await asyncio.sleep(self.delay)
            yield TextDelta(word)
        content: list[Any] = [TextBlock(text=text)] if text else []
        content.extend(calls)
        message = Message(role="assistant", content=content)
        model = f"{self.name}/{request.model}"
        message.meta.model = model
        usage = Usage(
            input_tokens=estimate_messages(request.messages) + estimate_tokens(request.system),
            output_tokens=estimate_tokens(text) + 10 * len(calls),
        )
        stop = StopReason.TOOL_USE if calls else StopReason.END_TURN
        yield ModelResponse(message=message, stop_reason=stop, usage=usage, model=model)


def make_demo_provider(config: ProviderConfig) -> DemoProvider:
    """The factory registered as ``demo``: reads ``[providers.demo] delay``."""
    delay = config.extra.get("delay", 0.0)
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        raise ConfigError(
            f"[providers.demo] delay must be a number of seconds >= 0, got {delay!r}."
        )
    return DemoProvider(delay=float(delay))


def _answer(request: ModelRequest) -> tuple[str, list[ToolCallBlock]]:
    last = request.messages[-1] if request.messages else None
    if last is None:
        return "Echo: (nothing)", []
    if last.role == "tool":
        lines = []
        names = _call_names(request.messages)
        for result in last.tool_results:
            name = names.get(result.call_id, "the tool")
            first = result.text.strip().splitlines()[0] if result.text.strip() else "(empty)"
            verb = "failed" if result.is_error else "returned"
            lines.append(f"{name} {verb}: {first[:200]}")
        return "\n".join(lines), []
    prompt = last.text.strip()
    calls = [
        ToolCallBlock(id=f"demo_{index}", name=tool.name, arguments=_arguments(tool, prompt))
        for index, tool in enumerate(_named_tools(request.tools, prompt), start=1)
    ]
    if calls:
        return f"Calling {', '.join(c.name for c in calls)}.", calls
    return f"Echo: {prompt}", []


def _call_names(messages: Any) -> dict[str, str]:
    return {call.id: call.name for message in messages for call in message.tool_calls}


def _named_tools(tools: Any, prompt: str) -> list[ToolDefinition]:
    words = set(re.findall(r"[\w-]+", prompt))
    return [tool for tool in tools if tool.name in words]


def _arguments(tool: ToolDefinition, prompt: str) -> dict[str, Any]:
    properties: Mapping[str, Any] = tool.parameters.get("properties", {})
    arguments: dict[str, Any] = {}
    for key, raw in _PAIR.findall(prompt):
        if key in properties:
            arguments[key] = _value(raw)
    quoted = [a or b for a, b in _QUOTED.findall(prompt)]
    for key in tool.parameters.get("required", []):
        if key not in arguments and quoted and properties.get(key, {}).get("type") == "string":
            arguments[key] = quoted.pop(0)
    return arguments


def _value(raw: str) -> Any:
    if raw[:1] in "\"'" and raw[-1:] == raw[:1] and len(raw) >= 2:
        return raw[1:-1]
    try:
        return json.loads(raw)
    except ValueError:
        return raw
