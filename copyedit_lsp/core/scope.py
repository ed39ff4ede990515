"""The edit scope and the syntax guard, from tree-sitter parses of Python, JS and TypeScript.

Lines are those of :func:`~copyedit_lsp.core.resolver.split_lines`, numbered from 0 here.  Nodes are
mapped to lines by byte offset, never by tree-sitter's rows (which count ``\\n`` only), so CRLF
and lone-``\\r`` files get the same line numbers as everywhere else.  The grammars read a lone
``\\r`` as plain whitespace, so a lone-``\\r`` JavaScript file parses as usual, while a lone-``\\r``
Python file does not parse into its definitions: its scope is the whole document.
"""

from __future__ import annotations

import functools
import threading
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter_javascript
import tree_sitter_python
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser, Point, Query, QueryCursor, Tree

from .languages import language_of_path
from .resolver import split_lines

LANGUAGES: dict[str, Language] = {
    "python": Language(tree_sitter_python.language()),
    "javascript": Language(tree_sitter_javascript.language()),
    "javascriptreact": Language(tree_sitter_javascript.language()),
    "typescript": Language(tree_sitter_typescript.language_typescript()),
    "typescriptreact": Language(tree_sitter_typescript.language_tsx()),
}

_FUNCTIONS = {"function_definition", "function_declaration", "generator_function_declaration"}
_CLASSES = {"class_definition", "class_declaration", "abstract_class_declaration"}
_FUNCTION_VALUES = {"arrow_function", "function_expression", "generator_function"}
_VALUES = _FUNCTION_VALUES | {"class"}
_DECLARATIONS = {"lexical_declaration", "variable_declaration"}
_FIELDS = {"field_definition", "public_field_definition"}
_WRAPPERS = {"decorated_definition", "export_statement"}
# Python nodes a definition can stand in (statements hold no ``def``): the walk goes no deeper.
_PYTHON_HOLDERS = {
    "module", "block", "decorated_definition", "class_definition", "function_definition", "if_statement",
    "elif_clause", "else_clause", "for_statement", "while_statement", "try_statement", "except_clause",
    "except_group_clause", "finally_clause", "with_statement", "match_statement", "case_clause", "ERROR",
}  # fmt: skip


def language_for(language_id: str | None, path: str | None = None) -> str | None:
    """The languageId we parse: ``language_id`` if known, else the one of ``path``'s extension."""
    if language_id in LANGUAGES:
        return language_id
    return language_of_path(path) if path else None


@dataclass(frozen=True)
class Scope:
    """Lines ``start_line``..``end_line - 1`` (0-based, whole lines) to edit, and what they are."""

    start_line: int
    end_line: int
    kind: str  # "selection" | "function" | "class" | "method" | "document"
    name: str | None


@functools.cache
def _parser(language_id: str) -> Parser:
    return Parser(LANGUAGES[language_id])


_PARSE_LOCK = threading.Lock()  # a Parser must not parse on two threads at once
_RECENT: dict[str, list[tuple[bytes, Tree]]] = {}  # per language, the last sources parsed and their trees
RECENT = 4  # sources kept per language to reparse the next from


@dataclass(frozen=True)
class Parsed:
    """A parse tree, the text's lines and each line's starting byte offset (then the length)."""

    tree: Tree
    lines: list[str]
    starts: list[int]

    def line_of(self, byte: int) -> int:
        return bisect_right(self.starts, byte) - 1

    def lines_of(self, node: Node) -> tuple[int, int]:
        """The first and last line (inclusive) that ``node`` covers."""
        last = node.end_byte - 1 if node.end_byte > node.start_byte else node.start_byte
        return self.line_of(node.start_byte), self.line_of(last)

    def line_node(self, line: int) -> Node:
        """The smallest node that holds the first non-blank character of ``line`` (or its break).

        The first character, not the whole line: a line's text can end in a sibling (a ``;``
        after a class field) and its covering node would then be the parent.
        """
        text = self.lines[line]
        byte = self.starts[line] + len(text[: len(text) - len(text.lstrip())].encode())
        if byte == self.starts[line + 1]:  # a blank line
            byte = self.starts[line]
        return self.tree.root_node.descendant_for_byte_range(byte, byte + 1)


