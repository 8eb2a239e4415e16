"""HTML pages: main-content text with headings and outgoing links, parsed by selectolax
(the lexbor engine; ~700 Python-docs pages a second on one core).

Main content: the first of ``[role=main]``, ``<main>``, ``#main-content`` (Confluence
exports), a single ``<article>`` that holds text; else ``<body>``. Inside it, navigation
and page furniture are dropped: ``nav``, ``aside``, ``footer``, forms, a ``header``
without a heading in it, ARIA roles ``navigation``/``banner``/``contentinfo``/
``complementary``/``search``, and elements whose class or id names a sidebar, navbar,
breadcrumb, footer or cookie banner. What is left is flattened to text: block elements
start a new paragraph, ``<br>`` a new line, table cells are separated by `` | ``,
``<pre>`` keeps its whitespace, everything else collapses runs of whitespace. h1-h6
become :class:`~retrieval.chunking.Heading` s with offsets into that text.

Links: each ``<a href>`` of the main content, with the offset of its anchor text, the
target resolved against the page's own path (``../ops/deploy.html#x`` on
``teams/payments.html`` -> ``ops/deploy.html``; fragments and queries of relative links
dropped, self links ``#x`` and ``javascript:`` ignored, absolute URLs kept as written).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from retrieval.chunking import Heading

_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "dd", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "footer", "form", "header", "hr", "li", "main", "nav", "ol",
    "p", "pre", "section", "table", "tbody", "thead", "tfoot", "tr", "ul", "details",
    "summary", "caption",
}  # fmt: skip
_CELL_TAGS = {"td", "th"}
_ROW_TAGS = {"tr", "thead", "tbody", "tfoot"}  # a table row is one line
_SKIP_TAGS = {
    "script", "style", "noscript", "template", "head", "svg", "title", "button", "select",
    "option", "iframe", "object", "canvas", "dialog", "input", "textarea", "math",
}  # fmt: skip
_BOILERPLATE_TAGS = {"nav", "aside", "footer", "form", "menu"}
_BOILERPLATE_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search"}
_BOILERPLATE_NAME_RE = re.compile(
    r"(?:^|[\s_-])(?:sphinxsidebar|sidebar|sidenav|navbar|breadcrumbs?|breadcrumb-section|"
    r"footer|site-footer|page-footer|cookie-banner|cookies?|skip-link)(?:$|[\s_-])",
    re.IGNORECASE,
)
# Generated manuals name their furniture by compounds: DocBook's "navheader"/"navfooter",
# "navbar", "navigation", a "page-header" or "site-footer". A class or id that starts with
# "nav" or ends with "footer" is navigation; one that ends with "header" is, unless it
# holds a heading (a section's header does).
_NAV_NAME_RE = re.compile(r"(?:^|\s)(?:nav[\w-]*|[\w-]*footer)(?:$|\s)", re.IGNORECASE)
_HEADER_NAME_RE = re.compile(r"(?:^|\s)[\w-]*header(?:$|\s)", re.IGNORECASE)
# A block that is nearly all link text (a menu, a breadcrumb trail, a language switcher,
# a "Prev | Up | Next" bar) is navigation whatever it is called: boilerplate detection by
# link density. Counted only for short blocks of several links, so a paragraph that
# links a few words, or a long table of contents section, is never in doubt.
_NAV_MAX_CHARS = 600
_NAV_MIN_LINKS = 3
_NAV_LINK_SHARE = 0.8
_MAIN_SELECTORS = ("[role=main]", "main", "#main-content")
_HEADING_TAGS = {f"h{i}": i for i in range(1, 7)}
_CONTAINER_TAGS = _BLOCK_TAGS | _BOILERPLATE_TAGS | {"header"}
_SPACE_RE = re.compile(r"\s+")
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


@dataclass
class HtmlPage:
    text: str
    headings: list[Heading] = field(default_factory=list)
    title: str | None = None
    links: list[tuple[int, str]] = field(default_factory=list)  # (offset in text, target)


class _Builder:
    """Accumulates the flattened text; offsets are positions in the final string."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0

    def last(self) -> str:
        """The last character emitted ("" before any); parts are never empty."""
        return self.parts[-1][-1] if self.parts else ""

    def emit(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.length += len(text)

    def trim_trailing_spaces(self) -> None:
        while self.parts and self.parts[-1].endswith(" "):
            last = self.parts.pop()
            self.length -= len(last)
            kept = last.rstrip(" ")
            self.emit(kept)
            if kept:
                break

    def brk(self, newlines: int = 2) -> None:
        self.trim_trailing_spaces()
        if not self.parts:
            return
        have = 0
        for part in reversed(self.parts):
            stripped = part.rstrip("\n")
            have += len(part) - len(stripped)
            if stripped or have >= newlines:
                break
        if have < newlines:
            self.emit("\n" * (newlines - have))

    def text(self, data: str, pre: bool) -> None:
        if pre:
            self.emit(data)
            return
        if not data.strip():  # whitespace between tags: at most one space
            if self.parts and self.parts[-1][-1] not in "\n ":
                self.emit(" ")
            return
        data = _SPACE_RE.sub(" ", data)
        if not self.parts or self.parts[-1][-1] in "\n ":
            data = data.lstrip(" ")
        self.emit(data)

    def value(self) -> str:
        return "".join(self.parts).rstrip()


def _is_boilerplate(node: LexborNode) -> bool:
    tag = node.tag
    attrs = node.attributes
    if tag in _BOILERPLATE_TAGS:
        return True
    if (attrs.get("role") or "").strip().lower() in _BOILERPLATE_ROLES:
        return tag != "header" or not _has_heading(node)
    if tag == "header" and not _has_heading(node):
        return True
    names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}".strip()
    if names and (_BOILERPLATE_NAME_RE.search(names) or _NAV_NAME_RE.search(names)):
        return True
    if names and _HEADER_NAME_RE.search(names) and not _has_heading(node):
        return True
    return _mostly_links(node)


