"""A plugin for ``tether serve -p scripted_serve_plugin`` in the tests: the provider
``scripted`` (a model that looks the weather up once, then answers) and the tool
``get_weather``. Not a test module."""

from __future__ import annotations

from typing import Any

import tether
from tether.testing import Reply, ScriptedProvider, call


@tether.tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}, 21 C"


def weather(request: Any) -> Reply:
    last = request.messages[-1]
    results = [b for b in last.content if getattr(b, "type", None) == "tool_result"]
    if results:
        return Reply(text=f"The forecast: {results[0].content}. Enjoy!", chunk=6)
    return Reply(text="Let me check.", tool_calls=[call("get_weather", city="Paris")])


@tether.hookimpl
def register_providers(providers: Any) -> None:
    providers.add("scripted", lambda config: ScriptedProvider(handler=weather))


@tether.hookimpl
def register_tools(tools: Any) -> None:
    tools.add(get_weather)
