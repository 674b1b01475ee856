"""Tests that see nothing of the developer's machine: no real API key, gateway or default
model from the shell, no user configuration or data, and only the plugins a test names.

:func:`go_offline` does it through a ``pytest.MonkeyPatch``, so it is undone after the
test; the pytest plugin's ``offline`` fixture hands it over ready to call, and skips all
but the plugin choice for tests marked ``live`` (which need the real key)::

    @pytest.fixture(autouse=True)
    def _offline(offline):
        offline(plugins=("google",))
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["PROVIDER_VARIABLES", "go_offline"]

PROVIDER_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENROUTER_API_KEY",
    "OLLAMA_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "TETHER_MODEL",
)
"""The variables through which a shell's keys, gateways and default model reach a run."""


def go_offline(
    monkeypatch: Any,
    directory: Path | None,
    *,
    plugins: Iterable[str] | None = None,
    unset: Iterable[str] = (),
    live: bool = False,
) -> None:
    """Isolate the test from the machine, through ``monkeypatch`` (a ``pytest.MonkeyPatch``).

    :param directory: where an empty ``tether.toml`` and the data directory go (the
        user's configuration and data are not read); ``None`` leaves them alone.
    :param plugins: ``None`` leaves plugin loading as it is; an empty iterable loads no
        installed plugin (``TETHER_DISABLE_PLUGIN_AUTOLOAD``); names load only those
        (``TETHER_PLUGINS_ALLOW``).
    :param unset: variables to clear besides :data:`PROVIDER_VARIABLES`.
    :param live: a test against a real provider: only the plugin choice applies.
    """
    if plugins is not None:
        names = ",".join(plugins)
        if names:
            monkeypatch.setenv("TETHER_PLUGINS_ALLOW", names)
        else:
            monkeypatch.setenv("TETHER_DISABLE_PLUGIN_AUTOLOAD", "1")
    if live:
        return
    for variable in (*PROVIDER_VARIABLES, *unset):
        monkeypatch.delenv(variable, raising=False)
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        config = directory / "tether.toml"
        config.write_text("")
        monkeypatch.setenv("TETHER_CONFIG", str(config))
        monkeypatch.setenv("TETHER_DATA_DIR", str(directory / "data"))
