"""Strict parsing and checking of tool-call arguments, before schema validation.

A model's tool arguments are untrusted text. :func:`parse_tool_arguments` turns that text
into a JSON object or raises :class:`~tether.errors.InvalidToolArguments` saying exactly
what was wrong, so the model gets an answer it can act on. It refuses what lenient JSON
parsing would let through silently:

- argument text over :data:`MAX_ARGUMENT_CHARS` characters (checked before parsing);
- nesting deeper than :data:`MAX_ARGUMENT_DEPTH` (never a ``RecursionError``);
- text that is not valid UTF-8 (bytes), strings that cannot be encoded as UTF-8 (lone
  surrogates, from ``\\ud800`` escapes), and NUL characters in any key or string;
- duplicate keys in an object (last-wins parsing would hide a value);
- anything but an object at the top level, except a JSON string that itself holds an
  object, which is decoded once (some OpenAI-compatible servers double-encode).

:func:`check_tool_arguments` applies the same limits to arguments that arrived already
decoded (some SDKs decode them, sessions store them), and
:func:`check_argument_types` catches what pydantic's lax mode accepts but the schema
forbids: a JSON boolean where an integer or number is declared.

Provider plugins call :func:`split_tool_arguments` on streamed argument text; the tool
executor calls :func:`prepare_arguments`. The runner passes every response through
:func:`bound_arguments` before storing it: decoded arguments nested too deeply for
JSON serialisation (an SDK that decodes them itself) are stored as a short stand-in
text that breaks the same limit, so the call is answered with the depth error instead
of the session failing to write it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .errors import InvalidToolArguments
from .messages import Message, ToolCallBlock

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "MAX_ARGUMENT_DEPTH",
    "bound_arguments",
    "check_argument_types",
    "check_tool_arguments",
    "nests_deeper",
    "parse_tool_arguments",
    "prepare_arguments",
    "split_tool_arguments",
]

MAX_ARGUMENT_CHARS = 1_000_000
"""Characters of argument text a tool call may carry (about 1 MB)."""

MAX_ARGUMENT_DEPTH = 64
"""How deeply objects and arrays may nest inside the arguments object."""

_INVALID = InvalidToolArguments


def parse_tool_arguments(
    text: str | bytes,
    *,
    max_chars: int = MAX_ARGUMENT_CHARS,
    max_depth: int = MAX_ARGUMENT_DEPTH,
) -> dict[str, Any]:
    """The arguments object held by ``text``; raises :class:`InvalidToolArguments`.

    Empty or blank text is an empty object (models send it for tools without
    parameters). Never raises anything but ``InvalidToolArguments``.
    """
    if isinstance(text, bytes | bytearray):
        if len(text) > max_chars * 4:
            raise _too_long(len(text), max_chars)
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _INVALID(
                f"The arguments are not valid UTF-8 (byte {exc.start}). "
                "Send the arguments as a UTF-8 JSON object."
            ) from None
    if len(text) > max_chars:
        raise _too_long(len(text), max_chars)
    if not text.strip():
        return {}
    value = _loads(text)
    if isinstance(value, str) and value.lstrip().startswith("{"):
        value = _loads(value)  # a JSON string holding the object: decode once, not again
    if not isinstance(value, dict):
        raise _INVALID(
            f"The arguments must be a JSON object, got {_kind(value)}. "
            'Send an object such as {"name": value}.'
        )
    _scan(value, max_depth)
    return value


def check_tool_arguments(
    arguments: Mapping[str, Any],
    *,
    max_chars: int | None = MAX_ARGUMENT_CHARS,
    max_depth: int = MAX_ARGUMENT_DEPTH,
) -> None:
    """Raise :class:`InvalidToolArguments` if already decoded ``arguments`` nest too
    deeply, hold a NUL character or a string that is not encodable as UTF-8, or (when
    ``max_chars`` is set) would take more than about ``max_chars`` characters as JSON."""
    size, _ = _scan(arguments, max_depth)
    if max_chars is not None and size > max_chars:
        raise _too_long(size, max_chars)


def nests_deeper(root: Any, limit: int) -> bool:
    """Whether ``root`` nests mappings and lists more than ``limit`` levels (iteratively,
    so any depth is safe to check)."""
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            children: Any = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


_TOO_DEEP_STAND_IN = '{"a":' * (MAX_ARGUMENT_DEPTH + 1) + "0" + "}" * (MAX_ARGUMENT_DEPTH + 1)


def bound_arguments(message: Message) -> Message:
    """``message`` itself, or a copy in which each tool call whose decoded arguments nest
    deeper than :data:`MAX_ARGUMENT_DEPTH` has no arguments and a short ``raw_arguments``
    stand-in nested one level too deep (see the module docstring)."""
    calls = [b for b in message.content if isinstance(b, ToolCallBlock)]
    if not any(nests_deeper(c.arguments, MAX_ARGUMENT_DEPTH) for c in calls):
        return message
    content = [
        b.model_copy(update={"arguments": {}, "raw_arguments": _TOO_DEEP_STAND_IN})
        if isinstance(b, ToolCallBlock) and nests_deeper(b.arguments, MAX_ARGUMENT_DEPTH)
        else b
        for b in message.content
    ]
    return message.model_copy(update={"content": content})


def split_tool_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """``(arguments, raw_arguments)`` for a provider's :class:`~tether.messages.ToolCallBlock`.

    Arguments that pass :func:`parse_tool_arguments` come back decoded with ``None``;
    otherwise ``({}, text)``, so the executor can answer the call with the precise
    error. Over-long text is kept only up to one character past the limit: enough for
    the executor to report it as too long, without storing megabytes in the session.
    """
    try:
        return parse_tool_arguments(text), None
    except InvalidToolArguments:
        return {}, text[: MAX_ARGUMENT_CHARS + 1]


def prepare_arguments(
    arguments: Mapping[str, Any], raw_arguments: str | None, schema: Mapping[str, Any]
) -> dict[str, Any]:
    """The arguments of one call, parsed and checked, ready for schema validation.

    ``raw_arguments`` (text the provider could not decode) is parsed strictly, which
    either recovers the object or names the problem. Raises ``InvalidToolArguments``.
    """
    if raw_arguments is not None:
        decoded = parse_tool_arguments(raw_arguments)
        has_bool = _scan(decoded, MAX_ARGUMENT_DEPTH)[1]
    else:
        decoded = dict(arguments)
        size, has_bool = _scan(decoded, MAX_ARGUMENT_DEPTH)
        if size > MAX_ARGUMENT_CHARS:
            raise _too_long(size, MAX_ARGUMENT_CHARS)
    if has_bool:
        check_argument_types(schema, decoded)
    return decoded


def check_argument_types(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Raise ``InvalidToolArguments`` where a JSON boolean stands for a declared integer
    or number (pydantic would read ``true`` as ``1``)."""
    problems: list[str] = []
    _walk_types(schema, schema, arguments, "", problems, 0)
    if problems:
        raise _INVALID(
            "Invalid arguments: "
            + "; ".join(problems)
            + ". Send a number, not true/false, where the schema declares one."
        )


