"""An in-process tether plugin for the command-line tests (``tether -p cli_fake_model``).

It registers:

- provider ``fake`` (bare names ``fake-*``): a :class:`~tether.testing.ScriptedProvider`
  standing in for a remote model. It answers by rules on the last message (below), has a
  priced catalogue, and its ``validate_auth`` demands ``FAKE_MODEL_API_KEY`` like a real
  provider demands its key;
- provider ``keyless``, whose factory fails for want of a key (``tether models`` must
  still list the others);
- tools ``add`` and ``wait_forever`` (which blocks until cancelled);
- command ``tether hello``.

Rules of the fake model, on the last user message:

``add A B``      calls ``add(a=A, b=B)``, then answers ``Tool said: <result>``
``think X``      reasons "Pondering X." then answers ``Thought about X``
``wait``         calls ``wait_forever`` (for Ctrl-C tests)
``loop``         calls ``add(a=1, b=1)`` forever (for the max-turns limit)
``refuse``       refuses
``history``      answers with the number of messages it was sent
``roles``        answers with the roles of the messages it was sent, in order
``markdown``     answers with a Markdown heading, bold text and a list
``stall``        streams "Partial answer" and then never finishes (for Ctrl-C tests)
anything else    answers ``You said: <text>``
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import click

import tether
from tether.errors import AuthenticationError
from tether.events import TextDelta
from tether.messages import StopReason, Usage
from tether.provider import ModelCapabilities, ModelInfo, ModelRequest, Pricing, ProviderEvent
from tether.registry import CommandRegistrar, ProviderRegistrar, ToolRegistrar
from tether.testing import Reply, ScriptedProvider, call

KEY = "FAKE_MODEL_API_KEY"
CAPABILITIES = ModelCapabilities(
    context_window=32_000,
    max_output_tokens=4_096,
    thinking=True,
    pricing=Pricing(input=1.0, output=2.0),
)


MARKDOWN = "# Result\n\nThe answer is **42**.\n\n- first\n- second\n"


def respond(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if last.role == "tool":
        if _prompt(request) == "loop":
            return Reply(tool_calls=[call("add", a=1, b=1)])
        return Reply(text="Tool said: " + "; ".join(r.text for r in last.tool_results))
    text = last.text.strip()
    if text.startswith("add "):
        a, b = (int(x) for x in text.split()[1:3])
        return Reply(text="Adding.", tool_calls=[call("add", a=a, b=b)])
    if text.startswith("think "):
        topic = text.removeprefix("think ")
        return Reply(thinking=f"Pondering {topic}.", text=f"Thought about {topic}")
    if text == "wait":
        return Reply(text="Waiting.", tool_calls=[call("wait_forever")])
    if text == "loop":
        return Reply(tool_calls=[call("add", a=1, b=1)])
    if text == "refuse":
        return Reply(text="", stop_reason=StopReason.REFUSAL)
    if text == "roles":
        return Reply(text="Roles: " + ", ".join(m.role for m in request.messages))
    if text == "markdown":
        return Reply(text=MARKDOWN, chunk=7)
    if text == "history":
        return Reply(text=f"I was sent {len(request.messages)} messages.")
    return Reply(text=f"You said: {text}")


def _prompt(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return message.text.strip()
    return ""


INSTANCES: list[FakeModel] = []
"""Every FakeModel built in this process, so in-process tests can inspect its requests."""


class FakeModel(ScriptedProvider):
    name = "fake"
    default_model = "fake-small"

    def __init__(self) -> None:
        INSTANCES.append(self)
        super().__init__(
            handler=respond,
            capabilities=CAPABILITIES,
            usage=Usage(input_tokens=1000, output_tokens=500),
        )
        self.models = (
            ModelInfo("fake-small", CAPABILITIES, aliases=("small",)),
            ModelInfo("fake-large", ModelCapabilities(context_window=200_000, vision=True)),
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        last = request.messages[-1]
        if last.role == "user" and last.text.strip() == "stall":
            self.requests.append(request)
            yield TextDelta("Partial ")
            yield TextDelta("answer")
            await asyncio.Event().wait()
        async for event in super().stream(request):
            yield event

    async def validate_auth(self) -> None:
        if not os.environ.get(KEY):
            raise AuthenticationError(
                f"No API key for the fake provider. Set {KEY}.", provider="fake"
            )


def make_keyless(config: object) -> FakeModel:
    raise AuthenticationError(
        "The keyless provider needs KEYLESS_API_KEY to be set.", provider="keyless"
    )


@tether.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tether.tool
async def wait_forever() -> str:
    """Wait until the run is cancelled."""
    await asyncio.Event().wait()
    return "unreachable"


@click.command("hello")
def hello() -> None:
    """Say hello (a command added by a plugin)."""
    click.echo("hello from a plugin")


@tether.hookimpl
def register_providers(providers: ProviderRegistrar) -> None:
    providers.add(
        "fake",
        lambda config: FakeModel(),
        prefixes=("fake-",),
        description="Rule-based test model",
        key_variables=(KEY,),
        default_model="fake-small",
    )
    providers.add("keyless", make_keyless)


@tether.hookimpl
def register_tools(tools: ToolRegistrar) -> None:
    tools.add(add)
    tools.add(wait_forever)


@tether.hookimpl
def register_commands(commands: CommandRegistrar) -> None:
    commands.add(hello)
