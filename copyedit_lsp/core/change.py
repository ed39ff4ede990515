"""A change an assistant wrote for a file, read into numbered change lines an apply program copies.

Four forms, as assistants write them (:func:`read_change` tells them apart, or is told):

* ``snippet``: the new code with elision markers where the file's code is kept
  (``# ... existing code ...``, ``// ... rest of the code unchanged``, ``/* ... */``, a bare
  ``...``); several snippets for one file are one snippet, their markers between them.
* ``search-replace``: ``<<<<<<< SEARCH`` / ``=======`` / ``>>>>>>> REPLACE`` blocks.
* ``diff``: a unified diff; its ``@@`` line numbers may be wrong or missing.
* ``file``: the whole proposed file.

**How a change is numbered.** Its lines are the lines it proposes for the result, in order, with
the form's own syntax removed, numbered from 1: every line of a snippet (markers too: they are
lines a program should not copy); the lines of each REPLACE body; each hunk's context and added
lines (the prefix removed); every line of a whole file. What a piece replaces in the file (a
SEARCH body; a hunk's context and removed lines) is its ``anchor``: lines to find in the file,
not lines to copy.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace

from .resolver import split_lines

FORMS = ("snippet", "search-replace", "diff", "file")
SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"

# An elision marker: a comment (or nothing) holding an ellipsis and at most a few words, or a
# comment of one of the wordings assistants write without one ("// existing code here", "# rest
# of the file unchanged"); code is never one, though it names ``remaining``.
_COMMENT = r"(?:#|//|/\*+|\*+/|--|<!--|-->|\*)"
_ELLIPSIS = r"(?:\.\.\.+|…)"
_WORDS = r"[\w'’,:;()\[\]{}-]+"
_WORDING = r"(?:existing|unchanged|remaining|rest of|same as before|(?:remains?|stays?) the same|omitted|elided)"
_MARKER = re.compile(
    rf"^\s*(?:"
    rf"(?:{_COMMENT}\s*)*{_ELLIPSIS}(?:\s*{_WORDS}){{0,8}}\s*{_ELLIPSIS}?"  # ... existing code ...
    rf"|(?:{_COMMENT}\s*)+(?:{_WORDS}\s+){{0,6}}{_WORDING}(?:\s*{_WORDS}){{0,8}}\s*{_ELLIPSIS}?"  # # rest unchanged
    rf")\s*(?:{_COMMENT}\s*)*$",
    re.IGNORECASE,
)


class ChangeError(ValueError):
    """A change that cannot be read; says which part and why."""


@dataclass(frozen=True)
class ChangeLine:
    """One numbered line of a change: its text (with its line break) and what it is."""

    text: str
    marker: bool = False  # an elision marker: the file's code goes here
    piece: int = 0  # the snippet, block or hunk it belongs to


@dataclass(frozen=True)
class Piece:
    """One block of a search/replace change or one hunk of a diff: the file lines it replaces
    (``anchor``) and its change lines (``first``..``last``, 1-based, inclusive; none: a deletion)."""

    anchor: tuple[str, ...]
    first: int
    last: int
    header: str = ""  # a hunk's ``@@`` line, as given (its numbers only a hint)


@dataclass(frozen=True)
class Change:
    """A change read: its form, its numbered lines and, for blocks and hunks, its pieces."""

    form: str
    lines: tuple[ChangeLine, ...]
    pieces: tuple[Piece, ...] = ()
    given: str = ""  # the change as written

    def parts(self) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """Each part a result must show: a snippet's runs of lines between markers (those with a
        line that is not blank), each block or hunk; as (its name, the lines it writes, the lines
        it replaces in the file)."""
        if self.pieces:
            return [
                (self.piece_name(number), tuple(line.text for line in self.lines[piece.first - 1 : piece.last]),
                 piece.anchor)
                for number, piece in enumerate(self.pieces, 1)
            ]  # fmt: skip
        shown = [run for run in self.runs() if any(line.strip() for line in run)]
        return [(f"part {number} ({_named(run)})", tuple(run), ()) for number, run in enumerate(shown, 1)]

    def piece_name(self, number: int) -> str:
        """Block or hunk ``number`` (1-based) named by its first anchor line that is not blank, or
        its first line."""
        piece = self.pieces[number - 1]
        kind = "block" if self.form == "search-replace" else "hunk"
        shown = [line for line in piece.anchor if line.strip()] or [self.text(piece.first, piece.first)]
        return f"{kind} {number} ({_named(shown)})"

    def runs(self) -> list[list[str]]:
        """A snippet's runs of lines between its markers, in order (the first and the last are
        empty where the snippet begins or ends with a marker)."""
        runs: list[list[str]] = [[]]
        for line in self.lines:
            if line.marker:
                runs.append([])
            else:
                runs[-1].append(line.text)
        return runs

    def deleted(self) -> frozenset[str]:
        """The lines (stripped, non-blank) the change deletes on purpose: lines of a SEARCH body
        or a hunk's removed lines that none of its lines writes again."""
        written = {line.text.strip() for line in self.lines}
        return frozenset(
            stripped
            for piece in self.pieces
            for line in piece.anchor
            if (stripped := line.strip()) and stripped not in written
        )

    def text(self, first: int, last: int) -> str:
        """Change lines ``first``..``last`` (1-based, inclusive), joined."""
        return "".join(line.text for line in self.lines[first - 1 : last])

    def keeping(self, numbers: frozenset[int]) -> Change:
        """The change with only its blocks or hunks ``numbers`` (1-based), lines renumbered,
        written again as given."""
        lines: list[ChangeLine] = []
        pieces, given = [], []
        for number, piece in enumerate(self.pieces, 1):
            if number in numbers:
                kept = self.lines[piece.first - 1 : piece.last]
                pieces.append(replace(piece, first=len(lines) + 1, last=len(lines) + len(kept)))
                lines += [replace(line, piece=len(pieces) - 1) for line in kept]
                new = [line.text for line in kept]
                given.append(
                    write_block(list(piece.anchor), new)
                    if self.form == "search-replace"
                    else write_hunk(piece.header or "@@", list(piece.anchor), new)
                )
        return Change(self.form, tuple(lines), tuple(pieces), "".join(given))

    @property
    def markers(self) -> frozenset[int]:
        """The numbers of a snippet's elision markers: lines no change copy holds."""
        return frozenset(number for number, line in enumerate(self.lines, 1) if line.marker)