def _mostly_links(node: LexborNode) -> bool:
    text = "".join(node.text(deep=True).split())
    if not text or len(text) > _NAV_MAX_CHARS or _has_heading(node):
        return False
    anchors = node.css("a")
    if len(anchors) < _NAV_MIN_LINKS:
        return False
    linked = sum(len("".join(a.text(deep=True).split())) for a in anchors)
    return linked >= _NAV_LINK_SHARE * len(text)


def _has_heading(node: LexborNode) -> bool:
    return node.css_first("h1, h2, h3, h4, h5, h6") is not None


def _main_root(tree: LexborHTMLParser) -> LexborNode | None:
    for selector in _MAIN_SELECTORS:
        node = tree.css_first(selector)
        if node is not None and node.text(strip=True):
            return node
    articles = tree.css("article")
    if len(articles) == 1 and articles[0].text(strip=True):
        return articles[0]
    return tree.body


def resolve_link(href: str, doc_path: str) -> str | None:
    """``href`` resolved against the page at ``doc_path`` (relative to the loaded folder);
    None for self links, ``javascript:`` and empty hrefs."""
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    if _SCHEME_RE.match(href) or href.startswith("//"):
        return None if href.lower().startswith(("javascript:", "data:")) else href
    path = unquote(urlsplit(href).path)
    if not path:
        return None
    if path.startswith("/"):
        return path.lstrip("/") or None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(doc_path), path))
    return None if joined == "." else joined


def _space(out: _Builder) -> None:
    tail = out.last()
    if tail and not tail[-1].isspace():
        out.emit(" ")


def html_page(html: str, doc_path: str = "") -> HtmlPage:
    """The main content of ``html`` as text, with headings, ``<title>`` and links (targets
    resolved against ``doc_path``, the page's path relative to the loaded folder)."""
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = " ".join(title_node.text().split()) if title_node is not None else ""
    root = _main_root(tree)
    out = _Builder()
    headings: list[Heading] = []
    links: list[tuple[int, str]] = []
    if root is None:
        return HtmlPage("", [], title or None, [])
    # Iterative walk: (node, entering). Deeply nested pages must not hit the recursion limit.
    stack: list[tuple[LexborNode, bool]] = [(root, True)]
    pre_depth = 0
    cell_depth = 0  # inside a table cell (Sphinx wraps cell text in <p>)
    open_headings: list[tuple[int, int, int]] = []  # (level, start offset, parts index)
    seen_links: set[str] = set()
    while stack:
        node, entering = stack.pop()
        tag = node.tag
        if not entering:
            if tag in _HEADING_TAGS and open_headings:
                out.trim_trailing_spaces()
                level, start, index = open_headings.pop()
                text = "".join(out.parts[index:])
                stripped = text.strip()
                if stripped:
                    lead = len(text) - len(text.lstrip())
                    headings.append(
                        Heading(level, " ".join(stripped.split()), start + lead, out.length)
                    )
                out.brk()
            elif tag in _BLOCK_TAGS:
                if tag == "pre":
                    pre_depth -= 1
                if cell_depth and tag not in _ROW_TAGS:
                    _space(out)  # a paragraph inside a cell stays on the row's line
                else:
                    out.brk(1 if tag in _ROW_TAGS else 2)
            elif tag in _CELL_TAGS:
                cell_depth -= 1
                out.trim_trailing_spaces()
            continue
        if tag == "-text":
            out.text(node.text_content or "", pre_depth > 0)
            continue
        if tag is None or tag.startswith(("-", "#", "!")) or tag in _SKIP_TAGS:
            continue  # comments, doctype, scripts...
        if tag in _CONTAINER_TAGS and node is not root and _is_boilerplate(node):
            continue  # (inline elements are never page furniture on their own)
        if tag == "br":
            out.brk(1)
            continue
        if tag in _HEADING_TAGS:
            out.brk()
            open_headings.append((_HEADING_TAGS[tag], out.length, len(out.parts)))
        elif tag in _BLOCK_TAGS:
            if cell_depth and tag not in _ROW_TAGS:
                _space(out)
            else:
                out.brk(1 if tag in _ROW_TAGS else 2)
            if tag == "pre":
                pre_depth += 1
        elif tag in _CELL_TAGS:
            cell_depth += 1
            tail = out.last()
            if tail and tail != "\n":
                out.trim_trailing_spaces()
                out.emit(" | ")
        elif tag == "a":
            if "headerlink" in (node.attributes.get("class") or ""):
                continue  # Sphinx's pilcrow permalink after each heading
            target = resolve_link(node.attributes.get("href") or "", doc_path)
            if target is not None and target not in seen_links:
                seen_links.add(target)
                links.append((out.length, target))
        stack.append((node, False))
        children = list(node.iter(include_text=True))
        stack.extend((child, True) for child in reversed(children))
    text = out.value()
    return HtmlPage(text, headings, title or None, links)


def html_to_text(html: str) -> tuple[str, list[Heading], str | None]:
    """(text, headings with offsets into that text, <title>) from an HTML document."""
    page = html_page(html)
    return page.text, page.headings, page.title
