"""The region an edit covers: the commands' arguments, the lines they edit, the limits a
document must keep, and why a finished edit may be refused.

Plain logic between the server's handlers and the decoder (no LSP I/O here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import cattrs

from ..core.loss import NAME
from ..core.resolver import split_lines
from ..core.scope import Definition, Scope, definitions, edit_scope


@dataclass(frozen=True)
class Position:
    line: int
    character: int


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position


@dataclass(frozen=True)
class EditArguments:
    """``copyedit.edit``'s argument object."""

    uri: str
    instruction: str | None = None
    range: Range | None = None
    version: int | None = None  # refuse to start on another version of the document
    commentLine: int | None = None  # an instruction comment the edit removes  # noqa: N815 (JSON name)


@dataclass(frozen=True)
class ApplyArguments:
    """``copyedit.apply``'s argument object: the change an assistant wrote, merged into the
    document (or the lines a selection ``range`` covers)."""

    uri: str
    change: str
    version: int | None = None
    range: Range | None = None
    form: str | None = None  # snippet, search-replace, diff or file (None: told from the change)
    partial: bool = False  # apply what can be placed, name the rest
    shortcut: bool = True  # no model where the anchors or the structure place the whole change (fast_apply)
    instruction: str | None = None  # what the change is for (context for the model)


@dataclass(frozen=True)
class RefactorArguments:
    """``copyedit.refactorWorkspace``'s argument object."""

    instruction: str
    include: list[str] | None = None  # glob patterns relative to a workspace folder
    maxFiles: int = 50  # noqa: N815 (JSON name)


_converter = cattrs.Converter(forbid_extra_keys=True)


def parse_arguments(arguments: tuple[Any, ...], kind: type) -> Any:
    """The one argument object of a command, structured; ValueError with a clear message otherwise."""
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        raise ValueError(
            f"expects one argument object with the fields of {kind.__name__}, got {list(arguments)!r:.200}"
        )
    try:
        return _converter.structure(arguments[0], kind)
    except cattrs.BaseValidationError as error:
        raise ValueError(f"invalid arguments: {'; '.join(cattrs.transform_error(error))}") from None


@dataclass(frozen=True)
class Region:
    """Whole lines ``start``..``end - 1`` (0-based) of a document, and the text the model edits."""

    start: int
    end: int
    source: str  # the region's text, less an instruction comment
    kind: str  # selection, function, method, class, document
    name: str | None = None
    comment_line: int | None = None


def plan_region(text: str, language_id: str | None, arguments: EditArguments, chosen: str | None = None) -> Region:
    """The lines an edit covers: the selection, else the enclosing definition, else what the
    instruction names (or the model ``chosen``: :func:`narrowed_scope`), else the document."""
    lines = split_lines(text)
    last = max(len(lines) - 1, 0)
    if arguments.range is not None:
        start, end = arguments.range.start, arguments.range.end
        if not (0 <= start.line <= end.line and end.line <= len(lines)):
            raise ValueError(f"range lines {start.line}-{end.line} are outside the document's {len(lines)} lines")
        first = min(start.line, last)  # the empty line after a final line break holds nothing to edit
        # a selection that ends at the start of a line does not include that line
        final = end.line - 1 if end.line > start.line and end.character == 0 else end.line
        selected = (start.line, start.character) != (end.line, end.character)
        final = min(final, last)
    else:
        first = final = 0
        selected = False
    comment = arguments.commentLine
    if comment is not None and not 0 <= comment <= last:
        raise ValueError(f"commentLine {comment} is outside the document's {len(lines)} lines")
    if selected:
        start_line, end_line, kind, name = first, final + 1, "selection", None
    else:
        scope = edit_scope(text, language_id, first, final) if arguments.range is not None else None
        if scope is None or scope.kind == "document":  # no definition at the cursor: what the instruction is about
            scope = narrowed_scope(text, language_id, arguments.instruction or "", chosen)
        start_line, end_line, kind, name = scope.start_line, scope.end_line, scope.kind, scope.name
    if comment is not None:
        start_line, end_line = min(start_line, comment), max(end_line, comment + 1)
    kept = [line for number, line in enumerate(lines[start_line:end_line], start_line) if number != comment]
    return Region(start_line, end_line, "".join(kept), kind, name, comment)


# Words that spread an instruction from the names it says to where they are used.
_SPREAD = re.compile(
    r"\b(renam|everywhere|throughout|caller|call site|call-site|usage|uses\b|parameter|argument|signature)",
    re.IGNORECASE,
)
_EVERY = re.compile(r"\b(all|every|each|everywhere|throughout|whole|entire)\b", re.IGNORECASE)
WHOLE_SHARE = 0.9  # a narrowed region this much of the document is the document


