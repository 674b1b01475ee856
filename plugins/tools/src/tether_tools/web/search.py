"""``web_search`` and its backends.

A backend is chosen in config (``[tool_settings.web_search] backend = "..."``):

- ``duckduckgo``: keyless; the DuckDuckGo HTML endpoint, parsed with BeautifulSoup.
- ``searxng``: keyless; a SearXNG instance's JSON API (``base_url`` required, and the
  instance must enable the ``json`` format).
- ``brave``: the Brave Search API; key from ``$BRAVE_API_KEY`` (or ``api_key_env``).
- ``tavily``: the Tavily search API; key from ``$TAVILY_API_KEY`` (or ``api_key_env``).
- ``"package.module:factory"``: your own; ``factory(settings, env)`` returns an object with
  ``async search(client, query, count) -> list[SearchResult]``.

Every backend takes ``base_url`` (for proxies, self-hosted instances and tests) and
``timeout``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, urlparse

from tether.errors import ConfigError, ToolError
from tether.provenance import mark_untrusted
from tether.tools import ToolContext, tool

from ..settings import get_int, get_number, get_str

__all__ = ["BACKENDS", "SearchBackend", "SearchResult", "web_search"]

DEFAULT_TIMEOUT = 20.0
MAX_RESULTS = 20
DUCKDUCKGO_URL = "https://html.duckduckgo.com"
BRAVE_URL = "https://api.search.brave.com"
TAVILY_URL = "https://api.tavily.com"


@dataclass(frozen=True, slots=True)
class SearchResult:
    title: str
    url: str
    snippet: str = ""


class SearchBackend(Protocol):
    name: str

    async def search(self, client: Any, query: str, count: int) -> list[SearchResult]:
        """Up to ``count`` results for ``query``; ``client`` is an ``httpx.AsyncClient``."""
        ...


def _api_key(
    settings: Mapping[str, Any], env: Mapping[str, str], backend: str, default_env: str
) -> str:
    variable = get_str(settings, "web_search", "api_key_env", default_env) or default_env
    key = env.get(variable) or os.environ.get(variable)
    if not key:
        raise ToolError(
            f"The {backend} search backend needs an API key, and ${variable} is not set. "
            f"Ask the user to set {variable}, or to choose a keyless backend (duckduckgo, searxng)."
        )
    return key


@dataclass(slots=True)
class DuckDuckGo:
    base_url: str = DUCKDUCKGO_URL
    name: str = "duckduckgo"

    async def search(self, client: Any, query: str, count: int) -> list[SearchResult]:
        from bs4 import BeautifulSoup

        response = await client.post(f"{self.base_url.rstrip('/')}/html/", data={"q": query})
        _check(response, self.name)
        soup = BeautifulSoup(response.content, "html.parser")
        results = []
        for item in soup.select("div.result"):
            if "result--ad" in (item.get("class") or []):
                continue
            link = item.select_one("a.result__a")
            if link is None:
                continue
            snippet = item.select_one(".result__snippet")
            results.append(
                SearchResult(
                    title=" ".join(link.get_text().split()),
                    url=_unwrap_redirect(str(link.get("href", ""))),
                    snippet=" ".join(snippet.get_text().split()) if snippet is not None else "",
                )
            )
            if len(results) >= count:
                break
        return results


def _unwrap_redirect(href: str) -> str:
    """DuckDuckGo links go through ``//duckduckgo.com/l/?uddg=<target>``."""
    parsed = urlparse(href if "//" not in href[:2] else "https:" + href)
    target = parse_qs(parsed.query).get("uddg")
    return target[0] if target else href


@dataclass(slots=True)
class SearXNG:
    base_url: str
    name: str = "searxng"

    async def search(self, client: Any, query: str, count: int) -> list[SearchResult]:
        response = await client.get(
            f"{self.base_url.rstrip('/')}/search", params={"q": query, "format": "json"}
        )
        _check(
            response, self.name, hint=" Is the json format enabled in the instance's settings.yml?"
        )
        return [
            SearchResult(str(r.get("title", "")), str(r.get("url", "")), str(r.get("content", "")))
            for r in _json(response, self.name).get("results", [])[:count]
        ]


@dataclass(slots=True)
class Brave:
    api_key: str
    base_url: str = BRAVE_URL
    name: str = "brave"

    async def search(self, client: Any, query: str, count: int) -> list[SearchResult]:
        response = await client.get(
            f"{self.base_url.rstrip('/')}/res/v1/web/search",
            params={"q": query, "count": count},
            headers={"X-Subscription-Token": self.api_key, "Accept": "application/json"},
        )
        _check(response, self.name)
        web = _json(response, self.name).get("web") or {}
        return [
            SearchResult(
                str(r.get("title", "")),
                str(r.get("url", "")),
                _strip_tags(str(r.get("description", ""))),
            )
            for r in web.get("results", [])[:count]
        ]


