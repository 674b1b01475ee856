"""A real uvicorn server on an ephemeral loopback port, serving scripted agents."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx
import pytest

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call
from tether_serve import ServeSettings, create_app
from tether_serve.testing import LiveServer, serve_in_thread


@tether.tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}, 21 C"


@tether.tool
def deploy(target: str) -> str:
    """Deploy the app to a target."""
    return f"deployed to {target}"


def weather_script(request: Any) -> Reply:
    """A model that looks the weather up once, then answers with what the tool said."""
    last = request.messages[-1]
    results = [b for b in last.content if getattr(b, "type", None) == "tool_result"]
    if results:
        return Reply(text=f"The forecast: {results[0].content}. Enjoy!", chunk=6)
    return Reply(text="Let me check.", tool_calls=[call("get_weather", city="Paris")])


def deploy_script(request: Any) -> Reply:
    last = request.messages[-1]
    results = [b for b in last.content if getattr(b, "type", None) == "tool_result"]
    if results:
        return Reply(text=f"Result: {results[0].content}.")
    return Reply(text="Deploying.", tool_calls=[call("deploy", target="prod")])


def scripted_agents() -> dict[str, tether.Agent]:
    return {
        "default": tether.Agent(
            ScriptedProvider(handler=weather_script), tools=[get_weather], config=Config()
        ),
        "ops": tether.Agent(
            ScriptedProvider(handler=deploy_script),
            tools=[deploy],
            config=Config(),
            permissions={"deploy": "ask"},
        ),
    }


@pytest.fixture
def serve() -> Iterator[Callable[..., LiveServer]]:
    """``serve(agents=None, settings=None, **create_app_options)`` starts a server; all
    are stopped at the end."""
    started: list[LiveServer] = []

    def start(
        agents: Mapping[str, tether.Agent] | None = None,
        settings: ServeSettings | None = None,
        **options: Any,
    ) -> LiveServer:
        live = serve_in_thread(create_app(agents or scripted_agents(), settings, **options))
        started.append(live)
        return live

    yield start
    for live in started:
        live.stop()


@pytest.fixture
def client() -> Callable[..., httpx.Client]:
    """``client(live, key=None)``: an httpx client for ``live``, with the key as bearer."""

    def make(live: LiveServer, key: str | None = None) -> httpx.Client:
        headers = {"authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=live.url, headers=headers, timeout=30.0)

    return make
