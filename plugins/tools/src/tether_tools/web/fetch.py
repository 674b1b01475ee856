"""``web_fetch``: read a web page as Markdown, safely."""

from __future__ import annotations

import asyncio
import codecs
from typing import Any
from urllib.parse import urlsplit

from tether.errors import ToolError
from tether.provenance import mark_untrusted
from tether.tools import ToolContext, tool

from ..settings import get_int, get_number, get_str, get_str_list
from .addresses import AddressPolicy, classify, parse_ipv4_loose, resolve_public
from .convert import html_to_markdown, is_html, is_text

__all__ = ["web_fetch"]

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
DEFAULT_MAX_CHARS = 40_000
DEFAULT_MAX_REDIRECTS = 5
DEFAULT_USER_AGENT = "tether-web-fetch/0.1 (+https://pypi.org/project/tether-tools/)"
_REDIRECTS = (301, 302, 303, 307, 308)


@tool(max_output_chars=None, read_only=True)
async def web_fetch(url: str, ctx: ToolContext) -> str:
    """Fetch a web page or text document from the public internet and return it as text.

    Use it to read documentation, articles, API references or raw files when you have a
    URL, e.g. one found with web_search. HTML pages are converted to Markdown (headings,
    lists, links kept; scripts and styles dropped); JSON, XML and plain text are returned
    as they are; images and other binary files are refused. Only http and https URLs on
    public addresses work: localhost, private networks and cloud metadata endpoints are
    refused. Very long pages are cut, with a note.

    Example: {"url": "https://docs.python.org/3/library/asyncio-task.html"}

    Output: `URL: <final URL after redirects>`, `Content-Type: ...`, `Title: ...`, a
    blank line, then the page as Markdown.

    Args:
        url: Absolute http(s) URL of the page.
    """
    import httpx

    settings = ctx.settings
    timeout = get_number(settings, "web_fetch", "timeout", DEFAULT_TIMEOUT)
    max_bytes = get_int(settings, "web_fetch", "max_bytes", DEFAULT_MAX_BYTES)
    max_chars = get_int(settings, "web_fetch", "max_chars", DEFAULT_MAX_CHARS)
    max_redirects = get_int(
        settings, "web_fetch", "max_redirects", DEFAULT_MAX_REDIRECTS, minimum=0
    )
    user_agent = (
        get_str(settings, "web_fetch", "user_agent", DEFAULT_USER_AGENT) or DEFAULT_USER_AGENT
    )
    policy = AddressPolicy.from_entries(get_str_list(settings, "web_fetch", "allow_private_hosts"))
    current = _parse(url, policy)
    received = 0
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(timeout), follow_redirects=False, trust_env=False
    ) as client:
        try:
            async with asyncio.timeout(timeout):
                for _ in range(max_redirects + 1):
                    response = await _send(client, current, policy, user_agent)
                    try:
                        location = response.headers.get("location")
                        if response.status_code in _REDIRECTS and location:
                            current = _parse(
                                str(current.join(location)), policy, redirected_from=str(current)
                            )
                            continue
                        chunks: list[bytes] = []
                        truncated = False
                        async for chunk in response.aiter_bytes():
                            if received + len(chunk) > max_bytes:
                                chunks.append(chunk[: max_bytes - received])
                                received, truncated = max_bytes, True
                                break
                            chunks.append(chunk)
                            received += len(chunk)
                        page = _render(
                            current, response, b"".join(chunks), truncated, max_bytes, max_chars
                        )
                        mark_untrusted(ctx, f"the web page {current}")
                        return page
                    finally:
                        await response.aclose()
                raise ToolError(
                    f"Fetching {url} was redirected more than {max_redirects} times; stopped."
                )
        except TimeoutError:
            raise ToolError(
                f"Fetching {current} took longer than {timeout:g} s and was stopped "
                f"({received} bytes of the body had arrived)."
            ) from None
        except httpx.HTTPError as exc:
            raise ToolError(
                f"Fetching {current} failed: {type(exc).__name__}: {exc or 'no details'}."
            ) from None


