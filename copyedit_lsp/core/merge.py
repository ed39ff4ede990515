"""The deterministic merge: a change placed in the file by anchor matching, as the tools people use
today do it, with their fuzzy rules; the baseline an apply model is measured against.

Search/replace blocks and diff hunks are found by their anchor lines: exactly, else ignoring
trailing whitespace, else ignoring indentation (the replacement re-indented by the same amount);
a diff's ``@@`` line numbers only choose among several matches. A snippet's parts (the runs of
lines between its elision markers) are placed in order, each over the file lines from its first
to its last line found in the file; the file's code around them is kept. What cannot be placed,
or matches more than one place, is named in :attr:`Merged.unplaced`, never dropped silently.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .change import Change, Piece, change_lines, ended_text, ending_as
from .program import Program
from .resolver import Alignment, oracle_apply_program, split_lines

_HUNK_START = re.compile(r"^@@ -(\d+)")
_WORD = re.compile(r"\w+")
EDGE = 3  # file lines before (after) a snippet that does not begin (end) with a marker: replaced


@dataclass(frozen=True)
class Merged:
    """The merge: the merged text as an apply program (None where nothing was placed) and the
    parts of the change that could not be placed, each named with why."""

    program: Program | None
    text: str
    unplaced: tuple[str, ...] = ()
    placed_by: str = "merge"  # or "structure" (:mod:`.structure`)
    deleted: frozenset[str] = (
        frozenset()
    )  # lines (stripped) of definitions the change gives whole that they no longer hold


def merge(text: str, change: Change) -> Merged:
    """``change`` merged into ``text`` by the rules above (the file's lines ended, the result
    ending as the file does: :func:`~copyedit_lsp.core.change.ending_as`)."""
    ended = ended_text(text)
    lines = split_lines(ended)
    unplaced: list[str] = []
    if change.form == "file":
        merged, placed = list(change_lines(change)), 1
    elif change.form == "snippet":
        merged, placed, unplaced = merge_snippet(lines, change)
    else:
        merged, placed, unplaced = _pieces(lines, change)
    after = "".join(merged)
    if not placed:
        return Merged(None, text, tuple(unplaced))
    program = oracle_apply_program(ended, after, change_lines(change))
    return Merged(program, ending_as(text, after), tuple(unplaced))


def anchors(line: str) -> bool:
    """A line that can anchor a match: two words or more and five letters or digits (not a blank
    line, a bracket, ``break;`` or ``x = 1``)."""
    return len(_WORD.findall(line)) >= 2 and sum(c.isalnum() for c in line) >= 5


def indent_shift(ours: str, theirs: str) -> str:
    """The indentation that turns the change's line ``theirs`` into the file's ``ours``: a
    prefix to add, or as ``-X`` one to remove ("" for none)."""
    mine, given = ours[: len(ours) - len(ours.lstrip())], theirs[: len(theirs) - len(theirs.lstrip())]
    if mine.endswith(given):
        return mine.removesuffix(given)
    return "-" + given.removesuffix(mine) if given.endswith(mine) else ""


def _find(lines: list[str], anchor: tuple[str, ...], hint: int | None) -> tuple[int, str] | str:
    """Where ``anchor`` is in ``lines`` (0-based) and the indentation to add to the replacement
    (removed where it starts with "-"), or why it is not found once."""
    n = len(anchor)
    for same in (str.__eq__, lambda a, b: a.rstrip() == b.rstrip(), lambda a, b: a.strip() == b.strip()):
        found = [i for i in range(len(lines) - n + 1) if all(same(lines[i + k], anchor[k]) for k in range(n))]
        if len(found) > 1 and hint is not None:
            found = [min(found, key=lambda i: abs(i - hint))]
        if len(found) == 1:
            first = next((k for k in range(n) if anchor[k].strip()), 0)
            return found[0], indent_shift(lines[found[0] + first], anchor[first])
        if len(found) > 1:
            return f"matches {len(found)} places (lines {', '.join(str(i + 1) for i in found[:5])})"
    return "matches nowhere in the file"


def reindented(text: str, shift: str) -> str:
    """``text`` re-indented: ``shift`` added to each non-blank line, or, as ``-X``, X removed."""
    if not shift:
        return text
    if shift.startswith("-"):
        return text.removeprefix(shift[1:]) if text.strip() else text
    return shift + text if text.strip() else text


def _pieces(lines: list[str], change: Change) -> tuple[list[str], int, list[str]]:
    """Search/replace blocks or diff hunks placed by their anchors; the rest of the file kept."""
    placed: list[tuple[int, int, list[str]]] = []
    unplaced = []
    for number, piece in enumerate(change.pieces, 1):
        where = _place(lines, piece)
        if isinstance(where, str):
            unplaced.append(f"{change.piece_name(number)}: {where}")
            continue
        start, shift = where
        new = [reindented(line.text, shift) for line in change.lines[piece.first - 1 : piece.last]]
        overlap = next((p for p in placed if p[0] < start + len(piece.anchor) and start < p[1]), None)
        if overlap is not None:
            unplaced.append(f"{change.piece_name(number)}: overlaps another at line {start + 1}")
            continue
        placed.append((start, start + len(piece.anchor), new))
    merged, cursor = [], 0
    for start, end, new in sorted(placed):
        merged += lines[cursor:start] + new
        cursor = end
    return merged + lines[cursor:], len(placed), unplaced


def _place(lines: list[str], piece: Piece) -> tuple[int, str] | str:
    """Where a piece's anchor is (and the indentation shift), or why not."""
    hint = int(match[1]) - 1 if (match := _HUNK_START.match(piece.header)) else None
    if not piece.anchor:  # a hunk of added lines only: its line number is all there is
        return (min(hint, len(lines)), "") if hint is not None else "has no context lines to find"
    return _find(lines, piece.anchor, hint)


