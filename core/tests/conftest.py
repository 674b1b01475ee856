from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No user config, data dir or environment model leaks into core tests."""
    config = tmp_path_factory.mktemp("config") / "tether.toml"
    config.write_text("")
    monkeypatch.setenv("TETHER_CONFIG", str(config))
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    monkeypatch.delenv("TETHER_MODEL", raising=False)
