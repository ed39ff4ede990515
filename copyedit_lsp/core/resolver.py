"""The deterministic resolver: program + original text -> edited text, oracle programs, minimal edits.

Lines are numbered from 1 on the text split after each ``\\n``, ``\\r\\n`` or lone ``\\r``
(the line breaks LSP knows); each line keeps its line break.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .program import ChangeCopy, Copy, Gen, Op, Program

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines that keep their line breaks; ``"".join`` of the result is ``text``."""
    if "\r" in text:
        return _LINE.findall(text)
    lines = text.split("\n")  # the common case, several times faster
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


class Alignment:
    """difflib's line alignment of ``a`` and ``b`` (``get_matching_blocks``, ``get_opcodes``), their
    common first and last lines set aside first: an edit of a long file touches a few of its lines,
    and the rest then costs nothing."""

    def __init__(self, a: Sequence[str], b: Sequence[str]) -> None:
        shortest = min(len(a), len(b))
        head = next((i for i in range(shortest) if a[i] != b[i]), shortest)
        tail = next((i for i in range(shortest - head) if a[len(a) - 1 - i] != b[len(b) - 1 - i]), shortest - head)
        inner = difflib.SequenceMatcher(None, a[head : len(a) - tail], b[head : len(b) - tail], autojunk=False)
        blocks = [(0, 0, head)] + [(i + head, j + head, n) for i, j, n in inner.get_matching_blocks()]
        blocks.append((len(a) - tail, len(b) - tail, tail))
        self.blocks: list[difflib.Match] = []
        for i, j, n in blocks:
            last = self.blocks[-1] if self.blocks else None
            if last is not None and last.a + last.size == i and last.b + last.size == j:
                self.blocks[-1] = difflib.Match(last.a, last.b, last.size + n)
            elif n:
                self.blocks.append(difflib.Match(i, j, n))
        self.blocks.append(difflib.Match(len(a), len(b), 0))

    def get_matching_blocks(self) -> list[difflib.Match]:
        return self.blocks

    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:
        codes, i, j = [], 0, 0
        for ai, bj, size in self.blocks:
            tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
            if tag:
                codes.append((tag, i, ai, j, bj))
            if size:
                codes.append(("equal", ai, ai + size, bj, bj + size))
            i, j = ai + size, bj + size
        return codes


def resolve(program: Program, text: str, change: Sequence[str] = ()) -> str:
    """The edited text: the concatenation of every op's output over the lines of ``text`` (and,
    for an apply program, the ``change``'s lines).

    Raises :class:`~copyedit_lsp.core.program.ProgramError` naming the first invalid op.
    """
    lines = split_lines(text)
    program.validate(len(lines), len(change))
    return "".join(_output(op, lines, change) for op in program.ops)


def _output(op: Op, lines: Sequence[str], change: Sequence[str]) -> str:
    """What one op writes: file lines, change lines or its own text."""
    if isinstance(op, Copy):
        return "".join(lines[op.start - 1 : op.end])
    if isinstance(op, ChangeCopy):
        return "".join(change[op.start - 1 : op.end])
    return op.text


#: Where an output line came from: ("file", line), ("change", line) (1-based), or ("gen", None).
Source = tuple[str, int | None]


def sources(program: Program, change: Sequence[str] = ()) -> list[Source]:
    """Where each line the program writes comes from, in order (a program valid for its inputs)."""
    found: list[Source] = []
    for op in program.ops:
        if isinstance(op, Copy | ChangeCopy):
            kind = "file" if isinstance(op, Copy) else "change"
            found += [(kind, line) for line in range(op.start, op.end + 1)]
        else:
            found += [("gen", None)] * len(split_lines(op.text))
    return found


def oracle_program(before: str, after: str) -> Program:
    """The shortest program that turns ``before`` into ``after``: a line diff, copies maximal."""
    a, b = split_lines(before), split_lines(after)
    ops: list[Op] = []
    for tag, i1, i2, j1, j2 in Alignment(a, b).get_opcodes():
        if tag == "equal":
            ops.append(Copy(i1 + 1, i2))
        elif j2 > j1:  # replace or insert; a delete emits nothing
            ops.append(Gen("".join(b[j1:j2])))
    return Program(tuple(joined(ops)))


def oracle_apply_program(before: str, after: str, change: Sequence[str]) -> Program:
    """An apply program that turns ``before`` into ``after`` given the ``change``'s lines, in the
    shape a merge reads: the runs ``after`` takes from the change copied from it whole (a run of
    only short lines, a blank line or a ``}``, does not count), then the rest copied from the file
    where ``after`` keeps it (a line diff), gens for what is in neither; a run's first and last
    lines that are the file's next (previous) lines, up to a blank one, come from the file
    (:func:`_edges_from_file`).  Copies of each source go forward through it."""
    return _edges_from_file(_runs_first(before, after, change), split_lines(before), change)


def _runs_first(before: str, after: str, change: Sequence[str]) -> Program:
    b = split_lines(after)
    ops: list[Op] = []
    cursor = 0  # file lines before this one are behind the program
    done = 0  # lines of ``after`` written
    blocks = difflib.SequenceMatcher(None, list(change), b, autojunk=False).get_matching_blocks()
    for c1, j1, size in blocks:
        if size and not any(len(line.strip()) >= _SHORT for line in change[c1 : c1 + size]):
            continue
        cursor = _from_file(ops, split_lines(before), cursor, b[done:j1])
        if size:
            ops.append(ChangeCopy(c1 + 1, c1 + size))
        done = j1 + size
    return Program(tuple(joined(ops)))


