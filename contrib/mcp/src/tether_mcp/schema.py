"""Input schemas of MCP tools, passed through with the few changes providers need.

MCP servers send JSON Schema as they please; providers reject some of it (Gemini has no
``$ref``; every provider wants an object at the top). :func:`normalise` keeps the schema
and only: makes the top level an object with ``properties``, inlines local ``$ref``
pointers to ``$defs``/``definitions`` (recursive ones become plain objects), and drops
``$schema``/``$id``.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["normalise"]

_DROP = ("$schema", "$id", "$defs", "definitions")


def normalise(schema: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of ``schema`` that every tether provider accepts."""
    source = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        if isinstance(source.get(key), dict):
            defs.update({f"#/{key}/{name}": value for name, value in source[key].items()})
    result = _inline(source, defs, ())
    if not isinstance(result, dict):
        result = {}
    for key in _DROP:
        result.pop(key, None)
    if result.get("type") != "object":
        result = {"type": "object", "properties": {}} if "properties" not in result else result
        result["type"] = "object"
    result.setdefault("properties", {})
    return result


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref in defs:
        if ref in seen:
            return {"type": "object"}
        target = _inline(copy.deepcopy(defs[ref]), defs, (*seen, ref))
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return {**target, **_inline(extra, defs, seen)} if isinstance(target, dict) else target
    return {
        key: _inline(value, defs, seen)
        for key, value in node.items()
        if key not in ("$defs", "definitions")
    }
