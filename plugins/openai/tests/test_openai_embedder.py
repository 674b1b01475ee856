"""The ``openai`` embedder against a loopback ``/v1/embeddings``."""

from __future__ import annotations

from typing import Any

import pytest

from tether.errors import KnowledgeBackendError
from tether_knowledge.embedders import Embedder
from tether_openai.embedder import OpenAIEmbedder
from tether_testing.http import FakeResponse, FakeServer


def embeddings(vectors: list[list[float]], order: list[int]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in order],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 8, "total_tokens": 8},
    }


async def test_vectors_come_back_in_input_order_with_requested_dimensions(
    fake_server: FakeServer,
) -> None:
    fake_server.queue(
        FakeResponse.json(embeddings([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], order=[2, 0, 1]))
    )
    embedder = OpenAIEmbedder(dimensions=2, base_url=fake_server.url + "/v1", api_key="sk-e")
    assert isinstance(embedder, Embedder)

    vectors = await embedder.embed(["a", "b", "c"])

    assert vectors == [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]
    body = fake_server.requests[0].json()
    assert body == {
        "model": "text-embedding-3-small",
        "input": ["a", "b", "c"],
        "encoding_format": "float",
        "dimensions": 2,
    }
    await embedder.aclose()


async def test_batches_and_query(fake_server: FakeServer) -> None:
    fake_server.queue(
        FakeResponse.json(embeddings([[1.0], [2.0]], order=[0, 1])),
        FakeResponse.json(embeddings([[3.0]], order=[0])),
        FakeResponse.json(embeddings([[9.0]], order=[0])),
    )
    embedder = OpenAIEmbedder(batch_size=2, base_url=fake_server.url + "/v1", api_key="sk-e")
    assert await embedder.embed(["a", "b", "c"]) == [[1.0], [2.0], [3.0]]
    assert await embedder.embed_query("q") == [9.0]
    assert [r.json()["input"] for r in fake_server.requests] == [["a", "b"], ["c"], ["q"]]
    assert await embedder.embed([]) == []


async def test_failures_are_memory_backend_errors_naming_the_key(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(KnowledgeBackendError, match="OPENAI_API_KEY"):
        await OpenAIEmbedder(base_url=fake_server.url + "/v1").embed(["a"])
    body = {
        "error": {
            "message": "Incorrect API key provided: sk-x.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
            "param": None,
        }
    }
    fake_server.queue(FakeResponse.json(body, status=401))
    with pytest.raises(KnowledgeBackendError, match="OPENAI_API_KEY"):
        await OpenAIEmbedder(base_url=fake_server.url + "/v1", api_key="sk-x").embed(["a"])
