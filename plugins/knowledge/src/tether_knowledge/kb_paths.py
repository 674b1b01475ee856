"""How ``tether kb`` names documents: by absolute, resolved path.

A document's id is its file's absolute path with symbolic links and ``..`` resolved
(``/home/ana/shop/docs/setup.md``), so the same file added from two directories, or
through two spellings of its path, is one document. For reading, ids are shown relative
to the knowledge base's root when the file is inside it: the directory of the
configuration file in use (the project's ``tether.toml``), else the current directory.
``kb rm`` accepts an id, a path as shown, or any path to the file.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.config import Config

__all__ = ["document_id", "kb_root", "shown", "spellings"]


def document_id(path: Path) -> str:
    """The id of the file at ``path``: its absolute, resolved path, with '/'."""
    return path.resolve().as_posix()


def kb_root(config: Config) -> Path:
    """The directory document ids are shown relative to (see the module docstring)."""
    if config.source is not None:
        return config.source.resolve().parent
    return Path.cwd().resolve()


def shown(doc_id: str, root: Path) -> str:
    """``doc_id`` relative to ``root`` when inside it, else unchanged."""
    path = PurePosixPath(doc_id)
    if not path.is_absolute():
        return doc_id
    try:
        return path.relative_to(root.as_posix()).as_posix()
    except ValueError:
        return doc_id


def spellings(given: str, root: Path) -> list[str]:
    """The ids ``given`` may mean, most literal first: itself, the file it names from the
    current directory, and the file it names from ``root``."""
    candidates = [given, document_id(Path(given)), document_id(root / given)]
    return list(dict.fromkeys(candidates))
