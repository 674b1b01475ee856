"""Token estimator speed against tiktoken's o200k_base, on the same realistic mix.

Run: ``python bench/tokens_bench.py``. Prints one JSON line: megabytes per second for
the estimator and for tiktoken (``encode_ordinary``), and the speed-up, per kind of text
and overall. tiktoken's o200k_base file is rebuilt offline from the ranks that the
``quicktok-v1`` package ships (the same procedure as the accuracy tests).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

from tether.tokens import estimate_tokens

ROOT = Path(__file__).resolve().parents[1]
URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def o200k() -> Any:
    import quicktok
    import tiktoken

    cache = Path(tempfile.mkdtemp(prefix="tiktoken-"))
    raw = (Path(quicktok.__file__).parent / "data" / "o200k.vocab").read_bytes()
    (count,) = struct.unpack_from("<I", raw, 0)
    offset, ranks = 4, []
    for _ in range(count):
        (length,) = struct.unpack_from("<H", raw, offset)
        token = raw[offset + 2 : offset + 2 + length]
        (rank,) = struct.unpack_from("<I", raw, offset + 2 + length)
        offset += 6 + length
        ranks.append((rank, token))
    ranks.sort()
    (cache / hashlib.sha1(URL.encode()).hexdigest()).write_bytes(
        "".join(f"{base64.b64encode(t).decode()} {r}\n" for r, t in ranks).encode()
    )
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    return tiktoken.get_encoding("o200k_base")


def samples() -> dict[str, str]:
    spec = importlib.util.spec_from_file_location(
        "samples", ROOT / "core" / "tests" / "test_tokens_accuracy.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.SAMPLES)


def rate(fn: Any, texts: list[str], repeat: int = 5) -> float:
    size = sum(len(t.encode()) for t in texts)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for text in texts:
            fn(text)
        best = min(best, time.perf_counter() - start)
    return size / best / 1e6


def main() -> None:
    encoding = o200k()
    result: dict[str, Any] = {"bench": "tokens", "unit": "MB/s"}
    everything: list[str] = []
    for kind, text in samples().items():
        texts = [text] * 50  # message-sized texts, as the harness estimates them
        everything += texts
        ours, theirs = rate(estimate_tokens, texts), rate(encoding.encode_ordinary, texts, repeat=2)
        result[kind] = {
            "estimator": round(ours, 1),
            "tiktoken": round(theirs, 2),
            "speedup": round(ours / theirs, 1),
        }
    ours, theirs = (
        rate(estimate_tokens, everything),
        rate(encoding.encode_ordinary, everything, repeat=2),
    )
    result["all"] = {
        "estimator": round(ours, 1),
        "tiktoken": round(theirs, 2),
        "speedup": round(ours / theirs, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
