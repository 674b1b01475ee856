"""The message format: what a conversation is made of, in memory and on disk.

One :class:`Message` is one JSON object (one line of a JSONL session)::

    {"role": "assistant",
     "content": [{"type": "text", "text": "Let me look."},
                 {"type": "tool_call", "id": "call_1", "name": "read_file",
                  "arguments": {"path": "README.md"}}],
     "meta": {"model": "anthropic/claude-sonnet-4-5", "created_at": "...", "usage": {...}}}

Every model keeps fields it does not know (``extra="allow"``) and blocks of a type it does
not know are kept as :class:`UnknownBlock`, so a history written by a newer tether or by a
provider plugin with private fields survives a JSON round trip byte for byte in meaning.

**The invariant.** Every tool call is immediately followed by its result, in the order the
calls were declared: the ``tool_call`` blocks of an assistant message are answered, in the
same order, by the ``tool_result`` blocks of the ``tool`` message right after it.
"""

from __future__ import annotations

import base64
import os
import random
import time
from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = [
    "INTERRUPTED",
    "AssistantMessage",
    "Block",
    "ImageBlock",
    "Message",
    "MessageMeta",
    "Role",
    "StopReason",
    "TextBlock",
    "ThinkingBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "UnknownBlock",
    "Usage",
    "interrupted_result",
    "new_id",
    "rehome_images",
    "tool_calls",
    "tool_results",
]

Role: TypeAlias = Literal["user", "assistant", "tool", "system"]


_ids = random.Random()  # its own generator: random.seed() in user code cannot repeat ids
os.register_at_fork(after_in_child=_ids.seed)  # nor can forked workers share a sequence


def new_id() -> str:
    """A fresh, opaque identifier for a message (128 random bits, hex). Drawn from a
    generator seeded by the operating system, not from it: a message costs no system call."""
    return f"{_ids.getrandbits(128):032x}"


class StopReason(StrEnum):
    """Why the model stopped producing output for one response."""

    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    REFUSAL = "refusal"


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Usage(_Model):
    """Token counts for one model response (or a sum of several).

    ``input_tokens`` counts every prompt token, including those read from or written to
    the provider's prompt cache; ``cache_read_tokens`` and ``cache_write_tokens`` say how
    many of them were. ``reasoning_tokens`` is the part of ``output_tokens`` spent thinking.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool | None = None
    """``True`` when the counts are tether's estimate (the server reported no usage, as
    some local servers do not when streaming); ``None`` when the provider reported them."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            estimated=True if (self.estimated or other.estimated) else None,
        )


class TextBlock(_Model):
    type: Literal["text"] = "text"
    text: str


class ImageBlock(_Model):
    """An image, inline (``data``, base64) or by reference (``url``)."""

    type: Literal["image"] = "image"
    mime_type: str = "image/png"
    data: str | None = None
    url: str | None = None

    @classmethod
    def from_bytes(cls, raw: bytes, mime_type: str = "image/png") -> ImageBlock:
        return cls(mime_type=mime_type, data=base64.b64encode(raw).decode("ascii"))


class ToolCallBlock(_Model):
    """A request by the model to run tool ``name`` with ``arguments``.

    ``arguments`` holds the decoded JSON object. When the model sent text that is not a
    JSON object, ``arguments`` is empty and ``raw_arguments`` keeps what was sent, so the
    runner can answer with a precise error instead of guessing.
    """

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None


class ToolResultBlock(_Model):
    """The answer to the tool call with id ``call_id``."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    content: str | list[Annotated[TextBlock | ImageBlock, Field(discriminator="type")]] = ""
    is_error: bool = False

    @property
    def text(self) -> str:
        """The result's text parts joined; images are left out."""
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))


class ThinkingBlock(_Model):
    """Model reasoning. ``signature`` (and any provider-specific extra fields) must be
    replayed verbatim to the same model; ``redacted`` blocks carry only opaque data."""

    type: Literal["thinking"] = "thinking"
    text: str = ""
    signature: str | None = None
    redacted: bool = False


_KNOWN_BLOCKS = frozenset({"text", "image", "tool_call", "tool_result", "thinking"})


def _unknown_type(kind: str) -> str:
    if kind in _KNOWN_BLOCKS:
        raise ValueError(
            f"a {kind!r} block must have the fields of a {kind!r} block; "
            "only blocks of a type this version does not know are kept as they are"
        )
    return kind


