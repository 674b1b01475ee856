"""Which model a command uses when ``-m`` is not given, and where that choice came from.

Order: ``-m`` on the command line, then ``$TETHER_MODEL``, then ``model`` in the
configuration file (set by ``tether models default NAME``), then the first provider, by
name, whose API key is present (its registered ``default_model``), said on stderr. With
none of these, a :class:`~tether.errors.ConfigError` says how to choose one, including
the key-free ``demo/echo``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.config import Config
    from tether.registry import ProviderRegistrar

__all__ = ["ModelChoice", "choose_model", "keyed_provider"]


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model string and where it came from (for messages): ``-m``, ``TETHER_MODEL``,
    the configuration file's path, or the key variable that picked it."""

    model: str
    source: str
    announce: bool = False
    """Whether to tell the user (the model was not chosen explicitly)."""

    def note(self) -> str:
        """The stderr line for a model picked from a present key."""
        return (
            f"Using {self.model} ({self.source} is set; no model is chosen). "
            "Choose one with -m, TETHER_MODEL or `tether models default NAME`."
        )


def choose_model(flag: str | None, config: Config, providers: ProviderRegistrar) -> ModelChoice:
    """The model to use; see the module docstring for the order.

    Raises :class:`~tether.errors.ConfigError` when nothing chooses a model.
    """
    from tether.errors import ConfigError

    if flag:
        return ModelChoice(flag, "-m")
    if os.environ.get("TETHER_MODEL"):
        return ModelChoice(os.environ["TETHER_MODEL"], "TETHER_MODEL")
    if config.model:
        return ModelChoice(config.model, str(config.source) if config.source else "configuration")
    found = keyed_provider(config, providers)
    if found is not None:
        return found
    variables = sorted(
        {variable for reg in providers for variable in reg.options.get("key_variables", ())}
    )
    keys = (
        f"set a provider's key ({', '.join(variables)}), "
        if variables
        else "install a provider plugin (in a clone of tether, e.g. "
        "`uv pip install ./plugins/anthropic`) and set its key, "
    )
    raise ConfigError(
        "No model chosen and no provider key found. Try tether without a key: "
        '`tether run -m demo/echo "Hello"`; for a real model, '
        f"{keys}pass -m provider/model, or set a default with `tether models default NAME` "
        "(or TETHER_MODEL)."
    )


def keyed_provider(config: Config, providers: ProviderRegistrar) -> ModelChoice | None:
    """The first provider (by name) with a ``default_model`` whose key is present: in its
    configuration (``api_key``, ``api_key_env``) or in one of its ``key_variables``."""
    for name in providers.names():
        options = providers.registration(name).options
        default = options.get("default_model")
        variables: tuple[str, ...] = options.get("key_variables", ())
        if not default or not variables:
            continue
        settings = config.provider(name)
        if settings.api_key is not None:
            return ModelChoice(f"{name}/{default}", f"[providers.{name}] api_key", announce=True)
        candidates = (settings.api_key_env,) if settings.api_key_env else variables
        for variable in candidates:
            if variable and os.environ.get(variable):
                return ModelChoice(f"{name}/{default}", variable, announce=True)
    return None
