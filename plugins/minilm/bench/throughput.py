"""Embedding throughput of the local-minilm embedder on a BEIR-style corpus.

Usage: python plugins/minilm/bench/throughput.py CORPUS.jsonl [--limit N] [--batch-size B]
       [--model-dir DIR]

Each document is embedded as "title text" (as BEIR retrieval does), truncated by the model
to 256 tokens. Prints documents per second and the mean token count.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tether_minilm import MiniLMEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--model-dir", type=Path, default=None)
    args = parser.parse_args()

    texts = []
    with args.corpus.open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            texts.append(f"{doc.get('title', '')} {doc.get('text', '')}".strip())
            if len(texts) >= args.limit:
                break

    embedder = MiniLMEmbedder(args.model_dir, batch_size=args.batch_size)
    started = time.perf_counter()
    embedder.load()
    loaded = time.perf_counter() - started

    started = time.perf_counter()
    embedder.embed_array(texts)
    elapsed = time.perf_counter() - started

    from tokenizers import Tokenizer

    from tether_minilm import find_model_files

    tokenizer = Tokenizer.from_file(str(find_model_files(args.model_dir).tokenizer))
    tokenizer.enable_truncation(max_length=256)
    tokens = sum(len(e.ids) for e in tokenizer.encode_batch(texts)) / len(texts)
    print(f"model load: {loaded:.2f} s")
    print(
        f"{len(texts)} documents (mean {tokens:.0f} tokens after truncation to 256) in "
        f"{elapsed:.2f} s: {len(texts) / elapsed:.1f} documents/s, batch size {args.batch_size}"
    )


if __name__ == "__main__":
    main()
