"""Turn a program's minimal line edits into LSP TextEdits, in the client's position encoding."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from lsprotocol import types

from ..core.program import Program
from ..core.resolver import LineEdit, Source, split_lines, text_edits


def _units(text: str, encoding: str) -> int:
    """Length of ``text`` in the position encoding's code units."""
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def line_start(lines: list[str], line: int, encoding: str) -> types.Position:
    """The position where 0-based ``line`` starts; past the last line, the end of the document."""
    if line < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
        return types.Position(line=line, character=0)
    last = lines[-1]
    return types.Position(line=len(lines) - 1, character=_units(last, encoding))


def lsp_edits(
    edits: list[LineEdit], document: str, *, first_line: int = 0, encoding: str = types.PositionEncodingKind.Utf16
) -> list[types.TextEdit]:
    """LSP TextEdits for line edits of a region that starts at ``first_line`` of ``document``."""
    lines = split_lines(document)
    return [
        types.TextEdit(
            range=types.Range(
                start=line_start(lines, first_line + e.start, encoding),
                end=line_start(lines, first_line + e.end, encoding),
            ),
            new_text=e.new_text,
        )
        for e in edits
    ]


def region_edits(
    document: str, start: int, end: int, new_region: str, program: Program | None, encoding: str
) -> list[types.TextEdit]:
    """The minimal TextEdits that replace lines ``start``..``end - 1`` of ``document`` by ``new_region``.

    With a program, its copies are no-ops; without one (rewrite mode), the oracle program of
    the region's line diff stands in for it.
    """
    from ..core.resolver import oracle_program

    region = "".join(split_lines(document)[start:end])
    program = program if program is not None else oracle_program(region, new_region)
    return lsp_edits(text_edits(program, region), document, first_line=start, encoding=encoding)


def apply_lsp_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply non-overlapping LSP edits (UTF-16 positions) to ``text``, as an editor does."""
    lines = split_lines(text)

    def offset(position: types.Position) -> int:
        line = lines[position.line] if position.line < len(lines) else ""
        prefix = line.encode("utf-16-le")[: 2 * position.character].decode("utf-16-le")
        return len("".join(lines[: position.line])) + len(prefix)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


PROVENANCE_NOTIFICATION = "copyedit/provenance"


def hunk_provenance(edits: Sequence[types.TextEdit], first_line: int, written: Sequence[Source]) -> list[dict]:
    """Each of an apply's whole-line ``edits`` (:func:`region_edits` of a region that starts at
    ``first_line``) as its review shows it: how many lines it removes and where each of its new
    lines comes from (``{"source": "file"|"change", "line": N}`` or ``{"source": "gen"}``),
    ``written`` the sources of the region's new lines in order."""

    def line(position: types.Position) -> int:  # a position past a last line without a line break
        return position.line + (position.character > 0)

    hunks, shift = [], 0
    for edit in edits:
        start, count = line(edit.range.start), len(split_lines(edit.new_text))
        removes, first = line(edit.range.end) - start, start - first_line + shift
        lines = [{"source": kind} | ({"line": at} if at else {}) for kind, at in written[first : first + count]]
        hunks.append({"removes": removes, "lines": lines})
        shift += count - removes
    return hunks


def describe_hunk(hunk: dict) -> str:
    """What a hunk of :func:`hunk_provenance` does, in words (its change annotation's description)."""
    kinds = Counter(line["source"] for line in hunk["lines"])
    parts = [
        f"{kinds[kind]} {'line' if kinds[kind] == 1 else 'lines'} {words}"
        for kind, words in (
            ("change", "from the change"),
            ("file", "kept from the file"),
            ("gen", "written by the model"),
        )
        if kinds[kind]
    ]
    removed = f"removes {hunk['removes']} {'line' if hunk['removes'] == 1 else 'lines'}" if hunk["removes"] else ""
    if not parts:
        return f"a deletion: {removed}"
    return ", ".join(parts) + (f"; {removed}" if removed else "")
