"""The deterministic resolver: program + original text -> edited text, oracle programs, minimal edits.

Lines are numbered from 1 on the text split after each ``\\n``, ``\\r\\n`` or lone ``\\r``
(the line breaks LSP knows); each line keeps its line break.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from .program import Copy, Gen, Op, Program

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines that keep their line breaks; ``"".join`` of the result is ``text``."""
    return _LINE.findall(text)


def resolve(program: Program, text: str) -> str:
    """The edited text: the concatenation of every op's output over the lines of ``text``.

    Raises :class:`~copyedit_lsp.program.ProgramError` naming the first invalid op.
    """
    lines = split_lines(text)
    program.validate(len(lines))
    return "".join("".join(lines[op.start - 1 : op.end]) if isinstance(op, Copy) else op.text for op in program.ops)


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


def merged(ops: list[Op]) -> list[Op]:
    """Merge adjacent copies of consecutive lines and adjacent gens."""
    merged: list[Op] = []
    for op in ops:
        last = merged[-1] if merged else None
        if isinstance(op, Copy) and isinstance(last, Copy) and last.end + 1 == op.start:
            merged[-1] = Copy(last.start, op.end)
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


def text_edits(program: Program, text: str) -> list[LineEdit]:
    """The minimal line edits that turn ``text`` into ``resolve(program, text)``.

    Copies that keep input order are no-ops; the input lines between two of them are
    replaced by the ops' output in between, less the lines that stay equal at either edge.
    A copy that goes backwards is emitted as text.  Edits are sorted and do not overlap.
    """
    lines = split_lines(text)
    program.validate(len(lines))
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
            pending.append("".join(lines[op.start - 1 : op.end]) if isinstance(op, Copy) else op.text)
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