# -- internals ---------------------------------------------------------------------------
def _too_long(size: int, limit: int) -> InvalidToolArguments:
    return _INVALID(
        f"The arguments are {size} characters long; the limit is {limit}. "
        "Send less data per call (split the work into several calls, or pass a file path)."
    )


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _loads(text: str) -> Any:
    try:
        return json.loads(
            text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant
        )
    except _DuplicateKey as exc:
        raise _INVALID(
            f"The arguments repeat the key {_show(exc.key)} in one object; each key may "
            "appear once. Send each argument once."
        ) from None
    except RecursionError:
        raise _depth_error() from None
    except ValueError as exc:  # JSONDecodeError, and invalid surrogate pairs
        raise _INVALID(
            f"The arguments are not valid JSON ({_describe(exc)}). Send a JSON object."
        ) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _depth_error() -> InvalidToolArguments:
    return _INVALID(
        f"The arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels. Send a flatter object."
    )


def _scan(root: Any, max_depth: int) -> tuple[int, bool]:
    """Check every string and the nesting depth of ``root`` (raising
    ``InvalidToolArguments``); return its approximate size as JSON text and whether it
    holds a boolean anywhere."""
    size = 0
    has_bool = False
    stack: list[tuple[Any, int, str]] = [(root, 0, "")]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, str):
            _check_string(value, path or "(value)")
            size += len(value) + 3
        elif isinstance(value, Mapping):
            if depth >= max_depth:
                raise _depth_error()
            size += 2
            for key, item in value.items():
                key_text = key if isinstance(key, str) else str(key)
                where = f"{path}.{key_text}" if path else key_text
                _check_string(key_text, where, key=True)
                size += len(key_text) + 4
                stack.append((item, depth + 1, where))
        elif isinstance(value, list | tuple):
            if depth >= max_depth:
                raise _depth_error()
            size += 2
            for index, item in enumerate(value):
                stack.append((item, depth + 1, f"{path}[{index}]"))
        else:
            has_bool = has_bool or isinstance(value, bool)
            size += 8
    return size, has_bool


