"""web_fetch against a real HTTP server on loopback: conversion, the SSRF guard in every
encoding and on every redirect hop, body caps and timeouts."""

from __future__ import annotations

import ipaddress
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tether.testing import call_tool
from tether_tools.web import classify, parse_ipv4_loose, web_fetch

LOCAL = {"allow_private_hosts": ["127.0.0.1"]}

PAGE = """<!doctype html><html><head><title>Release notes</title>
<style>body { color: red }</style><script>alert('x')</script></head>
<body><h1>Version 2.0</h1><p>Now with <a href="/docs">docs</a> and <b>speed</b>.</p>
<ul><li>first</li><li>second</li></ul><noscript>enable js</noscript></body></html>"""


def _text(result: Any) -> str:
    assert isinstance(result.content, str)
    return str(result.content)


async def test_html_becomes_markdown(local_server: Any) -> None:
    local_server.routes["/notes"] = lambda h: local_server.respond(h, PAGE)
    result = await call_tool(web_fetch, {"url": f"{local_server.url}/notes"}, settings=LOCAL)
    text = _text(result)
    assert not result.is_error
    assert text.startswith(
        f"URL: {local_server.url}/notes\nContent-Type: text/html\nTitle: Release notes\n\n"
    )
    assert "# Version 2.0" in text
    assert "[docs](/docs)" in text and "**speed**" in text
    assert "- first\n- second" in text
    assert "alert" not in text and "color: red" not in text and "enable js" not in text
    assert local_server.requests[0][2]["Host"] == f"127.0.0.1:{local_server.port}"


async def test_json_and_plain_text_pass_through_binary_is_refused(local_server: Any) -> None:
    local_server.routes["/data.json"] = lambda h: local_server.respond(
        h, '{"a": [1, 2]}', content_type="application/json"
    )
    local_server.routes["/logo.png"] = lambda h: local_server.respond(
        h, b"\x89PNG\r\n\x1a\n" + bytes(50), content_type="image/png"
    )
    data = await call_tool(web_fetch, {"url": f"{local_server.url}/data.json"}, settings=LOCAL)
    assert _text(data).endswith('\n\n{"a": [1, 2]}')
    image = await call_tool(web_fetch, {"url": f"{local_server.url}/logo.png"}, settings=LOCAL)
    assert image.is_error and "is image/png (58 bytes), not text" in _text(image)


async def test_http_errors_are_reported_with_the_status(local_server: Any) -> None:
    result = await call_tool(web_fetch, {"url": f"{local_server.url}/missing"}, settings=LOCAL)
    assert result.is_error
    assert "answered HTTP 404 Not Found. The page said:\nnot here" in _text(result)


# -- the SSRF guard ------------------------------------------------------------------------------
async def test_loopback_is_refused_by_default(local_server: Any) -> None:
    local_server.routes["/"] = lambda h: local_server.respond(h, "secret admin page")
    result = await call_tool(web_fetch, {"url": f"{local_server.url}/"})
    assert result.is_error
    assert "the host 127.0.0.1 is a loopback address" in _text(result)
    assert "nothing was sent" in _text(result)
    assert local_server.requests == []


LOOPBACK_SPELLINGS = [
    "2130706433",  # decimal
    "0x7f000001",  # hex
    "0177.0.0.1",  # octal
    "0177.0.0.01",
    "127.1",  # short form
    "0x7f.1",
    "127.0.0.1.",
    "[::ffff:127.0.0.1]",  # IPv4-mapped IPv6
    "[::ffff:7f00:1]",
    "[::1]",
    "localhost",
    "LOCALHOST",
    "0.0.0.0",  # unspecified: reaches local services on many systems
    "0",
]


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
async def test_every_spelling_of_a_local_address_is_refused(local_server: Any, host: str) -> None:
    local_server.routes["/"] = lambda h: local_server.respond(h, "secret admin page")
    result = await call_tool(web_fetch, {"url": f"http://{host}:{local_server.port}/"})
    assert result.is_error
    assert "web_fetch only reaches public internet addresses" in _text(result)
    assert local_server.requests == []


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("169.254.169.254", "the cloud metadata service"),
        ("fd00:ec2::254", "the cloud metadata service"),
        ("::ffff:169.254.169.254", "the cloud metadata service"),
        ("10.1.2.3", "a private network address"),
        ("172.16.0.1", "a private network address"),
        ("192.168.1.1", "a private network address"),
        ("100.64.0.1", "not a public internet address"),
        ("fe80::1", "a link-local address"),
        ("fc00::1", "a private network address"),
        ("64:ff9b::a00:1", "a private network address"),
        ("2002:7f00:1::", "a loopback address"),
        ("224.0.0.1", "a multicast address"),
        ("0.0.0.0", "an unspecified address"),
        ("::", "an unspecified address"),
    ],
)
def test_non_public_addresses_are_classified(address: str, why: str) -> None:
    reason = classify(ipaddress.ip_address(address))
    assert reason is not None and reason.startswith(why)


def test_public_addresses_pass() -> None:
    for address in ("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "::ffff:8.8.8.8"):
        assert classify(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("2852039166", "169.254.169.254"),
        ("10.1", "10.0.0.1"),
        ("example.com", None),
        ("1.2.3.4.5", None),
        ("256.1.1.1", None),
        ("09.1.1.1", None),
    ],
)
def test_numeric_hosts_are_read_like_inet_aton(text: str, expected: str | None) -> None:
    parsed = parse_ipv4_loose(text)
    assert (str(parsed) if parsed else None) == expected


