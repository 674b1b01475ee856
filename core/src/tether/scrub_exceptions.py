"""Scrubbing an exception and everything chained to it.

A :class:`~tether.errors.TetherError` scrubs its own message, but the vendor exception a
provider plugin chains to it (``raise ... from exc``) was written by an SDK: its message,
a response body in its arguments, its notes, the exceptions *it* was chained to or
grouped with can all quote the API key. Everything reachable from an error the Python
API hands out — ``result.error``, a :class:`~tether.events.Retry` event's ``error``, an
exception raised from ``Agent.run``/``stream`` — is therefore passed through
:func:`scrub_exception` first, so ``str``, ``repr``, ``args`` and
``traceback.format_exception`` of any exception in the chain show ``***`` instead.

What it does, for the exception and every one reachable through ``__cause__``,
``__context__`` and the members of exception groups (each once, cycles included):

- string (and UTF-8 ``bytes``) arguments, attribute values and notes are scrubbed with
  :func:`tether.scrub.scrub`, also inside dicts, lists and tuples (a parsed response
  body);
- an exception whose ``str`` or ``repr`` still shows a secret after that (its
  ``__str__`` reads something that cannot be scrubbed in place) is replaced in the chain
  by a :class:`RedactedException` carrying its type's name and its scrubbed message,
  with the same traceback, cause and context. (The exception itself, the root, cannot be
  replaced where it is being raised; the runner raises it scrubbed in place.)

Exceptions are changed in place, so an exception object shared with other code is
scrubbed there too: that is the point.
"""

from __future__ import annotations

import contextlib
from typing import Any, TypeVar

from .scrub import scrub

__all__ = ["RedactedException", "scrub_exception"]

E = TypeVar("E", bound=BaseException)

_MAX_DEPTH = 8
"""How deep scrubbing descends into nested containers in arguments and attributes."""


class RedactedException(Exception):
    """Stands in the cause chain for an exception whose text could not be scrubbed in
    place; ``original_type`` is the qualified name of the type it replaces."""

    def __init__(self, original_type: str, message: str) -> None:
        super().__init__(f"{original_type}: {message}" if message else original_type)
        self.original_type = original_type


def scrub_exception(exc: E) -> E:
    """Scrub ``exc`` and every exception chained or grouped with it (see the module
    docstring). Returns ``exc``, or a :class:`RedactedException` standing in for it when
    its own text could not be scrubbed in place."""
    scrubbed: Any = _scrubbed(exc, {})
    return scrubbed  # type: ignore[no-any-return]


def _scrubbed(exc: BaseException, seen: dict[int, BaseException]) -> BaseException:
    known = seen.get(id(exc))
    if known is not None:
        return known
    seen[id(exc)] = exc  # provisional: a cycle back to here keeps the original
    _scrub_state(exc)
    replacement = exc
    if isinstance(exc, BaseExceptionGroup):
        members = [_scrubbed(member, seen) for member in exc.exceptions]
        message = scrub(exc.message)
        changed = any(new is not old for new, old in zip(members, exc.exceptions, strict=True))
        if changed or message != exc.message:
            replacement = _regrouped(exc, message, members)
    if _shows_secret(replacement):
        replacement = _redacted(replacement)
    seen[id(exc)] = replacement
    suppress = replacement.__suppress_context__
    if replacement.__cause__ is not None:
        replacement.__cause__ = _scrubbed(replacement.__cause__, seen)
    if replacement.__context__ is not None:
        replacement.__context__ = _scrubbed(replacement.__context__, seen)
    replacement.__suppress_context__ = suppress
    return replacement


def _scrub_state(exc: BaseException) -> None:
    """Scrub ``exc``'s arguments, attributes and notes in place."""
    args = _scrub_value(exc.args, 0)
    if args is not exc.args:
        with contextlib.suppress(AttributeError, TypeError):
            exc.args = args
    try:
        attributes = dict(vars(exc))
    except TypeError:  # no __dict__
        attributes = {}
    for name, value in attributes.items():
        new = _scrub_value(value, 0)
        if new is not value:
            with contextlib.suppress(AttributeError, TypeError):
                setattr(exc, name, new)


def _scrub_value(value: Any, depth: int) -> Any:
    """``value`` with secrets scrubbed; the same object when nothing changed."""
    if isinstance(value, str):
        new = scrub(value)
        return value if new == value else new
    if isinstance(value, bytes | bytearray):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return value
        new = scrub(text)
        return value if new == text else type(value)(new.encode("utf-8"))
    if depth >= _MAX_DEPTH:
        return value
    if isinstance(value, dict):
        items = {k: _scrub_value(v, depth + 1) for k, v in value.items()}
        if all(items[k] is v for k, v in value.items()):
            return value
        return items if type(value) is dict else _rebuilt(value, items)
    if isinstance(value, list | tuple):
        new_items = [_scrub_value(v, depth + 1) for v in value]
        if all(n is o for n, o in zip(new_items, value, strict=True)):
            return value
        if isinstance(value, list):
            value[:] = new_items  # in place: others may hold this list (e.g. __notes__)
            return value
        return tuple(new_items) if type(value) is tuple else _rebuilt(value, new_items)
    return value


def _rebuilt(original: Any, items: Any) -> Any:
    try:
        return type(original)(items)
    except Exception:
        return items


def _text_of(exc: BaseException) -> str:
    parts = []
    for render in (str, repr):
        try:
            parts.append(render(exc))
        except Exception:
            parts.append("")
    return "\n".join(parts)


def _shows_secret(exc: BaseException) -> bool:
    text = _text_of(exc)
    return scrub(text) != text


def _redacted(exc: BaseException) -> BaseException:
    kind = type(exc)
    try:
        message = str(exc)
    except Exception:
        message = ""
    stand_in = RedactedException(f"{kind.__module__}.{kind.__qualname__}", scrub(message))
    stand_in.__cause__ = exc.__cause__
    stand_in.__context__ = exc.__context__
    stand_in.__suppress_context__ = exc.__suppress_context__
    stand_in.__traceback__ = exc.__traceback__
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        stand_in.__notes__ = [scrub(str(note)) for note in notes]
    return stand_in


def _regrouped(
    group: BaseExceptionGroup[BaseException], message: str, members: list[BaseException]
) -> BaseException:
    """A copy of ``group`` with ``message`` and ``members``, its chaining and traceback."""
    new: BaseException
    if message == group.message:
        new = group.derive(members)
    else:  # derive() keeps the message; the group's own type cannot be trusted to take one
        new = BaseExceptionGroup(message, members)
    new.__cause__ = group.__cause__
    new.__context__ = group.__context__
    new.__suppress_context__ = group.__suppress_context__
    new.__traceback__ = group.__traceback__
    notes = getattr(group, "__notes__", None)
    if isinstance(notes, list):
        new.__notes__ = list(notes)
    return new