def merge_snippet(lines: list[str], change: Change, *, reindent: bool = True) -> tuple[list[str], int, list[str]]:
    """Each part of a snippet (between markers) over the file lines from its first to its last
    line found there (past the previous part), re-indented as its first line found there (unless
    not to ``reindent``: the snippet's lines are at the file's indentation); the file's lines
    around the parts kept, but for the few (:data:`EDGE`) before a first part no marker precedes,
    or after a last part no marker follows: the snippet shows the file's start or end there."""
    parts = change.runs()
    marked = any(line.marker for line in change.lines)
    merged: list[str] = []
    cursor, placed, unplaced = 0, 0, []
    shown = [p for p in parts if any(anchors(line) for line in p)]
    for number, part in enumerate(shown, 1):
        where = _span(lines, cursor, part)
        if where is None:
            named = next(line for line in part if anchors(line)).strip()[:40]
            unplaced.append(f"part {number} ({named!r}): matches nowhere in the file")
            continue
        start, end, shift = where
        if marked and part is parts[0] and start <= EDGE:
            start = 0
        if marked and part is parts[-1] and len(lines) - end <= EDGE:
            end = len(lines)
        merged += lines[cursor:start] + [reindented(line, shift if reindent else "") for line in part]
        cursor, placed = end, placed + 1
    return merged + lines[cursor:], placed, unplaced