def _check_string(text: str, where: str, *, key: bool = False) -> None:
    if "\x00" in text:
        raise _INVALID(
            f"{_place(where, key)} contains a NUL character (\\u0000), which no argument "
            "may hold. Remove it."
        )
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise _INVALID(
                f"{_place(where, key)} contains text that cannot be encoded as UTF-8 (a lone "
                "surrogate such as \\ud800). Send valid Unicode text."
            ) from None


def _place(where: str, key: bool) -> str:
    return f"The key of {_show(where)}" if key else _show(where)


def _walk_types(
    root: Mapping[str, Any],
    schema: Any,
    value: Any,
    path: str,
    problems: list[str],
    depth: int,
) -> None:
    if not isinstance(schema, Mapping) or depth > MAX_ARGUMENT_DEPTH:
        return
    schema = _resolve(root, schema)
    if isinstance(value, bool):
        if _declares_number(root, schema) and not _accepts_bool(root, schema):
            problems.append(f"{path or '(arguments)'} is {str(value).lower()}, a boolean")
        return
    branches = [_resolve(root, b) for b in (*schema.get("anyOf", ()), *schema.get("oneOf", ()))]
    if isinstance(value, Mapping):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for key, item in value.items():
                if key in properties:
                    where = f"{path}.{key}" if path else str(key)
                    _walk_types(root, properties[key], item, where, problems, depth + 1)
        objects = [b for b in branches if b.get("type") == "object"]
        if len(objects) == 1:
            _walk_types(root, objects[0], value, path, problems, depth + 1)
    elif isinstance(value, list):
        items = schema.get("items")
        arrays = [b for b in branches if b.get("type") == "array"]
        if items is None and len(arrays) == 1:
            items = arrays[0].get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                _walk_types(root, items, item, f"{path}[{index}]", problems, depth + 1)


def _resolve(root: Mapping[str, Any], schema: Any) -> Mapping[str, Any]:
    for _ in range(16):
        if not isinstance(schema, Mapping):
            return {}
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        schema = target
    return {}


def _types(root: Mapping[str, Any], schema: Mapping[str, Any]) -> set[str]:
    kinds: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        kinds.add(declared)
    elif isinstance(declared, list):
        kinds.update(k for k in declared if isinstance(k, str))
    for branch in (*schema.get("anyOf", ()), *schema.get("oneOf", ())):
        resolved = _resolve(root, branch)
        if resolved is not schema:
            kinds |= _types(root, resolved)
    return kinds


def _declares_number(root: Mapping[str, Any], schema: Mapping[str, Any]) -> bool:
    return bool(_types(root, schema) & {"integer", "number"})


def _accepts_bool(root: Mapping[str, Any], schema: Mapping[str, Any]) -> bool:
    return "boolean" in _types(root, schema)


def _kind(value: Any) -> str:
    return {
        str: "a string",
        list: "an array",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _describe(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    if str(exc).endswith("is not a JSON number"):
        return f"{exc}; use null or a finite number"
    return "invalid escape or encoding"


def _show(text: str) -> str:
    shown = text if len(text) <= 80 else text[:77] + "..."
    return json.dumps(shown, ensure_ascii=True)
