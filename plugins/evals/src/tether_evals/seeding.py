"""Seeds for providers that take one: a sampling seed is a provider setting
(``[providers.google] seed = 7``), so a seeded trial gets a copy of the configuration with
``seed`` set for its model's provider, when that provider declares the setting."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether import Config, PluginManager

__all__ = ["accepts_seed", "seeded_config"]


def _provider_name(model: str) -> str | None:
    name, slash, _ = model.partition("/")
    return name if slash else None


def accepts_seed(model: str, plugins: PluginManager) -> bool:
    """Whether the provider of ``model`` (``provider/model``) declares a ``seed`` setting."""
    name = _provider_name(model)
    if name is None or name not in plugins.providers:
        return False
    settings = plugins.providers.registration(name).options.get("settings") or {}
    return "seed" in settings


def seeded_config(config: Config, model: str, seed: int | None, plugins: PluginManager) -> Config:
    """``config`` with ``seed`` set for ``model``'s provider if it takes one, else
    ``config`` itself (unchanged, not copied)."""
    if seed is None or not accepts_seed(model, plugins):
        return config
    from tether.config import ProviderConfig

    name = _provider_name(model)
    assert name is not None
    providers = dict(config.providers)
    section = providers.get(name) or ProviderConfig()
    providers[name] = section.model_copy(update={"seed": seed})
    return config.model_copy(update={"providers": providers})
