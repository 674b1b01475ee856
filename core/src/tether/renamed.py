"""Old names kept working for the 0.x series, each with a ``DeprecationWarning`` naming
its replacement. A module serves its old names from its ``__getattr__``::

    def __getattr__(name: str) -> Any:
        return renamed(__name__, name, {"MemoryBackendError": "KnowledgeBackendError"})

The old names are left out of ``__all__`` (a star import does not warn), and go in 1.0.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["deprecation", "renamed"]


def deprecation(old: str, new: str) -> None:
    """Warn, at the caller's caller, that ``old`` is deprecated in favour of ``new``."""
    warnings.warn(
        f"{old} is deprecated: use {new} instead (the old name goes in tether 1.0).",
        DeprecationWarning,
        stacklevel=3,
    )


def renamed(module: str, name: str, names: Mapping[str, str]) -> Any:
    """The object now called ``names[name]`` in ``module``, with a warning; raise
    ``AttributeError`` for a name that is neither (as a module does)."""
    new = names.get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} is deprecated: use {module}.{new} instead (the old name goes in "
        "tether 1.0).",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(sys.modules[module], new)
