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
    return _LINE.findall(text)


def resolve(program: Program, text: str, change: Sequence[str] = ()) -> str:
    """The edited text: the concatenation of every op's output over the lines of ``text`` (and,
    for an apply program, the ``change``'s lines).

    Raises :class:`~copyedit_lsp.program.ProgramError` naming the first invalid op.
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
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            ops.append(Copy(i1 + 1, i2))
        elif j2 > j1:  # replace or insert; a delete emits nothing
            ops.append(Gen("".join(b[j1:j2])))
    return Program(tuple(merged(ops)))


def oracle_apply_program(before: str, after: str, change: Sequence[str]) -> Program:
    """A shortest apply program that turns ``before`` into ``after`` given the ``change``'s lines:
    copies of the file where ``after`` keeps it (a line diff), then copies of the change where the
    rest is the change's, gens for what is in neither."""
    a, b = split_lines(before), split_lines(after)
    ops: list[Op] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.append(Copy(i1 + 1, i2))
        elif j2 > j1:
            new = b[j1:j2]
            for kind, c1, c2, k1, k2 in difflib.SequenceMatcher(None, list(change), new, autojunk=False).get_opcodes():
                if kind == "equal":
                    ops.append(ChangeCopy(c1 + 1, c2))
                elif k2 > k1:
                    ops.append(Gen("".join(new[k1:k2])))
    return Program(tuple(merged(ops)))


def merged(ops: list[Op]) -> list[Op]:
    """Merge adjacent copies of consecutive lines (of one source) and adjacent gens."""
    merged: list[Op] = []
    for op in ops:
        last = merged[-1] if merged else None
        if isinstance(op, Copy | ChangeCopy) and type(last) is type(op) and last.end + 1 == op.start:
            merged[-1] = type(op)(last.start, op.end)
        elif isinstance(op, Gen) and isinstance(last, Gen):
            merged[-1] = Gen(last.text + op.text)
        else:
            merged.append(op)
    return merged


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
