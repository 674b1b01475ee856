"""Turning fetched bodies into text a model reads well: HTML becomes Markdown
(BeautifulSoup + markdownify), other text passes through, binary is refused."""

from __future__ import annotations

import re

__all__ = ["html_to_markdown", "is_html", "is_text"]

_DROP = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "iframe",
    "canvas",
    "form",
    "button",
    "input",
    "select",
)
_TEXT_TYPES = re.compile(
    r"^(text/.*|application/(json|.*\+json|xml|.*\+xml|javascript|ecmascript|x-javascript|x-yaml|yaml|toml|x-toml|x-sh|x-python|sql|graphql|ld\+json|x-ndjson|csv))$"
)


def is_html(content_type: str, body: bytes) -> bool:
    if content_type in ("text/html", "application/xhtml+xml"):
        return True
    if not content_type:
        head = body[:1024].lstrip().lower()
        return head.startswith((b"<!doctype html", b"<html")) or b"<body" in head
    return False


def is_text(content_type: str, body: bytes) -> bool:
    if content_type:
        return _TEXT_TYPES.match(content_type) is not None
    return b"\x00" not in body[:8192]


def html_to_markdown(body: bytes, charset: str | None) -> tuple[str | None, str]:
    """``(title, markdown)`` of an HTML document. Scripts, styles, forms and other
    non-content elements are dropped; links and headings are kept."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(body, "html.parser", from_encoding=charset)
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag is not None else None
    for name in _DROP:
        for element in soup.find_all(name):
            element.decompose()
    head = soup.find("head")
    if head is not None:
        head.decompose()
    markdown = MarkdownConverter(
        heading_style="ATX", bullets="-", escape_underscores=False
    ).convert_soup(soup)
    markdown = re.sub(r"[ \t]+\n", "\n", markdown)
    markdown = re.sub(r"\n{3,}", "\n\n", markdown).strip()
    return title or None, markdown
