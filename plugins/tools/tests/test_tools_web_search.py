"""web_search backends against loopback fakes that speak each service's response format."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tether.testing import call_tool
from tether_tools.web import web_search

DDG_PAGE = """<html><body><div class="results">
<div class="result results_links results_links_deep result--ad"><div class="links_main">
  <a class="result__a" href="https://ads.example/buy">Sponsored thing</a></div></div>
<div class="result results_links results_links_deep web-result"><div class="links_main result__body">
  <h2 class="result__title"><a rel="nofollow" class="result__a"
     href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.python-httpx.org%2Fadvanced%2Ftimeouts%2F&amp;rut=abc">Timeouts - HTTPX</a></h2>
  <a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">HTTPX is careful to enforce <b>timeouts</b> everywhere.</a>
</div></div>
<div class="result results_links results_links_deep web-result"><div class="links_main result__body">
  <h2 class="result__title"><a rel="nofollow" class="result__a" href="https://example.org/direct">Direct link</a></h2>
  <a class="result__snippet">Second snippet.</a>
</div></div>
</div></body></html>"""


def _text(result: Any) -> str:
    assert isinstance(result.content, str)
    return str(result.content)


async def test_no_backend_configured_is_a_clear_error() -> None:
    result = await call_tool(web_search, {"query": "anything"})
    assert result.is_error
    assert "web_search has no search backend configured" in _text(result)
    assert 'backend = "duckduckgo"' in _text(result)


async def test_unknown_backend_names_the_choices() -> None:
    result = await call_tool(web_search, {"query": "x"}, settings={"backend": "altavista"})
    assert result.is_error
    assert (
        "Unknown web_search backend 'altavista'. Choose one of brave, duckduckgo, searxng, tavily"
        in _text(result)
    )


async def test_duckduckgo_html_results_are_parsed(local_server: Any) -> None:
    local_server.routes["/html/"] = lambda h: local_server.respond(h, DDG_PAGE)
    result = await call_tool(
        web_search,
        {"query": "httpx timeouts"},
        settings={"backend": "duckduckgo", "base_url": local_server.url},
    )
    assert _text(result) == (
        "Results for 'httpx timeouts' (duckduckgo):\n"
        "1. Timeouts - HTTPX\n   https://www.python-httpx.org/advanced/timeouts/\n"
        "   HTTPX is careful to enforce timeouts everywhere.\n"
        "2. Direct link\n   https://example.org/direct\n   Second snippet."
    )
    method, path, _, body = local_server.requests[0]
    assert (method, path) == ("POST", "/html/")
    assert parse_qs(body.decode()) == {"q": ["httpx timeouts"]}


async def test_brave_sends_the_key_and_reads_web_results(
    local_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "brave-test-key")
    payload = {
        "type": "search",
        "web": {
            "type": "search",
            "results": [
                {
                    "title": "tether",
                    "url": "https://example.com/tether",
                    "description": "An <strong>agent</strong> harness",
                },
                {"title": "two", "url": "https://example.com/2", "description": "second"},
            ],
        },
    }
    local_server.routes["/res/v1/web/search"] = lambda h: local_server.respond(
        h, json.dumps(payload), content_type="application/json"
    )
    result = await call_tool(
        web_search,
        {"query": "agent harness", "max_results": 1},
        settings={"backend": "brave", "base_url": local_server.url},
    )
    assert _text(result) == (
        "Results for 'agent harness' (brave):\n1. tether\n   https://example.com/tether\n   An agent harness"
    )
    _, path, headers, _ = local_server.requests[0]
    assert headers["X-Subscription-Token"] == "brave-test-key"
    assert parse_qs(urlsplit(path).query) == {"q": ["agent harness"], "count": ["1"]}


async def test_brave_without_a_key_says_which_variable(
    local_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    result = await call_tool(
        web_search, {"query": "x"}, settings={"backend": "brave", "base_url": local_server.url}
    )
    assert result.is_error and "$BRAVE_API_KEY is not set" in _text(result)
    assert local_server.requests == []


async def test_rejected_key_is_reported(local_server: Any) -> None:
    local_server.routes["/search"] = lambda h: local_server.respond(
        h, '{"detail": {"error": "Unauthorized"}}', status=401, content_type="application/json"
    )
    result = await call_tool(
        web_search,
        {"query": "x"},
        settings={"backend": "tavily", "base_url": local_server.url, "api_key_env": "MY_TAVILY"},
        env={"MY_TAVILY": "tvly-bad"},
    )
    assert result.is_error and "tavily search backend rejected the API key (HTTP 401)" in _text(
        result
    )
    assert local_server.requests[0][2]["Authorization"] == "Bearer tvly-bad"


async def test_tavily_results(local_server: Any) -> None:
    answer = {
        "query": "q",
        "results": [{"title": "T", "url": "https://t.example", "content": "c", "score": 0.9}],
    }
    local_server.routes["/search"] = lambda h: local_server.respond(
        h, json.dumps(answer), content_type="application/json"
    )
    result = await call_tool(
        web_search,
        {"query": "q"},
        settings={"backend": "tavily", "base_url": local_server.url},
        env={"TAVILY_API_KEY": "k"},
    )
    assert _text(result) == "Results for 'q' (tavily):\n1. T\n   https://t.example\n   c"
    assert json.loads(local_server.requests[0][3]) == {"query": "q", "max_results": 5}


async def test_searxng_json_api(local_server: Any) -> None:
    answer = {
        "query": "q",
        "results": [
            {"title": "S", "url": "https://s.example", "content": "snippet", "engine": "x"}
        ],
    }
    local_server.routes["/search"] = lambda h: local_server.respond(
        h, json.dumps(answer), content_type="application/json"
    )
    result = await call_tool(
        web_search, {"query": "q"}, settings={"backend": "searxng", "base_url": local_server.url}
    )
    assert _text(result) == "Results for 'q' (searxng):\n1. S\n   https://s.example\n   snippet"
    assert parse_qs(urlsplit(local_server.requests[0][1]).query) == {"q": ["q"], "format": ["json"]}


async def test_searxng_needs_a_base_url() -> None:
    result = await call_tool(web_search, {"query": "q"}, settings={"backend": "searxng"})
    assert result.is_error and "searxng search backend needs" in _text(result)


async def test_custom_backend_by_import_path() -> None:
    result = await call_tool(
        web_search,
        {"query": "q"},
        settings={"backend": "tether_tools.web.search:nonexistent_factory"},
    )
    assert result.is_error and "could not be loaded" in _text(result)
