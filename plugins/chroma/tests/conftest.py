"""A Chroma server on loopback for the tests that talk to one over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tether_chroma.testing import chroma_server as start_chroma_server


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """``(host, port)`` of a Chroma server persisting to a temporary directory."""
    with start_chroma_server(tmp_path_factory.mktemp("chroma-server")) as address:
        yield address
