"""Structural placement: a snippet placed by the definitions its code names, as the syntax tree
of the file and of the snippet (tree-sitter, :mod:`.scope`) shows them.

A snippet is read as a list of items between its elision markers: definitions (functions,
methods, classes, with their decorators or ``export``), imports, and the file's own lines shown
as context.  Each definition is matched to the file's of the same name at the same nesting
(else, once in the whole file, at any: a method given without its class), else to the one it
renames (the most alike in code, names aside); given whole, it replaces its match whole; with a
marker inside, its own items are placed in its match the same way (a class around one method),
or, where it has none, its opening and closing lines are aligned with the match's and the lines
between merged by the line anchors of :mod:`.merge`.  A definition the file lacks goes after the
item before it in the snippet (else before the one after it; else at the end of its class or
file); an import the file lacks goes after the file's imports; a definition of the file between
two the snippet shows whole, no marker between, is deleted.  The file's code the snippet does
not name is kept.  A snippet that does not parse, or whose items do not place, is read as pieces
between its unindented markers, each merged into the definition it opens or lies in.

:func:`placements` answers one placement, or, where structure leaves a choice (a rename or a new
definition, a name defined twice, a piece alike to two runs of lines), each placement, for the
model to choose between; none where structure cannot say (a line outside every definition that
no file line is like, a definition that drops the file's ``export``).  Each is an apply program of copies of the file and the
change, checked as every apply is (:mod:`.fast_apply`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from itertools import pairwise
from typing import TypeVar

from .change import Change, ChangeLine, change_lines, ended_text, ending_as
from .merge import Merged, anchors, indent_shift, merge_snippet, reindented, rewritten_in_place
from .outline import (
    COMMENT_OPENERS,
    Outline,
    Unplaced,
    blank_lines,
    candidates,
    decorated,
    edges,
    holds,
    imports_end,
    indent,
    is_comment,
    is_import,
    lead_start,
    region_end,
    rewrites_import,
    same_name,
)
from .resolver import oracle_apply_program, split_lines
from .scope import LANGUAGES, Definition, definitions, syntax_errors

CANDIDATES = 4  # placements structure leaves the model to choose between, at most
T = TypeVar("T")
# How alike (difflib's ratio of their code, names aside) a definition the file lacks by name and
# one of the file's are when it renames that one, and at most when it is new.
RENAMED, NEW = 0.9, 0.6
REWRITTEN = 0.7  # how alike a piece the file holds no line of and the file lines it rewrites are
REWRITE_MARGIN = 0.1  # runs of file lines this close in likeness to a piece's best are each a choice
RENAMED_LINES = 3  # a shorter definition the file lacks by name renames one only when alike by RENAMED


@dataclass(frozen=True)
class _Splice:
    """File lines ``start``..``end - 1`` (0-based) replaced by ``lines`` (an insertion where equal;
    ``whole``: a definition the change gives whole, so what it no longer holds is deleted on purpose;
    ``guessed``: lines no file line anchors, over the run most like them, so nothing is)."""

    start: int
    end: int
    lines: tuple[str, ...]
    whole: bool = False
    guessed: bool = False


def placements(text: str, change: Change, language: str, limit: int = CANDIDATES) -> list[Merged]:
    """``change`` (a snippet, or a whole-file change that leaves out some of the file's
    definitions, none between two it shows) placed by structure: one placement, or where
    structure leaves a choice (a definition that renames one of the file's or is new, a name the
    file defines twice) each placement it leaves, the likelier first, at most ``limit``; none
    where structure cannot place every item of it."""
    if language not in LANGUAGES or change.form not in ("snippet", "file") or not change.lines:
        return []
    ended = ended_text(text)
    comment = COMMENT_OPENERS.get(language, "//")
    code = "".join(
        f"{line.text[: indent(line.text)]}{comment} ...\n" if line.marker else line.text for line in change.lines
    )
    code = "".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in split_lines(code))
    if syntax_errors(ended, language):
        return []
    file, snippet = Outline.of(ended, language), Outline.of(code, language)
    if not syntax_errors(code, language) and change.form == "file" and not _leaves_out_definitions(file, snippet):
        return []  # a whole file
    marked = [line.marker for line in change.lines]
    found = [] if syntax_errors(code, language) else _each(file, snippet, marked, language, limit, _items)
    if not found and change.form == "snippet":  # pieces of definitions: each merged into the one it opens or lies in
        found = _each(file, snippet, marked, language, limit, lambda placing: _fragments(placing, change))
    return [_merged(text, file, splices, change) for splices in found]


def _each(
    file: Outline,
    snippet: Outline,
    marked: list[bool],
    language: str,
    limit: int,
    placed: Callable[[_Placing], list[_Splice]],
) -> list[list[_Splice]]:
    """The splices of each placement ``placed`` makes, one per way through the choices it meets
    (the first options first), at most ``limit``; none where an item is not placed, two items go
    in one place, or nothing changes."""
    found: list[list[_Splice]] = []
    waiting: list[tuple[int, ...]] = [()]
    while waiting and len(found) < limit:
        decisions = waiting.pop(0)
        placing = _Placing(file, snippet, marked, language, decisions)
        try:
            splices = sorted(placed(placing), key=_span)
        except Unplaced:
            splices = []
        for at in range(len(decisions), len(placing.branches)):  # the other choices after the ones made
            waiting += [(*decisions, *(0,) * (at - len(decisions)), other) for other in range(1, placing.branches[at])]
        if splices and not any(a.end > b.start or _span(a) == _span(b) for a, b in pairwise(splices)):
            found.append(splices)
    return found


def _items(placing: _Placing) -> list[_Splice]:
    """The snippet read as items (definitions, imports, context lines) placed in the whole file."""
    return _Region(placing, (0, len(placing.file.lines)), (0, len(placing.snippet.lines))).splices()


def _fragments(placing: _Placing, change: Change) -> list[_Splice]:
    """The snippet read as pieces between its unindented markers (one that does not parse, or
    whose items do not place): each merged by the line anchors of :mod:`.merge` into the file's
    definition it opens (its first line that definition's first) or else lies in (the innermost
    holding every anchoring line of it the file holds), the pieces one after the other in one
    definition merged into it together; a piece none of whose lines the file holds, and that holds
    no definition, rewrites the run of file lines most like it (:func:`_rewritten`). Raises
    :class:`Unplaced` where a piece has no such place."""
    file = placing.file
    pieces: list[list[ChangeLine]] = [[]]
    for line in change.lines:
        if line.marker and not indent(line.text):
            pieces.append([])
        else:
            pieces[-1].append(line)
    splices = []
    groups: list[tuple[Definition, bool, list[ChangeLine], int, int]] = []  # match, header, lines, pieces
    for at, piece in enumerate(pieces):
        written = [i for i, line in enumerate(piece) if not line.marker and line.text.strip()]
        if not written:
            continue
        part, first = piece[written[0] : written[-1] + 1], piece[written[0]].text.strip()
        lines = [line.text for line in part if not line.marker]
        opens = [d for d in file.defs if file.lines[d.start_line].strip() == first]
        header = len(opens) == 1
        if not header and not any(line.marker for line in part) and not _known(file, lines):
            if definitions("".join(lines), placing.language):
                raise Unplaced  # a definition the items did not place is not forced in by likeness
            splices.append(_rewritten(placing, lines))
            continue
        match = opens[0] if header else _lying_in(file, lines)
        if match is None:
            raise Unplaced  # no definition holds its lines, or two apart do
        if groups and groups[-1][0] == match and not header:  # the same definition: one merge
            _, opened, before, since, _ = groups[-1]
            groups[-1] = (match, opened, [*before, ChangeLine("...", True), *part], since, at)
        else:
            groups.append((match, header, part, at, at))
    for match, header, part, since, last in groups:
        if header and not any(line.marker for line in part):  # the definition's opening: the rest of it kept
            part = [*part, ChangeLine("...", True)]
        if not header:  # where no marker stands, the piece shows the definition's edge
            part = [
                *[ChangeLine("...", True)] * (since > 0),
                *part,
                *[ChangeLine("...", True)] * (last < len(pieces) - 1),
            ]
        splices += placing.anchored(match, [line.text for line in part], [line.marker for line in part], header=header)
    return splices


def _known(file: Outline, lines: list[str]) -> bool:
    """Whether the file holds one of ``lines`` that anchors (stripped)."""
    held = {line.strip() for line in file.lines}
    return any(anchors(line) and line.strip() in held for line in lines)


def _rewritten(placing: _Placing, lines: list[str]) -> _Splice:
    """``lines`` (none of which the file holds) over the run of as many file lines most like
    them, line for line (at least :data:`REWRITTEN` alike on average), re-indented as the first;
    where two runs are about as alike, a choice, the most alike first."""
    file, n = placing.file.lines, len(lines)
    mine = [line.strip() for line in lines]
    alike = []
    for start in range(len(file) - n + 1):
        if all(file[start + k].strip() for k in range(n)):
            score = sum(SequenceMatcher(None, file[start + k].strip(), mine[k]).ratio() for k in range(n)) / n
            if score >= REWRITTEN:
                alike.append((score, start))
    if not alike:
        raise Unplaced
    alike.sort(reverse=True)
    close = [start for score, start in alike if score >= alike[0][0] - REWRITE_MARGIN][:CANDIDATES]
    start = close[0] if len(close) == 1 else placing.choose(close)
    shift = indent_shift(file[start], lines[0])
    return _Splice(start, start + n, tuple(reindented(line, shift) for line in lines), guessed=True)


def _lying_in(file: Outline, lines: list[str]) -> Definition | None:
    """The innermost of the file's definitions that holds every anchoring line of ``lines`` the
    file holds; None where none does, or two apart do."""
    known = {line.strip() for line in lines if anchors(line)} & {line.strip() for line in file.lines}
    around = [
        d for d in file.defs if known and known <= {line.strip() for line in file.lines[d.start_line : d.end_line]}
    ]
    smallest = sorted(around, key=lambda d: d.end_line - d.start_line)
    if not smallest or (len(smallest) > 1 and not holds(smallest[1], smallest[0])):
        return None
    return smallest[0]


def _merged(text: str, file: Outline, splices: list[_Splice], change: Change) -> Merged:
    """The file with ``splices`` made, as an apply program of ``change``."""
    merged, cursor = [], 0
    for splice in splices:
        merged += file.lines[cursor : splice.start] + list(splice.lines)
        cursor = splice.end
    after = "".join(merged + file.lines[cursor:])
    program = oracle_apply_program(file.text, after, change_lines(change))
    deleted = {line for s in splices for line in _replaced(file.lines[s.start : s.end], s)}
    return Merged(program, ending_as(text, after), placed_by="structure", deleted=frozenset(deleted - {""}))


def _replaced(old: list[str], splice: _Splice) -> set[str]:
    """The lines of ``old`` (stripped) that ``splice`` deletes on purpose: all of a definition it
    gives whole, else each run of them it writes a rewrite of in their place (:func:`~copyedit_lsp.core.merge.rewritten_in_place`;
    never a run it merely leaves out, or writes other lines beside, nor a run it guessed)."""
    if splice.guessed:
        return set()
    if splice.whole:
        return {line.strip() for line in old}
    return {old[i].strip() for i in rewritten_in_place(old, splice.lines)}


def _span(splice: _Splice) -> tuple[int, int]:
    return splice.start, splice.end


def _leaves_out_definitions(file: Outline, snippet: Outline) -> bool:
    """Whether a change with no marker reads as a snippet of definitions: each of its outermost
    ones names one of the file's, some nested or not all of the file's outermost ones shown, and
    none of those left out between two shown (that would delete it)."""
    tops = file.outermost(0, len(file.lines))
    shown, nested = set(), False
    for definition in snippet.outermost(0, len(snippet.lines)):
        named = candidates(file, definition, (0, len(file.lines)), (), top=True)
        if len(named) != 1:
            return False
        match = named[0]
        shown |= {at for at, top in enumerate(tops) if top == match or holds(top, match)}
        nested |= match not in tops
    together = bool(shown) and sorted(shown) == list(range(min(shown), max(shown) + 1))
    return together and (nested or len(shown) < len(tops))


@dataclass(frozen=True)
class _Placing:
    """What every region of one placement reads: the file, the snippet (its markers ``marked``)."""

    file: Outline
    snippet: Outline
    marked: list[bool]
    language: str
    decisions: tuple[int, ...] = ()  # the option taken at each choice structure leaves, in order (else the first)
    branches: list[int] = field(default_factory=list)  # how many options each choice met had

    def choose(self, options: list[T]) -> T:
        """One of ``options`` (the likelier first) at a choice structure leaves: as ``decisions`` says."""
        at = len(self.branches)
        self.branches.append(len(options))
        return options[self.decisions[at] if at < len(self.decisions) else 0]

    def definition(self, match: Definition, definition: Definition, lines: tuple[int, int]) -> list[_Splice]:
        """The splices that put ``definition`` over its ``match``, with ``lines``: the comment
        lines above it and the snippet's line after its last: a function given whole replaces it
        whole; a class, or a definition with markers, has its own items placed inside the match
        (a class's methods it does not name are kept), else its lines merged into it by anchors."""
        file, lead, end = self.file, *lines
        start = definition.start_line - lead
        new = self.snippet.lines[start:end]
        old_start = lead_start(file, match, self.language, lead)
        decorators = decorated(file.lines[match.start_line : match.end_line])
        if decorated(new[lead:]) < decorators:
            if lead or decorated(new[lead:]):
                raise Unplaced  # the snippet names some of the decorators: which it drops is not structure's to say
            old_start = match.start_line + decorators
        if file.lines[match.start_line].lstrip().startswith("export ") and not new[lead].lstrip().startswith("export "):
            raise Unplaced  # the snippet's definition drops an export
        nested = self.snippet.outermost(definition.start_line, definition.end_line, definition)
        if not any(self.marked[start:end]) and not (definition.kind == "class" and nested):
            shift = indent_shift(file.lines[old_start], next(line for line in new if line.strip()))
            return [_Splice(old_start, match.end_line, tuple(reindented(line, shift) for line in new), whole=True)]
        if nested:
            return _Region(self, (match.start_line, match.end_line), (start, end), (definition, match)).splices()
        return self.anchored(match, new, self.marked[start:end])

    def anchored(self, match: Definition, new: list[str], marked: list[bool], *, header: bool = True) -> list[_Splice]:
        """A definition with markers but no definitions of its own, merged into its match alone:
        with its ``header`` (its first line the match's), its lines at the indentation the header
        has in the file, the run before its first marker over the match's opening lines and the
        run after its last over its closing ones (:func:`edges`), the runs between by the line
        anchors of :mod:`.merge`; else every run by the anchors, each re-indented as its first
        line found; every run placed."""
        old = self.file.lines[match.start_line : match.end_line]
        head, tail, opening, closing = 0, 0, 0, len(old)
        if header:
            shift = indent_shift(old[0], new[0])
            new = [line if mark else reindented(line, shift) for line, mark in zip(new, marked, strict=True)]
            head, tail = marked.index(True), marked[::-1].index(True)
            opening, closing = edges(old, new[:head], new[len(new) - tail :])
        middle = Change("snippet", tuple(ChangeLine(line, mark) for line, mark in zip(new, marked, strict=True)))
        middle = replace(middle, lines=middle.lines[head : len(new) - tail])
        merged = old[opening:closing]
        if any(not line.marker and line.text.strip() for line in middle.lines):
            merged, placed, unplaced = merge_snippet(merged, middle, reindent=not header)
            if unplaced or not placed:
                raise Unplaced
        return [_Splice(match.start_line, match.end_line, (*new[:head], *merged, *new[len(new) - tail :]))]

    def insert(self, pending: list[list[str]], where: int, owner: Definition | None, *, before: bool) -> list[_Splice]:
        """The new definitions waiting (emptied), inserted at file line ``where`` (``before`` an
        item, else after one), set apart by blank lines as the file sets its definitions apart in
        ``owner`` (None: at the top)."""
        if not pending:
            return []
        gap = ["\n"] * blank_lines(self.file, owner, self.language)
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
        self.free_end: int | None = None  # the same, where that item is a definition free of markers
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
                self.placed_end = self.free_end = None
                at += 1
            elif not line.strip():
                at += 1
            elif (definition := self.defs.get(at)) is not None:
                at = self.definition(definition, 0)
            elif is_comment(line, placing.language) and (ahead := self.commented(at)) is not None:
                at = self.definition(ahead, ahead.start_line - at)
            else:
                at = self.line(at)
        end = self.pending_at if self.pending_at is not None else region_end(placing.file, self.region, self.top)
        self.done += placing.insert(self.pending, end, self.owner, before=False)
        if self.imports:
            after, found = imports_end(placing.file, placing.language)
            gap = () if found else ("\n",) * blank_lines(placing.file, None, placing.language)
            self.done.append(_Splice(after, after, (*self.imports, *gap)))
        return self.done

    def commented(self, at: int) -> Definition | None:
        """The definition right after the comment lines from ``at`` on (no blank line between)."""
        lines, language = self.placing.snippet.lines, self.placing.language
        while at < self.part[1] and is_comment(lines[at], language):
            at += 1
        return self.defs.get(at)

    def line(self, at: int) -> int:
        """A line outside every definition: the file's (context), or an import the file lacks."""
        file, language = self.placing.file, self.placing.language
        stripped = self.placing.snippet.lines[at].strip()
        found = [i for i in range(self.cursor, self.region[1]) if file.lines[i].strip() == stripped]
        if not found and self.top and is_import(stripped, language):
            if rewrites_import(stripped, file.lines, language):
                raise Unplaced  # an import changed, not added
            self.imports.append(self.placing.snippet.lines[at])
        elif not found:
            raise Unplaced  # a changed line outside every definition
        else:
            self.flush(found[0])
            self.cursor = self.placed_end = found[0] + 1
            self.free_end = None
        return at + 1

    def definition(self, definition: Definition, lead: int) -> int:
        """A definition (``lead`` comment lines above it) over its match (by name, else the one
        it renames), or new."""
        placing, file = self.placing, self.placing.file
        named = candidates(file, definition, self.region, self.outer, self.top)
        if not named and same_name(file, definition, self.region):
            raise Unplaced  # its name elsewhere, in another definition: not structure's to say
        match = self.likeliest(definition, named) if named else self.renamed(definition)
        if match is None:
            self.pending_at = self.placed_end if not self.pending else self.pending_at
            self.pending.append(placing.snippet.lines[definition.start_line - lead : definition.end_line])
            self.free_end = None
            return definition.end_line
        if match.start_line < self.cursor:
            raise Unplaced  # out of the file's order
        end = definition.end_line
        if placing.language == "python" and end < self.part[1] and placing.marked[end]:  # a marker right under it
            under, header = indent(placing.snippet.lines[end]), indent(placing.snippet.lines[definition.start_line])
            if under == header and _drops(
                file.lines[match.start_line : match.end_line], placing.snippet.lines[definition.start_line : end]
            ):
                raise Unplaced  # the rest of its body, or what follows it: not structure's to say
            end += under > header  # indented: the rest of its body
        start = lead_start(file, match, placing.language, lead)
        free = not any(placing.marked[definition.start_line - lead : end])
        if free and self.free_end is not None:
            self.done += self.deleted(self.free_end, start)
        self.done += placing.definition(match, definition, (lead, end))
        self.flush(start)
        self.cursor = self.placed_end = match.end_line
        self.free_end = match.end_line if free else None
        return end

    def likeliest(self, definition: Definition, named: list[Definition]) -> Definition:
        """The one of the file's definitions ``named`` as ``definition`` is that it replaces: the
        only one, or the one clearly most alike in code; else a choice, the most alike first."""
        if len(named) == 1:
            return named[0]
        ranked = sorted(named, key=lambda d: -self.likeness(definition, d))
        first, second = (self.likeness(definition, d) for d in ranked[:2])
        return ranked[0] if first >= RENAMED and second <= NEW else self.placing.choose(ranked)

    def renamed(self, definition: Definition) -> Definition | None:
        """The file's definition after the last item placed that ``definition`` (whose name the
        file lacks) renames: the one of its kind most alike in code, names aside (at least
        :data:`RENAMED`), none of the snippet's definitions naming it; where one is alike enough to
        be either (more than :data:`NEW`, of :data:`RENAMED_LINES` lines at least), a choice between
        that rename and a new definition."""
        shown = {d.name for d in self.placing.snippet.defs}
        kinds = {"class"} if definition.kind == "class" else {"function", "method"}
        others = [d for d in self.placing.file.outermost(self.cursor, self.region[1], self.owner)
                  if d.kind in kinds and d.name not in shown]  # fmt: skip
        likeness, best = self.most_alike(definition, others)
        if best is None or likeness <= NEW:
            return None
        if likeness >= RENAMED:
            return best
        small = definition.end_line - definition.start_line < RENAMED_LINES  # alike as any two small ones are
        return None if small else self.placing.choose([best, None])

    def most_alike(self, definition: Definition, others: list[Definition]) -> tuple[float, Definition | None]:
        """The one of ``others`` most alike the snippet's ``definition`` in code, names aside, and
        how alike (:meth:`likeness`; none more than :data:`NEW`: ``(0.0, None)``): each ratio
        bounded above first, so few are computed."""
        mine = self.placing.snippet.lines[definition.start_line : definition.end_line]
        matcher = SequenceMatcher(None, autojunk=False)
        matcher.set_seq2(_unnamed(mine, definition.name))
        bounded: list[tuple[float, int, str, Definition]] = []
        for other in others:
            theirs = _unnamed(self.placing.file.lines[other.start_line : other.end_line], other.name)
            matcher.set_seq1(theirs)
            bounded.append((matcher.quick_ratio(), -len(bounded), theirs, other))
        best: tuple[float, Definition | None] = (0.0, None)
        for bound, _, theirs, other in sorted(bounded, key=lambda b: b[:2], reverse=True):
            if bound <= max(best[0], NEW):
                break
            matcher.set_seq1(theirs)
            if (ratio := matcher.ratio()) > best[0]:
                best = (ratio, other)
        return best if best[0] > NEW else (0.0, None)

    def likeness(self, definition: Definition, other: Definition) -> float:
        """How alike the snippet's ``definition`` and the file's ``other`` are in code, names aside."""
        mine = self.placing.snippet.lines[definition.start_line : definition.end_line]
        theirs = self.placing.file.lines[other.start_line : other.end_line]
        matcher = SequenceMatcher(None, _unnamed(theirs, other.name), _unnamed(mine, definition.name), autojunk=False)
        return matcher.ratio() if matcher.quick_ratio() > NEW else 0.0

    def deleted(self, start: int, end: int) -> list[_Splice]:
        """The file's definitions between lines ``start`` and ``end`` deleted: the snippet shows
        the definitions on both sides of them whole, with no marker between; nothing else may
        stand there but blank lines and comments."""
        gone = self.placing.file.outermost(start, end, self.owner)
        if not gone:
            return []
        lines, language = self.placing.file.lines, self.placing.language
        held = {i for d in gone for i in range(lead_start(self.placing.file, d, language, 1), d.end_line)}
        if any(lines[i].strip() and not is_comment(lines[i], language) for i in range(start, end) if i not in held):
            raise Unplaced  # code outside the definitions: not structure's to delete
        first = lead_start(self.placing.file, gone[0], language, 1)
        return [_Splice(first, end, (), whole=True)]

    def flush(self, item: int) -> None:
        """The new definitions waiting, after the item before them where known, else before the
        item at file line ``item``."""
        where = self.pending_at if self.pending_at is not None else item
        self.done += self.placing.insert(self.pending, where, self.owner, before=self.pending_at is None)


def _unnamed(lines: list[str], name: str) -> str:
    """A definition's code, stripped line by line, its own name left out (a rename's likeness)."""
    return "\n".join(re.sub(rf"\b{re.escape(name)}\b", "", line.strip()) for line in lines)


def _drops(old: list[str], new: list[str]) -> bool:
    """Whether ``new`` in place of ``old`` drops more lines than it writes (stripped, as multisets):
    more than a rewrite of some of them."""
    kept, given = (
        Counter(line.strip() for line in old if line.strip()),
        Counter(line.strip() for line in new if line.strip()),
    )
    return (kept - given).total() > (given - kept).total()