class UnknownBlock(_Model):
    """A block whose ``type`` this version does not know; kept as it was."""

    type: Annotated[str, AfterValidator(_unknown_type)]


_KnownBlock: TypeAlias = Annotated[
    TextBlock | ImageBlock | ToolCallBlock | ToolResultBlock | ThinkingBlock,
    Field(discriminator="type"),
]

# A block of a known type is validated as that type (and fails if it is not one); any
# other block is kept as an UnknownBlock. The known types are picked by their "type" key
# in pydantic's own code, without building a Python dict of each block first.
Block: TypeAlias = Annotated[_KnownBlock | UnknownBlock, Field(union_mode="left_to_right")]


class MessageMeta(_Model):
    """Facts about a message that are not sent to a model.

    ``model`` is the ``provider/model`` that produced an assistant message; providers use
    it to decide whether thinking blocks may be replayed verbatim.
    """

    id: str = Field(default_factory=new_id)
    created_at: float = Field(default_factory=time.time)
    model: str | None = None
    usage: Usage | None = None
    stop_reason: StopReason | None = None


class Message(_Model):
    """One entry of a conversation. See the module docstring for the format."""

    role: Role
    content: list[Block] = Field(default_factory=list)
    meta: MessageMeta = Field(default_factory=MessageMeta)

    # -- constructors -------------------------------------------------------------
    @classmethod
    def user(cls, text: str, *images: ImageBlock) -> Message:
        return cls(role="user", content=[TextBlock(text=text), *images])

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=[TextBlock(text=text)])

    @classmethod
    def tool(cls, results: Iterable[ToolResultBlock]) -> Message:
        return cls(role="tool", content=list(results))

    # -- views --------------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.meta.id

    @property
    def text(self) -> str:
        """The message's text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        return [b for b in self.content if isinstance(b, ToolCallBlock)]

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    def to_json(self) -> str:
        """One line of JSON (no trailing newline); ``Message.from_json`` reverses it."""
        return self.model_dump_json(exclude_none=True)

    @classmethod
    def from_json(cls, line: str | bytes) -> Message:
        return cls.model_validate_json(line)


AssistantMessage = Message  # readability alias for signatures


def tool_calls(messages: Iterable[Message]) -> Iterator[ToolCallBlock]:
    """Every tool call in ``messages``, in order."""
    for message in messages:
        if message.role == "assistant":
            yield from message.tool_calls


def tool_results(messages: Iterable[Message]) -> Iterator[ToolResultBlock]:
    """Every tool result in ``messages``, in order."""
    for message in messages:
        if message.role == "tool":
            yield from message.tool_results


# -- answering and re-homing tool results -------------------------------------------------
INTERRUPTED = "Interrupted: the run was cancelled before this tool call finished. It may or may not have taken effect."


def interrupted_result(call_id: str, why: str = INTERRUPTED) -> ToolResultBlock:
    """The ``is_error`` result that answers a call that did not finish (or never ran),
    so the invariant holds whatever stopped it."""
    return ToolResultBlock(call_id=call_id, content=why, is_error=True)


def rehome_images(
    results: Sequence[ToolResultBlock],
) -> tuple[list[ToolResultBlock], Message | None]:
    """For wire formats that cannot carry images inside tool results: move each image into
    one user message that follows the tool message, leaving a pointer in the result.

    Provider adapters call this when they translate a history for such a model; the
    history itself keeps images where the tool returned them, so it stays valid for any
    model the session is continued with.
    """
    images: list[TextBlock | ImageBlock] = []
    moved: list[ToolResultBlock] = []
    for result in results:
        if isinstance(result.content, str) or not any(
            isinstance(b, ImageBlock) for b in result.content
        ):
            moved.append(result)
            continue
        kept: list[TextBlock | ImageBlock] = []
        count = 0
        for block in result.content:
            if isinstance(block, ImageBlock):
                count += 1
                images.append(block)
            else:
                kept.append(block)
        note = f"\n[{count} image(s) from this result are attached in the next user message]"
        kept.append(TextBlock(text=note))
        moved.append(result.model_copy(update={"content": kept}))
        images.insert(
            len(images) - count, TextBlock(text=f"Images returned by tool call {result.call_id}:")
        )
    if not images:
        return list(results), None
    return moved, Message(role="user", content=list(images))
