"""A test plugin for the CLI's approvals, ``--schema`` and sub-agent display
(``tether -p cli_compose_model``): provider ``composed`` (bare names ``composed-*``) and
tools ``remove`` and ``helper`` (a sub-agent that removes a file itself).

Rules of the model, on the last user message:

``delete A B``   calls ``remove(path=A)`` and ``remove(path=B)``, then reports the results
``trip``         answers ``{"city": "Lisbon", "days": 3}`` (native structured output)
``delegate``     calls the ``helper`` sub-agent, then repeats what it said
"""

from __future__ import annotations

import tether
from tether.config import Config
from tether.messages import Message
from tether.provider import ModelCapabilities, ModelInfo, ModelRequest
from tether.registry import ProviderRegistrar, ToolRegistrar
from tether.testing import Reply, ScriptedProvider, call

CAPABILITIES = ModelCapabilities(structured_output=True)


@tether.tool
def remove(path: str) -> str:
    """Remove a file."""
    return f"removed {path}"


def _last(request: ModelRequest) -> Message:
    return request.messages[-1]


def respond(request: ModelRequest) -> Reply:
    last = _last(request)
    if last.role == "tool":
        return Reply(text="Results: " + "; ".join(r.text for r in last.tool_results))
    text = last.text.strip()
    if text.startswith("delete "):
        return Reply(tool_calls=[call("remove", path=p) for p in text.split()[1:]])
    if text == "trip":
        return Reply(text='{"city": "Lisbon", "days": 3}')
    if text == "delegate":
        return Reply(tool_calls=[call("helper", task="clean the tmp folder")])
    return Reply(text=f"You said: {text}")


def child(request: ModelRequest) -> Reply:
    if _last(request).role == "tool":
        return Reply(text="cleaned")
    return Reply(tool_calls=[call("remove", path="tmp/cache")])


class ComposedModel(ScriptedProvider):
    name = "composed"
    default_model = "composed-m"

    def __init__(self) -> None:
        super().__init__(handler=respond, capabilities=CAPABILITIES)
        self.models = (ModelInfo("composed-m", CAPABILITIES),)


HELPER = tether.Agent(
    ScriptedProvider(handler=child), tools=[remove], config=Config(), skills=False
).as_tool("helper", "A helper that cleans up.")


@tether.hookimpl
def register_providers(providers: ProviderRegistrar) -> None:
    providers.add("composed", lambda config: ComposedModel(), prefixes=("composed-",))


@tether.hookimpl
def register_tools(tools: ToolRegistrar) -> None:
    tools.add(remove)
    tools.add(HELPER)