CHOICE_LINES = 60  # a document this long whose instruction names no definition has the model choose one


def narrowed_scope(text: str, language_id: str | None, instruction: str, chosen: str | None = None) -> Scope:
    """The lines an instruction on a whole document concerns: the top-level definitions (functions,
    classes, assignments) whose names it says, or whose definitions it names (a method: its class),
    with, where it speaks of renaming, parameters, callers or uses, the top-level definitions that
    use those names; from the first to the last of them.  The document where it names none (or they
    cover nearly all of it).  ``chosen`` counts as said: the definition the model chose
    (:func:`choice_names`)."""
    lines = split_lines(text)
    whole = Scope(0, len(lines), "document", None)
    said = set(NAME.findall(instruction)) | ({chosen} if chosen else set())
    units = _top_level_units(text, language_id)
    named = [unit for unit in units if unit.name in said or any(d.name in said for d in unit.inner)]
    if not named:
        return whole
    if _SPREAD.search(instruction):
        names = {unit.name for unit in named} | {d.name for unit in named for d in unit.inner if d.name in said}
        named += [unit for unit in units if unit not in named and names & _words(lines, unit)]
    start, end = min(u.start_line for u in named), max(u.end_line for u in named)
    if end - start >= WHOLE_SHARE * len(lines):
        return whole
    if len(named) == 1:
        return Scope(start, end, named[0].kind, named[0].name)
    return Scope(start, end, "definitions", ", ".join(sorted({u.name for u in named})))


def choice_names(text: str, language_id: str | None, instruction: str) -> list[str]:
    """The top-level functions and classes the model chooses among, where an instruction on the
    whole document names none of them, does not speak of all of it, and the document has
    :data:`CHOICE_LINES` lines or more; else none (no choice to make)."""
    if len(split_lines(text)) < CHOICE_LINES or narrowed_scope(text, language_id, instruction).kind != "document":
        return []
    if _EVERY.search(instruction):  # about all of it
        return []
    names = [unit.name for unit in _top_level_units(text, language_id) if unit.kind in ("function", "class")]
    return names if len(names) >= 2 else []


@dataclass(frozen=True)
class _Unit:
    """A top-level definition or assignment, and the definitions inside it."""

    start_line: int
    end_line: int
    kind: str
    name: str
    inner: tuple[Definition, ...] = ()


def _top_level_units(text: str, language_id: str | None) -> list[_Unit]:
    found = definitions(text, language_id)
    units = [
        _Unit(d.start_line, d.end_line, d.kind, d.name, tuple(o for o in found if o.outer[:1] == (d.name,)))
        for d in found
        if not d.outer
    ]
    taken = {line for unit in units for line in range(unit.start_line, unit.end_line)}
    for number, line in enumerate(split_lines(text)):
        assigned = re.match(r"(?:(?:export\s+)?(?:const|let|var)\s+)?([A-Za-z_$][\w$]*)\s*(?::[^=]*)?=[^=]", line)
        if assigned and number not in taken:
            units.append(_Unit(number, number + 1, "assignment", assigned.group(1)))
    return sorted(units, key=lambda unit: unit.start_line)


def _words(lines: list[str], unit: _Unit) -> set[str]:
    return {word for line in lines[unit.start_line : unit.end_line] for word in NAME.findall(line)}


def apply_region(text: str, arguments: ApplyArguments) -> Region:
    """The lines a change is merged into: those a selection covers, else the whole document."""
    selection = arguments.range
    if selection is None or selection.start == selection.end:
        return Region(0, len(split_lines(text)), text, "document")
    return plan_region(text, None, EditArguments(uri=arguments.uri, range=selection))


def replace_region(text: str, region: Region, new_source: str) -> str:
    """The document with the region's lines replaced by ``new_source``."""
    lines = split_lines(text)
    return "".join(lines[: region.start]) + new_source + "".join(lines[region.end :])


def check_size(text: str, max_bytes: int, what: str = "document") -> None:
    """ValueError when ``text`` (the ``what``) is over ``max_bytes`` (the ``maxFileBytes`` setting) in UTF-8."""
    if len(text.encode("utf-8", errors="surrogatepass")) > max_bytes:
        raise ValueError(f"the {what} is larger than maxFileBytes ({max_bytes})")


def chunk_lines(n_ctx: int) -> int:
    """The most lines of a file a workspace refactor edits at once: a code line is about ten
    tokens, and the prompt needs room (a context sized to each edit, ``n_ctx`` 0, counts as 4096)."""
    return max(20, (n_ctx or 4096) // 40)
