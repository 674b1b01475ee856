"""The ``google`` embedder over loopback HTTP: batching, task types, dimensions, errors."""

from __future__ import annotations

import pytest

from tether.errors import KnowledgeBackendError
from tether_google import GoogleEmbedder
from tether_knowledge.embedders import Embedder
from tether_testing.http import FakeResponse, FakeServer, RecordedRequest


def vector_for(text: str, size: int) -> list[float]:
    return [float(len(text))] + [0.5] * (size - 1)


def batch_handler(size: int):  # type: ignore[no-untyped-def]
    """Answers ``batchEmbedContents`` as the Gemini API does: one embedding per request."""

    def answer(request: RecordedRequest) -> FakeResponse:
        requests = request.json()["requests"]
        return FakeResponse.json(
            {
                "embeddings": [
                    {"values": vector_for(r["content"]["parts"][0]["text"], size)} for r in requests
                ]
            }
        )

    return answer


@pytest.fixture
def embedding_server():  # type: ignore[no-untyped-def]
    with FakeServer(batch_handler(768)) as server:
        yield server


async def test_documents_are_embedded_in_batches_in_order(
    embedding_server, wire, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GEMINI_API_KEY", wire.key)
    embedder = GoogleEmbedder("gemini-embedding-001", dimensions=768, base_url=embedding_server.url)
    texts = [f"chunk {'x' * i}" for i in range(150)]
    try:
        vectors = await embedder.embed(texts)
    finally:
        await embedder.aclose()

    assert isinstance(embedder, Embedder)
    assert len(vectors) == 150
    assert [v[0] for v in vectors] == [float(len(t)) for t in texts]
    assert all(len(v) == 768 for v in vectors)
    sizes = [len(r.json()["requests"]) for r in embedding_server.requests]
    assert sizes == [100, 50]
    first = embedding_server.requests[0]
    assert first.path.endswith("/models/gemini-embedding-001:batchEmbedContents")
    assert first.headers["x-goog-api-key"] == wire.key
    entry = first.json()["requests"][0]
    assert entry["taskType"] == "RETRIEVAL_DOCUMENT"
    assert entry["outputDimensionality"] == 768
    assert entry["model"] == "models/gemini-embedding-001"
    assert embedder.name == "google/gemini-embedding-001@768"


async def test_queries_use_the_query_task_type(embedding_server, wire, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GOOGLE_API_KEY", wire.key)
    embedder = GoogleEmbedder("text-embedding-004", base_url=embedding_server.url)
    try:
        vector = await embedder.embed_query("where is the config?")
    finally:
        await embedder.aclose()
    assert vector[0] == float(len("where is the config?"))
    entry = embedding_server.requests[0].json()["requests"][0]
    assert entry["taskType"] == "RETRIEVAL_QUERY"
    assert "outputDimensionality" not in entry
    assert embedder.dimensions == 768
    assert embedder.name == "google/text-embedding-004"


async def test_unknown_model_learns_its_dimensions_from_the_first_answer(
    embedding_server, wire, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GEMINI_API_KEY", wire.key)
    embedder = GoogleEmbedder("gemini-embedding-exp", base_url=embedding_server.url)
    assert embedder.dimensions is None
    try:
        await embedder.embed(["a"])
    finally:
        await embedder.aclose()
    assert embedder.dimensions == 768


async def test_empty_input_makes_no_request(embedding_server, wire, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GEMINI_API_KEY", wire.key)
    embedder = GoogleEmbedder(base_url=embedding_server.url)
    assert await embedder.embed([]) == []
    assert embedding_server.requests == []


async def test_missing_key_is_a_memory_backend_error_naming_the_variables(server) -> None:  # type: ignore[no-untyped-def]
    embedder = GoogleEmbedder(base_url=server.url)
    with pytest.raises(KnowledgeBackendError) as caught:
        await embedder.embed(["a"])
    assert "GEMINI_API_KEY" in str(caught.value) and "GOOGLE_API_KEY" in str(caught.value)
    assert server.requests == []


async def test_api_errors_become_memory_backend_errors(server, wire, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GEMINI_API_KEY", wire.key)
    server.queue(wire.error(429, "RESOURCE_EXHAUSTED", "Embedding quota exceeded."))
    embedder = GoogleEmbedder(base_url=server.url)
    try:
        with pytest.raises(KnowledgeBackendError, match="Embedding quota exceeded"):
            await embedder.embed(["a"])
    finally:
        await embedder.aclose()


async def test_a_short_answer_is_reported(server, wire, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GEMINI_API_KEY", wire.key)
    server.queue(FakeResponse.json({"embeddings": [{"values": [0.1, 0.2]}]}))
    embedder = GoogleEmbedder(base_url=server.url)
    try:
        with pytest.raises(KnowledgeBackendError, match="1 vector"):
            await embedder.embed(["a", "b"])
    finally:
        await embedder.aclose()


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        GoogleEmbedder(batch_size=500)
    with pytest.raises(ValueError, match="dimensions"):
        GoogleEmbedder(dimensions=0)
