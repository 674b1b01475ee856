"""The ``knowledge`` plugin: the in-memory knowledge-base backend (``memory``) and the
``kb`` toolset, registered through the same hooks as any plugin."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from tether import hookimpl
from tether.errors import ConfigError
from tether.registry import EmbedderRegistrar, KnowledgeBackendRegistrar, ToolRegistrar


def memory_backend(**settings: Any) -> Any:
    """The in-memory knowledge-base backend. Its engine needs numpy, imported only here,
    so a broken numpy install fails when a knowledge base is used, with what to do."""
    try:
        from .memory_backend import MemoryBackend
    except ImportError as exc:
        raise ConfigError(
            f"The in-memory knowledge-base backend needs {exc.name or 'numpy'}, which is not "
            'installed. Install it with: uv pip install "./core[kb]" (or uv pip install ./plugins/knowledge).'
        ) from exc
    return MemoryBackend(**settings)


@hookimpl
def register_knowledge_backends(backends: KnowledgeBackendRegistrar) -> None:
    backends.add("memory", memory_backend)


@hookimpl
def register_tools(tools: ToolRegistrar) -> None:
    from .tool import kb_toolset

    def open_knowledge_base() -> Any:
        from tether.config import load_config

        from .knowledge_base import KnowledgeBase

        return KnowledgeBase.open(
            tools.config if tools.config is not None else load_config(),
            backends=tools.sibling(KnowledgeBackendRegistrar),
            embedders=tools.sibling(EmbedderRegistrar),
        )

    tools.add(kb_toolset(open_knowledge_base), settings={"k": Annotated[int, Field(ge=1, le=50)]})