async def test_metadata_service_url_is_refused_before_any_connection() -> None:
    result = await call_tool(web_fetch, {"url": "http://169.254.169.254/latest/meta-data/iam/"})
    assert result.is_error
    assert "169.254.169.254 is the cloud metadata service" in _text(result)


async def test_redirects_are_followed_and_each_hop_is_checked(local_server: Any) -> None:
    port = local_server.port
    local_server.routes["/old"] = lambda h: local_server.respond(
        h, "", status=301, headers={"Location": "/new"}
    )
    local_server.routes["/new"] = lambda h: local_server.respond(
        h, "fresh", content_type="text/plain"
    )
    local_server.routes["/to-other-loopback"] = lambda h: local_server.respond(
        h, "", status=302, headers={"Location": f"http://0x7f000002:{port}/secret"}
    )
    local_server.routes["/to-metadata"] = lambda h: local_server.respond(
        h, "", status=307, headers={"Location": "http://169.254.169.254/latest/meta-data/"}
    )
    local_server.routes["/to-file"] = lambda h: local_server.respond(
        h, "", status=302, headers={"Location": "file:///etc/passwd"}
    )
    local_server.routes["/secret"] = lambda h: local_server.respond(h, "secret")

    followed = await call_tool(web_fetch, {"url": f"{local_server.url}/old"}, settings=LOCAL)
    assert _text(followed).startswith(f"URL: {local_server.url}/new\n")
    assert _text(followed).endswith("\n\nfresh")

    other = await call_tool(
        web_fetch, {"url": f"{local_server.url}/to-other-loopback"}, settings=LOCAL
    )
    assert other.is_error and "127.0.0.2) is a loopback address" in _text(other)
    metadata = await call_tool(
        web_fetch, {"url": f"{local_server.url}/to-metadata"}, settings=LOCAL
    )
    assert metadata.is_error and "cloud metadata service" in _text(metadata)
    scheme = await call_tool(web_fetch, {"url": f"{local_server.url}/to-file"}, settings=LOCAL)
    assert scheme.is_error and "only http and https URLs can be fetched, not file" in _text(scheme)
    assert "a redirect from" in _text(scheme)
    assert "/secret" not in local_server.paths


async def test_redirect_loops_stop(local_server: Any) -> None:
    local_server.routes["/loop"] = lambda h: local_server.respond(
        h, "", status=302, headers={"Location": "/loop"}
    )
    result = await call_tool(
        web_fetch, {"url": f"{local_server.url}/loop"}, settings={**LOCAL, "max_redirects": 3}
    )
    assert result.is_error and "redirected more than 3 times" in _text(result)
    assert local_server.paths == ["/loop"] * 4


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("file:///etc/passwd", "only http and https URLs can be fetched, not file"),
        ("ftp://example.com/x", "only http and https URLs can be fetched, not ftp"),
        ("gopher://127.0.0.1:70/", "only http and https URLs can be fetched, not gopher"),
        ("/relative/path", "only http and https URLs can be fetched"),
        ("http://user:pass@example.com/", "user name or password"),
    ],
)
async def test_bad_urls_are_refused(url: str, why: str) -> None:
    result = await call_tool(web_fetch, {"url": url})
    assert result.is_error and why in _text(result)


# -- size and time limits ---------------------------------------------------------------------
class _Huge:
    """Streams up to 50 MB; records how much it managed to send before the client left."""

    total = 50 * 1024 * 1024

    def __init__(self) -> None:
        self.sent = 0
        self.finished = threading.Event()

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", str(self.total))
        handler.end_headers()
        chunk = b"a" * 65536
        try:
            while self.sent < self.total:
                handler.wfile.write(chunk)
                self.sent += len(chunk)
        except OSError:
            pass
        finally:
            handler.close_connection = True
            self.finished.set()


async def test_huge_body_is_cut_at_the_cap_without_downloading_it(local_server: Any) -> None:
    huge = _Huge()
    local_server.routes["/huge"] = huge
    result = await call_tool(
        web_fetch, {"url": f"{local_server.url}/huge"}, settings={**LOCAL, "max_bytes": 100_000}
    )
    text = _text(result)
    assert not result.is_error
    assert "[The page is larger than 100000 bytes; only the first 100000 bytes were read.]" in text
    assert text.count("a") >= 40_000
    assert huge.finished.wait(30)
    assert huge.sent < huge.total


def _slow(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    try:
        handler.wfile.write(b"first bytes ")
        handler.wfile.flush()
        for _ in range(100):  # at most 20 s; ends as soon as the client has gone
            time.sleep(0.2)
            handler.wfile.write(b".")
            handler.wfile.flush()
    except OSError:
        pass
    handler.close_connection = True


async def test_slow_body_hits_the_timeout(local_server: Any) -> None:
    local_server.routes["/slow"] = _slow
    result = await call_tool(
        web_fetch, {"url": f"{local_server.url}/slow"}, settings={**LOCAL, "timeout": 1}
    )
    assert result.is_error
    assert "took longer than 1 s and was stopped" in _text(result)


async def test_long_pages_are_cut_with_a_note(local_server: Any) -> None:
    local_server.routes["/long"] = lambda h: local_server.respond(
        h, "word " * 10_000, content_type="text/plain"
    )
    result = await call_tool(
        web_fetch, {"url": f"{local_server.url}/long"}, settings={**LOCAL, "max_chars": 1000}
    )
    assert "[Cut at 1000 of 50000 characters.]" in _text(result)
