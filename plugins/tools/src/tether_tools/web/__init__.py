"""Web tools: ``web_fetch`` (a page as Markdown, behind an SSRF guard) and ``web_search``
(pluggable search backends)."""

from __future__ import annotations

from .addresses import AddressPolicy, classify, parse_ipv4_loose
from .fetch import web_fetch
from .search import BACKENDS, SearchBackend, SearchResult, web_search

__all__ = [
    "BACKENDS",
    "AddressPolicy",
    "SearchBackend",
    "SearchResult",
    "classify",
    "parse_ipv4_loose",
    "web_fetch",
    "web_search",
]