@functools.lru_cache(maxsize=8)
def parse(text: str, language_id: str) -> Parsed:
    """The tree-sitter parse of ``text`` with its lines and their byte offsets (the last few cached)."""
    source = text.encode()
    with _PARSE_LOCK:
        recent = _RECENT.setdefault(language_id, [])
        base = _edited(recent, source)
        tree = _parser(language_id).parse(source, *([base] if base is not None else []))
        if base is not None and tree.root_node.has_error:  # error recovery may differ from a fresh parse's
            tree = _parser(language_id).parse(source)
        recent[:] = [(source, tree), *recent][:RECENT]
    lines = split_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode()))
    return Parsed(tree, lines, starts)


def _edited(recent: list[tuple[bytes, Tree]], new: bytes) -> Tree | None:
    """A copy of the tree of the one of the ``recent`` sources most like ``new`` (at least half of
    it the same at its start and end: an edit's result beside the file it edits), edited to stand
    for ``new`` (the bytes between their common start and end replaced), so tree-sitter reparses
    only around them; None where none is that alike."""
    best, start, end = None, 0, 0
    for old, tree in recent:
        shortest = min(len(old), len(new))
        head = _common_length(old, new, shortest, lambda text, n: text[:n])
        tail = _common_length(old, new, shortest - head, lambda text, n: text[len(text) - n :])
        if 2 * (head + tail) >= len(new) and head + tail > start + end:
            best, start, end = (old, tree), head, tail
    if best is None:
        return None
    old, tree = best
    edited = tree.copy()
    edited.edit(
        start_byte=start,
        old_end_byte=len(old) - end,
        new_end_byte=len(new) - end,
        start_point=_point(old, start),
        old_end_point=_point(old, len(old) - end),
        new_end_point=_point(new, len(new) - end),
    )
    return edited


def _common_length(a: bytes, b: bytes, most: int, part: Callable[[bytes, int], bytes]) -> int:
    """The largest ``n`` up to ``most`` with ``part(a, n) == part(b, n)`` (by halves: each
    comparison in C)."""
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        if part(a, middle) == part(b, middle):
            low = middle
        else:
            high = middle - 1
    return low


def _point(source: bytes, offset: int) -> Point:
    """tree-sitter's (row, column) of byte ``offset``: rows counted by ``\\n``, columns in bytes."""
    return Point(source.count(b"\n", 0, offset), offset - (source.rfind(b"\n", 0, offset) + 1))


def edit_scope(text: str, language_id: str | None, start_line: int, end_line: int) -> Scope:
    """The lines to edit for a selection of lines ``start_line``..``end_line`` (0-based, inclusive).

    A selection over several lines is itself the scope; a cursor line gets the innermost function,
    method or class around it (with its decorators or ``export``, without the comments above it),
    else the whole document.
    """
    if start_line != end_line:
        return Scope(start_line, end_line + 1, "selection", None)
    if language_id in LANGUAGES:
        parsed = parse(text, language_id)
        if 0 <= start_line < len(parsed.lines):
            node: Node | None = parsed.line_node(start_line)
            while node is not None:
                found = _definition(node)
                if found is not None:
                    outer, kind, name = found
                    first, last = parsed.lines_of(outer)
                    return Scope(first, last + 1, kind, name)
                node = node.parent
        return Scope(0, len(parsed.lines), "document", None)
    return Scope(0, len(split_lines(text)), "document", None)


