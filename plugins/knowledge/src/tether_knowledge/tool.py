"""The ``kb_search`` tool: the model's way into the knowledge base.

Two forms: :func:`kb_search_tool` binds a tool to a :class:`KnowledgeBase` you built
(``Agent(tools=[kb.as_tool()])``); the registered ``kb`` toolset (``tools = ["kb"]`` in
``tether.toml``) opens the knowledge base described by the agent's ``[knowledge]`` on its
first call, with the agent's plugins.
Passages come back with their ``document:start-end`` line references so the model can
cite them and open the file at the right place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from tether.tools import Tool, ToolContext, Toolset

if TYPE_CHECKING:
    from .fusion import Passage
    from .knowledge_base import KnowledgeBase

__all__ = ["format_passages", "kb_search_tool", "kb_toolset"]

DESCRIPTION = (
    "Search the knowledge base (indexed documents, notes, code) for passages relevant to "
    "a question. Use it before answering questions about material the user has indexed; "
    "quote the references (document:lines) you rely on. Not for general knowledge or for "
    "files you can read directly."
)

Query = Annotated[str, Field(min_length=1, description="What to look for, in plain words.")]
Count = Annotated[int, Field(ge=1, le=50, description="How many passages to return.")]


def format_passages(passages: Sequence[Passage], *, keyword_only: bool) -> str:
    """Passages as the model sees them: a numbered reference line, then the text."""
    if not passages:
        return "No passages found. Try other words, or a broader query."
    lines = []
    if keyword_only:
        lines.append("(keyword search only: no embedder is configured)")
    for number, passage in enumerate(passages, start=1):
        lines.append(f"[{number}] {passage.reference} (score {passage.score:.4f})")
        lines.append(passage.text)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def kb_search_tool(kb: KnowledgeBase, *, name: str = "kb_search", default_k: int = 5) -> Tool:
    """A tool searching ``kb``; ``default_k`` passages unless the model asks for more."""

    async def kb_search(query: Query, k: Count = default_k) -> str:
        """Search the knowledge base.

        Args:
            query: What to look for, in plain words.
            k: How many passages to return.
        """
        passages = await kb.search(query, k=k)
        return format_passages(passages, keyword_only=kb.keyword_only)

    return Tool(kb_search, name=name, description=DESCRIPTION)


class _LazyKnowledgeBase:
    """Opens one knowledge base on first use (off the event loop) and keeps it."""

    def __init__(self, opener: Callable[[], KnowledgeBase]) -> None:
        self._opener = opener
        self._kb: KnowledgeBase | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> KnowledgeBase:
        async with self._lock:
            if self._kb is None:
                self._kb = await asyncio.to_thread(self._opener)
            return self._kb


def kb_toolset(opener: Callable[[], KnowledgeBase]) -> Toolset:
    """The ``kb`` toolset: ``kb_search`` over the knowledge base ``opener()`` returns,
    opened on the first search (``[tool_settings.kb] k = 8`` changes the default count).

    tether registers one per plugin manager, opening the knowledge base that manager's
    configuration describes with that manager's backends and embedders, so each agent
    searches its own knowledge base.
    """
    lazy = _LazyKnowledgeBase(opener)

    async def kb_search(query: Query, ctx: ToolContext, k: Count | None = None) -> str:
        """Search the knowledge base.

        Args:
            query: What to look for, in plain words.
            k: How many passages to return (default 5, or ``[tool_settings.kb] k``).
        """
        kb = await lazy.get()
        settings: Any = ctx.settings or {}
        count = k if k is not None else int(settings.get("k", 5))
        passages = await kb.search(query, k=count)
        return format_passages(passages, keyword_only=kb.keyword_only)

    tool = Tool(kb_search, name="kb_search", description=DESCRIPTION)
    return Toolset("kb", [tool], description="Search the configured knowledge base.")
