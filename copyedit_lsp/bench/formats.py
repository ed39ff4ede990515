"""``copyedit bench formats``: how many tokens an edit costs, and whether it round-trips, per format.

Formats, each written from a before/after pair, read back from its text and applied to ``before``:

* ``program``: the copy/gen edit program (:func:`oracle_program`), applied by :func:`resolve`;
* ``search/replace``: Aider-style blocks of the changed lines, each applied at the first
  line-aligned match of its search text (a search text found more than once is ambiguous);
* ``unified diff``: difflib's ``unified_diff`` with 3 lines of context, applied strictly (every
  hunk's old lines must stand exactly at its stated line);
* ``rewrite``: the whole after text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from ..common.datasets import EditItem
from ..common.reports import markdown_table
from ..core.program import parse_program
from ..core.resolver import oracle_program, resolve, split_lines

FORMATS = ("program", "search/replace", "unified diff", "rewrite")
SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE\n"
NO_NEWLINE = "\\ No newline at end of file\n"


class FormatError(ValueError):
    """An edit in some format could not be read or applied."""


def search_replace_text(before: str, after: str) -> str:
    """Aider-style blocks, one per changed run of lines; an insertion is anchored on a neighbouring line."""
    a, b = split_lines(before), split_lines(after)
    blocks = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:  # nothing to search for: take the line before (or after) into both sides
            if i1 > 0:
                i1, j1 = i1 - 1, j1 - 1
            elif a:
                i2, j2 = i2 + 1, j2 + 1
        blocks.append(f"{SEARCH}{_line_end(''.join(a[i1:i2]))}{DIVIDER}{_line_end(''.join(b[j1:j2]))}{REPLACE}")
    return "".join(blocks)


def _line_end(text: str) -> str:
    return text if not text or text.endswith(("\n", "\r")) else text + "\n"


def apply_search_replace(text: str, blocks: str) -> tuple[str, int]:
    """Apply blocks in order at the first line-aligned match; returns the text and the ambiguous count.

    A text without a final line break matches as if it had one (blocks are written in whole lines)."""
    unterminated = bool(text) and not text.endswith(("\n", "\r"))
    text += "\n" if unterminated else ""
    pattern = re.compile(re.escape(SEARCH) + r"(.*?)" + re.escape(DIVIDER) + r"(.*?)" + re.escape(REPLACE), re.S)
    ambiguous = 0
    for search, replace in pattern.findall(blocks):
        lines, wanted = split_lines(text), split_lines(search)
        matches = [i for i in range(len(lines) - len(wanted) + 1) if lines[i : i + len(wanted)] == wanted]
        if not wanted or not matches:
            raise FormatError(f"search text not found: {search[:60]!r}")
        ambiguous += len(matches) > 1
        at = matches[0]
        text = "".join([*lines[:at], replace, *lines[at + len(wanted) :]])
    return text[:-1] if unterminated and text.endswith("\n") else text, ambiguous


def unified_diff_text(before: str, after: str) -> str:
    """difflib's unified diff (3 lines of context), with GNU diff's marker after a line without a break."""
    out = []
    for line in difflib.unified_diff(split_lines(before), split_lines(after), "a", "b", n=3):
        out.append(line if line.endswith(("\n", "\r")) else line + "\n" + NO_NEWLINE)
    return "".join(out)


def apply_unified_diff(text: str, diff: str) -> str:
    """Apply a unified diff strictly: each hunk's old lines must stand exactly where it says."""
    old = split_lines(text)
    lines = split_lines(diff)
    result: list[str] = []
    taken = 0  # old lines consumed
    i = 2 if len(lines) >= 2 and lines[0].startswith("--- ") and lines[1].startswith("+++ ") else 0
    while i < len(lines):
        header = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", lines[i])
        if not header:
            raise FormatError(f"expected a hunk header, got {lines[i][:60]!r}")
        start, count = int(header[1]), int(header[2] or 1)
        at = start - 1 if count else start  # an empty old side names the line before it
        if at < taken:
            raise FormatError("hunks overlap or are out of order")
        result += old[taken:at]
        removed, added = [], []
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            kind, body = lines[i][:1], lines[i][1:]
            if kind not in (" ", "-", "+"):
                raise FormatError(f"bad hunk line {lines[i][:60]!r}")
            if i + 1 < len(lines) and lines[i + 1] == NO_NEWLINE:
                body, i = body[:-1], i + 1  # the break was added to write the line
            if kind in " -":
                removed.append(body)
            if kind in " +":
                added.append(body)
            i += 1
        if len(removed) != count or old[at : at + count] != removed:
            raise FormatError(f"hunk at line {start} does not match the text")
        result += added
        taken = at + count
    return "".join(result + old[taken:])


def _round_trip(item: EditItem, name: str, tokenize: Callable[[str], list[int]]) -> dict:
    before, after = item.before, item.after
    ambiguous = 0
    try:
        if name == "program":
            text = oracle_program(before, after).to_text()
            n = len(split_lines(before))
            applied = resolve(parse_program(text, n_lines=n if n else None), before)
        elif name == "search/replace":
            text = search_replace_text(before, after)
            applied, ambiguous = apply_search_replace(before, text)
        elif name == "unified diff":
            text = unified_diff_text(before, after)
            applied = apply_unified_diff(before, text)
        else:
            text = applied = after
        exact = applied == after
    except (FormatError, ValueError):
        exact = False
    return {"tokens": len(tokenize(text)), "exact": exact, "ambiguous": ambiguous}


def formats_benchmark(sets: dict[str, list[EditItem]], tokenize: Callable[[str], list[int]]) -> dict:
    """Per set and format: total and mean tokens, tokens relative to rewrite and program, round trip, ambiguity."""
    result: dict = {"sets": {}}
    for set_name, items in sets.items():
        rows = {name: [_round_trip(item, name, tokenize) for item in items] for name in FORMATS}
        totals = {name: sum(r["tokens"] for r in rs) for name, rs in rows.items()}
        result["sets"][set_name] = {
            name: {
                "items": len(rs),
                "tokens": totals[name],
                "mean_tokens": totals[name] / max(len(rs), 1),
                "vs_rewrite": totals[name] / max(totals["rewrite"], 1),
                "vs_program": totals[name] / max(totals["program"], 1),
                "round_trip": sum(r["exact"] for r in rs),
                "ambiguous_items": sum(r["ambiguous"] > 0 for r in rs),
            }
            for name, rs in rows.items()
        }
    return result


def format_table(result: dict) -> str:
    rows = [
        [
            set_name,
            name,
            f"{f['mean_tokens']:.1f}",
            f"{f['vs_rewrite']:.0%}",
            f"{f['vs_program']:.0%}",
            f"{f['round_trip']}/{f['items']} ({f['round_trip'] / max(f['items'], 1):.1%})",
            f["ambiguous_items"] if name == "search/replace" else "-",
        ]
        for set_name, formats in result["sets"].items()
        for name, f in formats.items()
    ]
    headers = [
        "set",
        "format",
        "mean tokens",
        "tokens vs rewrite",
        "tokens vs program",
        "round trip",
        "ambiguous anchors",
    ]
    return markdown_table(headers, rows, right=range(2, 7))
