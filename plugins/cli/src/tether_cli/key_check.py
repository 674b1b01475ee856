"""``tether models --check``: ask each provider's API whether its credentials work.

``tether run`` sends no request before the run's own (a provider's ``validate_auth``
checks only that a key is configured); this is the one place a key is checked against
the API. A provider that defines ``verify_key()`` is asked with that (one cheap request,
typically ``GET /models``); one that does not is checked with ``validate_auth()``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import CliState

__all__ = ["KeyCheck", "check_keys", "checked_providers"]


class KeyCheck:
    """The outcome for one provider: ``error`` is ``None`` when the key was accepted."""

    __slots__ = ("error", "provider")

    def __init__(self, provider: str, error: str | None) -> None:
        self.provider = provider
        self.error = error

    @property
    def ok(self) -> bool:
        return self.error is None

    def line(self) -> str:
        """The human-readable line for this provider."""
        return f"{self.provider}: " + ("key accepted" if self.ok else f"failed: {self.error}")


def checked_providers(state: CliState, names: Sequence[str]) -> list[str]:
    """``names``, or, with none, the provider of the model ``tether run`` would use.

    Raises :class:`~tether.errors.UnknownProviderError` for a name no plugin registers
    and :class:`~tether.errors.ConfigError` when no model is chosen.
    """
    from tether.resolve import parse_model_string, unknown_provider

    from .model_choice import choose_model

    registrar = state.plugin_manager().providers
    for name in names:
        if name not in registrar:
            raise unknown_provider(registrar, name)
    if names:
        return list(dict.fromkeys(names))
    config = state.config()
    choice = choose_model(None, config, registrar)
    return [parse_model_string(choice.model, registrar, config.aliases).provider]


def check_keys(state: CliState, names: Sequence[str]) -> list[KeyCheck]:
    """Check the credentials of each provider in ``names`` against its API, in order."""
    return asyncio.run(_check_all(state, names))


async def _check_all(state: CliState, names: Sequence[str]) -> list[KeyCheck]:
    registrar = state.plugin_manager().providers
    config = state.config()
    results: list[KeyCheck] = []
    for name in names:
        try:
            provider = registrar.get(name)(config.provider(name))
        except Exception as exc:  # a provider that cannot be built is reported, not raised
            results.append(KeyCheck(name, f"{type(exc).__name__}: {exc}"))
            continue
        try:
            verify = getattr(provider, "verify_key", None)
            await (verify() if callable(verify) else provider.validate_auth())
            results.append(KeyCheck(name, None))
        except Exception as exc:  # each provider's failure is reported on its own line
            results.append(KeyCheck(name, f"{type(exc).__name__}: {exc}"))
        finally:
            with contextlib.suppress(Exception):  # best effort; the check has its answer
                await provider.aclose()
    return results