def _span(lines: list[str], cursor: int, part: list[str]) -> tuple[int, int, str] | None:
    """The file lines (from ``cursor``) a snippet part stands for, and its indentation shift:
    from the first to the last of its lines found there (blank and bracket lines never anchor),
    widened over the file lines next to them that its unmatched first and last lines rewrite.
    The lines are matched as written and stripped; the match that anchors more lines is taken, as
    written on a tie (a part at the file's indentation tells apart lines alike but for it)."""
    rest = lines[cursor:]
    chains = [_chain(rest, part, str.rstrip), _chain(rest, part, str.strip)]
    blocks = max(chains, key=lambda chain: sum(anchors(x) for b in chain for x in part[b.b : b.b + b.size]))
    if not blocks:
        return None
    start, end = cursor + blocks[0].a, cursor + blocks[-1].a + blocks[-1].size
    above, below = blocks[0].b, blocks[-1].b + blocks[-1].size  # part lines before and after the matches
    while above and start > cursor and rewrites(part[above - 1], lines[start - 1]):
        above, start = above - 1, start - 1
    while below < len(part) and end < len(lines) and rewrites(part[below], lines[end]):
        below, end = below + 1, end + 1
    return start, end, indent_shift(lines[cursor + blocks[0].a], part[blocks[0].b])


def _chain(rest: list[str], part: list[str], key: Callable[[str], str]) -> list[difflib.Match]:
    """The blocks of ``part`` matched in ``rest`` (lines compared by ``key``) that hold an
    anchoring line: the block of most anchoring lines, and the blocks next to it no farther apart
    in the file than in the part (plus what the part may rewrite between them)."""
    matcher = difflib.SequenceMatcher(
        lambda line: not anchors(line), [key(line) for line in rest], [key(line) for line in part], autojunk=False
    )
    blocks = [b for b in matcher.get_matching_blocks() if b.size and any(anchors(x) for x in part[b.b : b.b + b.size])]
    if not blocks:
        return []
    core = max(
        range(len(blocks)), key=lambda i: sum(anchors(x) for x in part[blocks[i].b : blocks[i].b + blocks[i].size])
    )
    first = last = core
    while first > 0 and _near(blocks[first - 1], blocks[first]):
        first -= 1
    while last < len(blocks) - 1 and _near(blocks[last], blocks[last + 1]):
        last += 1
    return blocks[first : last + 1]


def _near(upper: difflib.Match, lower: difflib.Match) -> bool:
    """Whether two matched blocks are as far apart in the file as in the part, give or take the
    lines the part rewrites between them."""
    file_gap, part_gap = lower.a - upper.a - upper.size, lower.b - upper.b - upper.size
    return 0 <= file_gap <= 2 * part_gap + 3


def rewrites(new: str, old: str) -> bool:
    """Whether the change's line ``new`` reads as a rewrite of the file's line ``old``: alike
    enough, and where either is too short to anchor, all but alike with four letters or digits."""
    alike = difflib.SequenceMatcher(None, old.strip(), new.strip()).ratio()
    if not (anchors(new) and anchors(old)):
        letters = min(sum(c.isalnum() for c in line) for line in (new, old))
        return new.strip() == old.strip() or (letters >= 4 and alike >= 0.8)
    return alike >= 0.6


def rewrite_of(old: Sequence[str], new: Sequence[str]) -> bool:
    """Whether the lines ``new``, written in the place of ``old``, read as their rewrite: one of
    them rewrites one of theirs (:func:`rewrites`), ``old`` no longer than two matched blocks may
    lie apart around ``new`` (:func:`_near`), or line for line each opens with the same word at
    the same indentation (``return depth == 0`` for ``return True``)."""
    if len(old) <= 2 * len(new) + 3 and any(rewrites(line, was) for line in new for was in old):
        return True
    openings = [(len(line) - len(line.lstrip()), line.split()[:1]) for line in (*old, *new)]
    return len(old) == len(new) and openings[: len(old)] == openings[len(old) :]


def rewritten_in_place(old: Sequence[str], new: Sequence[str]) -> set[int]:
    """The indices of the lines of ``old`` in a run that ``new``, aligned with it (whitespace
    aside), writes a rewrite of in its place (:func:`rewrite_of`)."""
    alignment = Alignment([line.strip() for line in old], [line.strip() for line in new])
    return {
        i
        for tag, i1, i2, j1, j2 in alignment.get_opcodes()
        if tag == "replace" and rewrite_of(old[i1:i2], new[j1:j2])
        for i in range(i1, i2)
    }
