"""Edit programs: ``<copy lines="I-J"/>`` and ``<gen>...</gen>`` ops, their text form and parser.

The text form (normative grammar: ``grammars/copyedit.gbnf``)::

    <program>
    <copy lines="1-4"/>
    <gen>
    new line
    </gen>
    </program>

An apply program (a change merged into a file, :mod:`~copyedit_lsp.core.change`) copies from two
sources: ``<copy lines="I-J"/>`` the file's lines, ``<copy change="I-J"/>`` the change's.

A gen's text is whole lines (each ending in ``\\n``, ``\\r\\n`` or ``\\r``); only the last op
of a program may be a gen whose text does not end with a line break (the end of a
document without a final newline).  Reserved strings inside documents and gen texts
are escaped reversibly (:func:`escape`), so the body of a gen never contains ``</gen>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROGRAM_OPEN = "<program>\n"
PROGRAM_CLOSE = "</program>"
COPY_OPEN = '<copy lines="'
CHANGE_COPY_OPEN = '<copy change="'
COPY_CLOSE = '"/>\n'
GEN_OPEN = "<gen>\n"
GEN_CLOSE = "</gen>\n"

#: Strings that structure a program and are escaped wherever else they occur.
RESERVED = ("<copy", "<gen>", "</gen>", "<program>", "</program>")

# "<" followed by k >= 0 backslashes and the tail of a reserved string.  Escaping adds one
# backslash (k -> k+1), unescaping removes one from k >= 1: a bijection between all strings
# and the strings in which no reserved string occurs.
_RESERVED_AFTER_LT = re.compile(r"<(\\*)(?=copy|gen>|/gen>|program>|/program>)")
_ESCAPED_AFTER_LT = re.compile(r"<\\(\\*)(?=copy|gen>|/gen>|program>|/program>)")
#: The reserved strings the escape never leaves in a gen's body ("</gen>" ends the body): a
#: model writing one in a gen is opening an op there.
UNESCAPED_OPENINGS = tuple(reserved for reserved in RESERVED if reserved != "</gen>")
_UNESCAPED_OPENING = re.compile("|".join(map(re.escape, UNESCAPED_OPENINGS)))


def escape(text: str) -> str:
    """Escape the reserved strings in ``text`` reversibly; line breaks are untouched."""
    return _RESERVED_AFTER_LT.sub(lambda m: "<\\" + m.group(1), text)


def unescape(text: str) -> str:
    """Invert :func:`escape`."""
    return _ESCAPED_AFTER_LT.sub(lambda m: "<" + m.group(1), text)


class ProgramError(ValueError):
    """A malformed or invalid program: says where, what was expected and which op."""

    def __init__(self, message: str, *, offset: int | None = None, op_index: int | None = None):
        where = []
        if op_index is not None:
            where.append(f"op {op_index + 1}")
        if offset is not None:
            where.append(f"offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)
        self.offset = offset
        self.op_index = op_index


@dataclass(frozen=True)
class Copy:
    """Keep input lines ``start``..``end`` (1-based, inclusive) verbatim."""

    start: int
    end: int

    def to_text(self) -> str:
        return f"{COPY_OPEN}{self.start}-{self.end}{COPY_CLOSE}"


@dataclass(frozen=True)
class ChangeCopy:
    """Keep change lines ``start``..``end`` (1-based, inclusive) verbatim (apply programs only)."""

    start: int
    end: int

    def to_text(self) -> str:
        return f"{CHANGE_COPY_OPEN}{self.start}-{self.end}{COPY_CLOSE}"


@dataclass(frozen=True)
class Gen:
    """Emit ``text`` (whole new lines) verbatim."""

    text: str

    def to_text(self) -> str:
        return f"{GEN_OPEN}{escape(self.text)}{GEN_CLOSE}"


Op = Copy | ChangeCopy | Gen


def op_kind(op: Op | None) -> str:
    """The piece that opens ``op`` in a program: ``copy``, ``change`` (a change copy), ``gen``, or
    ``end`` after the last op (None)."""
    if op is None:
        return "end"
    return "copy" if isinstance(op, Copy) else "change" if isinstance(op, ChangeCopy) else "gen"


def ends_with_line_break(text: str) -> bool:
    return text.endswith(("\n", "\r"))


@dataclass(frozen=True)
class Program:
    """A sequence of copy and gen ops."""

    ops: tuple[Op, ...] = ()

    def to_text(self) -> str:
        """The program's text form, as the model writes it."""
        return PROGRAM_OPEN + "".join(op.to_text() for op in self.ops) + PROGRAM_CLOSE

    def validate(self, n_lines: int, n_change: int = 0) -> None:
        """Raise :class:`ProgramError` naming the first op that is invalid for ``n_lines`` input
        lines and ``n_change`` change lines (none: no change copy is valid)."""
        for i, op in enumerate(self.ops):
            if isinstance(op, Copy | ChangeCopy):
                source, n = ("lines", n_lines) if isinstance(op, Copy) else ("change lines", n_change)
                if op.start > op.end:
                    raise ProgramError(f"copy start {op.start} > end {op.end}", op_index=i)
                if not 1 <= op.start <= op.end <= n:
                    raise ProgramError(f"copy of {source} {op.start}-{op.end} is outside 1..{n}", op_index=i)
            elif not op.text:
                raise ProgramError("empty gen", op_index=i)
            elif not ends_with_line_break(op.text) and i != len(self.ops) - 1:
                raise ProgramError("only the last gen may end without a line break", op_index=i)