@dataclass(frozen=True)
class Definition:
    """A function, method or class of a text: lines ``start_line``..``end_line - 1`` (0-based, with
    its decorators or ``export``), its name, and the names of the definitions around it."""

    start_line: int
    end_line: int
    kind: str  # "function" | "method" | "class"
    name: str
    outer: tuple[str, ...] = ()

    @property
    def qualified(self) -> str:
        return ".".join((*self.outer, self.name))


@functools.lru_cache(maxsize=8)
def definitions(text: str, language_id: str | None) -> tuple[Definition, ...]:
    """Every named definition of ``text``, nested ones too, in order (none for an unknown
    language; the last few cached: the checks read the same texts)."""
    if language_id not in LANGUAGES:
        return ()
    parsed = parse(text, language_id)
    if language_id == "python":
        hits = _python_hits(parsed.tree.root_node)
    else:  # a definition may stand in any expression: tree-sitter finds the candidates
        hits = [
            _definition(node)
            for node in QueryCursor(_candidates(language_id)).captures(parsed.tree.root_node).get("d", [])
        ]
    wholes = {(hit[0].start_byte, hit[0].end_byte): hit for hit in hits if hit is not None and hit[2]}
    found: list[Definition] = []
    around: list[tuple[int, tuple[str, ...]]] = []  # the definitions holding the next: their end, their names
    for (_, end), (whole, kind, name) in sorted(wholes.items(), key=lambda item: (item[0][0], -item[0][1])):
        while around and around[-1][0] < end:
            around.pop()
        outer = around[-1][1] if around else ()
        first, last = parsed.lines_of(whole)
        found.append(Definition(first, last + 1, kind, str(name), outer))
        around.append((end, (*outer, str(name))))
    return tuple(found)


def _python_hits(root: Node) -> list[tuple[Node, str, str | None] | None]:
    """:func:`_definition` of each node a Python definition can stand in, and of each child."""
    hits = []
    stack = [root]
    while stack:
        node = stack.pop()
        hits.append(_definition(node))
        if node.type in _PYTHON_HOLDERS:
            stack.extend(node.named_children)
    return hits


@functools.cache
def _candidates(language_id: str) -> Query:
    """The query for the nodes of ``language_id`` that are or hold a definition's name."""
    language = LANGUAGES[language_id]
    kinds = sorted(_FUNCTIONS | _CLASSES | _FUNCTION_VALUES | {"method_definition", "class"})
    return Query(language, " ".join(f"({kind}) @d" for kind in kinds if language.id_for_node_kind(kind, True)))


def _definition(node: Node) -> tuple[Node, str, str | None] | None:
    """(the whole statement, kind, name) if ``node`` is or wraps a definition, else None."""
    kind = node.type
    if kind in _WRAPPERS:
        inner = (
            node.child_by_field_name("definition")
            or node.child_by_field_name("declaration")
            or node.child_by_field_name("value")
        )
        return _definition(inner) if inner is not None else None
    if kind in _DECLARATIONS:
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in _VALUES:
                return _definition(value)
        return None
    if kind in _FIELDS:
        value = node.child_by_field_name("value")
        return _definition(value) if value is not None and value.type in _FUNCTION_VALUES else None
    if kind in _CLASSES:
        return _outer(node), "class", _name(node, "name")
    if kind in _FUNCTIONS:
        outer = _outer(node)
        return outer, "method" if _in_class_body(outer) else "function", _name(node, "name")
    if kind == "method_definition":
        return node, "method", _name(node, "name")
    if kind in _FUNCTION_VALUES or (kind == "class" and node.is_named):
        value_kind = "class" if kind == "class" else "function"
        parent = node.parent
        if parent.type == "variable_declarator" and parent.parent.type in _DECLARATIONS:
            return _outer(parent.parent), value_kind, _name(parent, "name")
        if parent.type in _FIELDS and value_kind == "function":
            return parent, "method", _name(parent, "property") or _name(parent, "name")
        if parent.type == "export_statement":
            return parent, value_kind, _name(node, "name")
    return None


