"""Structural placement: a snippet placed by the definitions its code names, as the syntax tree
of the file and of the snippet (tree-sitter, :mod:`.scope`) shows them.

A snippet is read as a list of items between its elision markers: definitions (functions,
methods, classes, with their decorators or ``export``), imports, and the file's own lines shown
as context.  Each definition is matched to the file's of the same name at the same nesting
(else, once in the whole file, at any: a method given without its class); given whole, it
replaces its match whole; with a marker inside, its own items are placed in its match the same
way (a class around one method), or, where it has none, its lines are merged into the match
alone by the line anchors of :mod:`.merge`.  A definition the file lacks goes after the item
before it in the snippet (else before the one after it; else at the end of its class or file);
an import the file lacks goes after the file's imports.  The file's code the snippet does not
name is kept.  Where structure cannot say (a changed line outside every definition, a name that
matches twice, a snippet that does not parse) :func:`place` answers None and the caller merges
otherwise; the result is an apply program of copies of the file and the change, checked as
every apply is (:mod:`.fast_apply`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from .change import Change, ChangeLine, change_lines, ended_text, ending_as
from .merge import Merged, indent_shift, merge_snippet, reindented
from .resolver import oracle_apply_program, split_lines
from .scope import LANGUAGES, Definition, definitions, parse, syntax_errors

_COMMENT_OPENERS = {"python": "#"}  # else "//"
_IMPORTS = {"python": ("import ", "from ")}  # else "import "
_IMPORT_NODES = {"import_statement", "import_from_statement", "future_import_statement"}
_CLOSERS = ("}", "};", ")", "});", "]")


@dataclass(frozen=True)
class _Splice:
    """File lines ``start``..``end - 1`` (0-based) replaced by ``lines`` (an insertion where equal;
    ``whole``: a definition the change gives whole, so what it no longer holds is deleted on purpose)."""

    start: int
    end: int
    lines: tuple[str, ...]
    whole: bool = False


@dataclass(frozen=True)
class _Text:
    """A text (ended), its lines and its definitions."""

    text: str
    lines: list[str]
    defs: list[Definition]

    @classmethod
    def of(cls, text: str, language: str) -> _Text:
        return cls(text, split_lines(text), definitions(text, language))

    def outermost(self, start: int, end: int, owner: Definition | None = None) -> list[Definition]:
        """The definitions within lines ``start``..``end - 1`` that none there holds (but ``owner``)."""
        inside = [d for d in self.defs if start <= d.start_line and d.end_line <= end and d is not owner]
        return [d for d in inside if not any(o is not d and _holds(o, d) for o in inside)]


def _holds(outer: Definition, inner: Definition) -> bool:
    return outer.start_line <= inner.start_line and inner.end_line <= outer.end_line and outer != inner


class _Unplaced(Exception):
    """Structure cannot say where an item goes (the caller merges otherwise)."""


def place(text: str, change: Change, language: str) -> Merged | None:
    """``change`` (a snippet, or a whole-file change that leaves out some of the file's
    definitions, none between two it shows) placed by structure, or None where structure cannot
    place every item of it."""
    if language not in LANGUAGES or change.form not in ("snippet", "file") or not change.lines:
        return None
    ended = ended_text(text)
    comment = _COMMENT_OPENERS.get(language, "//")
    code = "".join(
        f"{line.text[: _indent(line.text)]}{comment} ...\n" if line.marker else line.text for line in change.lines
    )
    code = "".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in split_lines(code))
    if syntax_errors(code, language) or syntax_errors(ended, language):
        return None
    file, snippet = _Text.of(ended, language), _Text.of(code, language)
    if change.form == "file" and not _leaves_out_definitions(file, snippet):
        return None  # a whole file
    placing = _Placing(file, snippet, [line.marker for line in change.lines], language)
    try:
        splices = sorted(_Region(placing, (0, len(file.lines)), (0, len(snippet.lines))).splices(), key=_span)
    except _Unplaced:
        return None
    if not splices or any(a.end > b.start or _span(a) == _span(b) for a, b in pairwise(splices)):
        return None  # nothing to change, or two items in one place
    merged, cursor = [], 0
    for splice in splices:
        merged += file.lines[cursor : splice.start] + list(splice.lines)
        cursor = splice.end
    after = "".join(merged + file.lines[cursor:])
    program = oracle_apply_program(ended, after, change_lines(change))
    deleted = {line.strip() for s in splices if s.whole for line in file.lines[s.start : s.end]}
    deleted -= {line.strip() for s in splices for line in s.lines}
    return Merged(program, ending_as(text, after), placed_by="structure", deleted=frozenset(deleted - {""}))


def _span(splice: _Splice) -> tuple[int, int]:
    return splice.start, splice.end


def _leaves_out_definitions(file: _Text, snippet: _Text) -> bool:
    """Whether a change with no marker reads as a snippet of definitions: each of its outermost
    ones names one of the file's, some nested or not all of the file's outermost ones shown, and
    none of those left out between two shown (that would delete it)."""
    tops = file.outermost(0, len(file.lines))
    shown, nested = set(), False
    for definition in snippet.outermost(0, len(snippet.lines)):
        match = _match(file, definition, (0, len(file.lines)), (), top=True)
        if match is None:
            return False
        shown |= {at for at, top in enumerate(tops) if top == match or _holds(top, match)}
        nested |= match not in tops
    together = bool(shown) and sorted(shown) == list(range(min(shown), max(shown) + 1))
    return together and (nested or len(shown) < len(tops))


@dataclass(frozen=True)
class _Placing:
    """What every region of one placement reads: the file, the snippet (its markers ``marked``)."""

    file: _Text
    snippet: _Text
    marked: list[bool]
    language: str

    def definition(self, match: Definition, definition: Definition, lines: tuple[int, int]) -> list[_Splice]:
        """The splices that put ``definition`` over its ``match``, with ``lines``: the comment
        lines above it and the snippet's line after its last: a function given whole replaces it
        whole; a class, or a definition with markers, has its own items placed inside the match
        (a class's methods it does not name are kept), else its lines merged into it by anchors."""
        file, lead, end = self.file, *lines
        start = definition.start_line - lead
        new = self.snippet.lines[start:end]
        old_start = _lead_start(file, match, self.language, lead)
        decorators = _decorated(file.lines[match.start_line : match.end_line])
        if _decorated(new[lead:]) < decorators:
            if lead or _decorated(new[lead:]):
                raise _Unplaced  # the snippet names some of the decorators: which it drops is not structure's to say
            old_start = match.start_line + decorators
        if file.lines[match.start_line].lstrip().startswith("export ") and not new[lead].lstrip().startswith("export "):
            raise _Unplaced  # the snippet's definition drops an export
        nested = self.snippet.outermost(definition.start_line, definition.end_line, definition)
        if not any(self.marked[start:end]) and not (definition.kind == "class" and nested):
            shift = indent_shift(file.lines[old_start], next(line for line in new if line.strip()))
            return [_Splice(old_start, match.end_line, tuple(reindented(line, shift) for line in new), whole=True)]
        if nested:
            return _Region(self, (match.start_line, match.end_line), (start, end), (definition, match)).splices()
        return self.anchored(match, new, self.marked[start:end])

    def anchored(self, match: Definition, new: list[str], marked: list[bool]) -> list[_Splice]:
        """A definition with markers but no definitions of its own, merged into its match alone by
        the line anchors of :mod:`.merge`, every part placed."""
        old = self.file.lines[match.start_line : match.end_line]
        part = Change("snippet", tuple(ChangeLine(line, mark) for line, mark in zip(new, marked, strict=True)))
        merged, placed, unplaced = merge_snippet(old, part)
        if unplaced or not placed:
            raise _Unplaced
        return [_Splice(match.start_line, match.end_line, tuple(merged))]

    def insert(self, pending: list[list[str]], where: int, owner: Definition | None, *, before: bool) -> list[_Splice]:
        """The new definitions waiting (emptied), inserted at file line ``where`` (``before`` an
        item, else after one), set apart by blank lines as the file sets its definitions apart in
        ``owner`` (None: at the top)."""
        if not pending:
            return []
        gap = ["\n"] * _gap(self.file, owner, self.language)
        lines = [line for body in pending for line in ((body + gap) if before else (gap + body))]
        pending.clear()
        return [_Splice(where, where, tuple(lines))]


class _Region:
    """The snippet's lines ``part`` placed, item by item, in the file's lines ``region`` (the
    whole file, or inside a definition: ``owners``, the snippet's and its match in the file)."""

    def __init__(
        self,
        placing: _Placing,
        region: tuple[int, int],
        part: tuple[int, int],
        owners: tuple[Definition, Definition] | None = None,
    ) -> None:
        self.placing, self.region, self.part, self.top = placing, region, part, owners is None
        self.owner = owners[1] if owners else None  # the file's definition the region is
        self.defs = {d.start_line: d for d in placing.snippet.outermost(*part, owners[0] if owners else None)}
        self.outer = () if owners is None else (*owners[1].outer, owners[1].name)
        self.done: list[_Splice] = []
        self.cursor = region[0]  # the file line after the last item placed: what follows goes no earlier
        self.placed_end: int | None = None  # the same, unless a marker stands between
        self.pending: list[list[str]] = []  # new definitions' lines, waiting for an item after them
        self.pending_at: int | None = None  # the file line after the item before them, where known
        self.imports: list[str] = []

    def splices(self) -> list[_Splice]:
        placing, at = self.placing, self.part[0]
        while at < self.part[1]:
            line = placing.snippet.lines[at]
            if placing.marked[at]:
                if self.pending_at is not None:
                    self.done += placing.insert(self.pending, self.pending_at, self.owner, before=False)
                self.placed_end, at = None, at + 1
            elif not line.strip():
                at += 1
            elif (definition := self.defs.get(at)) is not None:
                at = self.definition(definition, 0)
            elif _comment(line, placing.language) and (ahead := self.commented(at)) is not None:
                at = self.definition(ahead, ahead.start_line - at)
            else:
                at = self.line(at)
        end = self.pending_at if self.pending_at is not None else _region_end(placing.file, self.region, self.top)
        self.done += placing.insert(self.pending, end, self.owner, before=False)
        if self.imports:
            after = _imports_end(placing.file.text, placing.language)
            if after is None:
                raise _Unplaced
            self.done.append(_Splice(after, after, tuple(self.imports)))
        return self.done

    def commented(self, at: int) -> Definition | None:
        """The definition right after the comment lines from ``at`` on (no blank line between)."""
        lines, language = self.placing.snippet.lines, self.placing.language
        while at < self.part[1] and _comment(lines[at], language):
            at += 1
        return self.defs.get(at)

    def line(self, at: int) -> int:
        """A line outside every definition: the file's (context), or an import the file lacks."""
        file, language = self.placing.file, self.placing.language
        stripped = self.placing.snippet.lines[at].strip()
        found = [i for i in range(self.cursor, self.region[1]) if file.lines[i].strip() == stripped]
        if not found and self.top and stripped.startswith(_import_prefixes(language)):
            if _rewrites_import(stripped, file.lines, language):
                raise _Unplaced  # an import changed, not added
            self.imports.append(self.placing.snippet.lines[at])
        elif not found:
            raise _Unplaced  # a changed line outside every definition
        else:
            self.flush(found[0])
            self.cursor = self.placed_end = found[0] + 1
        return at + 1

    def definition(self, definition: Definition, lead: int) -> int:
        """A definition (``lead`` comment lines above it) over its match, or new."""
        placing, file = self.placing, self.placing.file
        match = _match(file, definition, self.region, self.outer, self.top)
        if match is None:
            if _named(file, definition, self.region):
                raise _Unplaced  # its name twice, or elsewhere: not structure's to choose
            self.pending_at = self.placed_end if not self.pending else self.pending_at
            self.pending.append(placing.snippet.lines[definition.start_line - lead : definition.end_line])
            return definition.end_line
        if match.start_line < self.cursor:
            raise _Unplaced  # out of the file's order
        end = definition.end_line
        if placing.language == "python" and end < self.part[1] and placing.marked[end]:  # a marker right under it
            under, header = _indent(placing.snippet.lines[end]), _indent(placing.snippet.lines[definition.start_line])
            if under == header:
                raise _Unplaced  # the rest of its body, or what follows it: not structure's to say
            end += under > header  # indented: the rest of its body
        self.done += placing.definition(match, definition, (lead, end))
        self.flush(_lead_start(file, match, placing.language, lead))
        self.cursor = self.placed_end = match.end_line
        return end

    def flush(self, item: int) -> None:
        """The new definitions waiting, after the item before them where known, else before the
        item at file line ``item``."""
        where = self.pending_at if self.pending_at is not None else item
        self.done += self.placing.insert(self.pending, where, self.owner, before=self.pending_at is None)


def _rewrites_import(line: str, file_lines: list[str], language: str) -> bool:
    """Whether the import ``line`` rewrites one of the file's (the same module, or a name in common)."""
    mine = _imported(line)
    return any(mine & _imported(other.strip()) for other in file_lines if other.startswith(_import_prefixes(language)))


def _import_prefixes(language: str) -> tuple[str, ...]:
    return _IMPORTS.get(language, ("import ",))


def _imported(line: str) -> set[str]:
    """What an import line names: its module (``from x``, ``from 'x'``) or its imported names."""
    source = re.search(r"""from\s+(['"]?)([\w.@/-]+)\1""", line)
    if source:
        return {source[2]}
    return set(re.findall(r"[\w.]+", line.removeprefix("import").split(" as ")[0]))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _comment(line: str, language: str) -> bool:
    return line.lstrip().startswith(_COMMENT_OPENERS.get(language, "//"))


def _lead_start(file: _Text, match: Definition, language: str, lead: int) -> int:
    """Where a matched definition starts, with the comment lines above it where the snippet gives it some."""
    start = match.start_line
    while lead and start > 0 and _comment(file.lines[start - 1], language):
        start -= 1
    return start


def _match(
    file: _Text, definition: Definition, region: tuple[int, int], outer: tuple[str, ...], top: bool
) -> Definition | None:
    """The file's definition ``definition`` names in ``region``: the one of its name and kind at
    this nesting, else (at the top) the only one of its name in the file."""
    same = [d for d in _named(file, definition, region) if d.outer == outer]
    if len(same) == 1:
        return same[0]
    if not same and top:
        anywhere = _named(file, definition, region)
        return anywhere[0] if len(anywhere) == 1 else None
    return None


def _named(file: _Text, definition: Definition, region: tuple[int, int]) -> list[Definition]:
    kinds = {"class"} if definition.kind == "class" else {"function", "method"}
    return [d for d in file.defs if d.name == definition.name and d.kind in kinds
            and region[0] <= d.start_line and d.end_line <= region[1]]  # fmt: skip


def _decorated(lines: list[str]) -> int:
    """How many decorator lines open ``lines``."""
    count = 0
    while count < len(lines) and lines[count].lstrip().startswith("@"):
        count += 1
    return count


def _gap(file: _Text, owner: Definition | None, language: str) -> int:
    """The blank lines between the first two definitions in ``owner`` (None: at the top) that no
    other there holds (else 2 at Python's top level, else 1)."""
    region = (owner.start_line, owner.end_line) if owner else (0, len(file.lines))
    siblings = file.outermost(*region, owner)
    if len(siblings) >= 2:
        between = file.lines[siblings[0].end_line : siblings[1].start_line]
        return max(1, sum(not line.strip() for line in between))
    return 2 if language == "python" and owner is None else 1


def _region_end(file: _Text, region: tuple[int, int], top: bool) -> int:
    """Where a new definition goes that nothing in the snippet places: the end of the file, or
    of the class, before its closing bracket."""
    end = region[1]
    if not top and end > region[0] and file.lines[end - 1].strip() in _CLOSERS:
        return end - 1
    return end


def _imports_end(text: str, language: str) -> int | None:
    """The line after the last import at the top level of ``text``, or None where it has none."""
    parsed = parse(text, language)
    found = [child for child in parsed.tree.root_node.children if child.type in _IMPORT_NODES]
    return parsed.lines_of(found[-1])[1] + 1 if found else None