def _expect(text: str, pos: int, literal: str, op_index: int | None) -> int:
    if not text.startswith(literal, pos):
        found = text[pos : pos + len(literal)]
        raise ProgramError(f"expected {literal!r}, found {found!r}", offset=pos, op_index=op_index)
    return pos + len(literal)


_NUMBER = re.compile(r"[1-9][0-9]*")


def _number(text: str, pos: int, op_index: int) -> tuple[int, int]:
    m = _NUMBER.match(text, pos)
    if not m:
        raise ProgramError(
            f"expected a line number (1-9 then digits), found {text[pos : pos + 1]!r}",
            offset=pos,
            op_index=op_index,
        )
    return int(m.group()), m.end()


def parse_program(text: str, n_lines: int | None = None, n_change: int = 0) -> Program:
    """Parse a program's text form strictly; with ``n_lines``, also check every copy's range
    (of the file's lines, and of ``n_change`` change lines: none, no change copy).

    Raises :class:`ProgramError` (and nothing else) on any malformed program.
    """
    if not isinstance(text, str):
        raise ProgramError(f"a program is text, not {type(text).__name__}")
    pos = _expect(text, 0, PROGRAM_OPEN, None)
    ops: list[Op] = []
    while not text.startswith(PROGRAM_CLOSE, pos):
        i = len(ops)
        if ops and isinstance(ops[-1], Gen) and not ends_with_line_break(ops[-1].text):
            raise ProgramError("only the last gen may end without a line break", offset=pos, op_index=i - 1)
        op: Op
        if text.startswith(COPY_OPEN, pos):
            op, pos = _copy_at(text, pos, i)
        elif text.startswith(CHANGE_COPY_OPEN, pos):
            op, pos = _copy_at(text, pos, i, change=True)
        elif text.startswith(GEN_OPEN, pos):
            op, pos = _gen_at(text, pos, i)
        else:
            raise ProgramError(
                f"expected '<copy', '<gen>' or '</program>', found {text[pos : pos + 10]!r}",
                offset=pos,
                op_index=i,
            )
        ops.append(op)
    pos += len(PROGRAM_CLOSE)
    if pos != len(text):
        raise ProgramError(f"text after '</program>': {text[pos : pos + 10]!r}", offset=pos)
    program = Program(tuple(ops))
    if n_lines is not None:
        program.validate(n_lines, n_change)
    return program


def _copy_at(text: str, pos: int, i: int, *, change: bool = False) -> tuple[Copy | ChangeCopy, int]:
    """The copy op ``i`` at ``pos`` (of the change's lines with ``change``) and the offset after it."""
    start, pos = _number(text, pos + len(CHANGE_COPY_OPEN if change else COPY_OPEN), i)
    pos = _expect(text, pos, "-", i)
    end, pos = _number(text, pos, i)
    pos = _expect(text, pos, COPY_CLOSE, i)
    if start > end:
        raise ProgramError(f"copy start {start} > end {end}", offset=pos, op_index=i)
    return (ChangeCopy if change else Copy)(start, end), pos


def _gen_at(text: str, pos: int, i: int) -> tuple[Gen, int]:
    """The gen op ``i`` at ``pos`` (its body unescaped) and the offset after it."""
    body_start = pos + len(GEN_OPEN)
    close = text.find("</gen>", body_start)
    if close < 0:
        raise ProgramError("gen without '</gen>'", offset=body_start, op_index=i)
    if close == body_start:
        raise ProgramError("empty gen", offset=body_start, op_index=i)
    unescaped = _UNESCAPED_OPENING.search(text, body_start, close)
    if unescaped:
        raise ProgramError(
            f"unescaped {unescaped.group()!r} in a gen (a gen's body is escaped text)",
            offset=unescaped.start(),
            op_index=i,
        )
    return Gen(unescape(text[body_start:close])), _expect(text, close, GEN_CLOSE, i)
