from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture(autouse=True)
def _isolated_environment(offline: Callable[..., None]) -> None:
    """No user config, data dir, key or environment model leaks into core tests."""
    offline()