def _named(lines: tuple[str, ...] | list[str]) -> str:
    """A part named by its first line that is not blank, cut short."""
    return repr(next((line.strip() for line in lines if line.strip()), "")[:40])


def ended(lines: list[str]) -> list[str]:
    """``lines`` with a line break after the last (a file's last line may lack one)."""
    return [*lines[:-1], lines[-1] if lines[-1].endswith(("\n", "\r")) else lines[-1] + "\n"] if lines else []


def ended_text(text: str) -> str:
    """``text`` with a line break after its last line: an apply merges the file's lines so, as the
    change's lines all end with one (a line copied from the file then never runs into the next)."""
    return "".join(ended(split_lines(text)))


def ending_as(text: str, merged: str) -> str:
    """``merged``, a change merged into ``text``'s lines (:func:`ended_text`), ending as ``text``
    does: without a final line break where ``text`` has none."""
    if not text or text.endswith(("\n", "\r")):
        return merged
    return merged.removesuffix("\r\n") if merged.endswith("\r\n") else merged.removesuffix("\n").removesuffix("\r")


def write_block(old: list[str], new: list[str]) -> str:
    """A search/replace block: ``old`` (the SEARCH body) replaced by ``new``."""
    return f"{SEARCH}\n{''.join(ended(old))}{DIVIDER}\n{''.join(ended(new))}{REPLACE}\n"


def write_hunk(header: str, old: list[str], new: list[str]) -> str:
    """A unified diff hunk: ``header``, then ``old`` turned into ``new`` as context, removed and added lines."""
    body = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            body += [" " + line for line in ended(old[i1:i2])]
        else:
            body += ["-" + line for line in ended(old[i1:i2])]
            body += ["+" + line for line in ended(new[j1:j2])]
    return header + "\n" + "".join(body)


def change_lines(change: Change | None) -> tuple[str, ...]:
    """The texts of ``change``'s numbered lines (none without a change)."""
    return tuple(line.text for line in change.lines) if change is not None else ()


def is_marker(line: str) -> bool:
    """Whether ``line`` is an elision marker (in any comment style, or a bare ellipsis)."""
    return bool(line.strip()) and _MARKER.match(line.rstrip("\r\n")) is not None


