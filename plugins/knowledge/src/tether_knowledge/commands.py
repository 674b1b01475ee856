"""``tether kb``: build and query the knowledge base from the command line.

::

    tether kb add docs/ README.md        # index files (directories recursively)
    tether kb search "how are retries capped?"
    tether kb list
    tether kb rm docs/old.md

Documents are identified by their absolute, resolved path (:mod:`tether_knowledge.kb_paths`),
so ``kb add`` run again, from anywhere, updates them in place: unchanged files are
skipped, changed ones re-chunked, and the same file is never indexed twice. They are shown
relative to the knowledge base's root (the configuration file's directory) when inside
it. The backend and embedder come from ``[knowledge]`` in the configuration; ``--backend``
and ``--embedder`` override them for one command.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tether_cli import CliState, fail, pass_state
from tether_cli.terminal_text import echo

if TYPE_CHECKING:
    from tether_knowledge.knowledge_base import KnowledgeBase

__all__ = ["kb"]

#: Directories never descended into when indexing a directory.
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox"}
)
#: Files larger than this are skipped (not documentation, usually data).
MAX_FILE_BYTES = 5_000_000


def _open(state: CliState, backend: str | None, embedder: str | None) -> KnowledgeBase:
    from tether_knowledge.knowledge_base import KnowledgeBase

    manager = state.plugin_manager()
    return KnowledgeBase.open(
        state.config(),
        backends=manager.knowledge_backends,
        embedders=manager.embedders,
        backend=backend,
        embedder=embedder,
    )


_backend_option = click.option(
    "--backend", metavar="NAME", help="Knowledge-base backend (default: [knowledge] backend)."
)
_embedder_option = click.option(
    "--embedder", metavar="NAME", help="Embedder (default: [knowledge] embedder)."
)


@click.group()
def kb() -> None:
    """Index documents and search them (the knowledge base behind kb_search)."""


def _files(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                for name in sorted(names):
                    if not name.startswith("."):
                        yield Path(root) / name
        elif path.is_file():
            yield path
        else:
            fail(f"{path} does not exist. Give files or directories to index.")


def _read_text(path: Path) -> str | None:
    """The file's text, or ``None`` for binary, undecodable or oversized files."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@kb.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Re-index files even if they are unchanged.")
@click.option(
    "--batch",
    "batch_chunks",
    default=2048,
    show_default=True,
    type=click.IntRange(1, None),
    help="Chunks embedded and written together; an interruption loses at most one batch.",
)
@_backend_option
@_embedder_option
@pass_state
def add(
    state: CliState,
    paths: tuple[Path, ...],
    force: bool,
    batch_chunks: int,
    backend: str | None,
    embedder: str | None,
) -> None:
    """Index files and directories (recursively; hidden and binary files are skipped).

    Files are written in batches, each stored whole or not at all: after an
    interruption (Ctrl-C) the index is consistent, and running the same command again
    finishes the job, skipping what was already indexed.
    """
    from tether_knowledge.knowledge_base import AddOutcome, AddProgress

    from .kb_paths import document_id

    files = list({document_id(path): path for path in _files(paths)}.values())
    knowledge = _open(state, backend, embedder)
    skipped: list[str] = []
    progress = _progress_bar(len(files))
    task = progress.add_task("", total=len(files))
    written = AddProgress(documents=0, chunks=0, skipped=0, started=0.0)

    def documents() -> Iterator[tuple[str, str]]:
        for path in files:
            text = _read_text(path)
            if text is None:
                skipped.append(str(path))
            else:
                yield document_id(path), text

    def report(state: AddProgress) -> None:
        nonlocal written
        written = state
        done = state.documents + state.skipped + len(skipped)
        rate = f"{state.chunks_per_second:,.0f} chunks/s"
        progress.update(task, completed=done, description=rate)

    async def index() -> dict[str, AddOutcome]:
        with progress:
            return await knowledge.add_many(
                documents(), force=force, batch_chunks=batch_chunks, progress=report
            )

    try:
        outcomes = asyncio.run(index())
    except KeyboardInterrupt:
        echo(
            f"Interrupted: {written.documents} files indexed in this run, the index is "
            f"consistent. Run the same command again to finish (indexed files are skipped).",
            err=True,
        )
        raise SystemExit(130) from None
    finally:
        knowledge.close()
    _print_summary(outcomes, written, len(files), skipped, keyword_only=knowledge.keyword_only)