def _parse(url: str, policy: AddressPolicy, redirected_from: str | None = None) -> Any:
    import httpx

    where = f" (a redirect from {redirected_from})" if redirected_from else ""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        parsed = _numeric_host_url(url, policy, exc)
        if parsed is None:
            raise ToolError(f"{url!r}{where} is not a valid URL: {exc}.") from None
    if parsed.scheme not in ("http", "https"):
        raise ToolError(
            f"Refused {url!r}{where}: only http and https URLs can be fetched, not {parsed.scheme or 'a relative URL'}."
        )
    if not parsed.host:
        raise ToolError(f"{url!r}{where} has no host name.")
    if parsed.userinfo:
        raise ToolError(
            f"Refused {url!r}{where}: URLs with a user name or password are not fetched."
        )
    return parsed


def _numeric_host_url(url: str, policy: AddressPolicy, error: Exception) -> Any:
    """URLs whose host is an IPv4 address in a form httpx rejects (``0177.0.0.1``): refuse
    them if the address is not public, else rewrite the host to its canonical form."""
    import httpx

    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    address = parse_ipv4_loose(host) if host else None
    if host is None or address is None:
        return None
    why = classify(address)
    if why is not None and not policy.permits(host, address):
        raise ToolError(
            f"Refused to fetch {url}: the host {host} ({address}) is {why}. web_fetch only reaches public "
            "internet addresses; nothing was sent."
        )
    netloc = urlsplit(url).netloc
    return httpx.URL(url.replace(netloc, netloc.replace(host, str(address), 1), 1))


async def _send(client: Any, url: Any, policy: AddressPolicy, user_agent: str) -> Any:
    """Send a GET to the checked address of ``url``'s host, keeping the name for the
    ``Host`` header and TLS (SNI and certificate checks)."""
    port = url.port or (443 if url.scheme == "https" else 80)
    address = await resolve_public(url.host, port, policy, str(url))
    host_header = url.netloc.decode("ascii")
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    request = client.build_request(
        "GET",
        url.copy_with(host=str(address)),
        headers={
            "Host": host_header,
            "User-Agent": user_agent,
            "Accept": "text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.5",
        },
        extensions=extensions,
    )
    return await client.send(request, stream=True)


def _render(
    url: Any, response: Any, body: bytes, truncated: bool, max_bytes: int, max_chars: int
) -> str:
    content_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    charset = _known_codec(response.charset_encoding)
    if response.status_code >= 400:
        preview = _as_text(content_type, body, charset)[1][:1000] if body else ""
        raise ToolError(
            f"{url} answered HTTP {response.status_code} {response.reason_phrase}."
            + (f" The page said:\n{preview}" if preview else "")
        )
    if not (is_html(content_type, body) or is_text(content_type, body)):
        raise ToolError(
            f"{url} is {content_type or 'binary data'} ({len(body)}{'+' if truncated else ''} bytes), "
            "not text; web_fetch only returns web pages and text documents."
        )
    title, text = _as_text(content_type, body, charset)
    header = [f"URL: {url}", f"Content-Type: {content_type or 'unknown'}"]
    if title:
        header.append(f"Title: {title}")
    notes = []
    if truncated:
        notes.append(
            f"[The page is larger than {max_bytes} bytes; only the first {max_bytes} bytes were read.]"
        )
    if len(text) > max_chars:
        notes.append(f"[Cut at {max_chars} of {len(text)} characters.]")
        text = text[:max_chars]
    return "\n".join(header) + "\n\n" + text + ("\n\n" + "\n".join(notes) if notes else "")


def _as_text(content_type: str, body: bytes, charset: str | None) -> tuple[str | None, str]:
    if is_html(content_type, body):
        return html_to_markdown(body, charset)
    return None, body.decode(charset or "utf-8", errors="replace")


def _known_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        codecs.lookup(name)
    except LookupError:
        return None
    return name
