"""The ``kb`` toolset searches the knowledge base of the agent that uses it: built from
that agent's configuration and plugins, not one per process."""

from __future__ import annotations

import types
from typing import Any

import tether
from tether.config import Config, KnowledgeConfig
from tether.testing import Reply, ScriptedProvider, call
from tether_knowledge import KnowledgeBase
from tether_knowledge import plugin as knowledge_plugin
from tether_knowledge.memory_backend import MemoryBackend


def backend_plugin(name: str, backend: MemoryBackend) -> types.ModuleType:
    module = types.ModuleType(f"{name}_plugin")

    def register_knowledge_backends(backends: Any) -> None:
        backends.add(name, lambda **settings: backend)

    module.register_knowledge_backends = tether.hookimpl(register_knowledge_backends)  # type: ignore[attr-defined]
    return module


async def search_through(agent_backend: str, backend: MemoryBackend, query: str) -> str:
    provider = ScriptedProvider(
        [Reply(tool_calls=[call("kb_search", query=query)]), Reply(text="ok")]
    )
    agent = tether.Agent(
        provider,
        tools=["kb"],
        config=Config(knowledge=KnowledgeConfig(backend=agent_backend)),
        plugins=[knowledge_plugin, backend_plugin(agent_backend, backend)],
        entry_points=False,
    )
    result = await agent.run(f"What about {query}?")
    return result.messages[2].tool_results[0].text


async def test_each_agent_searches_the_knowledge_base_its_config_and_plugins_describe() -> None:
    fruit, vegetables = MemoryBackend(), MemoryBackend()
    await KnowledgeBase(fruit).add("fruit.md", "Apples are red and crisp.\n")
    await KnowledgeBase(vegetables).add("veg.md", "Carrots are orange and crunchy.\n")

    from_fruit = await search_through("fruit", fruit, "apples")
    from_vegetables = await search_through("vegetables", vegetables, "carrots")

    assert "[1] fruit.md:1 " in from_fruit and "veg.md" not in from_fruit
    assert "[1] veg.md:1 " in from_vegetables and "fruit.md" not in from_vegetables
