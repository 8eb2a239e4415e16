"""Source code cut at its top-level definitions (functions, classes...), by tree-sitter.

The grammars come from ``tree-sitter-language-pack`` (pinned below 1.0 in pyproject: its
later versions download grammars at run time; the 0.x wheels carry them). A language is
chosen by file extension; a file without a grammar (or that does not parse) is one
section, split on blank lines and lines like any text.

A definition's section runs from the comments and decorators directly above it to its
last character; the code between definitions (imports, constants) is a module-level
section. A class-like definition also lists its member definitions: when the whole class
is over the chunk cap, it is cut at its members instead of at arbitrary lines.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from retrieval.connectors.base import Section

log = logging.getLogger(__name__)

# Extension (or file name) -> tree-sitter-language-pack language name.
LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".jl": "julia",
    ".r": "r",
    ".dart": "dart",
    ".zig": "zig",
}

# Node types that are definitions when a name can be found in them.
_DEF_SUFFIXES = ("_definition", "_declaration", "_item", "_specifier", "_statement")
_DEF_TYPES = {"class", "module", "method", "singleton_method", "function", "object"}
# Never definitions, whatever their names say.
_NOT_DEF = ("import", "package", "use_", "include", "expression", "return", "if_", "for_")
# Member types a class is cut at (fields stay with the class's header).
_MEMBER_MARKS = ("method", "function", "constructor", "class", "fn", "singleton")
# Fields that wrap the definition proper (decorators, ``export``).
_WRAPPERS = ("definition", "declaration")
_NAME_TYPES = {"identifier", "type_identifier", "field_identifier", "constant", "name"}


def language_for(path: str) -> str | None:
    return LANGUAGES.get(PurePosixPath(path).suffix.lower())


@lru_cache(maxsize=64)
def _parser(language: str) -> Any:
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


def code_sections(text: str, language: str | None) -> list[Section] | None:
    """The sections of ``text`` (offsets in characters), or ``None`` without a grammar
    for ``language`` or when the file does not parse."""
    if language is None:
        return None
    try:
        parser = _parser(language)
    except (LookupError, ImportError, ValueError, RuntimeError) as exc:
        log.debug("no tree-sitter grammar for %s: %s", language, exc)
        return None
    data = text.encode("utf-8")
    tree = parser.parse(data)
    root = tree.root_node
    offsets = _CharOffsets(text, data)
    units = _definitions(root.named_children)
    if not units:
        return None
    sections: list[Section] = []
    cursor = 0
    for start_node, node, name in units:
        start = offsets(start_node.start_byte)
        end = offsets(node.end_byte)
        if start > cursor and text[cursor:start].strip():
            sections.append(Section(cursor, start))
        sections.append(_definition_section(node, name, start, end, offsets))
        cursor = end
    if text[cursor:].strip():
        sections.append(Section(cursor, len(text)))
    return sections


def _definition_section(
    node: Any, name: str, start: int, end: int, offsets: _CharOffsets
) -> Section:
    members = [
        (s, n, member)
        for s, n, member in _definitions(_body_children(node))
        if any(mark in n.type for mark in _MEMBER_MARKS)
    ]
    symbols = [name]
    parts: list[Section] = []
    cursor = start
    for member_start, member_node, member in members:
        m_start, m_end = offsets(member_start.start_byte), offsets(member_node.end_byte)
        qualified = f"{name}.{member}"
        symbols += [qualified, member]
        if m_start > cursor:
            parts.append(Section(cursor, m_start, (name,), (name,)))
        parts.append(Section(m_start, m_end, (name, member), (qualified, member)))
        cursor = m_end
    if parts and end > cursor:
        parts.append(Section(cursor, end, (name,), (name,)))
    return Section(start, end, (name,), tuple(dict.fromkeys(symbols)), tuple(parts))


def _body_children(node: Any) -> list[Any]:
    inner = _unwrap(node)
    body = inner.child_by_field_name("body")
    if body is None:  # e.g. a Ruby class: members are its direct children
        return [c for c in inner.named_children if c.type != "comment"]
    return list(body.named_children)


def _unwrap(node: Any) -> Any:
    for wrapper in _WRAPPERS:
        inner = node.child_by_field_name(wrapper)
        if inner is not None and inner.type != node.type:
            return _unwrap(inner)
    return node


def _definitions(children: list[Any]) -> list[tuple[Any, Any, str]]:
    """(first node of the unit: leading comments included, the definition, its name) of
    each definition among ``children``, in order."""
    out: list[tuple[Any, Any, str]] = []
    for i, node in enumerate(children):
        name = definition_name(node)
        if name is None:
            continue
        first = node
        j = i - 1
        # Comments directly above (no blank line between) belong to the definition.
        while j >= 0 and "comment" in children[j].type:
            if first.start_point[0] - children[j].end_point[0] > 1:
                break
            if out and children[j].start_byte < out[-1][1].end_byte:
                break
            first = children[j]
            j -= 1
        out.append((first, node, name))
    return out


def definition_name(node: Any) -> str | None:
    """The name a definition node defines, or ``None`` when it defines none."""
    kind = node.type
    if any(mark in kind for mark in _NOT_DEF):
        return None
    if not (kind in _DEF_TYPES or kind.endswith(_DEF_SUFFIXES)):
        return None
    inner = _unwrap(node)
    if inner is not node:
        return definition_name(inner) if inner.type != node.type else None
    if kind in ("lexical_declaration", "variable_declaration"):
        # const handler = () => ...: a function or class bound to a name is a definition;
        # a plain constant stays with the module-level code
        for declarator in inner.named_children:
            value = declarator.child_by_field_name("value")
            if value is not None and ("function" in value.type or "class" in value.type):
                return _name_of(declarator)
        return None
    found = _name_of(inner)
    return found


def _name_of(node: Any, depth: int = 0) -> str | None:
    for field_name in ("name", "declarator", "type"):
        child = node.child_by_field_name(field_name)
        if child is None:
            continue
        if child.type in _NAME_TYPES or (field_name == "name" and not child.named_children):
            return _text(child)
        if depth < 4:
            found = _name_of(child, depth + 1)
            if found:
                return found
    if depth == 0:
        # Go: type_declaration -> type_spec(name); a declarator list's first name.
        for child in node.named_children:
            if child.type.endswith("_spec") or child.type.endswith("declarator"):
                found = _name_of(child, depth + 1)
                if found:
                    return found
    return None


def _text(node: Any) -> str | None:
    raw = node.text
    if not raw:
        return None
    name = raw.decode("utf-8", "replace").strip()
    return name if name and len(name) <= 200 and "\n" not in name else None


class _CharOffsets:
    """Byte offsets of the UTF-8 text -> character offsets (identity for ASCII text)."""

    def __init__(self, text: str, data: bytes) -> None:
        self._ascii = len(text) == len(data)
        self._data = data

    def __call__(self, byte_offset: int) -> int:
        if self._ascii:
            return byte_offset
        return len(self._data[:byte_offset].decode("utf-8", "ignore"))
