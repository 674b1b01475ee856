"""What plugins and applications may import from ``tether`` is listed, documented and
complete: the error tree, the events, the provider protocol and the registrars are all
in ``tether.__all__``, and every hook says when it is called, since which version, and
shows an example."""

from __future__ import annotations

import inspect

import pytest

import tether
from tether import errors, events, hookspecs, provider, registry


def _hookspecs() -> list[str]:
    return sorted(
        name
        for name, value in vars(hookspecs).items()
        if callable(value) and hasattr(value, f"{hookspecs.PROJECT}_spec")
    )


def test_every_public_name_resolves_and_is_documented() -> None:
    undocumented = []
    for name in tether.__all__:
        value = getattr(tether, name)
        if (inspect.isclass(value) or inspect.isfunction(value)) and not inspect.getdoc(value):
            undocumented.append(name)
    assert undocumented == []


@pytest.mark.parametrize("module", [errors, events, registry, provider], ids=lambda m: m.__name__)
def test_what_plugins_need_is_exported_from_tether(module: object) -> None:
    # the types (classes and aliases); helper functions stay in their modules
    names = [n for n in module.__all__ if not inspect.isfunction(getattr(module, n))]
    missing = [n for n in names if n not in tether.__all__]
    assert missing == [], f"add to tether.__all__: {missing}"
    assert all(getattr(tether, n) is getattr(module, n) for n in names)


def test_the_hooks_are_found() -> None:
    assert {"register_providers", "register_tools", "register_knowledge_backends"} <= set(
        _hookspecs()
    )


@pytest.mark.parametrize("name", _hookspecs())
def test_every_hook_says_when_since_and_shows_an_example(name: str) -> None:
    doc = inspect.getdoc(getattr(hookspecs, name)) or ""
    assert "Called " in doc, f"{name}: say when it is called"
    assert "Since " in doc, f"{name}: say since which version it exists"
    assert "Example::" in doc and f"def {name}(" in doc, f"{name}: show an example"
    parameters = inspect.signature(getattr(hookspecs, name)).parameters
    assert all(f":param {p}:" in doc for p in parameters), f"{name}: document every argument"


def test_the_platform_options_of_providers_add_are_documented() -> None:
    from tether import platforms

    registrar_doc = inspect.getdoc(registry.ProviderRegistrar) or ""
    parameters = inspect.signature(registry.ProviderRegistrar.add).parameters
    assert {"family", "family_plugins"} <= set(parameters)
    assert "``family=" in registrar_doc and "``family_plugins``" in registrar_doc
    assert "family=" in (inspect.getdoc(hookspecs.register_providers) or "")
    undocumented = [n for n in platforms.__all__ if not inspect.getdoc(getattr(platforms, n))]
    assert undocumented == []