@dataclass(slots=True)
class Tavily:
    api_key: str
    base_url: str = TAVILY_URL
    name: str = "tavily"

    async def search(self, client: Any, query: str, count: int) -> list[SearchResult]:
        response = await client.post(
            f"{self.base_url.rstrip('/')}/search",
            json={"query": query, "max_results": count},
            headers={"Authorization": f"Bearer {self.api_key}"},
        )
        _check(response, self.name)
        return [
            SearchResult(str(r.get("title", "")), str(r.get("url", "")), str(r.get("content", "")))
            for r in _json(response, self.name).get("results", [])[:count]
        ]


def _strip_tags(text: str) -> str:
    import re

    return re.sub(r"</?strong>", "", text)


def _check(response: Any, backend: str, hint: str = "") -> None:
    if response.status_code in (401, 403):
        raise ToolError(
            f"The {backend} search backend rejected the API key (HTTP {response.status_code}). Ask the user to check it."
        )
    if response.status_code == 429:
        raise ToolError(
            f"The {backend} search backend is rate-limiting requests (HTTP 429). Try again later."
        )
    if response.status_code >= 400:
        raise ToolError(f"The {backend} search backend answered HTTP {response.status_code}.{hint}")


def _json(response: Any, backend: str) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        raise ToolError(f"The {backend} search backend did not answer with JSON.") from None
    if not isinstance(data, dict):
        raise ToolError(f"The {backend} search backend answered with unexpected JSON.")
    return data


BackendFactory = Callable[[Mapping[str, Any], Mapping[str, str]], SearchBackend]


def _base(settings: Mapping[str, Any]) -> str | None:
    return get_str(settings, "web_search", "base_url")


def _searxng(settings: Mapping[str, Any], env: Mapping[str, str]) -> SearchBackend:
    base = _base(settings)
    if not base:
        raise ConfigError(
            'The searxng search backend needs [tool_settings.web_search] base_url = "https://your-instance".'
        )
    return SearXNG(base)


BACKENDS: dict[str, BackendFactory] = {
    "duckduckgo": lambda s, e: DuckDuckGo(_base(s) or DUCKDUCKGO_URL),
    "searxng": _searxng,
    "brave": lambda s, e: Brave(_api_key(s, e, "brave", "BRAVE_API_KEY"), _base(s) or BRAVE_URL),
    "tavily": lambda s, e: Tavily(
        _api_key(s, e, "tavily", "TAVILY_API_KEY"), _base(s) or TAVILY_URL
    ),
}


def backend_from_settings(settings: Mapping[str, Any], env: Mapping[str, str]) -> SearchBackend:
    name = get_str(settings, "web_search", "backend")
    if not name:
        raise ToolError(
            "web_search has no search backend configured, so no search was made. Ask the user to set "
            '[tool_settings.web_search] backend = "duckduckgo" (no key needed), "searxng" (with base_url), '
            '"brave" or "tavily" (with an API key) in tether.toml.'
        )
    factory = BACKENDS.get(name)
    if factory is None and ":" in name:
        module, _, attribute = name.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"web_search backend {name!r} could not be loaded: {exc}.") from exc
    if factory is None:
        raise ConfigError(
            f"Unknown web_search backend {name!r}. Choose one of {', '.join(sorted(BACKENDS))}, "
            'or "package.module:factory" for your own.'
        )
    return factory(settings, env)


@tool(read_only=True)
async def web_search(query: str, ctx: ToolContext, max_results: int = 5) -> str:
    """Search the web and get a list of result titles, URLs and snippets.

    Use it to find pages about something you do not have a URL for: documentation,
    error messages, recent releases. Then read the promising results with web_fetch.
    Do not use it for facts that are in the workspace (use grep) or for a URL you
    already have (use web_fetch).

    Example: {"query": "httpx AsyncClient timeout configuration", "max_results": 5}

    Output: numbered results, each with its title, URL and a one-line snippet.

    Args:
        query: What to search for, as you would type it into a search engine.
        max_results: How many results to return, 1 to 20.
    """
    import httpx

    if not query.strip():
        raise ToolError("The query is empty. Say what to search for.")
    if not 1 <= max_results <= MAX_RESULTS:
        raise ToolError(f"max_results must be between 1 and {MAX_RESULTS}.")
    settings = ctx.settings
    backend = backend_from_settings(settings, ctx.env)
    count = min(max_results, get_int(settings, "web_search", "max_results", MAX_RESULTS))
    timeout = get_number(settings, "web_search", "timeout", DEFAULT_TIMEOUT)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=True) as client:
        try:
            results = await backend.search(client, query, count)
        except httpx.HTTPError as exc:
            raise ToolError(
                f"The {backend.name} search backend could not be reached: {type(exc).__name__}: {exc}."
            ) from None
    if not results:
        return f"No results for {query!r} ({backend.name})."
    lines = [f"Results for {query!r} ({backend.name}):"]
    for number, result in enumerate(results, 1):
        lines.append(
            f"{number}. {result.title}\n   {result.url}"
            + (f"\n   {result.snippet}" if result.snippet else "")
        )
    mark_untrusted(ctx, f"web search results for {query!r}")
    return "\n".join(lines)