def _progress_bar(files: int) -> Any:
    """A transient progress bar on stderr (shown for two files or more)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]Indexing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
        disable=files < 2,
    )


def _print_summary(
    outcomes: dict[str, Any], written: Any, files: int, skipped: list[str], *, keyword_only: bool
) -> None:
    from tether_knowledge.knowledge_base import AddOutcome

    counts = {outcome: 0 for outcome in AddOutcome}
    for outcome in outcomes.values():
        counts[outcome] += 1
    summary = ", ".join(f"{n} {outcome.value}" for outcome, n in counts.items())
    rate = (
        f" ({written.chunks:,} chunks, {written.chunks_per_second:,.0f}/s)"
        if written.chunks
        else ""
    )
    echo(f"Indexed {files - len(skipped)} files: {summary}{rate}.")
    if skipped:
        echo(f"Skipped {len(skipped)} binary or unreadable files.")
    if keyword_only:
        echo("Keyword-only index: no embedder is configured ([knowledge] embedder).")


@kb.command()
@click.argument("query")
@click.option(
    "-k",
    "count",
    default=5,
    show_default=True,
    type=click.IntRange(1, 100),
    help="Passages to show.",
)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "keyword", "vector"]),
    default="hybrid",
    show_default=True,
    help="Rank by both signals, or by one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print passages as JSON lines.")
@_backend_option
@_embedder_option
@pass_state
def search(
    state: CliState,
    query: str,
    count: int,
    mode: Any,
    as_json: bool,
    backend: str | None,
    embedder: str | None,
) -> None:
    """Show the passages that best match QUERY, with their line references."""
    knowledge = _open(state, backend, embedder)
    try:
        passages = asyncio.run(knowledge.search(query, k=count, mode=mode))
    finally:
        knowledge.close()
    if as_json:
        for p in passages:
            echo(
                json.dumps(
                    {
                        "doc": p.doc_id,
                        "start_line": p.start_line,
                        "end_line": p.end_line,
                        "score": p.score,
                        "keyword_rank": p.keyword_rank,
                        "vector_rank": p.vector_rank,
                        "keyword_only": p.keyword_only,
                        "text": p.text,
                    },
                    ensure_ascii=False,
                )
            )
        return
    if knowledge.keyword_only:
        echo("(keyword search only: no embedder is configured)")
    if not passages:
        echo("No passages found.")
    from .kb_paths import kb_root, shown

    root = kb_root(state.config())
    for number, p in enumerate(passages, start=1):
        lines = f"{p.start_line}" if p.start_line == p.end_line else f"{p.start_line}-{p.end_line}"
        echo(f"[{number}] {shown(p.doc_id, root)}:{lines}  score {p.score:.4f}", bold=True)
        echo(p.text)
        echo()


@kb.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print documents as JSON lines.")
@_backend_option
@pass_state
def list_documents(state: CliState, as_json: bool, backend: str | None) -> None:
    """List indexed documents with their chunk counts."""

    knowledge = _open(state, backend, None)
    try:
        documents = knowledge.documents()
    finally:
        knowledge.close()
    from .kb_paths import kb_root, shown

    root = kb_root(state.config())
    for doc in documents:
        if as_json:
            echo(
                json.dumps(
                    {
                        "doc": doc.doc_id,
                        "chunks": doc.chunks,
                        "embedder": doc.embedder,
                        "hash": doc.content_hash,
                    }
                )
            )
        else:
            vectors = doc.embedder or "keywords only"
            echo(f"{shown(doc.doc_id, root)}\t{doc.chunks} chunks\t{vectors}")
    if not as_json:
        echo(f"{len(documents)} documents.")


@kb.command()
@click.argument("docs", nargs=-1, required=True)
@_backend_option
@pass_state
def rm(state: CliState, docs: tuple[str, ...], backend: str | None) -> None:
    """Remove documents from the index: by id, as `kb list` shows them, or by any path
    to the file."""
    knowledge = _open(state, backend, None)
    from .kb_paths import kb_root, spellings

    root = kb_root(state.config())
    missing = []
    try:
        for doc in docs:
            removed = any(asyncio.run(knowledge.remove(id_)) for id_ in spellings(doc, root))
            if removed:
                echo(f"Removed {doc}.")
            else:
                missing.append(doc)
    finally:
        knowledge.close()
    if missing:
        fail(f"Not in the knowledge base: {', '.join(missing)}. See `tether kb list`.")
