"""A text's outline as structural placement reads it: its lines and definitions (tree-sitter,
:mod:`.scope`), and what lies around them: leading comments, decorators, the blank lines that set
definitions apart, the imports and where they end, a definition's opening and closing lines."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .resolver import split_lines
from .scope import Definition, definitions, parse

if TYPE_CHECKING:
    from tree_sitter import Node


COMMENT_OPENERS = {"python": "#"}  # else "//"


_IMPORTS = {"python": re.compile(r"(import|from)\s")}


_JS_IMPORT = re.compile(r"import\s|(const|let|var)\s[^=]+=\s*require\(")


_IMPORT_NODES = {"import_statement", "import_from_statement", "future_import_statement"}


CLOSERS = ("}", "};", ")", "});", "]")


@dataclass(frozen=True)
class Outline:
    """A text (ended), its lines and its definitions."""

    text: str
    lines: list[str]
    defs: tuple[Definition, ...]

    @classmethod
    def of(cls, text: str, language: str) -> Outline:
        return cls(text, split_lines(text), definitions(text, language))

    def outermost(self, start: int, end: int, owner: Definition | None = None) -> list[Definition]:
        """The definitions within lines ``start``..``end - 1`` that none there holds (but ``owner``)."""
        inside = [d for d in self.defs if start <= d.start_line and d.end_line <= end and d is not owner]
        return [d for d in inside if not any(o is not d and holds(o, d) for o in inside)]


def holds(outer: Definition, inner: Definition) -> bool:
    return outer.start_line <= inner.start_line and inner.end_line <= outer.end_line and outer != inner


class Unplaced(Exception):
    """Structure cannot say where an item goes (the caller merges otherwise)."""


def rewrites_import(line: str, file_lines: list[str], language: str) -> bool:
    """Whether the import ``line`` rewrites one of the file's (the same module, or a name in common)."""
    mine = imported(line)
    return any(mine & imported(other.strip()) for other in file_lines if is_import(other, language))


def is_import(line: str, language: str) -> bool:
    """Whether ``line`` opens an import (in JavaScript and TypeScript also a ``require``)."""
    return _IMPORTS.get(language, _JS_IMPORT).match(line) is not None


def imported(line: str) -> set[str]:
    """What an import line names: its module (``from x``, ``from 'x'``) or its imported names."""
    source = re.search(r"""(?:from\s+|require\()(['"]?)([\w.@/-]+)\1""", line)
    if source:
        return {source[2]}
    return set(re.findall(r"[\w.]+", line.removeprefix("import").split(" as ")[0]))


def edges(old: list[str], head: list[str], tail: list[str]) -> tuple[int, int]:
    """How far a definition's ``head`` (its lines before its first marker) and ``tail`` (after its
    last) reach into the file's ``old`` lines of it: past the line its last line matches
    (stripped; of several, the nearest to line for line), else as many lines as it has; from
    the line the tail's first matches, else as many from the end as it has. Raises
    :class:`Unplaced` where the two cross."""
    stripped = [line.strip() for line in old]
    opening, closing = len(head), len(old) - len(tail)
    if head and (last := head[-1].strip()):
        found = [i + 1 for i, line in enumerate(stripped[: len(old) - len(tail)]) if line == last]
        opening = min(found, key=lambda i: abs(i - opening), default=opening)
    if tail and (first := tail[0].strip()):
        found = [i for i, line in enumerate(stripped) if line == first and i >= opening]
        closing = min(found, key=lambda i: abs(i - closing), default=closing)
    if opening > closing:
        raise Unplaced
    return opening, closing


def indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def is_comment(line: str, language: str) -> bool:
    return line.lstrip().startswith(COMMENT_OPENERS.get(language, "//"))


def lead_start(file: Outline, match: Definition, language: str, lead: int) -> int:
    """Where a matched definition starts, with the comment lines above it where the snippet gives it some."""
    start = match.start_line
    while lead and start > 0 and is_comment(file.lines[start - 1], language):
        start -= 1
    return start


def candidates(
    file: Outline, definition: Definition, region: tuple[int, int], outer: tuple[str, ...], top: bool
) -> list[Definition]:
    """The file's definitions ``definition`` may name in ``region``: those of its name and kind
    at this nesting, else (at the top) those of its name anywhere in the file."""
    same = [d for d in same_name(file, definition, region) if d.outer == outer]
    return same or (same_name(file, definition, region) if top else [])


def same_name(file: Outline, definition: Definition, region: tuple[int, int]) -> list[Definition]:
    kinds = {"class"} if definition.kind == "class" else {"function", "method"}
    return [d for d in file.defs if d.name == definition.name and d.kind in kinds
            and region[0] <= d.start_line and d.end_line <= region[1]]  # fmt: skip


def decorated(lines: list[str]) -> int:
    """How many decorator lines open ``lines``."""
    count = 0
    while count < len(lines) and lines[count].lstrip().startswith("@"):
        count += 1
    return count


def blank_lines(file: Outline, owner: Definition | None, language: str) -> int:
    """The blank lines between the first two definitions in ``owner`` (None: at the top) that no
    other there holds (else 2 at Python's top level, else 1)."""
    region = (owner.start_line, owner.end_line) if owner else (0, len(file.lines))
    siblings = file.outermost(*region, owner)
    if len(siblings) >= 2:
        between = file.lines[siblings[0].end_line : siblings[1].start_line]
        return max(1, sum(not line.strip() for line in between))
    return 2 if language == "python" and owner is None else 1


def region_end(file: Outline, region: tuple[int, int], top: bool) -> int:
    """Where a new definition goes that nothing in the snippet places: the end of the file, or
    of the class, before its closing bracket."""
    end = region[1]
    if not top and end > region[0] and file.lines[end - 1].strip() in CLOSERS:
        return end - 1
    return end


def imports_end(file: Outline, language: str) -> tuple[int, bool]:
    """The line after the last import at the top level of ``file`` and True, or where a file
    without imports takes its first (before its first code, after a docstring, leading comments
    or directives) and False."""
    root = parse(file.text, language).tree.root_node
    found = [child for child in root.children if _imports_node(child, file, language)]
    if found:
        return found[-1].end_point[0] + 1, True
    lead = [child for child in root.children if child.type == "comment" or _directive(child)]
    code = [child for child in root.children if child.type != "comment" and not _directive(child)]
    start = code[0].start_point[0] if code else len(file.lines)
    after = max((child.end_point[0] + 1 for child in lead if child.start_point[0] < start), default=0)
    return max(after, start if lead else 0), False


def _imports_node(node: Node, file: Outline, language: str) -> bool:
    """Whether a top-level node is an import (``require`` in JavaScript and TypeScript)."""
    return node.type in _IMPORT_NODES or (
        node.type in ("lexical_declaration", "variable_declaration")
        and is_import(file.lines[node.start_point[0]].strip(), language)
    )


def _directive(node: Node) -> bool:
    """A module docstring or a ``'use strict'``: an expression statement of a string alone."""
    return node.type == "expression_statement" and [c.type for c in node.children if c.type != ";"] == ["string"]
