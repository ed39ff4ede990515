"""The apply benchmark's changes: an edit's before and after text written as an assistant would
write the change, in each form (:data:`~copyedit_lsp.core.change.FORMS`), and how a merged result is
scored against the gold.

This builder is the benchmark's alone: the training data's changes come from another one, whose
marker wordings are not these (:data:`MARKERS`), so a model is never measured on the wordings it
was trained on.
"""

from __future__ import annotations

import difflib
import random
from collections import Counter
from dataclasses import dataclass

from ..core.change import Change, ended, write_block, write_hunk
from ..core.merge import anchors
from ..core.resolver import split_lines

# Elision markers as assistants write them, by comment style (the benchmark's own wordings).
MARKERS = (
    "... existing code ...",
    "... rest of the code unchanged ...",
    "...",
    "(unchanged code omitted)",
    "... keep the remaining lines as they are",
)
COMMENTS = {"python": ("# {}",), "javascript": ("// {}", "/* {} */")}
SLICES = ("no-context", "repeated-anchor", "re-indented", "unusual-marker")


@dataclass(frozen=True)
class BuiltChange:
    """A change as an assistant wrote it, and what makes it hard (:data:`SLICES`)."""

    form: str
    text: str
    context: int  # lines of unchanged code shown around each changed region
    hard: tuple[str, ...] = ()


def regions(before: list[str], after: list[str], context: int) -> list[tuple[int, int, int, int]]:
    """The changed regions (0-based, ends excluded) of ``before`` and ``after``, each widened by
    ``context`` unchanged lines on both sides (where the region replaces nothing or writes no
    line that can anchor it, as far as its after side holds one, so that a deletion or an
    insertion can be placed), regions that touch merged."""
    found: list[tuple[int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        wide = max(context, 1) if i1 == i2 or j1 == j2 else context
        while wide < 6 and not any(anchors(line) for line in after[max(j1 - wide, 0) : j2 + wide]):
            wide += 1
        top = min(wide, i1, j1)
        bottom = min(wide, len(before) - i2, len(after) - j2)
        region = (i1 - top, i2 + bottom, j1 - top, j2 + bottom)
        if found and region[0] <= found[-1][1]:
            last = found.pop()
            region = (last[0], max(last[1], region[1]), last[2], max(last[3], region[3]))
        found.append(region)
    return found


def build_change(
    before: str, after: str, form: str, language: str, rng: random.Random, context: int | None = None
) -> BuiltChange:
    """``before`` -> ``after`` written as a change of ``form``, with ``context`` lines of context
    (None: 0-3 drawn) and, for a snippet, a marker wording drawn from :data:`MARKERS` (a diff's
    line numbers are right, wrong or missing, a third of the time each)."""
    a, b = split_lines(before), split_lines(after)
    context = rng.randint(0, 3) if context is None else context
    spans = regions(a, b, context)
    hard = ("no-context",) if context == 0 else ()
    if any(_repeated(a, a[i1:i2]) for i1, i2, _, _ in spans if i2 > i1):
        hard += ("repeated-anchor",)
    if form == "file":
        return BuiltChange(form, after, len(a), ())
    if form == "snippet":
        wording = rng.choice(MARKERS)
        if wording != MARKERS[0]:
            hard += ("unusual-marker",)
        marker = rng.choice(COMMENTS.get(language, COMMENTS["javascript"])).format(wording)
        return BuiltChange(form, _snippet(a, b, spans, marker), context, hard)
    if form == "search-replace":
        blocks = [write_block(a[i1:i2], b[j1:j2]) for i1, i2, j1, j2 in spans]
        return BuiltChange(form, "\n".join(blocks), context, hard)
    return BuiltChange(form, _diff(a, b, spans, rng), context, hard)


def _repeated(lines: list[str], anchor: list[str]) -> bool:
    """Whether ``anchor`` (a run of lines) occurs more than once in ``lines``, stripped."""
    n, want = len(anchor), [line.strip() for line in anchor]
    stripped = [line.strip() for line in lines]
    return sum(stripped[i : i + n] == want for i in range(len(lines) - n + 1)) > 1


def _snippet(a: list[str], b: list[str], spans: list[tuple[int, int, int, int]], marker: str) -> str:
    """The after text's changed regions with their context, a marker wherever the file's code is kept."""
    parts, cursor = [], 0
    for i1, i2, j1, j2 in spans:
        if i1 > cursor:
            parts.append(marker + "\n")
        parts += ended(b[j1:j2])
        cursor = i2
    if cursor < len(a):
        parts.append(marker + "\n")
    return "".join(parts)


def _diff(a: list[str], b: list[str], spans: list[tuple[int, int, int, int]], rng: random.Random) -> str:
    """A unified diff of the regions; its ``@@`` numbers right, off by a few lines, or missing."""
    style = rng.choice(("right", "wrong", "missing"))
    hunks = ["--- a/file\n+++ b/file\n"]
    for i1, i2, j1, j2 in spans:
        shift = rng.randint(3, 12) if style == "wrong" else 0
        header = "@@ ... @@" if style == "missing" else f"@@ -{i1 + 1 + shift},{i2 - i1} +{j1 + 1 + shift},{j2 - j1} @@"
        hunks.append(write_hunk(header, a[i1:i2], b[j1:j2]))
    return "".join(hunks)


@dataclass(frozen=True)
class Score:
    """A merged result against the gold after text."""

    exact: bool
    lines_lost: int  # lines the gold keeps from the file that the result dropped
    change_dropped: int  # lines of the change the gold has and the result lacks
    invented: int  # result lines in neither the file, the change nor the gold


def score(before: str, after: str, change: Change, result: str | None) -> Score:
    """How ``result`` (None: nothing applied) compares with the gold ``after``, by multisets of
    stripped lines (blank lines aside)."""
    got = _counts(result if result is not None else before)
    gold, file = _counts(after), _counts(before)
    proposed = _counts("".join(line.text for line in change.lines if not line.marker))
    kept = gold & file
    return Score(
        exact=result == after,
        lines_lost=sum((kept - got).values()),
        change_dropped=sum(((proposed & gold) - got).values()),
        invented=sum((got - file - proposed - gold).values()),
    )


def _counts(text: str) -> Counter[str]:
    return Counter(line.strip() for line in split_lines(text) if line.strip())