def _outer(node: Node) -> Node:
    """``node`` with its decorators (Python) or its ``export`` (JS/TS)."""
    parent = node.parent
    return parent if parent is not None and parent.type in _WRAPPERS else node


def _in_class_body(node: Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "block" and parent.parent.type == "class_definition"


def _name(node: Node, field: str) -> str | None:
    child = node.child_by_field_name(field)
    return child.text.decode() if child is not None and child.text is not None else None


def top_level_chunks(text: str, language_id: str | None, max_lines: int) -> list[tuple[int, int]]:
    """Split ``text`` into line ranges ``[start, end)`` of at most ``max_lines`` lines if possible.

    Cuts fall between top-level statements, preferably not right after a comment line (which
    belongs to what follows); a top-level statement longer than ``max_lines`` gets a chunk of its
    own.  Unknown languages are cut after blank lines, else every ``max_lines`` lines.  The chunks
    cover every line once, in order.
    """
    if max_lines < 1:
        raise ValueError(f"max_lines must be at least 1, got {max_lines}")
    lines = split_lines(text)
    count = len(lines)
    cuts = [True] * (count + 1)  # cuts[i]: a chunk may start at line i
    if language_id in LANGUAGES:
        parsed = parse(text, language_id)
        preferred = cuts.copy()
        previous_last = -1
        for child in parsed.tree.root_node.children:
            first, last = parsed.lines_of(child)
            for line in range(first + 1, last + 1):
                cuts[line] = preferred[line] = False
            if child.type == "comment" and previous_last < first:
                preferred[last + 1] = False
            previous_last = last
        preferred[count] = True
    else:
        preferred = [i == 0 or i == count or not lines[i - 1].strip() for i in range(count + 1)]
    chunks = []
    start = 0
    while start < count:
        limit = min(start + max_lines, count)
        end = (
            next((i for i in range(limit, start, -1) if preferred[i]), None)
            or next((i for i in range(limit, start, -1) if cuts[i]), None)
            or next(i for i in range(limit + 1, count + 1) if cuts[i])
        )
        chunks.append((start, end))
        start = end
    return chunks


def syntax_errors(text: str, language_id: str | None) -> int | None:
    """The number of ERROR and MISSING nodes in the parse of ``text``; None if unknown language."""
    if language_id not in LANGUAGES:
        return None
    count = 0
    stack = [parse(text, language_id).tree.root_node]
    while stack:
        node = stack.pop()
        count += node.is_error or node.is_missing
        if node.has_error:
            stack.extend(node.children)
    return count


def adds_syntax_errors(before: str, after: str, language_id: str | None) -> bool:
    """Whether ``after`` parses worse than ``before`` (unknown languages never do).

    tree-sitter counts error nodes; for Python, CPython's own parser also has its say, since
    tree-sitter accepts some indentation errors (an indented line after ``return``).
    """
    old, new = syntax_errors(before, language_id), syntax_errors(after, language_id)
    if old is not None and new is not None and new > old:
        return True
    return language_id == "python" and not _compiles(after) and _compiles(before)  # the file's only where needed


@functools.lru_cache(maxsize=8)
def _compiles(source: str) -> bool:
    """Whether ``source`` compiles as Python (the last few cached: each check compiles the file)."""
    try:
        compile(source, "<copyedit>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def language_of_code(text: str) -> str | None:
    """The language ``text`` reads as, told by its parse alone (no file name): the one of Python,
    JavaScript and TypeScript it parses in with the fewest errors; None on a tie (Python and
    JavaScript alike), where the checks that need a language work by lines alone."""
    counts = {language: syntax_errors(text, language) or 0 for language in ("python", "javascript", "typescript")}
    fewest = min(counts.values())
    best = [language for language, count in counts.items() if count == fewest]
    if best == ["python"]:
        return "python"
    return None if "python" in best else best[0]