_SHORT = 4  # a change line shorter than this, stripped, does not make a run worth copying from the change


def _edges_from_file(program: Program, lines: list[str], change: Sequence[str]) -> Program:
    """``program`` with each change copy's leading lines that equal the file lines after the file
    copy before it, and its trailing lines that equal the file lines before the file copy after it,
    copied from the file instead (not blank ones, nor past one): a copy of the file then ends or
    starts at a line the change shows as it is, the line number the model reads beside it."""
    ops = list(program.ops)
    for index, op in enumerate(ops):
        if not isinstance(op, ChangeCopy):
            continue
        before = ops[index - 1] if index else None
        after = ops[index + 1] if index + 1 < len(ops) else None
        start, end = op.start, op.end
        floor = max((o.end for o in ops[:index] if isinstance(o, Copy)), default=0)  # file copies go forward
        ceiling = min((o.start for o in ops[index + 1 :] if isinstance(o, Copy)), default=len(lines) + 1)
        if isinstance(before, Copy):
            while start <= end and before.end + 1 < ceiling and _same_kept(change[start - 1], lines[before.end]):
                before, start = Copy(before.start, before.end + 1), start + 1
            ops[index - 1] = before
            floor = max(floor, before.end)
        if isinstance(after, Copy):
            while end >= start and after.start - 1 > floor and _same_kept(change[end - 1], lines[after.start - 2]):
                after, end = Copy(after.start - 1, after.end), end - 1
            ops[index + 1] = after
        ops[index] = ChangeCopy(start, end) if start <= end else Gen("")
    return Program(tuple(joined([op for op in ops if op != Gen("")])))


def _same_kept(line: str, other: str) -> bool:
    """The same line, not blank."""
    return line == other and bool(line.strip())


def _from_file(ops: list[Op], lines: list[str], cursor: int, new: list[str]) -> int:
    """Append ops that write ``new`` from the file's lines at or after ``cursor`` (0-based) where
    they match, gens elsewhere; return the file line after the last one copied."""
    done = 0
    for i1, k1, size in Alignment(lines[cursor:], new).get_matching_blocks():
        if k1 > done:
            ops.append(Gen("".join(new[done:k1])))
        if size:
            ops.append(Copy(cursor + i1 + 1, cursor + i1 + size))
        done = k1 + size
    last = next((op.end for op in reversed(ops) if isinstance(op, Copy)), 0)
    return max(cursor, last)


def joined(ops: list[Op]) -> list[Op]:
    """Adjacent copies of consecutive lines (of one source) joined into one, and adjacent gens."""
    ops_joined: list[Op] = []
    for op in ops:
        last = ops_joined[-1] if ops_joined else None
        if isinstance(op, Copy | ChangeCopy) and type(last) is type(op) and last.end + 1 == op.start:
            ops_joined[-1] = type(op)(last.start, op.end)
        elif isinstance(op, Gen) and isinstance(last, Gen):
            ops_joined[-1] = Gen(last.text + op.text)
        else:
            ops_joined.append(op)
    return ops_joined


@dataclass(frozen=True)
class LineEdit:
    """Replace input lines ``start``..``end - 1`` (0-based, end exclusive) with ``new_text``.

    ``start == end`` is an insertion before line ``start`` (``start`` may equal the line count).
    """

    start: int
    end: int
    new_text: str


def text_edits(program: Program, text: str, change: Sequence[str] = ()) -> list[LineEdit]:
    """The minimal line edits that turn ``text`` into ``resolve(program, text, change)``.

    Copies that keep input order are no-ops; the input lines between two of them are
    replaced by the ops' output in between, less the lines that stay equal at either edge.
    A copy that goes backwards is emitted as text.  Edits are sorted and do not overlap.
    """
    lines = split_lines(text)
    program.validate(len(lines), len(change))
    edits: list[LineEdit] = []
    cursor = 0  # next input line (0-based) not yet kept or replaced
    pending: list[str] = []  # output lines since the last kept copy

    def flush(upto: int) -> None:
        edit = _trimmed(lines, cursor, upto, split_lines("".join(pending)))
        if edit is not None:
            edits.append(edit)
        pending.clear()

    for op in program.ops:
        if isinstance(op, Copy) and op.start - 1 >= cursor:
            flush(op.start - 1)
            cursor = op.end
        else:
            pending.append(_output(op, lines, change))
    flush(len(lines))
    return edits


def _trimmed(lines: list[str], start: int, end: int, new: list[str]) -> LineEdit | None:
    """An edit of ``lines[start:end]`` into ``new`` without its equal leading and trailing lines."""
    old = lines[start:end]
    head = 0
    while head < len(old) and head < len(new) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < len(old) - head and tail < len(new) - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    if head == len(old) == len(new):
        return None
    return LineEdit(start + head, end - tail, "".join(new[head : len(new) - tail]))


def apply_edits(text: str, edits: list[LineEdit]) -> str:
    """Apply sorted, non-overlapping line edits to ``text``."""
    lines = split_lines(text)
    out: list[str] = []
    cursor = 0
    for edit in edits:
        out.extend(lines[cursor : edit.start])
        out.append(edit.new_text)
        cursor = edit.end
    out.extend(lines[cursor:])
    return "".join(out)
