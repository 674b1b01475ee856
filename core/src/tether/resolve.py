"""Model strings: ``provider/model``, bare names by prefix, aliases from config."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import ConfigError, UnknownProviderError
from .install_hints import clone_install
from .registry import ProviderRegistrar

__all__ = ["ModelRef", "parse_model_string", "unknown_provider"]


@dataclass(frozen=True, slots=True)
class ModelRef:
    """A resolved model string: which provider, and its own id for the model."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"


def parse_model_string(
    model: str, providers: ProviderRegistrar, aliases: Mapping[str, str] | None = None
) -> ModelRef:
    """Resolve ``model`` to a provider and model id.

    Aliases are applied first (``fast = "openai/gpt-4.1-mini"``). ``name/model`` names the
    provider explicitly; everything after the first slash is the model id, so
    ``openrouter/anthropic/claude-sonnet-4`` works. A bare name goes to the provider
    whose registered prefix matches it best (``claude-`` → anthropic).

    For a platform served by model family (``vertex``), the model id must belong to an
    installed family: :class:`~tether.errors.UnknownProviderError` names the plugin to
    install, or lists the known families.
    """
    original = model.strip()
    if not original:
        raise ConfigError(
            'No model given. Pass model="provider/model" or set `model` in tether.toml.'
        )
    resolved = (aliases or {}).get(original, original)
    installed = providers.names()
    if "/" in resolved:
        name, _, model_id = resolved.partition("/")
        if name not in providers:
            raise unknown_provider(providers, name)
        if not model_id:
            raise ConfigError(f'Model string "{original}" names no model after "{name}/".')
        platform = providers.platform(name)
        if platform is not None:
            platform.family_for(model_id)
        return ModelRef(name, model_id)
    bare = providers.for_bare_model(resolved)
    if bare is None:
        near = difflib.get_close_matches(resolved, list((aliases or {}).keys()), n=3, cutoff=0.6)
        hint = f" Did you mean the alias {', '.join(repr(n) for n in near)}?" if near else ""
        raise UnknownProviderError(
            f'Cannot tell which provider serves the model "{original}".{hint} '
            f'Write it as "provider/{original}". Installed providers: {_listing(installed)}.',
            name=resolved,
            installed=installed,
        )
    return ModelRef(bare, resolved)


def unknown_provider(providers: ProviderRegistrar, name: str) -> UnknownProviderError:
    """The error for a provider ``name`` nobody registers: near matches if there are
    any, else how to install the plugin that would provide it."""
    advice = (
        ""
        if providers.near(name)
        else (
            "If it comes from a plugin, install it (one of tether's own, in a clone of "
            f"tether: {clone_install('tether-' + name)}; `uv sync --all-packages` installs all)"
        )
    )
    error = providers.unknown(name, advice=advice)
    assert isinstance(error, UnknownProviderError)
    return error


def _listing(names: list[str]) -> str:
    return (
        ", ".join(names) if names else "none (install a provider plugin such as tether-anthropic)"
    )