def change_form(text: str) -> str:
    """The form of ``text``: search/replace blocks, a unified diff, a snippet with markers, else a whole file."""
    lines = split_lines(text)
    if any(line.rstrip() == SEARCH for line in lines):
        return "search-replace"
    if any(line.startswith("@@") for line in lines) or _diff_header(lines):
        return "diff"
    if any(is_marker(line) for line in lines):
        return "snippet"
    return "file"


def read_change(text: str, form: str | None = None) -> Change:
    """``text`` read as a change of ``form`` (see :data:`FORMS`; None: :func:`change_form`).

    Raises :class:`ChangeError` for an empty change, a change of markers only, or blocks and
    hunks that do not parse (naming which)."""
    if not text.strip():
        raise ChangeError("the change is empty")
    form = form or change_form(text)
    if form not in FORMS:
        raise ChangeError(f"unknown change form {form!r}; choose from {', '.join(FORMS)}")
    lines = split_lines(text)
    if form == "search-replace":
        change = _search_replace(lines)
    elif form == "diff":
        change = _diff(lines)
    else:
        change = Change(form, tuple(ChangeLine(line, form == "snippet" and is_marker(line)) for line in lines))
    if change.lines and all(line.marker or not line.text.strip() for line in change.lines):
        raise ChangeError("the change holds only elision markers: no code to apply")
    return replace(change, given=text)


def _search_replace(lines: list[str]) -> Change:
    """Blocks of SEARCH lines, a divider, REPLACE lines; text outside the blocks is ignored."""
    numbered: list[ChangeLine] = []
    pieces: list[Piece] = []
    part: str | None = None
    search: list[str] = []
    replace: list[str] = []
    for number, line in enumerate(lines, 1):
        bare = line.rstrip()
        if bare == SEARCH:
            if part is not None:
                raise ChangeError(f"block {len(pieces) + 1}: a new SEARCH at line {number} before its REPLACE ended")
            part, search, replace = "search", [], []
        elif bare == DIVIDER and part == "search":
            part = "replace"
        elif bare == REPLACE and part == "replace":
            if not search:
                raise ChangeError(f"block {len(pieces) + 1}: an empty SEARCH (nothing to find in the file)")
            first = len(numbered) + 1
            numbered += [ChangeLine(text, piece=len(pieces)) for text in replace]
            pieces.append(Piece(tuple(search), first, len(numbered)))
            part = None
        elif part == "search":
            search.append(line)
        elif part == "replace":
            replace.append(line)
    if part is not None:
        raise ChangeError(f"block {len(pieces) + 1}: no {DIVIDER if part == 'search' else REPLACE} before the end")
    if not pieces:
        raise ChangeError("no search/replace block")
    return Change("search-replace", tuple(numbered), tuple(pieces))


def _diff_header(lines: list[str]) -> bool:
    return any(a.startswith("--- ") and b.startswith("+++ ") for a, b in zip(lines, lines[1:], strict=False))


def _diff(lines: list[str]) -> Change:
    """Hunks of a unified diff: ``@@`` lines start them (their numbers a hint); ``---``/``+++``
    file headers and ``\\ No newline`` notes are skipped."""
    numbered: list[ChangeLine] = []
    pieces: list[Piece] = []
    header: str | None = None
    anchor: list[str] = []
    first = 0

    def close() -> None:
        if header is not None and (anchor or len(numbered) >= first):
            pieces.append(Piece(tuple(anchor), first, len(numbered), header))

    for index, line in enumerate(lines):
        if line.startswith("@@"):
            close()
            header, anchor, first = line.rstrip("\r\n"), [], len(numbered) + 1
        elif line.startswith(("--- ", "+++ ")) and (header is None or _diff_header(lines[index : index + 2])):
            close()
            header = None
        elif line.startswith("\\"):
            continue
        elif header is not None:
            mark, body = line[:1], line[1:]
            if not line.strip():  # an empty context line (its space maybe dropped by a tool)
                mark, body = " ", line.removeprefix(" ")
            elif mark not in (" ", "+", "-"):
                raise ChangeError(
                    f"hunk {len(pieces) + 1}: a line that is neither context, added nor removed: {line!r}"
                )
            if mark in (" ", "-"):
                anchor.append(body)
            if mark in (" ", "+"):
                numbered.append(ChangeLine(body, piece=len(pieces)))
    close()
    if not pieces:
        raise ChangeError("no hunk in the diff (a hunk starts with an @@ line)")
    return Change("diff", tuple(numbered), tuple(pieces))
